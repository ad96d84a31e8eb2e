"""The causal mask: query l attends to keys m <= l (row 0 to itself only). Position 0 carries
no loss: its cyclic target x_{L-1} lies in its future, which a causal head cannot see, so
keeping it would charge every pattern the same unlearnable error and nothing else. The loss is
averaged over the n = L - 1 positions with a target, so beta keeps its meaning per position.
A row with l + 1 keys needs a copy logit of order ln(l + 1) to copy: the order parameter is per
row (``Mask.row_copy_order``, u_l = 1 / (l + 1)). Softmax only (docs/beyond.md: the linear
causal model's onset is ``causal_linear_onset``; its exact posterior runs under either)."""
from __future__ import annotations

import numpy as np

from copyjax.masks.base import Mask


class Causal(Mask):
    spec = "causal"

    def allowed(self, L: int) -> np.ndarray:
        return np.tril(np.ones((L, L), bool))


CAUSAL = Causal()

__all__ = ["CAUSAL", "Causal"]
