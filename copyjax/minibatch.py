"""Minibatch log-likelihoods of the network, without one-hot tensors.

For a batch ``tokens: (B, L)`` the readout of position l is ``f_l = W h_l = sum_m A[l, m]
W[:, t_m]``: a gather of columns of W followed by one matrix product with A, no (B, L, V)
one-hot input and no ``h W^T`` product. With ``y_l = t_{l-1}`` (one-hot) the squared loss is
``sum ||y - f||^2 = sum ||f||^2 - 2 sum_l f_l[y_l] + B L``, so the targets are a gather too.
The gathered columns are laid out ``(L, B V)``: the whole batch is one ``(L, L) @ (L, B V)``
product (and two of the same size in the backward pass), which is what CPUs and
accelerators do fastest. Cost ``O(B L^2 V)`` per evaluation, against ``O(L^2 V^2)`` for the
statistics path: see ``docs/benchmarks.md`` ("Cost model") for where each is cheaper.

Two minibatch layouts (``NetworkSampler(layout=...)``):
  * ``"independent"`` (default, what devinterp and most SGLD codes do): every chain draws its
    own minibatch each step (``batch_loglik`` under the chains' ``vmap``);
  * ``"shared"``: one minibatch per step for all chains, drawn from a key in the data and the
    step number; its pair counts are formed once per step (``batch_stats``) and every chain
    takes the exact statistics-path gradient on them, scaled by P / B: the chains' work is
    one matrix product. The chains then share their gradient noise: see ``shared_batch``.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from copyjax import masks
from copyjax._checks import check_size
from copyjax.data import compute_dtype, sufficient_stats


def batch_loglik(params, tokens: jax.Array, hyper, activation: str, mask="full") -> jax.Array:
    """``sum_b log p(y_b | x_b, W, G) = -beta/(2L) sum_b sum_l ||y - W h||^2`` for
    ``tokens: (B, L)`` (the same value as summing ``network.sequence_loglik`` over the batch,
    to float rounding). ``params``: ``network.Params`` with ``W: (V, V)``, ``G: (L, L)``. Under
    a ``mask``, over its n loss rows (L replaced by n)."""
    W, G = params.W, params.G
    B, L = tokens.shape
    V = W.shape[0]
    mask = masks.get(mask)
    A = mask.attention(G, activation)
    t = tokens.T  # (L, B): position-major, so the gathered columns form one (L, B V) operand
    cols = W.T.astype(A.dtype)[t]  # (L, B, V): cols[m, b] = W[:, t_bm]
    F = (A @ cols.reshape(L, B * V)).reshape(L, B, V)  # F[l, b] = f_l of sequence b
    y = mask.targets(tokens).T  # (L, B)
    rows = mask.row_weights(L)
    if rows is not None:  # the loss rows only
        F = F * rows.astype(F.dtype)[:, None, None]
        L = int(mask.loss_rows(L).sum())
    fy = jnp.take_along_axis(F, y[..., None], axis=-1)
    sq = jnp.sum(F * F) - 2 * jnp.sum(fy) + B * L
    return -hyper.beta * sq / (2 * L)


def draw_batch(key, P: int, batch_size: int) -> jax.Array:
    """``(batch_size,)`` sequence indices, uniform with replacement from ``0..P-1`` (what
    blackjax's ``grad_estimator`` assumes: the mean over the batch times P is unbiased)."""
    return jax.random.randint(key, (batch_size,), 0, P)


def check_batch_size(batch_size, P: int) -> int:
    batch_size = check_size("batch_size", batch_size, 1)
    if batch_size > P:
        raise ValueError(f"batch_size must be in [1, P] = [1, {P}], got {batch_size}")
    return batch_size


def batch_stats(tokens: jax.Array, V: int, P: int, dtype=jnp.float32) -> jax.Array:
    """Pair counts of a minibatch ``tokens: (B, L)``, scaled by ``P / B``: ``(L, L, V, V)``,
    an unbiased estimate of the full data's statistics C (every statistics-path function then
    gives the unbiased minibatch estimate of the log-likelihood and its gradient)."""
    B = tokens.shape[0]
    return sufficient_stats(tokens, V, chunk=B).astype(dtype) * (P / B)


def shared_batch(data: dict, step, V: int, batch_size: int) -> dict:
    """``data`` with ``"stats"`` replaced by the scaled pair counts of the step's shared
    minibatch: sequences ``draw_batch(fold_in(data["batch_key"], step), P, batch_size)`` of
    ``data["tokens"]``. ``step`` is the chains' common step number, so every chain sees the
    same minibatch (computed once per step, outside the chains' ``vmap``).

    What sharing does: the gradient noise is common to all chains at each step, so the
    chains are no longer independent given the data. Each chain is still a valid SGLD chain
    (the minibatch is independent of its state), but between-chain statistics (R-hat, the
    standard error of a mean over chains) see less spread than independent chains would: the
    shared noise moves all chains together. Use independent minibatches for diagnostics that
    compare chains, shared ones for throughput."""
    tokens = data["tokens"]
    P = tokens.shape[0]
    idx = draw_batch(jax.random.fold_in(data["batch_key"], step), P, batch_size)
    return data | {"stats": batch_stats(tokens[idx], V, P, compute_dtype(data["stats"]))}


# Minibatch size above which the exact statistics gradient costs less per chain-step than a
# minibatch gradient (``benchmarks/minibatch.py``, cost model, 2 CPU cores, float32, 64
# chains, the run in docs/benchmarks.md): 8-22 sequences over L, V in {16, 32, 64}; the largest
# is used. Above it the exact gradient is both cheaper and noiseless, so it is the scripts'
# default.
EXACT_CHEAPER_ABOVE = 22


def exact_is_cheaper(batch_size: int) -> bool:
    """Whether the exact gradient costs less per step than a minibatch of ``batch_size``."""
    return batch_size > EXACT_CHEAPER_ABOVE


LAYOUTS = ("independent", "shared")


def check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return layout


__all__ = ["EXACT_CHEAPER_ABOVE", "LAYOUTS", "batch_loglik", "batch_stats", "check_batch_size", "check_layout", "draw_batch",
           "exact_is_cheaper", "shared_batch"]
