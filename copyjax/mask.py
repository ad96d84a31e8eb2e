"""The causal mask (issue 25): attention restricted to keys m <= l, the exact action on that
support, the copy order parameter per row, and the MAP of G per row.

The model with ``mask="causal"``: ``A[l, m] = 0`` for m > l; softmax rows normalised over the
l + 1 allowed keys (row 0 attends to itself only), linear ``A = tril(G)``. The copy target is
``y_l = x_{l-1}`` for l >= 1; **position 0 carries no loss**: its cyclic target x_{L-1} lies in
its future, which a causal head cannot see, so keeping it would charge every pattern the same
unlearnable error and nothing else. The loss is averaged over the n = L - 1 positions with a
target (``-beta / (2 n) sum_{mu, l >= 1} ||y - W h||^2``), so beta keeps its meaning per position.

Integrating W out goes as for the full mask (``copyjax.action``) with two changes: the
contractions K, B sum over the rows l >= 1 only (row 0 of A zeroed), and n = L - 1 replaces L
in ``M = I + beta sigma_w2 / (n V) K`` and in the quadratic term. The statistics C are the
same; the masked entries of G do not enter A, so only the allowed ones carry the prior. The
translation invariance of the cyclic model is lost: a row with l + 1 keys needs a copy logit
of order ln(l + 1) to copy, so the order parameter is per row (``row_copy_order``).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from copyjax._checks import check_activation, check_square, check_stats
from copyjax.action import action_from_KB
from copyjax.data import stats_size
from copyjax.model import stats_contractions

MASKS = ("full", "causal")


def check_mask(mask) -> str:
    if mask not in MASKS:
        raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")
    return mask


def allowed(L: int, dtype=bool) -> jax.Array:
    """``(L, L)``: 1 where query l may attend to key m (m <= l)."""
    return jnp.tril(jnp.ones((L, L), dtype))


def causal_attention(G: jax.Array, activation: str) -> jax.Array:
    """``A: (..., L, L)`` on the causal support: softmax over the keys m <= l of each row, or
    ``tril(G)`` (linear). Entries above the diagonal are exactly 0 whatever G holds there."""
    check_activation(activation)
    L = check_square("G", G)
    ok = allowed(L)
    if activation == "linear":
        return jnp.where(ok, G, 0.0)
    return jax.nn.softmax(jnp.where(ok, G, -jnp.inf), axis=-1)


def causal_data_action(A: jax.Array, stats: jax.Array, hyper) -> jax.Array:
    """Data part of the causal action for a pattern ``A: (L, L)`` (zero above the diagonal):
    rows l >= 1 carry the loss, n = L - 1 positions."""
    K, B, n = causal_contractions(A, stats)  # row 0 of A^T S vanishes with it: S's wrap is unused
    P = stats_size(stats).astype(A.dtype)
    return action_from_KB(K, B, P, n, hyper)


def causal_exact_action(G: jax.Array, stats: jax.Array, hyper, activation: str) -> jax.Array:
    """``S_P(G)`` of the causal model (scalar): ``causal_data_action`` plus the Gaussian prior
    of the allowed entries of ``G: (L, L)`` (the masked ones are not parameters)."""
    L = check_square("G", G)
    check_stats(stats, L)
    G = jnp.asarray(G, jnp.result_type(G, jnp.float32))
    A = causal_attention(G, activation)
    return causal_data_action(A, stats, hyper) + 0.5 * jnp.sum(jnp.where(allowed(L), G, 0.0) ** 2) / hyper.sigma_g2


def causal_expected_loss(A: jax.Array, stats: jax.Array, hyper) -> jax.Array:
    """Per-sequence training loss of the causal model, ``(1/2n) sum_{l >= 1} ||y - W h||^2``
    (n = L - 1 positions with a target), W averaged over its Gaussian posterior given the
    pattern ``A: (L, L)`` (zero above the diagonal): ``action.expected_loss`` on the causal
    contractions. Scalar."""
    from copyjax.action import _posterior_w_loss

    K, B, n = causal_contractions(A, stats)
    P = stats_size(stats).astype(A.dtype)
    return _posterior_w_loss(K, B, K, B, P, P, n, hyper)


def row_copy_order(A: jax.Array) -> jax.Array:
    """Copy order parameter per row, ``c_G(l) = (A[l, l-1] - s_l u_l) / (1 - u_l)`` with
    ``u_l = 1 / (l + 1)`` the weight of uniform pooling over the row's keys and ``s_l`` the row
    sum: the coefficient of e_{l-1} when row l is fitted (least squares over its keys) by
    ``c_1(l) u + c_G(l) e_{l-1}`` (u uniform, ``row_pool_order``). Softmax rows sum to one, so
    it is ``a_G(l) = (A[l, l-1] - u_l) / (1 - u_l)``: 0 for causal uniform pooling, 1 for exact
    copying. ``A: (..., L, L) -> (..., L - 1)`` (rows 1 .. L-1)."""
    L = A.shape[-1]
    l = np.arange(1, L)
    u = 1.0 / (l + 1.0)
    return (A[..., l, l - 1] - jnp.sum(A[..., 1:, :], axis=-1) * u) / (1.0 - u)


def row_pool_order(A: jax.Array) -> jax.Array:
    """Pooling order parameter per row, ``c_1(l) = s_l - c_G(l)`` (the uniform part of the
    least-squares fit of ``row_copy_order``; 1 - a_G(l) for softmax). ``A: (..., L, L) ->
    (..., L - 1)``."""
    return jnp.sum(A[..., 1:, :], axis=-1) - row_copy_order(A)


def causal_order(A: jax.Array) -> jax.Array:
    """The causal copy order parameter: the mean over rows l >= 1 of ``row_copy_order``,
    ``A: (..., L, L) -> (...)`` (0 for causal uniform pooling, 1 for exact copying)."""
    return jnp.mean(row_copy_order(A), axis=-1)


class CausalOnset(NamedTuple):
    """The linear causal model's onset (``causal_linear_onset``): ``P_onset`` where G = 0 stops
    being a minimum of the causal action at the expected statistics; ``c1``, ``cG``: the row
    means of ``row_pool_order`` / ``row_copy_order`` of the unstable mode (unit norm);
    ``cG_rows``: its ``row_copy_order`` per row l = 1 .. L - 1; ``H1``, ``H2``: the Hessian
    of the action at G = 0 over the allowed entries is ``I / sigma_g2 + P H1 - P^2 H2``."""

    P_onset: float
    c1: float
    cG: float
    cG_rows: np.ndarray
    H1: np.ndarray
    H2: np.ndarray


def causal_linear_onset(L: int, V: int, hyper, tokens=None, P_max: float = 1e7) -> CausalOnset:
    """The onset of the linear causal model in the MAP form: the smallest P at which the
    Hessian of the causal action at G = 0, on the expected statistics of the token law
    ``tokens``, loses positive definiteness. At A = 0, K = 0 and M = I, so the log-det term's
    Hessian is linear in P and the quadratic term's is quadratic: H(P) = I / sigma_g2 + P H1 -
    P^2 H2 exactly (H1, H2 from the data part's Hessians at P = 1 and 2, over the L (L + 1) / 2
    allowed entries; checked at P = 3 to 1e-8 relative), and the onset is the root of its
    smallest eigenvalue (bisection). Where the theory of docs/theory.md has no causal form,
    this is the exact action itself, reduced to its quadratic part at the symmetric point."""
    from copyjax.data import expected_stats

    L, V = int(L), int(V)
    if L < 3 or V < 2:
        raise ValueError(f"L must be >= 3 and V >= 2, got L={L}, V={V}")
    rows, cols = np.tril_indices(L)
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)

    def data_hessian(P):
        C = expected_stats(float(P), L, V, dtype, tokens)
        f = lambda g: causal_data_action(jnp.zeros((L, L), dtype).at[rows, cols].set(g), C, hyper)
        g0 = jnp.zeros(rows.size, dtype)
        # reverse over reverse: the statistics' contraction is a custom_vjp (no forward mode)
        hvp = lambda v: jax.grad(lambda g: jnp.vdot(jax.grad(f)(g), v))(g0)
        return np.asarray(jax.lax.map(hvp, jnp.eye(rows.size, dtype=dtype), batch_size=64))

    D1, D2, D3 = (data_hessian(P) for P in (1.0, 2.0, 3.0))
    H2 = (2 * D1 - D2) / 2
    H1 = D1 + H2
    scale = max(np.abs(D3).max(), 1e-300)
    if np.abs(3 * H1 - 9 * H2 - D3).max() > 1e-8 * scale:
        raise RuntimeError("the causal action's Hessian at G = 0 is not quadratic in P (a bug)")
    prior = np.eye(rows.size) / hyper.sigma_g2
    lam = lambda P: np.linalg.eigvalsh(prior + P * H1 - P**2 * H2)[0]
    if lam(P_max) > 0:
        raise ValueError(f"no onset below P_max = {P_max:g}")
    lo, hi = 0.0, P_max
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if lam(mid) > 0 else (lo, mid)
        if hi - lo < 1e-9 * hi:
            break
    P1 = 0.5 * (lo + hi)
    w, v = np.linalg.eigh(prior + P1 * H1 - P1**2 * H2)
    G = np.zeros((L, L))
    G[rows, cols] = v[:, 0]
    A = jnp.asarray(G)  # linear: A = tril(G)
    c1, cG = float(jnp.mean(row_pool_order(A))), float(jnp.mean(row_copy_order(A)))
    sign = 1.0 if cG + c1 >= 0 else -1.0
    norm = float(np.hypot(c1, cG)) or 1.0
    return CausalOnset(float(P1), sign * c1 / norm, sign * cG / norm, sign * np.asarray(row_copy_order(A)) / norm,
                       H1, H2)


def causal_copy_direction(L: int, dtype=jnp.float32) -> jax.Array:
    """``(L, L)``: D with ``<G, D>`` the copy logit above its row's mean over the allowed keys,
    averaged over the rows l >= 1 (row 0 has one key: no copy logit), normalised so that
    ``<gamma S_c, D> = gamma`` for ``S_c = copy_start(L, 1)``. Zero above the diagonal: the
    masked entries do not move it."""
    S = copy_start(L, 1.0, dtype)
    l = jnp.arange(L, dtype=dtype)[:, None]
    U = jnp.where(allowed(L), 1.0 / (l + 1.0), 0.0).astype(dtype).at[0].set(0.0)
    D = S - U
    return D / jnp.sum(S * D)


def causal_copy_coordinate(G: jax.Array) -> jax.Array:
    """``xi_c(G) = <G, causal_copy_direction(L)>``: the causal copy logit, ``G: (..., L, L) -> (...)``."""
    D = causal_copy_direction(G.shape[-1], G.dtype)
    return jnp.sum(G * D, axis=(-2, -1))


def causal_contractions(A: jax.Array, stats: jax.Array):
    """``(K, B, n)`` of the causal loss for ``A: (L, L)`` on the causal support: the
    contractions over the rows l >= 1 and their number n = L - 1 (``causal_data_action`` is
    ``action_from_KB(K, B, P, n, hyper)``; a caller that needs the action at several beta
    contracts once)."""
    K, B = stats_contractions(A.at[..., 0, :].set(0.0), stats)  # row 0: no target
    return K, B, A.shape[-1] - 1


def copy_start(L: int, gamma: float, dtype=jnp.float32) -> jax.Array:
    """``G`` with logit ``gamma`` at the previous token of each row (0 elsewhere): ``(L, L)``."""
    return gamma * jnp.eye(L, k=-1, dtype=dtype)


def causal_map(G0: jax.Array, stats: jax.Array, hyper, activation: str, steps: int = 400) -> jax.Array:
    """Minimise the causal action from ``G0: (L, L)`` by optax L-BFGS (``steps`` iterations,
    one jitted loop: ``_optim.lbfgs_minimize``). Returns the G it reaches."""
    from copyjax._optim import lbfgs_minimize

    G, _ = lbfgs_minimize(lambda G: causal_exact_action(G, stats, hyper, activation), G0, max_steps=steps)
    return G


def causal_logdensity(G: jax.Array, stats: jax.Array, hyper, activation: str) -> jax.Array:
    """The log density a sampler of the causal model's G uses, ``G: (L, L)``: ``-S_P(G)`` (the
    allowed entries' posterior) times an independent N(0, sigma_g2) on each masked entry, which
    A never sees, so that every coordinate is proper (their marginal is that Gaussian and
    nothing else depends on them). ``-inf`` where M is not positive definite."""
    L = G.shape[-1]
    v = -causal_exact_action(G, stats, hyper, activation) - 0.5 * jnp.sum(jnp.where(allowed(L), 0.0, G) ** 2) / hyper.sigma_g2
    return jnp.where(jnp.isfinite(v), v, -jnp.inf)


class CausalPosterior(NamedTuple):
    """Draws of the causal model's posterior of G (``sample_causal_posterior``): ``aG_rows``
    ``(chain, draw, L - 1)`` the per-row copy order parameter (``row_copy_order``: a_G(l) for
    softmax, c_G(l) for linear), ``start`` per chain ("pool" / "copy"), ``acceptance`` per
    chain, ``summary``: ``summarize`` of the row mean of the copy order parameter over all
    chains (mean, sd, mcse, rhat, ess; for linear of its absolute value: the posterior is
    symmetric under G -> -G, W -> -W); ``c1``: ``(chain, draw)`` the row mean of
    ``row_pool_order``."""

    aG_rows: np.ndarray
    start: list
    acceptance: np.ndarray
    summary: object
    c1: np.ndarray | None = None


def sample_causal_posterior(key, stats, hyper, activation: str, *, n_chains: int = 8, num_steps: int = 900,
                            gamma: float = 8.0, devices=None, progress: bool = False) -> CausalPosterior:
    """The exact posterior of the causal model's G (W integrated out: ``causal_logdensity``) by
    the exact posterior's adaptive MALA (``exact_posterior.as_top_level_api``: per-chain step
    tuned during the first third, then frozen; the draws after it), half the chains from G = 0
    (pooling), half from ``copy_start(L, gamma)`` (``gamma`` is a logit for softmax and the
    copy weight itself for linear); ``stats: (L, L, V, V)``."""
    from copyjax import exact_posterior
    from copyjax._checks import check_size
    from copyjax.chains import Layout, Schedule, run_algorithm, summarize

    L, _ = check_stats(stats)
    n_chains = check_size("n_chains", n_chains, 2)
    num_steps = check_size("num_steps", num_steps, 30)
    # G in the widest float enabled (as the umbrella's): float32 statistics must not make the
    # chain's state float32 while its step size and the density's value promote to float64
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    n_pool = n_chains // 2
    G0 = jnp.concatenate([jnp.zeros((n_pool, L, L), dtype),
                          jnp.broadcast_to(copy_start(L, gamma, dtype), (n_chains - n_pool, L, L))])
    burn = num_steps // 3
    eps0 = exact_posterior.default_initial_step(activation, hyper)
    alg = exact_posterior.as_top_level_api(lambda G: causal_logdensity(G, stats, hyper, activation), eps0, burn)
    # the driver records scalars per draw: one observable per row
    def observe(G):
        A = causal_attention(G, activation)
        return {"c1": jnp.mean(row_pool_order(A))} | {f"row{l}": a for l, a in enumerate(row_copy_order(A), 1)}

    smp = run_algorithm(key, alg, G0, observe, schedule=Schedule(num_steps, burn, 1), layout=Layout(devices=devices),
                        progress=progress, desc="causal posterior")
    rows = np.stack([np.asarray(smp.draws[f"row{l}"], float) for l in range(1, L)], axis=-1)
    order = rows.mean(-1) if activation == "softmax" else np.abs(rows.mean(-1))
    return CausalPosterior(rows, ["pool"] * n_pool + ["copy"] * (n_chains - n_pool),
                           np.asarray(smp.info.get("acceptance_rate", np.full(n_chains, np.nan))),
                           summarize(order), np.asarray(smp.draws["c1"], float))


__all__ = ["allowed", "causal_attention", "causal_contractions", "causal_copy_coordinate", "causal_copy_direction",
           "causal_data_action", "causal_exact_action", "causal_expected_loss", "causal_linear_onset", "causal_logdensity",
           "causal_map", "causal_order", "CausalOnset", "CausalPosterior", "check_mask", "copy_start", "MASKS",
           "row_copy_order", "row_pool_order", "sample_causal_posterior"]
