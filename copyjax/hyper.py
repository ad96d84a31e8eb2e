"""Hyperparameters of the Bayesian copy-task model (design doc section 1)."""
from __future__ import annotations

from typing import NamedTuple

from copyjax._checks import check_activation, check_positive, check_size


class _HyperFields(NamedTuple):
    beta: float
    sigma_w2: float
    sigma_g2: float


class Hyper(_HyperFields):
    """Inverse temperature ``beta`` and prior variances.

    ``W_ij ~ N(0, sigma_w2 / V)``, ``G_lm ~ N(0, sigma_g2)``. A NamedTuple, hence a
    JAX pytree: it can be passed through ``jit`` and ``vmap``. Concrete values are
    checked to be finite and > 0 on construction.
    """

    __slots__ = ()

    def __new__(cls, beta=1.0, sigma_w2=1.0, sigma_g2=1.0):
        # JAX rebuilds pytrees with placeholder leaves; only check real numbers.
        for name, v in (("beta", beta), ("sigma_w2", sigma_w2), ("sigma_g2", sigma_g2)):
            if isinstance(v, (int, float)) or hasattr(v, "dtype"):
                check_positive(name, v)
        return super().__new__(cls, beta, sigma_w2, sigma_g2)


def default_hyper(activation: str, L: int) -> Hyper:
    """Design-doc defaults: beta = sigma_w2 = 1; sigma_g2 = 1 (softmax) or 1/L (linear).

    The linear choice keeps the prior row sums of A = G of order one.
    """
    check_activation(activation)
    L = check_size("L", L, 2)
    return Hyper(1.0, 1.0, 1.0 if activation == "softmax" else 1.0 / L)
