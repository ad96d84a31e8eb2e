"""Softmax attention in order-parameter space: the MAP energy along the copy ansatz and the
mean field over logistic-normal rows with two multipliers (docs/theory.md section 7)."""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from copyjax._checks import check_size
from copyjax.tokens import token_law
from copyjax.reduced.newton import newton_root
from copyjax.reduced.sector import _require_iid, pattern_scalars, sector_action


def copy_ansatz(gamma, L: int):
    """Softmax row with logit gamma at the copy position and 0 elsewhere:
    returns ``(p, q)``, the copy weight and each other weight; ``a_G = p - q``."""
    logZ = jnp.logaddexp(gamma, jnp.log(L - 1.0))
    return jnp.exp(gamma - logZ), jnp.exp(-logZ)


def softmax_energy(gamma, P, L: int, V: int, hyper, occam: bool = True, tokens=None):
    """MAP-form reduced action of softmax attention along the symmetric copy ansatz
    ``G[l, :] = gamma (e_{l-1} - 1/L)`` (zero-mean rows: the least prior cost for the
    pattern). The pattern is ``a_G S + (1 - a_G) U`` exactly, ``a_G = p - q``. Any token law:
    under a Markov law the scalars are R-weighted (``pattern_scalars``)."""
    p, q = copy_ansatz(gamma, L)
    if token_law(tokens).kind == "markov":
        A = q * jnp.ones((L, L), jnp.result_type(q)) + (p - q) * jnp.roll(jnp.eye(L, dtype=jnp.result_type(q)), -1, axis=1)
        a, _, g, _ = pattern_scalars(A, tokens)
    else:
        a, g = L * (p**2 + (L - 1) * q**2), L * p
    data = sector_action(a, L, g, L, P, L, V, hyper, occam, tokens)
    return data + L * (1 - 1 / L) * gamma**2 / (2 * hyper.sigma_g2)


def softmax_aG(gamma, L: int):
    p, q = copy_ansatz(gamma, L)
    return p - q


ROW_LAW_SEED = 20260601  # the bulk draws of every row law: fixed, so the mean field is deterministic


class RowLaw(NamedTuple):
    """Prior law of one softmax row, reduced to what the action sees.

    ``z: (nz,)`` grid of the copy logit with log quadrature weights ``logw`` (Gaussian
    prior included); ``log_z1, log_z2: (nb,)`` draws of log sum_j e^{z_j} and
    log sum_j e^{2 z_j} over the L - 1 other logits. A row's squared norm and copy weight
    are ``n = (e^{2z} + Z2) / (e^z + Z1)^2`` and ``p = e^z / (e^z + Z1)``.
    """

    z: jax.Array
    logw: jax.Array
    log_z1: jax.Array
    log_z2: jax.Array


def row_law(key, L: int, sigma_g2: float, P_max: float, beta: float = 1.0,
            n_bulk: int = 256, n_z: int = 768, dtype=jnp.float64) -> RowLaw:
    """Build the row law: bulk sums by Monte Carlo from the prior (fixed draws, so the
    mean field is a smooth deterministic function), the copy logit by quadrature on a grid
    wide enough for the tilts that data up to ``P_max`` can exert (a row gains at most
    ~beta P / L from copying, so the tilted copy logit stays below
    sigma (8 + sqrt(2 beta P_max / L)))."""
    L = check_size("L", L, 2)
    sd = float(np.sqrt(sigma_g2))
    z = jnp.linspace(-8 * sd, sd * (8 + np.sqrt(2 * beta * P_max / L)), n_z, dtype=dtype)
    dz = z[1] - z[0]
    logw = -0.5 * z**2 / sigma_g2 - 0.5 * jnp.log(2 * jnp.pi * sigma_g2) + jnp.log(dz)
    logw = logw - jax.nn.logsumexp(logw)
    bulk = sd * jax.random.normal(key, (n_bulk, L - 1), dtype)
    return RowLaw(z, logw, jax.nn.logsumexp(bulk, axis=1), jax.nn.logsumexp(2 * bulk, axis=1))


@lru_cache(maxsize=16)
def _cached_row_law(L, sigma_g2, P_max, beta, n_bulk, n_z, x64):
    # x64: one law per precision (the theory builds its laws in float64, a float32 caller's
    # sampler its own), so that a law cached in one mode is not handed to the other
    return row_law(jax.random.key(ROW_LAW_SEED), L, sigma_g2, P_max, beta, n_bulk=n_bulk, n_z=n_z,
                   dtype=jnp.float64 if x64 else jnp.float32)


def law_for(L: int, hyper, P_max: float, n_bulk: int = 256, n_z: int = 768) -> RowLaw:
    """The one cached row law per (L, hyper, P_max, sizes), from the fixed key
    ``ROW_LAW_SEED``; ``P_max`` is rounded up to a power of two (at least 64) so that nearby
    sweeps share it. The theory's minima and transitions use the default sizes; the
    order-parameter sampler a cheaper law (``op_posterior.sampling_law``)."""
    P_max = float(2.0 ** math.ceil(math.log2(max(P_max, 64.0))))
    return _cached_row_law(int(L), float(hyper.sigma_g2), P_max, float(hyper.beta), int(n_bulk), int(n_z),
                           bool(jax.config.jax_enable_x64))


def _row_stats(law: RowLaw):
    z = law.z[:, None]
    logZ = jnp.logaddexp(z, law.log_z1[None, :])
    n = jnp.exp(jnp.logaddexp(2 * z, law.log_z2[None, :]) - 2 * logZ)
    p = jnp.exp(z - logZ)
    return n, p


def row_cumulant(lam_a, mu_g, law: RowLaw):
    """``Lambda(lam_a, mu_g) = log E_prior exp(lam_a n + mu_g p)`` for one row."""
    n, p = _row_stats(law)
    logw = law.logw[:, None] - jnp.log(law.log_z1.shape[0])
    return jax.nn.logsumexp(logw + lam_a * n + mu_g * p)


def softmax_free_energy(m, P, L: int, V: int, hyper, law: RowLaw, tokens=None):
    """Mean-field action of softmax attention at multipliers ``m = (lam_a, mu_g)``.

    Rows are i.i.d. logistic-normal under the prior and couple only through
    ``a = sum_l n_l`` and ``g = sum_l p_l``; at large L these concentrate with rate
    ``L I(x, y)``, I the Legendre transform of the row cumulant. Parametrised by the
    multipliers, ``x = dLambda/dlam``, ``y = dLambda/dmu`` and
    ``Phi = F(L x, L, L y, L) + L (lam x + mu y - Lambda)``. Its stationary points are the
    mean-field phases (``lam = -dF/da``, ``mu = -dF/dg``). Returns ``(Phi, x, y)``.
    """
    _require_iid(tokens, "the mean field over rows")
    lam_a, mu_g = m[..., 0], m[..., 1]
    Lam, (x, y) = jax.value_and_grad(row_cumulant, argnums=(0, 1))(lam_a, mu_g, law)
    Phi = sector_action(L * x, L, L * y, L, P, L, V, hyper, tokens=tokens) + L * (lam_a * x + mu_g * y - Lam)
    return Phi, x, y


def row_table(law: RowLaw):
    """``(n, p, logw)``, each ``(n_z, n_bulk)``: a row's squared norm, copy weight and log
    prior weight on the law's grid, the part of ``row_moments`` that does not depend on the
    multipliers (compute it once outside a loop over m)."""
    n, p = _row_stats(law)
    return n, p, law.logw[:, None] - jnp.log(law.log_z1.shape[0])


def row_moments(m, law: RowLaw, table=None):
    """``Lambda`` and its first two derivatives at ``m = (lam_a, mu_g)`` in one pass:
    the tilted mean ``(x, y)`` and covariance ``(C_nn, C_np, C_pp)`` of a row's (n, p).
    Same values as autodiff of ``row_cumulant``, but its own gradient is one reverse
    pass (nested ``jax.hessian`` under ``jax.grad`` costs several): this is what makes
    NUTS in order-parameter space affordable. ``table``: ``row_table(law)``, precomputed."""
    n, p, logw = row_table(law) if table is None else table
    logits = logw + m[..., 0] * n + m[..., 1] * p
    top = jax.lax.stop_gradient(jnp.max(logits))
    e = jnp.exp(logits - top)  # one exp per grid point (logsumexp then exp(logits - Lam) took two)
    Z = jnp.sum(e)
    Lam = top + jnp.log(Z)
    w = e / Z
    x, y = jnp.sum(w * n), jnp.sum(w * p)
    dn, dp = n - x, p - y
    return Lam, x, y, jnp.sum(w * dn * dn), jnp.sum(w * dn * dp), jnp.sum(w * dp * dp)


def softmax_posterior_action(m, P, L: int, V: int, hyper, law: RowLaw, tokens=None):
    """Negative log posterior density of the mean-field macrostate in the coordinates
    ``m = (lam_a, mu_g)``: ``Phi - log det Hess Lambda`` (Jacobian of m -> (x, y))."""
    _require_iid(tokens, "the mean field over rows")
    Lam, x, y, cnn, cnp, cpp = row_moments(m, law)
    Phi = sector_action(L * x, L, L * y, L, P, L, V, hyper, tokens=tokens) + L * (m[0] * x + m[1] * y - Lam)
    return Phi - jnp.log(cnn * cpp - cnp**2)


def aG_from_y(y, L: int):
    """Copy order parameter from the mean copy weight per row: ``(L y - 1) / (L - 1)``."""
    return (L * y - 1) / (L - 1)


def softmax_mf_map(m, P, L: int, V: int, hyper, law: RowLaw, tokens=None):
    """The self-consistency map of the mean field: ``m -> (-dF/da, -dF/dg)`` at
    ``(a, g) = L grad Lambda(m)``. Its fixed points are the stationary points of
    ``Psi(x, y) = F(L x, L, L y, L) + L I(x, y)``."""
    _require_iid(tokens, "the mean field over rows")
    x, y = jax.grad(row_cumulant, argnums=(0, 1))(m[0], m[1], law)
    dFa, dFg = jax.grad(sector_action, argnums=(0, 2))(L * x, L, L * y, L, P, L, V, hyper, True, tokens)
    return -jnp.stack([dFa, dFg])


def softmax_mf_newton(m0, P, L: int, V: int, hyper, law: RowLaw, steps: int = 30, max_step: float = 5.0,
                      tokens=None, tol: float | None = None):
    """Newton on the mean field's self-consistency ``m = softmax_mf_map(m)`` from ``m0: (2,)``,
    with its Jacobian in closed form, ``I + L Hess F(a, g) Cov(n, p)`` (the tilted covariance
    is ``d(x, y)/dm``), from one pass over the row law per evaluation (``row_moments`` on a
    precomputed ``row_table``); autodiff's ``jacfwd`` through ``jax.grad(row_cumulant)``
    costs several passes and recomputes the table each step. Returns ``(m, max |residual|,
    Phi, x, y, lowest eigenvalue of softmax_mf_hessian)`` at the last iterate. ``tol``:
    ``newton_root``'s early stop (each pass over the row law is the cost)."""
    _require_iid(tokens, "the mean field over rows")
    table = row_table(law)

    def parts(m):
        Lam, x, y, cnn, cnp, cpp = row_moments(m, law, table)
        F = lambda v: sector_action(v[0], L, v[1], L, P, L, V, hyper, tokens=tokens)
        ag = jnp.stack([L * x, L * y])
        C = jnp.array([[cnn, cnp], [cnp, cpp]])
        return Lam, x, y, C, jax.grad(F)(ag), jax.hessian(F)(ag)

    def resid_and_jac(m):
        *_, C, dF, HF = parts(m)
        return m + dF, jnp.eye(2, dtype=m.dtype) + L * HF @ C

    m = newton_root(resid_and_jac, m0, steps=steps, max_step=max_step, with_jacobian=True, tol=tol)
    Lam, x, y, C, dF, HF = parts(m)
    Phi = sector_action(L * x, L, L * y, L, P, L, V, hyper, tokens=tokens) + L * (m[0] * x + m[1] * y - Lam)
    H = L**2 * HF + L * jnp.linalg.inv(C)
    return m, jnp.max(jnp.abs(m + dF)), Phi, x, y, jnp.linalg.eigvalsh(H)[0]


def softmax_mf_hessian(m, P, L: int, V: int, hyper, law: RowLaw, tokens=None):
    """Hessian of ``Psi`` in the macroscopic coordinates (x, y) at the state ``m``:
    ``L^2 Hess F + L (Hess Lambda)^-1`` (Hess I is the inverse of Hess Lambda)."""
    _require_iid(tokens, "the mean field over rows")
    x, y = jax.grad(row_cumulant, argnums=(0, 1))(m[0], m[1], law)
    HF = jax.hessian(lambda v: sector_action(L * v[0], L, L * v[1], L, P, L, V, hyper, tokens=tokens))(
        jnp.stack([x, y]))
    HL = jax.hessian(lambda v: row_cumulant(v[0], v[1], law))(m)
    return HF + L * jnp.linalg.inv(HL)


__all__ = ["aG_from_y", "copy_ansatz", "law_for", "row_cumulant", "row_law", "ROW_LAW_SEED", "row_moments", "row_table", "RowLaw", "softmax_aG", "softmax_energy", "softmax_free_energy", "softmax_mf_hessian", "softmax_mf_map", "softmax_mf_newton", "softmax_posterior_action"]
