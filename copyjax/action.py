"""Exact effective action S_P(G): the negative log marginal posterior of G with W integrated out.

Derivation (docs/theory.md): the rows w_i of W are independent Gaussians a posteriori given
G, with precision (V / sigma_w2) M, ``M = I + beta sigma_w2 / (L V) K``. Integrating them out,

    S_P(G) = (V/2) log det M - beta^2 sigma_w2 / (2 L^2 V) tr(B^T M^-1 B) + beta P / 2
             + ||G||_F^2 / (2 sigma_g2),

with the constant convention: S_P = -log [ int dW N(W; 0, sigma_w2/V) exp(-beta/(2L) sum ||y - W h||^2) ]
+ ||G||^2 / (2 sigma_g2), i.e. the likelihood kernel and the G prior are unnormalised.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from copyjax import masks
from copyjax._checks import check_activation, check_square, check_stats, is_concrete
from copyjax.data import float_stats, stats_size
from copyjax.model import stats_contractions


def _float_dtype(x):
    return jnp.result_type(x, jnp.float32)


def precision_M(K, L: int, hyper) -> jax.Array:
    """``M = I + beta sigma_w2 / (L V) K`` (K symmetrised), ``(V, V)``: each row of W has
    posterior precision ``(V / sigma_w2) M`` given the pattern."""
    V = K.shape[-1]
    c = hyper.beta * hyper.sigma_w2 / (L * V)
    return jnp.eye(V, dtype=K.dtype) + c * 0.5 * (K + K.T)


def action_from_KB(K, B, P, L: int, hyper) -> jax.Array:
    """Data part of S_P from the contractions ``K, B: (V, V)`` (no G prior).

    Uses a Cholesky factor of the symmetric positive definite M; returns NaN if M is
    not positive definite (the public functions turn that into an error or +inf).
    """
    V = K.shape[-1]
    chol = jnp.linalg.cholesky(precision_M(K, L, hyper))
    logdet = 2.0 * jnp.sum(jnp.log(jnp.diagonal(chol)))
    Z = jsl.solve_triangular(chol, B, lower=True)
    quad = hyper.beta**2 * hyper.sigma_w2 / (2 * L**2 * V) * jnp.sum(Z**2)
    return 0.5 * V * logdet - quad + 0.5 * hyper.beta * P


def data_action(A: jax.Array, stats: jax.Array, hyper, mask="full") -> jax.Array:
    """Data part of S_P as a function of the attention pattern ``A: (L, L)``: the loss over
    the ``mask``'s loss rows (n of them; ``masks.Mask.contractions``).

    Shared by both activations (softmax only changes how A depends on G and the prior).
    """
    A = jnp.asarray(A)
    A = A.astype(_float_dtype(A))
    K, B, n = masks.get(mask).contractions(A, stats)
    P = stats_size(stats).astype(A.dtype)
    return action_from_KB(K, B, P, n, hyper)


def _raise_if_not_pd(value, where: str):
    if is_concrete(value) and not bool(jnp.all(jnp.isfinite(value))):
        raise ValueError(
            f"{where}: M = I + beta sigma_w2/(L V) K is not positive definite for these "
            "stats (valid count statistics always give a positive definite M); "
            "check that stats holds counts or expected counts"
        )
    return jnp.where(jnp.isfinite(value), value, jnp.inf)


def exact_action(G: jax.Array, stats: jax.Array, hyper, activation: str, mask="full") -> jax.Array:
    """Exact ``S_P(G)`` (scalar) for ``G: (L, L)`` and ``stats: (L, L, V, V)`` under ``mask``
    (``copyjax.masks``: a name or a ``Mask``; the prior is over its allowed entries, the
    parameters).

    Differentiable in G; cost O(L^2 V^2 + V^3) whatever P is. P is read off the
    statistics (trace of ``C[0, 0]``), so expected statistics work too. Outside jit a
    non positive definite M raises ``ValueError``; under jit it gives +inf (zero
    posterior density), never NaN.
    """
    check_activation(activation)
    mask = masks.get(mask)
    mask.check(activation)
    L = check_square("G", G)
    if jnp.shape(G) != mask.param_shape(L):
        raise ValueError(f"G must have shape {mask.param_shape(L)} (mask {mask.spec!r}), got {jnp.shape(G)}; "
                         "vmap for batches")
    check_stats(stats, L)
    G = jnp.asarray(G)
    G = G.astype(_float_dtype(G))
    ok = mask.allowed(L)
    prior_G = G if ok.all() else jnp.where(jnp.asarray(ok), G, 0.0)
    value = data_action(mask.attention(G, activation), stats, hyper, mask) + _prior(prior_G, hyper)
    return _raise_if_not_pd(value, "exact_action")


def marginal_logdensity(G: jax.Array, stats: jax.Array, hyper, activation: str, mask="full") -> jax.Array:
    """``-S_P(G)`` up to a constant, ``G: (L, L)``: the log density every sampler of G uses
    (no argument checks: traced inside samplers). ``-inf`` (never NaN) where M is not
    positive definite, so a Metropolis step rejects such a proposal. The pattern is formed in
    the statistics' float dtype (``data.float_stats``: integer counts are cast to JAX's default
    float, never G to an integer type; the O(L^2 V^2) contraction dominates the cost). Under a
    ``mask`` every entry of G carries its N(0, sigma_g2) prior: the masked ones, which A never
    sees, are then proper coordinates whose marginal is that Gaussian and nothing else."""
    stats = float_stats(stats)
    mask = masks.get(mask)
    v = -(data_action(mask.attention(G.astype(stats.dtype), activation), stats, hyper, mask) + _prior(G, hyper))
    return jnp.where(jnp.isfinite(v), v, -jnp.inf)


def _prior(G, hyper):
    """The Gaussian prior's ``||G||^2 / (2 sigma_g2)``, in G's own dtype."""
    return 0.5 * jnp.sum(G**2) / hyper.sigma_g2


def action_from_features(h: jax.Array, y: jax.Array, P, hyper) -> jax.Array:
    """The same marginal built naively from pooled features ``h: (P, L, V)`` and
    one-hot targets ``y: (P, L, V)`` (cost grows with P; reference and benchmark)."""
    L = h.shape[1]
    K = jnp.einsum("pla,plb->ab", h, h)
    B = jnp.einsum("pla,plb->ab", h, y)
    return action_from_KB(K, B, P, L, hyper)


def expected_loss(A: jax.Array, stats: jax.Array, hyper, mask="full") -> jax.Array:
    """Per-sequence loss ``(1/2L) sum_l ||y - W h||^2`` averaged over the Gaussian posterior
    of W given the pattern ``A: (L, L)`` and ``stats: (L, L, V, V)`` (the training loss at
    the statistics it was fitted to, the test loss at fresh ones when W is the posterior of
    the training data: use ``expected_test_loss``). Under a ``mask``: over its n loss rows.
    Scalar; O(L^2 V^2 + V^3).

    With ``M = I + beta sigma_w2/(L V) K``, W's posterior mean is
    ``Wbar = beta sigma_w2/(L V) B^T M^-1`` and its covariance adds ``sigma_w2 tr(K M^-1)``.
    """
    A = jnp.asarray(A)
    A = A.astype(_float_dtype(A))
    K, B, n = masks.get(mask).contractions(A, stats)
    P = stats_size(stats).astype(A.dtype)
    return _posterior_w_loss(K, B, K, B, P, P, n, hyper)


def _posterior_w_loss(K, B, K_eval, B_eval, P_fit, P_eval, L, hyper):
    V = K.shape[-1]
    M = precision_M(K, L, hyper)
    Minv_B = jnp.linalg.solve(M, B)
    Wbar = hyper.beta * hyper.sigma_w2 / (L * V) * Minv_B.T
    var = hyper.sigma_w2 * jnp.trace(jnp.linalg.solve(M, K_eval))
    sq = jnp.sum((Wbar @ K_eval) * Wbar) - 2 * jnp.sum(Wbar * B_eval.T) + P_eval * L + var
    return sq / (2 * L * P_eval)


def expected_test_loss(A: jax.Array, stats_train: jax.Array, stats_test: jax.Array, hyper) -> jax.Array:
    """Per-sequence loss on the test statistics of W drawn from its posterior given the
    pattern ``A`` and the training statistics. Scalar."""
    A = jnp.asarray(A)
    A = A.astype(_float_dtype(A))
    L = A.shape[-1]
    K, B = stats_contractions(A, stats_train)
    Kt, Bt = stats_contractions(A, stats_test)
    return _posterior_w_loss(K, B, Kt, Bt, stats_size(stats_train).astype(A.dtype),
                             stats_size(stats_test).astype(A.dtype), L, hyper)


__all__ = ["action_from_features", "action_from_KB", "data_action", "exact_action", "expected_loss",
           "expected_test_loss", "marginal_logdensity", "precision_M"]
