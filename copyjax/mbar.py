"""MBAR: free energies of many states from samples of some of them (Shirts & Chodera 2008,
J. Chem. Phys. 129, 124105), in JAX.

States are given by reduced energies: ``u_kn[k, n]`` is ``-log`` of state k's unnormalised
density at sample n (samples from all sampled states pooled, ``N_k[k]`` of them drawn from
state k). The free energies ``f_k = -log Z_k`` (``f_0 = 0``) solve the MBAR equations,
found here as the minimum of their convex objective

    F(f) = sum_n log sum_k N_k exp(f_k - u_kn) - sum_k N_k f_k

by Newton's method on its exact Hessian. Any further state (a target density, the target restricted to a bin or
a phase) is evaluated on the same samples, and the asymptotic covariance of all free
energies comes from the thin SVD of the weight matrix (Kong et al. 2003; Shirts & Chodera
2008, eq. D8 in the form pymbar calls "svd-ew").

Why not ``pymbar``: when JAX is installed pymbar switches JAX to 64-bit mode globally the
first time it solves (``jax_enable_x64``), behind the caller's back; copyjax leaves that to
the caller. ``tests/test_mbar.py`` checks this implementation against known free energies
and, where pymbar is installed, against pymbar.

The errors are those of uncorrelated samples: subsample correlated chains first
(``subsample``) so that each kept draw counts as one.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.scipy.special import logsumexp


class MBARResult(NamedTuple):
    """``f``: ``(K,)`` free energies of the sampled states, ``f[0] = 0``; ``log_denominator``:
    ``(N,)`` ``log sum_k N_k exp(f_k - u_kn)``; ``N_k``: ``(K,)``; ``grad_norm``: the norm of
    the objective's gradient at ``f`` (per sample; converged when below ``tol``);
    ``iterations``: L-BFGS iterations."""

    f: jax.Array
    log_denominator: jax.Array
    N_k: jax.Array
    grad_norm: jax.Array
    iterations: jax.Array


def _check(u_kn, N_k):
    u_kn, N_k = jnp.asarray(u_kn), jnp.asarray(N_k)
    if u_kn.ndim != 2 or N_k.shape != (u_kn.shape[0],):
        raise ValueError(f"u_kn must be (K, N) and N_k (K,); got {u_kn.shape} and {N_k.shape}")
    n = np.asarray(N_k)
    if np.any(n < 1) or int(n.sum()) != u_kn.shape[1]:
        raise ValueError(f"N_k must be >= 1 per state and sum to N = {u_kn.shape[1]}, got {n.tolist()}")
    if not bool(jnp.all(jnp.isfinite(u_kn))):
        raise ValueError("u_kn must be finite: a sampled state's energy at its own and the others' draws "
                         "(NaN or inf found)")
    if u_kn.dtype != jnp.float64:
        raise ValueError("MBAR needs float64 energies (differences of ~1e3 nats): call "
                         "jax.config.update('jax_enable_x64', True) first")
    return u_kn, N_k.astype(u_kn.dtype)


def solve(u_kn, N_k, *, tol: float = 1e-10, max_iter: int = 1000, f0=None) -> MBARResult:
    """MBAR free energies of the sampled states. ``u_kn: (K, N)`` float64, ``N_k: (K,)``
    (samples ordered by state is not required); ``f0: (K,)``: a starting point (e.g. the
    solution on the same states for a bootstrap replicate; default zeros). Raises
    ``ValueError`` for bad shapes or a float32 input; check ``grad_norm < tol`` for convergence."""
    u_kn, N_k = _check(u_kn, N_k)
    f0 = jnp.zeros(u_kn.shape[0], u_kn.dtype) if f0 is None else jnp.asarray(f0, u_kn.dtype)
    if f0.shape != (u_kn.shape[0],):
        raise ValueError(f"f0 must be ({u_kn.shape[0]},), got {f0.shape}")
    return _solve(u_kn, N_k, f0[1:] - f0[0], tol, max_iter)


@jax.jit
def _objective(f_free, u_kn, N_k):
    f = jnp.concatenate([jnp.zeros(1, u_kn.dtype), f_free])
    ld = logsumexp(f[:, None] - u_kn, b=N_k[:, None], axis=0)
    return (jnp.sum(ld) - jnp.dot(N_k, f)) / u_kn.shape[1]


def _solve(u_kn, N_k, f0, tol, max_iter):
    # pymbar's "adaptive" scheme: each iteration takes the better (lower objective) of a
    # Newton step on the exact Hessian, H = diag(sum_n N_k W_nk) - (N W)^T (N W) (one
    # (K, N) x (N, K) product), backtracked until the objective does not rise, and a
    # self-consistent step f_k <- -log sum_n exp(-u_kn - log_denominator_n). Far from the
    # solution (states hundreds of nats apart, most with no weight) the Hessian is near
    # singular and the self-consistent step makes the progress; near it Newton converges in a
    # few steps. optax's L-BFGS took ~600 iterations at 440 states (20 s); see the test.
    N = u_kn.shape[1]
    full = lambda f_free: jnp.concatenate([jnp.zeros(1, u_kn.dtype), f_free])

    def parts(f_free):
        logq = full(f_free)[:, None] - u_kn
        ld = logsumexp(logq, b=N_k[:, None], axis=0)
        NW = jnp.exp(logq - ld[None, :]) * N_k[:, None]  # (K, N): N_k W_nk, columns sum to 1
        s = jnp.sum(NW, axis=1)
        g = (s - N_k)[1:] / N
        H = (jnp.diag(s) - NW @ NW.T)[1:, 1:] / N
        return g, H, ld

    def step(carry):
        f, g, H, ld, it = carry
        obj = lambda x: _objective(x, u_kn, N_k)
        F0 = obj(f)
        d = jnp.linalg.solve(H + 1e-12 * jnp.eye(H.shape[0], dtype=H.dtype), g)

        def worse(c):  # the first of 1, 1/2, ..., 1/2^10 that does not raise the objective
            t, k = c
            return (k < 10) & ~(obj(f - t * d) <= F0)

        t, _ = jax.lax.while_loop(worse, lambda c: (0.5 * c[0], c[1] + 1), (jnp.ones((), f.dtype), 0))
        f_newton = f - t * d
        f_sc = -logsumexp(-u_kn - ld[None, :], axis=1)
        f_sc = (f_sc - f_sc[0])[1:]
        f_sc = jnp.where(jnp.isfinite(f_sc), f_sc, f)
        F_n = jnp.where(jnp.all(jnp.isfinite(f_newton)), obj(f_newton), jnp.inf)
        f_new = jnp.where(F_n <= obj(f_sc), f_newton, f_sc)
        return (f_new, *parts(f_new), it + 1)

    def going(carry):
        _, g, _, _, it = carry
        return (it < max_iter) & (jnp.linalg.norm(g) >= tol)

    f_free, _, _, _, iterations = jax.lax.while_loop(going, step, (f0, *parts(f0), 0))
    f = full(f_free)
    ld = logsumexp(f[:, None] - u_kn, b=N_k[:, None], axis=0)
    grad_norm = optax.tree.norm(jax.grad(_objective)(f_free, u_kn, N_k))
    return MBARResult(f, ld, N_k, grad_norm, iterations)


_solve = jax.jit(_solve, static_argnames=("tol", "max_iter"))


def state_free_energies(result: MBARResult, u_ln) -> jax.Array:
    """``(M,)`` free energies ``f_l = -log sum_n exp(-u_ln - log_denominator_n)`` of further
    states ``u_ln: (M, N)`` (``+inf`` entries: the state excludes that sample)."""
    return -logsumexp(-jnp.asarray(u_ln) - result.log_denominator[None, :], axis=1)


def covariance(result: MBARResult, u_kn, u_ln) -> tuple[jax.Array, jax.Array]:
    """Free energies of the sampled states ``u_kn: (K, N)`` and further states
    ``u_ln: (M, N)`` with their asymptotic covariance (Shirts & Chodera 2008, eq. D8):
    ``W = U S V^T`` (thin SVD of the ``(N, K + M)`` weights), ``Theta = V S (I - S V^T N V S)^+
    S V^T`` with ``N = diag(N_k, 0...0)``. Returns ``(f: (K + M,), Theta)``."""
    u_kn = jnp.asarray(u_kn, result.log_denominator.dtype)
    u_ln = jnp.atleast_2d(jnp.asarray(u_ln, u_kn.dtype))
    return _covariance(result, u_kn, u_ln)


@jax.jit
def _covariance(result, u_kn, u_ln):
    u_all = jnp.concatenate([u_kn, u_ln])
    f_all = jnp.concatenate([result.f, state_free_energies(result, u_ln)])
    logW = f_all[:, None] - u_all - result.log_denominator[None, :]
    W = jnp.exp(logW).T  # (N, K + M), each column sums to 1
    n = jnp.concatenate([result.N_k, jnp.zeros(u_ln.shape[0], u_kn.dtype)])
    U, s, Vt = jnp.linalg.svd(W, full_matrices=False)
    V = Vt.T
    inner = jnp.eye(s.shape[0], dtype=W.dtype) - (s[:, None] * (V.T * n[None, :]) @ V) * s[None, :]
    theta = (V * s[None, :]) @ jnp.linalg.pinv(inner, hermitian=True) @ (s[:, None] * V.T)
    return f_all, theta


def difference_sd(theta, i: int, j) -> jax.Array:
    """Standard deviation of ``f_i - f_j`` from the covariance ``theta`` (``j`` may be an array)."""
    j = jnp.asarray(j)
    return jnp.sqrt(jnp.maximum(theta[i, i] + theta[j, j] - 2 * theta[i, j], 0.0))


def overlap(result: MBARResult, u_kn) -> jax.Array:
    """``(K, K)`` overlap matrix of the sampled states ``u_kn: (K, N)`` (Shirts & Chodera 2008;
    pymbar's ``compute_overlap()["matrix"]``): ``O = W^T W diag(N_k)`` with ``W: (N, K)`` the
    MBAR weights. Row-stochastic; ``O[i, j]`` is the chance that a draw of state i, reweighted,
    is credited to state j. States that share no draws give 0 between them."""
    u_kn = jnp.asarray(u_kn, result.log_denominator.dtype)
    W = jnp.exp(result.f[:, None] - u_kn - result.log_denominator[None, :]).T
    return (W.T @ W) * result.N_k[None, :]


# pymbar warns below this overlap between neighbouring states: their free-energy difference
# then rests on a few draws, and its asymptotic error is no longer trustworthy
MIN_OVERLAP = 0.03


def weakest_overlap(ov) -> float:
    """The overlap of the weakest link that joins all states, from the overlap matrix
    ``ov: (K, K)`` (``overlap``): the largest t for which the graph with edges
    ``min(ov[i, j], ov[j, i]) >= t`` is connected (the smallest edge of a maximum spanning tree,
    Prim's). Below ``MIN_OVERLAP`` some group of states is joined to the rest through too few
    draws, and MBAR's free energies between the groups are unreliable."""
    ov = np.asarray(ov, float)
    S = np.minimum(ov, ov.T)
    K = S.shape[0]
    if K < 2:
        return 1.0
    inside = np.zeros(K, bool)
    inside[0] = True
    best = S[0].copy()
    weakest = np.inf
    for _ in range(K - 1):
        j = int(np.argmax(np.where(inside, -np.inf, best)))
        weakest = min(weakest, best[j])
        inside[j] = True
        best = np.maximum(best, S[j])
    return float(weakest)


def subsample(x: np.ndarray) -> np.ndarray:
    """Indices of a near-uncorrelated subsample of the series ``x: (T,)``: every g-th draw,
    g = T / ESS (numpyro's effective sample size of the series), at least 1; every draw where
    the estimate is not positive (an anti-correlated series)."""
    import numpyro.diagnostics as nd

    x = np.asarray(x, float)
    if x.size < 4 or np.ptp(x) == 0:
        return np.arange(x.size)
    ess = float(nd.effective_sample_size(x[None, :]))
    if not ess > 0:  # numpyro's one-chain estimate turns negative for an anti-correlated series
        return np.arange(x.size)  # (its draws are worth more than independent ones): keep all
    g = max(1, int(np.ceil(x.size / max(ess, 1.0))))
    return np.arange(x.size - 1, -1, -g)[::-1]


__all__ = ["covariance", "difference_sd", "MBARResult", "MIN_OVERLAP", "overlap", "solve", "state_free_energies",
           "subsample", "weakest_overlap"]
