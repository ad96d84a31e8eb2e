"""The exact local learning coefficient (LLC) of the copy-task network, W integrated out.

The estimand (docs/llc.md; singular learning theory's lambda-hat as devinterp estimates it):

    lambda_hat(w*) = nbeta (E_pi[L_n(w)] - L_n(w*)),
    pi(W, G) ∝ exp(-nbeta L_n(W, G) - gamma/2 |W - W*|^2 - gamma/2 |G - G*|^2),

with ``L_n`` the mean over the P sequences of ``l_mu = (1/2L) sum_l |y - W h|^2`` and ``nbeta``
(default ``P / log P``). Given G the exponent is quadratic in W: with ``b = nbeta / (P L)``
and the contractions ``K = sum h h^T``, ``B = sum h y^T`` of the pattern, each row of W is
Gaussian with precision ``Lam = b K + gamma I`` and the rows' means are the columns of
``Lam^-1 R``, ``R = b B + gamma W*^T``. Integrating W out leaves

    S_loc(G) = (V/2) log det Lam - 1/2 tr(R^T Lam^-1 R) + gamma/2 |G - G*|^2  (+ const),
    E_{W|G}[L_n] = [tr(M K M^T) + V tr(Lam^-1 K) - 2 tr(M B) + P L] / (2 P L),  M = (Lam^-1 R)^T,

so E_pi[L_n] = E_{G ~ exp(-S_loc)}[E_{W|G} L_n]: G is sampled by the exact posterior's adaptive
MALA (no step-size bias: Metropolis-corrected) and W is averaged in closed form
(Rao-Blackwellised). Costs O(L^2 V^2 + V^3) per step whatever P is.

Under an attention mask (``mask=``, ``copyjax.masks``) the loss runs over the mask's n loss
rows: L above becomes n, K and B are the loss rows' contractions, and the phases are split at
the mask's divide.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import masks
from copyjax.sgmcmc import adaptive_mala
from copyjax._checks import check_activation, check_burn_in, check_positive, check_size
from copyjax.chains import Layout, Schedule, run_chains, summarize
from copyjax.data import float_stats, stats_size


def default_nbeta(P: float) -> float:
    """The inverse temperature times n: ``P / log P`` (P > 1 sequences), devinterp's n / log n
    with n the whole data (devinterp's own default takes n = its batch size B)."""
    if not P > 1:
        raise ValueError(f"P must be > 1 for the default nbeta = P / log P, got {P}")
    return float(P) / math.log(float(P))


def mean_loss(W, G, stats, activation: str, mask="full") -> jax.Array:
    """``L_n(W, G)``: the mean over sequences of ``(1/2n) sum_l |y - W h|^2`` over the
    ``mask``'s n loss rows (n = L: every row under the full mask), through the statistics
    ``stats: (L, L, V, V)``; ``W: (V, V)``, ``G: (L, L)``. Scalar."""
    mask = masks.get(mask)
    stats = float_stats(stats)
    A = mask.attention(G, activation).astype(stats.dtype)
    return -mask.log_likelihood(W.astype(A.dtype), A, stats, 1.0) / stats_size(stats).astype(A.dtype)


class _Conditional(NamedTuple):
    K: jax.Array  # (V, V), symmetrised
    B: jax.Array  # (V, V)
    PL: jax.Array  # P n, n the loss rows (L under the full mask)
    V: int
    chol: jax.Array  # Cholesky factor of Lam = b K + gamma I
    R: jax.Array  # b B + gamma W*^T
    LinvR: jax.Array  # Lam^-1 R: the rows' means as columns


def _conditional(G, stats, W_star, nbeta, gamma, activation, mask="full") -> _Conditional:
    """W's Gaussian conditional under pi given G (module docstring), the loss over ``mask``'s rows."""
    mask = masks.get(mask)
    stats = float_stats(stats)
    A = mask.attention(G, activation).astype(stats.dtype)
    V = stats.shape[-1]
    K, B, n = mask.contractions(A, stats)
    K = 0.5 * (K + K.T)
    PL = stats_size(stats).astype(A.dtype) * n
    b = nbeta / PL
    chol = jnp.linalg.cholesky(b * K + gamma * jnp.eye(V, dtype=A.dtype))
    R = b * B + gamma * W_star.astype(A.dtype).T
    return _Conditional(K, B, PL, V, chol, R, jax.scipy.linalg.cho_solve((chol, True), R))


def localised_action(G, stats, W_star, G_star, nbeta, gamma, activation: str, mask="full") -> jax.Array:
    """``S_loc(G)`` (up to a G-independent constant): minus the log of the G-marginal of the
    localised tempered posterior ``pi`` (the loss under ``mask``). ``G, G_star: (L, L)``,
    ``W_star: (V, V)``. Scalar."""
    c = _conditional(G, stats, W_star, nbeta, gamma, activation, mask)
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(c.chol)))
    return 0.5 * c.V * logdet - 0.5 * jnp.sum(c.R * c.LinvR) + 0.5 * gamma * jnp.sum((G - G_star) ** 2)


def expected_loss_given_G(G, stats, W_star, nbeta, gamma, activation: str, mask="full") -> jax.Array:
    """``E_{W|G}[L_n]`` under ``pi``'s Gaussian conditional of W given G (the loss under ``mask``). Scalar."""
    c = _conditional(G, stats, W_star, nbeta, gamma, activation, mask)
    M = c.LinvR.T
    var = c.V * jnp.trace(jax.scipy.linalg.cho_solve((c.chol, True), c.K))
    return (jnp.sum((M @ c.K) * M) + var - 2 * jnp.sum(M * c.B.T) + c.PL) / (2 * c.PL)


class LLCSampler(NamedTuple):
    """Hashable spec for ``run_chains(..., data=...)``: adaptive MALA on ``exp(-S_loc(G))``;
    ``data``: ``stats``, ``W_star``, ``G_star``, ``step_size``."""

    activation: str
    nbeta: float
    gamma: float
    n_adapt: int
    target: float = 0.57
    mask: object = "full"

    def build(self, data):
        lp = lambda G: -localised_action(G, data["stats"], data["W_star"], data["G_star"], self.nbeta,
                                         self.gamma, self.activation, self.mask)
        return adaptive_mala.as_top_level_api(lp, data["step_size"], self.n_adapt, self.target)


class LLCObserver(NamedTuple):
    """Per draw: ``loss`` = E_{W|G}[L_n] and the reported copy order parameter ``cG``."""

    activation: str
    nbeta: float
    gamma: float
    mask: object = "full"

    def __call__(self, G, data) -> dict:
        mask = masks.get(self.mask)
        A = mask.attention(G.astype(float_stats(data["stats"]).dtype), self.activation)
        rep = mask.order(A, self.activation)
        return {"loss": expected_loss_given_G(G, data["stats"], data["W_star"], self.nbeta, self.gamma,
                                              self.activation, self.mask),
                "cG": rep["cG"], "abs_rho": rep["abs_rho"]}


class LLCResult(NamedTuple):
    """``llc`` = nbeta (E_pi[L_n] - L_n(w*)) with its Monte Carlo standard error ``llc_se``
    (ESS-based, over all chains), ``rhat`` and ``ess`` of the per-draw E_{W|G}[L_n];
    ``loss_star`` = L_n(w*); ``loss`` the draws ``(chain, draw)``; ``cG`` the copy order
    parameter's draws; ``left_phase``: the fraction of draws in another phase than w*'s
    (``phase_of``): where it is not ~0 the localisation did not keep the chains in w*'s basin
    and lambda_hat is not local; ``acceptance`` per chain."""

    llc: float
    llc_se: float
    rhat: float
    ess: float
    loss_star: float
    nbeta: float
    gamma: float
    loss: np.ndarray
    cG: np.ndarray
    acceptance: np.ndarray
    left_phase: float = float("nan")


def _checked(stats, W_star, G_star, activation, nbeta, gamma, n_chains, num_steps, burn_in, min_burn_in):
    """The arguments ``estimate_llc`` and ``sgld_llc`` share, checked once: (n_chains, num_steps,
    burn_in (default a third), nbeta (default P / log P), gamma, W_star, G_star as arrays)."""
    check_activation(activation)
    n_chains = check_size("n_chains", n_chains, 2)
    num_steps = check_size("num_steps", num_steps, 2)
    burn_in = num_steps // 3 if burn_in is None else check_burn_in(burn_in, num_steps, minimum=min_burn_in)
    if nbeta is None:
        nbeta = default_nbeta(float(stats_size(stats)))
    check_positive("nbeta", nbeta)
    check_positive("gamma", gamma)
    L, V = stats.shape[0], stats.shape[-1]
    W_star, G_star = jnp.asarray(W_star), jnp.asarray(G_star)
    if W_star.shape != (V, V):
        raise ValueError(f"W_star must have shape (V, V) = {(V, V)}, got {W_star.shape}")
    if G_star.shape != (L, L):
        raise ValueError(f"G_star must have shape (L, L) = {(L, L)}, got {G_star.shape}")
    return n_chains, num_steps, burn_in, float(nbeta), float(gamma), W_star, G_star


def estimate_llc(key, stats, W_star, G_star, activation: str, *, nbeta: float | None = None,
                 gamma: float = 100.0, n_chains: int = 8, num_steps: int = 2000, burn_in: int | None = None,
                 thin: int = 1, initial_step_size: float | None = None, devices=None,
                 progress: bool = False, mask="full") -> LLCResult:
    """The exact LLC at ``w* = (W_star: (V, V), G_star: (L, L))`` on ``stats: (L, L, V, V)``:
    ``n_chains`` adaptive-MALA chains on G started at ``G_star`` (step tuned per chain during
    ``burn_in``, default a third, then frozen), W integrated in closed form. ``nbeta``: default
    ``P / log P``; ``gamma``: the localisation of both W and G, default 100: at L = 16, V = 32
    softmax chains from the copy minimum keep its phase with 100 and leave it with 1 (mean a_G
    0.73 -> 0.13 at P = 1000; docs/llc.md). Its price: the W block's data curvature,
    ``nbeta / (P L)`` times K's eigenvalues (about nbeta / V), is then small against gamma, so
    lambda_hat is far below its large-n limit (``regular_w_llc`` gives the W block's share).
    ``mask``: the attention mask (``copyjax.masks``); L_n is over its loss rows."""
    n_chains, num_steps, burn_in, nbeta, gamma, W_star, G_star = _checked(
        stats, W_star, G_star, activation, nbeta, gamma, n_chains, num_steps, burn_in, 1)
    mask = masks.get(mask)
    mask.check(activation)
    stats = float_stats(stats)
    L, V = stats.shape[0], stats.shape[-1]
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    G0 = jnp.broadcast_to(G_star.astype(dtype), (n_chains, L, L))
    eps0 = 1e-2 / math.sqrt(1.0 + nbeta / V) if initial_step_size is None else initial_step_size
    data = {"stats": stats, "W_star": W_star.astype(stats.dtype), "G_star": G_star.astype(dtype),
            "step_size": jnp.asarray(eps0, dtype)}
    smp = run_chains(key, LLCSampler(activation, nbeta, gamma, burn_in, mask=mask), G0,
                     LLCObserver(activation, nbeta, gamma, mask), data, schedule=Schedule(num_steps, burn_in, thin), layout=Layout(devices=devices),
                     progress=progress, desc="llc")
    loss = np.asarray(smp.draws["loss"], float)
    s = summarize(loss)
    loss_star = float(mean_loss(W_star, G_star, stats, activation, mask))
    rep = mask.order(mask.attention(G_star, activation), activation)
    home = phase_of(float(rep["cG"]), float(rep["abs_rho"]), activation, L, mask)
    cG, rho = np.asarray(smp.draws["cG"], float), np.asarray(smp.draws["abs_rho"], float)
    here = phase_of(cG, rho, activation, L, mask) == home
    return LLCResult(nbeta * (s.mean - loss_star), nbeta * s.mcse, s.rhat, s.ess, loss_star, nbeta, gamma,
                     loss, cG, np.asarray(smp.info["acceptance_rate"]).mean(-1), float(1.0 - here.mean()))


class Minimum(NamedTuple):
    """A local minimum w* of the joint posterior found by Adam: ``phase`` (softmax:
    ``"pooling"`` / ``"copy"`` by a_G against ``masks.FULL.divide(L)``;
    linear: ``"below_onset"`` / ``"above_onset"`` by |rho| against 0.1), the start family it came
    from, ``W: (V, V)``, ``G: (L, L)``, its log posterior and order parameters."""

    phase: str
    start: str
    W: np.ndarray
    G: np.ndarray
    logpost: float
    cG: float
    abs_rho: float


@lru_cache(maxsize=None)
def _divide(L: int, mask) -> float:
    return masks.get(mask).divide(L)


def phase_of(cG, abs_rho, activation: str, L: int, mask="full"):
    """The phase label of a pattern (see ``Minimum``); arrays give arrays of labels. Softmax:
    a_G against the ``mask``'s divide (``Mask.divide``)."""
    if activation == "softmax":
        return np.where(np.asarray(cG) >= _divide(L, masks.get(mask)), "copy", "pooling")[()]
    return np.where(np.asarray(abs_rho) >= 0.1, "above_onset", "below_onset")[()]


def find_minima(key, stats, hyper, activation: str, *, n_seeds: int = 4, steps: int = 2000,
                learning_rate: float = 1e-2, mask="full") -> list[Minimum]:
    """Adam on the joint MAP (``training.train_ensemble``) from ``n_seeds`` prior starts and
    ``n_seeds`` copy starts (the ``mask``'s copy pattern), as the phase diagram trains: per
    phase reached, the run with the highest log posterior. Both phases where they coexist; one
    where both families end in it."""
    from copyjax.training import init_ensemble, train_ensemble

    check_activation(activation)
    L, V = stats.shape[0], stats.shape[-1]
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    best: dict[str, Minimum] = {}
    for i, start in enumerate(("prior", "copy")):
        k0, k1 = jax.random.split(jax.random.fold_in(key, i))
        init = init_ensemble(k0, n_seeds, L, V, hyper, activation, start, dtype, mask=mask)
        ens = train_ensemble(k1, init, stats, hyper, activation, steps=steps, learning_rate=learning_rate,
                             record_every=steps, mask=mask)
        for j in range(n_seeds):
            lp = float(ens.final_obs["logpost"][j])
            if not np.isfinite(lp):
                continue
            cG, rho = float(ens.final_obs["cG"][j]), float(ens.final_obs["abs_rho"][j])
            ph = str(phase_of(cG, rho, activation, L, mask))
            if ph not in best or lp > best[ph].logpost:
                best[ph] = Minimum(ph, start, np.asarray(ens.final.W[j]), np.asarray(ens.final.G[j]), lp, cG, rho)
    return sorted(best.values(), key=lambda m: m.cG)


class SGLDLLC(NamedTuple):
    """SGLD's estimate of the same estimand: ``llc`` = nbeta (mean L_n over the recorded draws
    - L_n(w*)), ``llc_se`` (ESS-based), ``rhat``, ``nonfinite`` (chains that diverged, left out),
    ``loss`` the draws ``(chain, draw)``."""

    llc: float
    llc_se: float
    rhat: float
    nonfinite: int
    step_size: float
    loss: np.ndarray


def sgld_llc(key, stats, W_star, G_star, activation: str, *, step_size: float, nbeta: float | None = None,
             gamma: float = 100.0, n_chains: int = 8, num_steps: int = 2000, burn_in: int | None = None,
             thin: int = 1, tokens=None, batch_size: int | None = None, devices=None, mask="full") -> SGLDLLC:
    """lambda_hat by SGLD on (W, G) (blackjax's kernel, ``samplers.sgld_from_grad``: ``x + eps
    grad log pi + sqrt(2 eps) xi``), started at w*, L_n averaged over the draws after
    ``burn_in`` (default a third): what SGLD-based LLC estimators do, to be scored against
    ``estimate_llc`` on the same (w*, nbeta, gamma). Full batch by default; with ``tokens: (P,
    L)`` (the sequences ``stats`` counts) and ``batch_size`` B the gradient of nbeta L_n is
    estimated on B sequences drawn with replacement per chain and step (``minibatch``: one-hot
    free), as devinterp does; the recorded loss is the full-data L_n at each draw either way."""
    from copyjax import samplers
    from copyjax.chains import run_algorithm
    from copyjax.hyper import Hyper
    from copyjax.minibatch import batch_loglik, check_batch_size, draw_batch
    from copyjax.network import Params

    n_chains, num_steps, burn_in, nbeta, gamma, W_star, G_star = _checked(
        stats, W_star, G_star, activation, nbeta, gamma, n_chains, num_steps, burn_in, 0)
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    W_star, G_star = W_star.astype(dtype), G_star.astype(dtype)
    local = lambda p: 0.5 * gamma * (jnp.sum((p.W - W_star) ** 2) + jnp.sum((p.G - G_star) ** 2))
    if batch_size is None:
        if tokens is not None:
            raise ValueError("tokens without batch_size: give batch_size for minibatch gradients (the full "
                             "batch uses the statistics)")
        grad = jax.grad(lambda p: -(nbeta * mean_loss(p.W, p.G, stats, activation, mask) + local(p)))
        grad_fn = lambda k, p: grad(p)
    else:
        if tokens is None:
            raise ValueError("batch_size needs tokens: the (P, L) sequences the statistics count")
        tokens = jnp.asarray(tokens)
        P = int(stats_size(stats))
        if tokens.ndim != 2 or tokens.shape != (P, stats.shape[0]):
            raise ValueError(f"tokens must have shape (P, L) = {(P, stats.shape[0])}, got {tokens.shape}")
        B = check_batch_size(batch_size, P)
        unit = Hyper(1.0, 1.0, 1.0)  # only beta enters batch_loglik
        # nbeta L_n estimated by nbeta / B times the batch's summed loss (-log-likelihood at beta = 1)
        grad_b = jax.grad(lambda p, tb: nbeta / B * batch_loglik(p, tb, unit, activation, mask) - local(p))
        grad_fn = lambda k, p: grad_b(p, tokens[draw_batch(k, P, B)])
    alg = samplers.sgld_from_grad(grad_fn, step_size)
    init = Params(jnp.broadcast_to(W_star, (n_chains,) + W_star.shape), jnp.broadcast_to(G_star, (n_chains,) + G_star.shape))
    smp = run_algorithm(key, alg, init, lambda p: {"loss": mean_loss(p.W, p.G, stats, activation, mask)},
                        schedule=Schedule(num_steps, burn_in, thin), layout=Layout(devices=devices))
    loss = np.asarray(smp.draws["loss"], float)
    bad = ~np.all(np.isfinite(loss), axis=1)
    s = summarize(loss[~bad]) if (~bad).sum() >= 2 else None
    loss_star = float(mean_loss(W_star, G_star, stats, activation, mask))
    if s is None:
        return SGLDLLC(float("nan"), float("nan"), float("nan"), int(bad.sum()), float(step_size), loss)
    return SGLDLLC(nbeta * (s.mean - loss_star), nbeta * s.mcse, s.rhat, int(bad.sum()),
                   float(step_size), loss)


def regular_w_llc(G, stats, W_star, nbeta, gamma, activation: str, mask="full") -> jax.Array:
    """The W block's LLC at a frozen pattern G, in closed form: ``(V/2) tr(b K Lam^-1)`` plus
    the mean shift's term. At the least-squares W* and gamma -> 0 it is ``V^2 / 2`` = d / 2
    for a full-rank K: the regular model's learning coefficient."""
    return nbeta * (expected_loss_given_G(G, stats, W_star, nbeta, gamma, activation, mask)
                    - mean_loss(W_star, G, stats, activation, mask))


__all__ = ["LLCResult", "Minimum", "SGLDLLC", "default_nbeta", "estimate_llc", "expected_loss_given_G",
           "find_minima", "localised_action", "mean_loss", "phase_of", "regular_w_llc", "sgld_llc"]
