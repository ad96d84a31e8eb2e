"""Phase weights from local quantities, to set beside the free energy's measured log-odds.

Two predictions of ``log(Z_copy / Z_pool)``, ``Z_phase`` the posterior mass of a phase:

* singular learning theory's: ``-n [L_n(w*_a) - L_n(w*_b)] - (lambda_a -
  lambda_b) log n`` from the losses and the learning coefficients at the two minima
  (``slt_log_odds``); it assumes both minima are minima of L_n and n large against the
  effective dimension, neither of which holds here (docs/llc.md);
* Laplace's in G with W integrated exactly: ``log Z ≈ -S_P(G_m) + (d/2) log 2 pi - (1/2) log
  det H(G_m)`` at the mode ``G_m`` of the G-marginal in the phase (``laplace_log_mass``): the
  prior, W's entropy and the Gaussian width of every G direction included, only the
  anharmonicity of the basin left out.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from copyjax._checks import check_activation, check_positive, check_size, check_square, check_stats
from copyjax._optim import lbfgs_minimize
from copyjax.action import exact_action
from copyjax.data import compute_dtype


class LaplaceMass(NamedTuple):
    """Laplace's approximation of one basin's mass of ``exp(-S_P(G))``: the mode ``G: (L, L)``
    reached from the start, ``action`` S_P there, ``logdet`` of the Hessian of S_P (d = L^2
    directions), ``log_mass = -action + (d/2) log 2 pi - logdet / 2``, ``grad_max`` the largest
    gradient entry left at the mode, ``min_eig`` the Hessian's smallest eigenvalue (> 0 at a
    minimum), ``n_steps`` the L-BFGS iterations used."""

    G: np.ndarray
    action: float
    logdet: float
    log_mass: float
    grad_max: float
    min_eig: float
    n_steps: int


def _hessian(fun, x, batch: int):
    """The dense Hessian of ``fun`` at ``x: (L, L)`` as ``(d, d)``, one Hessian-vector product
    per basis direction, ``batch`` at a time (memory ~ batch times one gradient's). Reverse over
    reverse (the vjp of the gradient; H is symmetric): the statistics' contraction is a
    ``custom_vjp``, which has no forward mode."""
    d = x.size
    _, vjp = jax.vjp(jax.grad(fun), x)
    hvp = lambda v: vjp(v.reshape(x.shape))[0].reshape(-1)
    H = jax.lax.map(hvp, jnp.eye(d, dtype=x.dtype), batch_size=batch)
    return 0.5 * (H + H.T)


def laplace_log_mass(G0, stats, hyper, activation: str, *, max_steps: int = 3000, tol: float = 1e-7,
                     batch: int = 32) -> LaplaceMass:
    """Laplace's log mass of the basin of ``exp(-S_P(G))`` that L-BFGS reaches from ``G0: (L,
    L)`` on ``stats: (L, L, V, V)`` (the exact action: W integrated, G's prior included).
    Compute in float64 (the caller enables x64): the log det of an L^2 x L^2 Hessian."""
    check_activation(activation)
    L = check_square("G0", G0)
    check_stats(stats, L)
    check_size("max_steps", max_steps, 1)
    check_size("batch", batch, 1)
    if tol < 0:
        raise ValueError(f"tol must be >= 0, got {tol}")
    fun = lambda G: exact_action(G, stats, hyper, activation)

    @jax.jit
    def run(G0):
        G, n = lbfgs_minimize(fun, G0, max_steps=max_steps, tol=tol)
        H = _hessian(fun, G, batch)
        eig = jnp.linalg.eigvalsh(H)
        return G, fun(G), jnp.sum(jnp.log(eig)), eig[0], jnp.max(jnp.abs(jax.grad(fun)(G))), n

    G, S, logdet, lo, g, n = run(jnp.asarray(G0, compute_dtype(stats)))
    d = L * L
    logdet = float(logdet) if float(lo) > 0 else float("nan")
    return LaplaceMass(np.asarray(G), float(S), logdet, -float(S) + 0.5 * d * math.log(2 * math.pi) - 0.5 * logdet,
                       float(g), float(lo), int(n))


def exact_mode(G0, stats, hyper, activation: str, mask="full", max_steps: int = 400) -> jax.Array:
    """The mode of ``exp(-S_P(G))`` under ``mask`` that L-BFGS reaches from ``G0: (L, L)``
    (``action.exact_action``; the masked entries, which carry no prior in the action and which
    A never sees, stay where they start). ``(L, L)``."""
    check_activation(activation)
    L = check_square("G0", G0)
    check_stats(stats, L)
    check_size("max_steps", max_steps, 1)
    G, _ = lbfgs_minimize(lambda G: exact_action(G, stats, hyper, activation, mask), jnp.asarray(G0),
                          max_steps=max_steps)
    return G


def slt_log_odds(n: float, loss_a: float, loss_b: float, llc_a: float, llc_b: float) -> float:
    """Singular learning theory's ``log(Z_a / Z_b) ≈ -n (L_n(w*_a) - L_n(w*_b)) - (lambda_a -
    lambda_b) log n`` (the O(1) terms dropped); ``n`` the number of samples (> 1)."""
    check_positive("n", n)
    if not n > 1:
        raise ValueError(f"n must be > 1 (log n enters), got {n}")
    return float(-n * (loss_a - loss_b) - (llc_a - llc_b) * math.log(n))


__all__ = ["exact_mode", "LaplaceMass", "laplace_log_mass", "slt_log_odds"]
