"""An architecture over a mask: one or two attention layers, with or without the residual
stream, trained on the shift-k target y_l = x_{l-k} (k = 1 the paper's task).

With positional attention in each layer and no value matrices, the features are a fixed linear
map of the one-hot tokens: one layer h = A x; two layers h = A_2 (x + A_1 x) with the residual
stream, h = A_2 A_1 x without. So the output is W A_eff x with

    A_eff = A_2 (I + A_1)   (residual)   or   A_2 A_1   (plain),

and the readout W integrates out exactly as for one layer (docs/theory.md): S_P(G_1, G_2) is
the one-layer action with A replaced by A_eff and the shift S by S^k, from the same pair
statistics C, one evaluation O(L^2 V^2 + L^3) whatever P is. ``Stack`` is a ``Mask``: every
function that takes ``mask=`` (the action, the samplers, the network, the order parameters)
takes one, with G of shape ``param_shape(L)``: ``(L, L)`` for one layer, ``(2, L, L)`` for two
(layer 1 first). Each layer attends under the base mask; a row carries the loss where its
target x_{l-k} is reachable through the layers (the base mask's loss rows when k = 1 and one
layer). ``masks.get("full+layers=2+shift=2")`` builds one (``specs.stack_spec``).

``first="uniform"`` (``+first=uniform``) freezes layer 1 at uniform pooling over each row's
keys, A_1 = U: A_eff = A_2 (I + U), the residual stream's pooled term without layer 1's
freedom, with G = G_2 of shape ``(L, L)`` the only parameter (an ablation of the two-layer
model).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from copyjax.masks.base import Mask
from copyjax.specs import StackSpec


class Stack(Mask):
    """``layers`` attention layers under ``base`` (a ``Mask``), ``residual`` stream or not,
    target shift ``shift``, layer 1 ``first``: ``"free"`` or frozen at ``"uniform"`` pooling."""

    def __init__(self, base: Mask, layers: int = 2, residual: bool = True, shift: int = 1, first: str = "free"):
        if isinstance(base, Stack):
            raise ValueError("mask: a stack's base must be a plain mask, got a stack")
        checked = StackSpec(base.spec, layers, bool(residual), shift, first).checked()
        self.base, self.layers, self.residual, self.shift = base, int(layers), bool(residual), int(shift)
        self.first = first
        self.spec = checked._replace(layers=self.layers, shift=self.shift).spec
        self.activations = base.activations

    # ---- the facts
    def allowed(self, L: int) -> np.ndarray:
        """Each layer's keys (the base mask's)."""
        return self.base.allowed(L)

    def reach(self, L: int) -> np.ndarray:
        """``(L, L)`` bool: key m reaches query l through the layers (the support of A_eff)."""
        a = self.base.allowed(L).astype(int)
        if self.layers == 1:
            return a > 0
        return (a @ (np.eye(L, dtype=int) + a) if self.residual else a @ a) > 0

    def loss_rows(self, L: int) -> np.ndarray:
        return self.reach(L)[np.arange(L), (np.arange(L) - self.shift) % L]

    def target_matrix(self, L: int, dtype=jnp.float32):
        """``S^k``: ``T[l, m] = delta(m, (l - k) mod L)``."""
        return jnp.roll(jnp.eye(L, dtype=dtype), -self.shift, axis=1)

    def targets(self, tokens):
        return jnp.roll(tokens, self.shift, axis=-1)

    def copy_pattern(self, L: int, dtype=jnp.float32):
        """``(L, L)``: 1 at (l, l - k) on the loss rows (the map a perfect copy of the target is)."""
        rows = np.flatnonzero(self.loss_rows(L))
        S = np.zeros((L, L))
        S[rows, (rows - self.shift) % L] = 1.0
        return jnp.asarray(S, dtype)

    @property
    def _one_parameter_layer(self) -> bool:
        """G is one layer's ``(L, L)``: one layer, or two with layer 1 frozen."""
        return self.layers == 1 or self.first != "free"

    def param_shape(self, L: int) -> tuple:
        return (L, L) if self._one_parameter_layer else (self.layers, L, L)

    def check(self, activation: str) -> str:
        return self.base.check(activation)

    def _shift(self, L: int, k: int, dtype):
        return jnp.roll(jnp.eye(L, dtype=dtype), -k, axis=1)

    def copy_starts(self, L: int, activation: str, logit, dtype=jnp.float32):
        """One layer: the copy pattern (of x_{l-k}). Two layers, one start per ordered phase:
        ``one_layer`` (layer 2 copies x_{l-k} itself: A_2 ~ S^k; layer 1 attends to the token
        itself, A_1 ~ I, which the plain stack needs to pass x through and the residual one
        does not mind), then ``composed`` (layer 1 a previous-token head, A_1 ~ S; layer 2
        copies the rest, A_2 ~ S^(k-1)). Softmax at logit ``logit``, linear the patterns."""
        if self._one_parameter_layer:
            return Mask.copy_starts(self, L, activation, logit, dtype)
        eye, S1 = self._shift(L, 0, dtype), self._shift(L, 1, dtype)
        Sk, Sk1 = self._shift(L, self.shift, dtype), self._shift(L, self.shift - 1, dtype)
        ok = jnp.asarray(self.base.allowed(L), dtype)
        pats = jnp.stack([jnp.stack([eye, Sk]), jnp.stack([S1, Sk1])]) * ok
        return logit * pats if activation == "softmax" else pats

    PHASES = ("one_layer", "composed")

    def order_directions(self, L: int, dtype=jnp.float32):
        """Each layer's U and ``(S - U) / sqrt(L - 1)`` in its own slot of G: ``(2 layers,
        layers, L, L)``, orthonormal (the layers' slots are disjoint)."""
        D = Mask.order_directions(self, L, dtype)
        if self._one_parameter_layer:
            return D
        out = jnp.zeros((2 * self.layers, self.layers, L, L), dtype)
        for i in range(self.layers):
            out = out.at[2 * i:2 * i + 2, i].set(D)
        return out

    @property
    def layer_order_keys(self) -> tuple:
        return () if self.layers == 1 else tuple(f"A{i + 1}_{n}" for i in range(self.layers) for n in ("I", "S", "S2"))

    def layer_order(self, G: jax.Array, activation: str) -> dict:
        """Per layer i (1, 2) the mean over rows of its pattern's weight on the token itself
        (``A{i}_I``), the previous one (``A{i}_S``) and the one before (``A{i}_S2``): which
        layer copies what. None for one layer."""
        if self.layers == 1:
            return {}
        A = self.layer_patterns(G, activation)
        L = A.shape[-1]
        r = np.arange(L)
        out = {f"A{i + 1}_{name}": jnp.mean(A[..., i, r, (r - k) % L], axis=-1)
               for i in range(self.layers) for name, k in (("I", 0), ("S", 1), ("S2", 2))}
        return {k: out[k] for k in self.layer_order_keys}

    # ---- the model
    def layer_patterns(self, G: jax.Array, activation: str) -> jax.Array:
        """Each layer's pattern under the base mask: ``G: (..., layers, L, L)`` (one layer:
        ``(..., L, L)``) -> the same shape; with layer 1 frozen, ``G: (..., L, L)`` (layer 2)
        -> ``(..., 2, L, L)``, layer 1 uniform over each row's keys."""
        A = self.base.attention(G, activation)
        if self.first == "free":
            return A
        ok = self.base.allowed(G.shape[-1])
        pool = jnp.broadcast_to(jnp.asarray(ok / ok.sum(axis=1, keepdims=True), A.dtype), A.shape)
        return jnp.stack([pool, A], axis=-3)

    def attention(self, G: jax.Array, activation: str) -> jax.Array:
        """``A_eff: (..., L, L)``: the map from the one-hot tokens to the features."""
        A = self.layer_patterns(G, activation)
        if self.layers == 1:
            return A
        A1, A2 = A[..., 0, :, :], A[..., 1, :, :]
        return A2 @ (jnp.eye(A.shape[-1], dtype=A.dtype) + A1) if self.residual else A2 @ A1

    def log_likelihood(self, W, A, stats, beta):
        return Mask.log_likelihood(self, W, A, stats, beta)

    def _keys(self, L: int) -> np.ndarray:
        return self.reach(L).sum(axis=1)

    def row_copy_order(self, A: jax.Array) -> jax.Array:
        """``c_G(l) = (A[l, l-k] - s_l u_l) / (1 - u_l)`` on the loss rows (u_l = 1 / the keys
        row l reaches, s_l its row sum): the weight of the target above uniform pooling."""
        L = A.shape[-1]
        rows = np.flatnonzero(self.loss_rows(L))
        u = 1.0 / self._keys(L)[rows]
        return (A[..., rows, (rows - self.shift) % L] - jnp.sum(A[..., rows, :], axis=-1) * u) / (1.0 - u)

    def order(self, A: jax.Array, activation: str) -> dict:
        """Of ``A_eff``: ``cG`` the composition order parameter (the target's weight above
        uniform pooling, averaged over the loss rows; 1 for an exact copy of x_{l-k}), ``c1``
        the rest of the row sum (softmax with the residual stream: of A_eff / 2, whose rows
        sum to 1). One layer with k = 1 is the base mask's own order parameters."""
        if self.layers == 1 and self.shift == 1:
            return self.base.order(A, activation)
        if self.layers == 2 and self.residual and activation == "softmax":
            # rows of A_2 (I + A_1) sum to 2: halved, a stochastic matrix, c_G on one layer's scale
            A = 0.5 * A
        return Mask.order(self, A, activation)

    def divide(self, L: int) -> float:
        return self.base.divide(L) if self.layers == 1 and self.shift == 1 else Mask.divide(self, L)

    def _layer_direction(self, L: int, dtype):
        """``(L, L)``: one layer's copy logit of x_{l-k} above its row's mean over the base
        mask's keys, averaged over the loss rows; ``<lambda S^k, D> = lambda``."""
        S = self.copy_pattern(L, dtype)
        ok, rows = self.base.allowed(L), self.loss_rows(L)
        U = jnp.asarray(np.where(ok & rows[:, None], 1.0 / ok.sum(axis=1)[:, None], 0.0), dtype)
        D = S - U
        return D / jnp.sum(S * D)

    def copy_direction(self, L: int, dtype=jnp.float32):
        """The copy coordinate umbrella sampling biases: layer 2's (the last layer's) copy logit
        of the target x_{l-k}, layer 1 free. Along it the one-layer circuit forms; a composed
        one shows in the per-layer order parameters of the windows' draws."""
        if self.layers == 1 and self.shift == 1:
            return self.base.copy_direction(L, dtype)
        D = self._layer_direction(L, dtype)
        return D if self._one_parameter_layer else jnp.zeros((self.layers, L, L), dtype).at[-1].set(D)

    def copy_coordinate_pattern(self, L: int, dtype=jnp.float32):
        """Layer 2's copy pattern; without the residual stream layer 1 attending to the token
        itself as well (else A_eff = A_2 U = U copies nothing whatever layer 2 does). Layer 1
        does not enter the coordinate, so ``copy_coordinate(lambda P) = lambda`` still."""
        S = self.copy_pattern(L, dtype)
        if self._one_parameter_layer:
            return S
        first = jnp.zeros((L, L), dtype) if self.residual else self._shift(L, 0, dtype) * self.base.allowed(L)
        return jnp.stack([first, S])


__all__ = ["Stack"]
