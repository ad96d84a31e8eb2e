"""Sliding-window (local) attention: query l attends to the keys l - w .. l (``window:w``,
w >= 1), causal and not cyclic, so row 0 carries no loss as under the causal mask (which is
``window:L-1``). Every loss row has at most w + 1 keys, so a copy logit of order ln(w + 1)
copies at every position, where the causal mask needs ln(l + 1) at row l."""
from __future__ import annotations

import numpy as np

from copyjax.masks.base import Mask


class Window(Mask):
    def __init__(self, w: int):
        if not (isinstance(w, (int, np.integer)) and w >= 1):
            raise ValueError(f"window width w must be an integer >= 1, got {w!r}")
        self.w = int(w)
        self.spec = f"window:{self.w}"

    def allowed(self, L: int) -> np.ndarray:
        query, key = np.arange(L)[:, None], np.arange(L)[None, :]
        return (key <= query) & (key >= query - self.w)


__all__ = ["Window"]
