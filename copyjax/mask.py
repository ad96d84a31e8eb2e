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
    """Copy order parameter per row, ``a_G(l) = (A[l, l-1] - u_l) / (1 - u_l)`` with
    ``u_l = 1 / (l + 1)`` the weight of uniform pooling over the row's keys: 0 for causal
    uniform pooling, 1 for exact copying. ``A: (..., L, L) -> (..., L - 1)`` (rows 1 .. L-1)."""
    L = A.shape[-1]
    l = np.arange(1, L)
    u = 1.0 / (l + 1.0)
    return (A[..., l, l - 1] - u) / (1.0 - u)


def causal_order(A: jax.Array) -> jax.Array:
    """The causal copy order parameter: the mean over rows l >= 1 of ``row_copy_order``,
    ``A: (..., L, L) -> (...)`` (0 for causal uniform pooling, 1 for exact copying)."""
    return jnp.mean(row_copy_order(A), axis=-1)


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
    ``(chain, draw, L - 1)`` the per-row copy order parameter, ``start`` per chain ("pool" /
    "copy"), ``acceptance`` per chain, ``summary``: ``summarize`` of the row mean of a_G(l)
    over all chains (mean, sd, mcse, rhat, ess)."""

    aG_rows: np.ndarray
    start: list
    acceptance: np.ndarray
    summary: object


def sample_causal_posterior(key, stats, hyper, activation: str, *, n_chains: int = 8, num_steps: int = 900,
                            gamma: float = 8.0, devices=None, progress: bool = False) -> CausalPosterior:
    """The exact posterior of the causal model's G (W integrated out: ``causal_logdensity``) by
    the exact posterior's adaptive MALA (``exact_posterior.as_top_level_api``: per-chain step
    tuned during the first third, then frozen; the draws after it), half the chains from G = 0
    (pooling), half from ``copy_start(L, gamma)``; ``stats: (L, L, V, V)``."""
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
    observe = lambda G: {f"row{l}": a for l, a in enumerate(row_copy_order(causal_attention(G, activation)), 1)}
    smp = run_algorithm(key, alg, G0, observe, schedule=Schedule(num_steps, burn, 1), layout=Layout(devices=devices),
                        progress=progress, desc="causal posterior")
    rows = np.stack([np.asarray(smp.draws[f"row{l}"], float) for l in range(1, L)], axis=-1)
    return CausalPosterior(rows, ["pool"] * n_pool + ["copy"] * (n_chains - n_pool),
                           np.asarray(smp.info.get("acceptance_rate", np.full(n_chains, np.nan))),
                           summarize(rows.mean(-1)))


__all__ = ["allowed", "causal_attention", "causal_contractions", "causal_copy_coordinate", "causal_copy_direction",
           "causal_data_action", "causal_exact_action", "causal_expected_loss", "causal_logdensity", "causal_map", "causal_order", "CausalPosterior", "check_mask", "copy_start", "MASKS", "row_copy_order",
           "sample_causal_posterior"]
