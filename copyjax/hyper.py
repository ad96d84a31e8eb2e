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
            if isinstance(v, (str, bytes, complex)):
                raise TypeError(f"{name} must be a finite real number > 0, got {v!r}")
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


LOSS_NORMS = ("mean", "sum")
W_PRIORS = ("per_V", "unit")
G_PRIORS = ("design", "unit", "per_L")


def normalised_hyper(activation: str, L: int, V: int, loss: str = "mean", w_prior: str = "per_V",
                     g_prior: str = "design") -> Hyper:
    """Hyperparameters for other normalisations of the same model, expressed in copyjax's
    (beta, sigma_w2, sigma_g2); the defaults give ``default_hyper``.

    ``loss``: "mean" (the design doc's 1/(2L) sum over positions) or "sum" (no 1/L:
    beta -> beta L). ``w_prior``: "per_V" (W_ij ~ N(0, 1/V)) or "unit" (N(0, 1):
    sigma_w2 -> V). ``g_prior``: "design" (1 for softmax, 1/L for linear), "unit" (1) or
    "per_L" (1/L). These are the choices that set the exponents of the transition points
    (docs/theory.md section 9).
    """
    check_activation(activation)
    L, V = check_size("L", L, 2), check_size("V", V, 2)
    for name, v, allowed in (("loss", loss, LOSS_NORMS), ("w_prior", w_prior, W_PRIORS),
                             ("g_prior", g_prior, G_PRIORS)):
        if v not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {v!r}")
    base = default_hyper(activation, L)
    beta = base.beta * (L if loss == "sum" else 1.0)
    sigma_w2 = base.sigma_w2 * (V if w_prior == "unit" else 1.0)
    sigma_g2 = {"design": base.sigma_g2, "unit": 1.0, "per_L": 1.0 / L}[g_prior]
    return Hyper(beta, sigma_w2, sigma_g2)


def auto_step_size(P: float, V: int, hyper: Hyper, scale: float = 0.05) -> float:
    """``scale / lambda_W``: lambda_W = beta P / V + V / sigma_w2 is the largest curvature of
    -log p in W (reached on span{U, S}), the stiffest direction of the posterior; a Langevin
    step eps (noise sqrt(2 eps)) of this size is stable there."""
    return scale / (hyper.beta * P / V + V / hyper.sigma_w2)


__all__ = ["auto_step_size", "default_hyper", "G_PRIORS", "Hyper", "LOSS_NORMS", "normalised_hyper", "W_PRIORS"]

