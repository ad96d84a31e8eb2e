"""The full cyclic mask: every query attends to every key, every row carries the loss (the
target of row 0 is x_{L-1}, the sequence read cyclically). The paper's model: the pattern,
order parameters and copy coordinate are the unmasked model's own."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from copyjax.masks.base import Mask
from copyjax.model import attention, log_likelihood_from_stats, shift_matrix, uniform_matrix
from copyjax.order import reported_order_parameters


class Full(Mask):
    spec = "full"

    def allowed(self, L: int) -> np.ndarray:
        return np.ones((L, L), bool)

    def copy_pattern(self, L: int, dtype=jnp.float32) -> jax.Array:
        return shift_matrix(L, dtype)

    def attention(self, G, activation):
        return attention(G, activation)

    def log_likelihood(self, W, A, stats, beta):
        return log_likelihood_from_stats(W, A, stats, beta)

    def order(self, A, activation):
        """``order.reported_order_parameters``: the oblique projection on U and S; for linear
        attention |c_G|, |rho| and the sign family."""
        return reported_order_parameters(A, activation)

    def copy_direction(self, L: int, dtype=jnp.float32):
        """``(S - U) / <S, S - U>``, so that ``xi(G) = <G, D>`` and ``xi(lambda S) = lambda``."""
        S, U = shift_matrix(L, dtype), uniform_matrix(L, dtype)
        return (S - U) / jnp.sum(S * (S - U))


FULL = Full()

__all__ = ["FULL", "Full"]
