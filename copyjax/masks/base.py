"""What an attention mask is: the four facts that differ between masks, and the parts of the
model built from them.

A mask says which keys m each query l may attend to (``allowed``), which rows carry a loss
(``loss_rows``: the copy target y_l = x_{l-1} of a row must be visible to it), the copy pattern
(``copy_pattern``: 1 at (l, l-1) on the loss rows) and the activations it is built for. From
these, for any mask: the pattern ``attention(G, activation)`` (softmax over the allowed keys,
linear ``G`` on them), the contractions of the loss over the loss rows (``contractions``: n of
them replace L in the action), the order parameters per row (``order``: c_G(l) the copy weight
above uniform pooling over the row's keys, as ``docs/beyond.md`` defines it for the causal
mask), and the copy coordinate of the umbrella (``copy_direction``). The full cyclic mask
(``masks.full``) overrides the last three with the model's own (``model.attention``,
``order.reported_order_parameters``), so its numbers are the unmasked model's bit for bit.

The statistics C are the same for every mask. The masked entries of G do not enter A; the
action's prior is over the allowed entries (the parameters), and the log density every sampler
uses puts N(0, sigma_g2) on every entry (``action.marginal_logdensity``), so that the masked
coordinates are proper and nothing else depends on them.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from copyjax._checks import check_activation
from copyjax.data import copy_targets
from copyjax.model import shift_matrix, stats_contractions, uniform_matrix


class Mask:
    """A mask; subclasses set ``allowed`` (and where they differ the other facts). Hashable
    and compared by ``spec`` (the registry's name, ``masks.get(spec)`` gives it back), so a
    mask is a static argument of compiled code and a key of saved results."""

    spec: str = ""
    activations: tuple = ("softmax", "linear")

    def __hash__(self):
        return hash((type(self).__name__, self.spec))

    def __eq__(self, other):
        return isinstance(other, Mask) and type(other) is type(self) and other.spec == self.spec

    def __repr__(self):
        return f"Mask({self.spec!r})"

    # ---- the facts
    def allowed(self, L: int) -> np.ndarray:
        """``(L, L)`` bool: query l may attend to key m."""
        raise NotImplementedError

    def loss_rows(self, L: int) -> np.ndarray:
        """``(L,)`` bool: rows whose copy target x_{l-1} is among their keys."""
        ok = self.allowed(L)
        return ok[np.arange(L), (np.arange(L) - 1) % L]

    def copy_pattern(self, L: int, dtype=jnp.float32) -> jax.Array:
        """``(L, L)``: 1 at (l, l - 1) on the loss rows (the pattern a perfect copy head has)."""
        rows = np.flatnonzero(self.loss_rows(L))
        S = np.zeros((L, L))
        S[rows, (rows - 1) % L] = 1.0
        return jnp.asarray(S, dtype)

    def check(self, activation: str) -> str:
        check_activation(activation)
        if activation not in self.activations:
            raise ValueError(f"mask {self.spec!r} is built for activations {self.activations}, got {activation!r}")
        return activation

    def param_shape(self, L: int) -> tuple:
        """The shape of the attention scores G, the parameters a pattern is built from."""
        return (L, L)

    def target_matrix(self, L: int, dtype=jnp.float32):
        """``(L, L)`` T with targets y = T x; None: the shift S (y_l = x_{l-1})."""
        return None

    def targets(self, tokens: jax.Array) -> jax.Array:
        """The target token of each position of ``tokens: (..., L)``: x_{l-1}, cyclically."""
        return copy_targets(tokens)

    def copy_starts(self, L: int, activation: str, logit, dtype=jnp.float32) -> jax.Array:
        """``(n, *param_shape(L))``: the patterns chains start from besides the prior, one per
        ordered phase; here the copy pattern at copy logit ``logit`` (softmax) or the pattern
        itself (linear: A = G = S)."""
        S = self.copy_pattern(L, dtype)
        return (logit * S if activation == "softmax" else S)[None]

    def order_directions(self, L: int, dtype=jnp.float32) -> jax.Array:
        """``(2, *param_shape(L))``: the orthonormal basis ``U`` and ``(S - U) / sqrt(L - 1)``
        of span{U, S}, the pooling and copy directions of G along which adaptive MALA
        rescales its steps."""
        U, S = uniform_matrix(L, dtype), shift_matrix(L, dtype)
        return jnp.stack([U, (S - U) / jnp.sqrt(L - 1.0)])

    def layer_order(self, G: jax.Array, activation: str) -> dict:
        """Order parameters of each layer (``masks.stack``); none for one layer."""
        return {}

    layer_order_keys: tuple = ()  # the names ``layer_order`` returns

    def copy_coordinate_pattern(self, L: int, dtype=jnp.float32) -> jax.Array:
        """``param_shape(L)``: the pattern P with ``copy_coordinate(lambda P) = lambda`` (umbrella
        starts move along it): the copy pattern."""
        return self.copy_pattern(L, dtype)


    # ---- the model, from the facts
    def attention(self, G: jax.Array, activation: str) -> jax.Array:
        """``A: (..., L, L)``: softmax of each row over its allowed keys, or G on them
        (linear); exactly 0 on the masked entries whatever G holds there."""
        ok = jnp.asarray(self.allowed(G.shape[-1]))
        if activation == "linear":
            return jnp.where(ok, G, 0.0)
        return jax.nn.softmax(jnp.where(ok, G, -jnp.inf), axis=-1)

    def contractions(self, A: jax.Array, stats: jax.Array):
        """``(K, B, n)``: the loss's contractions over the loss rows (the others zeroed) and
        their number n (``action.action_from_KB(K, B, P, n, hyper)`` is the data action)."""
        rows = self.loss_rows(A.shape[-1])
        if not rows.all():
            A = jnp.where(jnp.asarray(rows)[:, None], A, 0.0)
        K, B = stats_contractions(A, stats, self.target_matrix(A.shape[-1], A.dtype))
        return K, B, int(rows.sum())

    def log_likelihood(self, W: jax.Array, A: jax.Array, stats: jax.Array, beta) -> jax.Array:
        """``-beta/(2n) sum_{loss rows} ||y - W h||^2`` through the statistics (n loss rows):
        ``tr(W K W^T) - 2 tr(W B) + P n`` over the rows' contractions."""
        from copyjax.data import stats_size

        K, B, n = self.contractions(A, stats)
        P = stats_size(stats).astype(A.dtype)
        return -beta * (jnp.sum((W @ K) * W) - 2 * jnp.sum(W * B.T) + P * n) / (2 * n)

    def row_weights(self, L: int):
        """``(L,)`` 1.0 on the loss rows, 0.0 elsewhere; None where every row carries loss."""
        rows = self.loss_rows(L)
        return None if rows.all() else jnp.asarray(rows, jnp.float32)

    def _keys(self, L: int) -> np.ndarray:
        return self.allowed(L).sum(axis=1)

    def row_copy_order(self, A: jax.Array) -> jax.Array:
        """``c_G(l) = (A[l, l-1] - s_l u_l) / (1 - u_l)`` on the loss rows (u_l = 1 / keys of
        row l, s_l the row sum): the coefficient of e_{l-1} when row l is fitted by least
        squares over its keys by c_1(l) u + c_G(l) e_{l-1}. ``(..., L, L) -> (..., n)``."""
        L = A.shape[-1]
        rows = np.flatnonzero(self.loss_rows(L))
        u = 1.0 / self._keys(L)[rows]
        return (A[..., rows, (rows - 1) % L] - jnp.sum(A[..., rows, :], axis=-1) * u) / (1.0 - u)

    def row_pool_order(self, A: jax.Array) -> jax.Array:
        """``c_1(l) = s_l - c_G(l)`` on the loss rows (1 - a_G(l) for softmax)."""
        rows = np.flatnonzero(self.loss_rows(A.shape[-1]))
        return jnp.sum(A[..., rows, :], axis=-1) - self.row_copy_order(A)

    def order(self, A: jax.Array, activation: str) -> dict:
        """The reported order parameters of ``A: (..., L, L)``: ``cG`` the mean over the loss
        rows of ``row_copy_order`` (0 for uniform pooling over each row's keys, 1 for exact
        copying), ``c1`` the mean of ``row_pool_order``; ``abs_rho`` and ``family`` 0 (the
        full mask's linear sign families have no analogue here)."""
        cG = jnp.mean(self.row_copy_order(A), axis=-1)
        zero = jnp.zeros_like(cG)
        return {"c1": jnp.mean(self.row_pool_order(A), axis=-1), "cG": cG, "abs_rho": zero, "family": zero}

    def copy_direction(self, L: int, dtype=jnp.float32) -> jax.Array:
        """``(L, L)``: D with ``<G, D>`` the copy logit above its row's mean over the allowed
        keys, averaged over the loss rows; ``<gamma copy_pattern, D> = gamma``; 0 on the
        masked entries."""
        S = self.copy_pattern(L, dtype)
        ok, rows = self.allowed(L), self.loss_rows(L)
        U = jnp.asarray(np.where(ok & rows[:, None], 1.0 / self._keys(L)[:, None], 0.0), dtype)
        D = S - U
        return D / jnp.sum(S * D)

    def copy_coordinate(self, G: jax.Array) -> jax.Array:
        """``xi(G) = <G, copy_direction(L)>``: the copy logit, ``(..., *param_shape) -> (...)``."""
        D = self.copy_direction(G.shape[-1], G.dtype)
        return jnp.sum(G * D, axis=tuple(range(-D.ndim, 0)))

    def divide(self, L: int) -> float:
        """The copy order parameter of the softmax pattern at copy logit log(L) / 2: the
        divide between the pooling and copy phases."""
        A = self.attention(0.5 * math.log(L) * self.copy_coordinate_pattern(L, jnp.float64), "softmax")
        return float(self.order(A, "softmax")["cG"])


__all__ = ["Mask"]
