"""The single-head attention network of the copy task (design doc section 1).

``h[mu, l] = sum_m A[l, m] x[mu, m]``, ``f[mu, l] = W h[mu, l]``, ``A = phi(G)`` with phi the
identity ("linear") or a row softmax ("softmax"). Shapes: ``G: (L, L)``, ``W: (V, V)``,
``tokens: (P, L)``. All functions are pure and jit-able.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from copyjax._checks import check_activation, check_square
from copyjax.data import copy_targets, one_hot, stats_size


def shift_matrix(L: int, dtype=jnp.float32) -> jax.Array:
    """``S[l, m] = delta(m, (l - 1) mod L)``: the copy pattern. ``(L, L)``."""
    return jnp.roll(jnp.eye(L, dtype=dtype), -1, axis=1)


def uniform_matrix(L: int, dtype=jnp.float32) -> jax.Array:
    """``U = 1 1^T / L``: uniform pooling. ``(L, L)``."""
    return jnp.full((L, L), 1.0 / L, dtype=dtype)


def attention(G: jax.Array, activation: str) -> jax.Array:
    """Attention pattern ``A = phi(G)``: ``G: (..., L, L) -> (..., L, L)``.

    Softmax is taken over the last axis (each query row sums to one) and is stable
    (the row maximum is subtracted before ``exp``).
    """
    check_activation(activation)
    check_square("G", G)
    if activation == "linear":
        return G
    return _row_softmax(G)


def _row_softmax(G):
    # Same values as jax.nn.softmax (to rounding), but the row sums and the spreading of
    # 1 / sum over the row (and, under autodiff, their transposes) are matrix products,
    # not reductions or broadcasts: XLA's CPU reductions may peel loops
    # by memory alignment, which changes the summation order with the shard a chain sits
    # in; matmuls do not. This keeps a chain bit for bit identical on 1 or 4 devices.
    z = G - jax.lax.stop_gradient(jnp.max(G, axis=-1, keepdims=True))
    e = jnp.exp(z)
    ones = jnp.ones((G.shape[-1], 1), e.dtype)
    # 1 / row sum, spread over the row by a matmul too (a broadcast's transpose is a sum).
    return e * ((1.0 / (e @ ones)) @ ones.T)


def pooled_features(A: jax.Array, tokens: jax.Array, V: int) -> jax.Array:
    """``h[mu, l] = sum_m A[l, m] onehot(t[mu, m])``: ``(P, L, V)``."""
    return jnp.einsum("lm,pmv->plv", A, one_hot(tokens, V, A.dtype))


def forward(W: jax.Array, G: jax.Array, tokens: jax.Array, activation: str) -> jax.Array:
    """Network outputs ``f[mu, l] = W h[mu, l]``: ``(P, L, V)``."""
    V = W.shape[0]
    h = pooled_features(attention(G, activation), tokens, V)
    return jnp.einsum("ij,plj->pli", W, h)


def per_sequence_loss(W, G, tokens, activation: str) -> jax.Array:
    """``loss[mu] = (1 / 2L) sum_l ||y[mu, l] - f[mu, l]||^2``: ``(P,)``."""
    V, L = W.shape[0], G.shape[-1]
    f = forward(W, G, tokens, activation)
    y = one_hot(copy_targets(tokens), V, f.dtype)
    return jnp.sum((y - f) ** 2, axis=(1, 2)) / (2 * L)


def log_prior(W, G, hyper) -> jax.Array:
    """Gaussian log prior, without normalisation: ``W_ij ~ N(0, sw2/V)``, ``G ~ N(0, sg2)``."""
    V = W.shape[0]
    return -0.5 * V * jnp.sum(W**2) / hyper.sigma_w2 - 0.5 * jnp.sum(G**2) / hyper.sigma_g2


def log_likelihood(W, G, tokens, hyper, activation: str) -> jax.Array:
    """``-beta * sum_mu loss[mu]`` (Gaussian kernel, unnormalised)."""
    return -hyper.beta * jnp.sum(per_sequence_loss(W, G, tokens, activation))


def log_posterior(W, G, tokens, hyper, activation: str) -> jax.Array:
    """Unnormalised ``log p(W, G | data)`` from the per-sequence loss (cost grows with P)."""
    return log_likelihood(W, G, tokens, hyper, activation) + log_prior(W, G, hyper)


@jax.custom_vjp
def _contract(pair: jax.Array, stats: jax.Array) -> jax.Array:
    """``pair: (..., L, L)``, ``stats: (L, L, V, V)`` -> ``(..., V, V)``, summed over (m, n).

    Both passes are plain matrix products with C viewed as ``(L^2, V^2)``; autodiff of the
    einsum gave a backward pass twice as slow as ``d @ C^T`` (measured at L = 64, V = 32:
    value and gradient of S_P for 8 chains 36 -> 22 ms, 32 chains 41 -> 37 ms). The
    cotangent of C is exact too (dead code under jit when only G is differentiated)."""
    L, V = stats.shape[0], stats.shape[-1]
    out = pair.reshape(-1, L * L) @ stats.reshape(L * L, V * V)
    return out.reshape(pair.shape[:-2] + (V, V))


def _contract_fwd(pair, stats):
    return _contract(pair, stats), (pair, stats)


def _contract_bwd(res, d):
    pair, stats = res
    L, V = stats.shape[0], stats.shape[-1]
    dm, pm = d.reshape(-1, V * V), pair.reshape(-1, L * L)
    # C (L^2, V^2) contracted over its last axis as the left operand: on 2 CPU cores 1.15x
    # faster than dm @ C^T for a block of 16 chains (a 40-step value-and-gradient loop of S_P
    # at L = 64, V = 32: 23.0 -> 19.9 ms per step). Holding C^T as well, so that the forward
    # pass does the same, was 1.9x faster still but stalled XLA (jax 0.10.2, XNNPACK dots)
    # inside blackjax's MALA loop: see docs/free_energy.md, "A note on blocks of chains".
    d_pair = (stats.reshape(L * L, V * V) @ dm.T).T.reshape(pair.shape)
    d_stats = (pm.T @ dm).reshape(stats.shape)
    return d_pair, d_stats


_contract.defvjp(_contract_fwd, _contract_bwd)


def stats_contractions(A: jax.Array, stats: jax.Array, target: jax.Array | None = None):
    """``K = sum_mn (A^T A)_mn C_mn`` and ``B = sum_mn (A^T T)_mn C_mn`` (both ``(V, V)``),
    ``T: (L, L)`` the ``target`` map (y = T x; default the shift S, y_l = x_{l-1}).

    K is the Gram matrix sum h h^T of the pooled features, B = sum h y^T. Cost O(L^2 V^2).
    """
    L = A.shape[-1]
    T = shift_matrix(L, A.dtype) if target is None else target.astype(A.dtype)
    # One pass over C for both contractions (C is the only O(L^2 V^2) operand).
    pair = jnp.stack([A.T @ A, A.T @ T])
    KB = _contract(pair, stats.astype(A.dtype))
    return KB[0], KB[1]


def log_likelihood_from_stats(W, A, stats, beta) -> jax.Array:
    """``-beta/(2L) sum ||y - W h||^2`` through the statistics, any P at O(L^2 V^2).

    ``sum ||y - W h||^2 = tr(W K W^T) - 2 tr(W B) + P L``.
    """
    L = A.shape[-1]
    K, B = stats_contractions(A, stats)
    P = stats_size(stats).astype(A.dtype)
    sq = jnp.sum((W @ K) * W) - 2 * jnp.sum(W * B.T) + P * L
    return -beta * sq / (2 * L)


__all__ = ["attention", "forward", "log_likelihood", "log_likelihood_from_stats", "log_posterior",
           "log_prior", "per_sequence_loss", "pooled_features", "shift_matrix", "stats_contractions",
           "uniform_matrix"]
