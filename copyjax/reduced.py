"""Large-P reduced actions in order-parameter space (docs/theory.md, sections 5-7).

With the expected statistics the exact action depends on A only through four scalars,
``a = ||A||_F^2``, ``r = ||A 1||^2``, ``g = <A, S>``, ``s = 1^T A 1``, split over two token
sectors (mean direction, multiplicity 1; its complement, multiplicity V - 1):

    F(a, r, g, s) = (V - 1) f(a, g) + f(r, s) + beta P / 2,
    f(x, y) = V/2 log(1 + kappa x) - lam kappa y^2 / (1 + kappa x),
    kappa = beta sigma_w2 P / (L V^2),   lam = beta P / (2 L V).

Linear attention (A = G = c_1 U + c_G S + R_row + R_bulk):
    ``linear_energy``          MAP form, residuals at zero, a function of (c_1, c_G);
    ``linear_posterior_action`` exact negative log density of (c_1, c_G, log t_row, log t_bulk)
                               (residual norms integrated radially, Jacobian included);
    ``linear_profile``         the posterior form in (c_1, c_G): saddle over the two norms.
Softmax attention (rows of A logistic-normal under the prior):
    ``softmax_energy``         MAP form along the symmetric copy ansatz, a function of the
                               copy logit gamma;
    ``row_law`` / ``softmax_free_energy`` / ``softmax_posterior_action``
                               mean field over rows with two multipliers (lam_a, mu_g).
All functions are pure jnp, differentiable and jit-able; P may be traced.
"""
from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from copyjax._checks import check_size
from copyjax.tokens import UNIFORM, marginal, token_law


def _consts(P, L, V, hyper):
    kappa = hyper.beta * hyper.sigma_w2 * P / (L * V**2)
    lam = hyper.beta * P / (2 * L * V)
    return kappa, lam


def sector_action(a, r, g, s, P, L: int, V: int, hyper, occam: bool = True, tokens=None):
    """Data part of the action at the expected statistics, from the four scalars.

    ``occam=False`` drops ``(V/2) log det M``, the Occam factor of integrating W out: what
    is left is ``-max_W log p(W, G | data)`` minus the G prior, the energy that joint MAP
    training (Adam on (W, G)) minimises. ``tokens``: the token law (``copyjax.tokens``;
    default uniform): an i.i.d. law goes to ``iid_sector_action``; a Markov law keeps the two
    commuting sectors (its marginal is uniform, ``E C_mn / P = R_mn I / V + (1 - R_mn) J / V^2``
    with ``R_mn = Q^|m-n|``), so this same form holds with a and g the R-weighted scalars
    ``tr(A^T A R)`` and ``tr(A^T S R)`` of ``pattern_scalars(A, tokens)``."""
    law = token_law(tokens)
    if law.iid and law != UNIFORM:
        return iid_sector_action(a, r, g, s, P, L, V, hyper, occam, law)
    kappa, lam = _consts(P, L, V, hyper)

    def f(x, y):
        occ = 0.5 * V * jnp.log1p(kappa * x) if occam else 0.0
        return occ - lam * kappa * y**2 / (1 + kappa * x)

    return (V - 1) * f(a, g) + f(r, s) + 0.5 * hyper.beta * P


def _require_iid(tokens, where: str):
    law = token_law(tokens)
    if not law.iid:
        raise ValueError(f"tokens={law.spec!r}: {where} needs i.i.d. tokens (under a Markov law a pattern's scalars "
                         "are R-weighted, tr(A^T A R), which depend on where in each row the weight sits); "
                         "the MAP form along the copy ansatz (softmax_energy) and the exact action on "
                         "data.expected_stats(..., tokens=...) take any law")
    return law


def _iid_law(law, V, dtype):
    """The marginal p of an i.i.d. law (``_require_iid``'s error for a Markov one)."""
    return marginal(_require_iid(law, "the i.i.d. four-scalar action"), V, dtype)


def iid_sector_action(a, r, g, s, P, L: int, V: int, hyper, occam: bool = True, tokens=None):
    """``sector_action`` for i.i.d. tokens of marginal p (``tokens``: zipf or uniform).

    ``E C_mn = P [delta_mn D + (1 - delta_mn) p p^T]``, D = diag(p), so
    ``K = P [a D + (r - a) p p^T]`` and ``B = P [g D + (s - g) p p^T]``: M is diagonal plus
    rank one, ``M = Lam + k p p^T`` with ``Lam = 1 + c P a p``, ``k = c P (r - a)``,
    ``c = beta sigma_w2 / (L V)``. The determinant lemma and Sherman-Morrison give log det M
    and tr(B^T M^-1 B) from four sums over tokens (O(V), differentiable); for uniform p this
    is ``sector_action``'s two-sector form."""
    law = token_law(tokens)
    a, r, g, s = (jnp.asarray(v) for v in (a, r, g, s))
    dtype = jnp.result_type(a, r, g, s, P, float)  # weak float: the inputs decide (float64 under x64)
    p = _iid_law(law, V, dtype)
    c = hyper.beta * hyper.sigma_w2 / (L * V)
    Lam = 1 + c * P * a[..., None] * p  # (..., V)
    k = c * P * (r - a)
    h = s - g
    m2 = jnp.sum(p**2 / Lam, axis=-1)
    m3 = jnp.sum(p**3 / Lam, axis=-1)
    n4 = jnp.sum(p**4 / Lam**2, axis=-1)
    U2 = jnp.sum(p**2)
    den = 1 + k * m2
    T = P**2 * (g**2 * m2 + 2 * g * h * m3 + h**2 * U2 * m2
                - k / den * (g**2 * n4 + 2 * g * h * m2 * m3 + h**2 * m2**2 * U2))
    occ = 0.5 * V * (jnp.sum(jnp.log(Lam), axis=-1) + jnp.log(den)) if occam else 0.0
    return occ - hyper.beta**2 * hyper.sigma_w2 / (2 * L**2 * V) * T + 0.5 * hyper.beta * P


def pattern_scalars(A, tokens=None):
    """``(a, r, g, s)`` of a pattern ``A: (..., L, L)``. For a Markov law ``tokens`` (stay
    probability Q), a and g are weighted by ``R_mn = Q^|m-n|``: ``tr(A^T A R)``, ``tr(A^T S R)``
    (what ``sector_action`` takes for that law)."""
    law = token_law(tokens)
    rows = jnp.sum(A, axis=-1)
    r = jnp.sum(rows**2, axis=-1)
    s = jnp.sum(rows, axis=-1)
    if law.kind == "markov":
        L = A.shape[-1]
        d = np.abs(np.arange(L)[:, None] - np.arange(L)[None, :])
        R = jnp.asarray(float(law.param) ** d, A.dtype)
        AR = A @ R
        a = jnp.sum(AR * A, axis=(-2, -1))  # sum_l A_l R A_l^T = tr(A^T A R)
        g = jnp.sum(jnp.diagonal(jnp.roll(AR, 1, axis=-1), axis1=-2, axis2=-1), axis=-1)  # sum_l (A R)_{l, l-1}
        return a, r, g, s
    a = jnp.sum(A**2, axis=(-2, -1))
    g = jnp.sum(jnp.diagonal(jnp.roll(A, 1, axis=-1), axis1=-2, axis2=-1), axis=-1)
    return a, r, g, s


# ----------------------------------------------------------------------------- linear


def span_scalars(c1, cG, L):
    """a, r, g, s of c_1 U + c_G S."""
    rho = c1 + cG
    q = c1**2 + 2 * c1 * cG + L * cG**2
    return q, L * rho**2, c1 + L * cG, L * rho


def linear_energy(c, P, L: int, V: int, hyper, occam: bool = True, tokens=None):
    """MAP-form reduced action of linear attention at ``c = (c_1, c_G)``.

    Equals ``exact_action(c_1 U + c_G S, expected_stats(P))``; the residual R only raises
    the action (d/da and d/dr of F are > 0), so every MAP lies in span{U, S}.
    """
    _require_iid(tokens, "linear_energy")
    c1, cG = c[..., 0], c[..., 1]
    q, r, g, s = span_scalars(c1, cG, L)
    return sector_action(q, r, g, s, P, L, V, hyper, occam, tokens) + q / (2 * hyper.sigma_g2)


def residual_dims(L: int) -> tuple[int, int]:
    """Dimensions of the row-sum residual (L - 1) and of the bulk residual (L^2 - L - 1)."""
    return L - 1, L * L - L - 1


def linear_posterior_action(z, P, L: int, V: int, hyper, tokens=None):
    """Exact negative log posterior density (expected statistics) of linear attention in
    ``z = (c_1, c_G, u_row, u_bulk)``, ``u = log ||R_part||_F^2``.

    ``G = c_1 U + c_G S + R_row + R_bulk`` is a fixed linear change of variables; the
    residual parts are integrated radially, a part of dimension d with squared norm t
    contributing ``t^(d/2) du``. Up to a constant, ``p(z) = exp(-linear_posterior_action)``.
    """
    _require_iid(tokens, "linear_posterior_action")
    c1, cG, u_r, u_b = z[..., 0], z[..., 1], z[..., 2], z[..., 3]
    d_r, d_b = residual_dims(L)
    t_r, t_b = jnp.exp(u_r), jnp.exp(u_b)
    q, r, g, s = span_scalars(c1, cG, L)
    a = q + t_r + t_b
    data = sector_action(a, r + L * t_r, g, s, P, L, V, hyper, tokens=tokens)
    return data + a / (2 * hyper.sigma_g2) - 0.5 * d_r * u_r - 0.5 * d_b * u_b


def newton_root(residual, x0, *, steps: int = 40, max_step: float = 2.0, jacobian=None,
                levenberg: bool = False, objective=None, with_jacobian: bool = False, tol: float | None = None):
    """Newton's method for ``residual(x) = 0`` from ``x0: (n,)``, a fixed number of steps
    (jit/vmap safe), each step clipped to ``max_step`` per coordinate. ``jacobian``: default
    ``jax.jacfwd(residual)``. ``levenberg``: shift a symmetric Jacobian (a Hessian) until
    positive definite, so the step descends where it is not. ``objective``: take the first of
    1, 1/2, ..., 1/64 of each step that lowers it (robust on stiff actions; plain steps can
    jump between basins, which the multi-start search for every minimum relies on).
    The theory's one Newton solver: minima (``newton_minimize``) and the mean-field
    self-consistency equations. ``with_jacobian``: ``residual(x)`` returns ``(r, J)`` in one
    evaluation (where both come from one expensive pass). ``tol``: stop early once
    ``max |r(x)| <= tol (1 + max |x|)`` (a ``while_loop``, at most ``steps`` steps): the same
    iterate as the full run to rounding, since a converged Newton step is ~0. Under ``vmap``
    a while loop runs until every member stops, so map over starts (``jax.lax.map``) for the
    saving."""
    jac = jax.jacfwd(residual) if jacobian is None else jacobian
    if tol is not None:
        if levenberg or objective is not None:
            raise ValueError("tol: early stopping is for plain Newton steps (levenberg=False, objective=None)")
        both = residual if with_jacobian else (lambda x: (residual(x), jac(x)))

        def go_on(c):
            x, r, _, k = c
            return (k < steps) & ~(jnp.max(jnp.abs(r)) <= tol * (1 + jnp.max(jnp.abs(x))))

        def step(c):
            x, r, J, k = c
            x = x - jnp.clip(jnp.linalg.solve(J, r), -max_step, max_step)
            return (x, *both(x), k + 1)

        return jax.lax.while_loop(go_on, step, (x0, *both(x0), 0))[0]

    def body(x, _):
        r, J = residual(x) if with_jacobian else (residual(x), jac(x))
        if levenberg:
            shift = jnp.maximum(0.0, 1e-6 - jnp.min(jnp.linalg.eigvalsh(J))) + 1e-9
            J = J + shift * jnp.eye(x.shape[0], dtype=x.dtype)
        step = jnp.clip(jnp.linalg.solve(J, r), -max_step, max_step)
        if objective is None:
            return x - step, None
        ts = 0.5 ** jnp.arange(7, dtype=x.dtype)
        ft = jax.vmap(lambda t: objective(x - t * step))(ts)
        ok = jnp.isfinite(ft) & (ft < objective(x))
        return x - jnp.where(jnp.any(ok), ts[jnp.argmax(ok)], 0.0) * step, None

    x, _ = jax.lax.scan(body, x0, None, length=steps)
    return x


def newton_minimize(fun, x0, *, steps: int = 40, max_step: float = 2.0, backtrack: bool = False):
    """Damped Newton minimisation of a small smooth ``fun: (n,) -> scalar`` (``newton_root`` on
    its gradient with the Hessian, Levenberg-shifted; ``backtrack``: line search on ``fun``)."""
    return newton_root(jax.grad(fun), x0, steps=steps, max_step=max_step, jacobian=jax.hessian(fun),
                       levenberg=True, objective=fun if backtrack else None)


def linear_residual_saddle(c, P, L: int, V: int, hyper, tokens=None):
    """``(u_row, u_bulk)`` minimising the 4-d action at fixed c (the posterior form's saddle)."""
    d_r, d_b = residual_dims(L)
    u0 = jnp.log(jnp.array([d_r, d_b], dtype=c.dtype) * hyper.sigma_g2)
    fun = lambda u: linear_posterior_action(jnp.concatenate([c, u]), P, L, V, hyper, tokens)
    return newton_minimize(fun, u0)


def linear_profile(c, P, L: int, V: int, hyper, tokens=None):
    """Posterior-form reduced action of linear attention in ``c = (c_1, c_G)``: the 4-d
    exact action at the saddle of the two residual norms (exact as L -> infinity, where
    the norms of L - 1 and L^2 - L - 1 Gaussian directions concentrate). ``c: (2,)``."""
    u = jax.lax.stop_gradient(linear_residual_saddle(c, P, L, V, hyper, tokens))
    # At the saddle d/du = 0, so the gradient in c is the partial one (envelope theorem).
    return linear_posterior_action(jnp.concatenate([c, u]), P, L, V, hyper, tokens)


# ----------------------------------------------------------------------------- softmax


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


def sector_loss(a, r, g, s, P, L: int, V: int, hyper, average_w: bool = True, tokens=None):
    """Per-sequence squared loss ``(1/2L) sum_l ||y - W h||^2`` at the expected statistics
    for a pattern with scalars (a, r, g, s), W at its posterior mean given the pattern
    (``average_w=False``) or averaged over its Gaussian posterior (``True``, adds
    ``sigma_w2 tr(K M^-1)``). At the expected statistics train and test loss coincide.

    Per sector (multiplicity m, scalars x, y): ``m/(2 L V) [L - 2 w y + w^2 x + v]`` with
    ``w = kappa y / (1 + kappa x)`` and ``v = sigma_w2 x / (1 + kappa x)``. For an i.i.d.
    law ``tokens``, the same from the V x V matrices ``K / P = a D + (r - a) p p^T``,
    ``B / P = g D + (s - g) p p^T``: ``W = c B^T M^-1``, loss
    ``(1/2L) [L - 2 tr(W B / P) + tr(W K W^T / P) + sigma_w2 tr(M^-1 K / P)]``. A Markov law:
    the sector form with the R-weighted scalars (``pattern_scalars(A, tokens)``).
    """
    law = token_law(tokens)
    if law.iid and law != UNIFORM:
        p = _iid_law(law, V, jnp.result_type(a, g, P, float))
        D, pp = jnp.diag(p), jnp.outer(p, p)
        Kb, Bb = a * D + (r - a) * pp, g * D + (s - g) * pp
        c = hyper.beta * hyper.sigma_w2 / (L * V)
        M = jnp.eye(V, dtype=Kb.dtype) + c * P * Kb
        W = c * P * jnp.linalg.solve(M, Bb).T  # M, B symmetric: B^T M^-1 = (M^-1 B)^T
        v = hyper.sigma_w2 * jnp.trace(jnp.linalg.solve(M, Kb)) if average_w else 0.0
        return (L - 2 * jnp.trace(W @ Bb) + jnp.trace(W @ Kb @ W.T) + v) / (2 * L)
    kappa, _ = _consts(P, L, V, hyper)

    def part(x, y):
        w = kappa * y / (1 + kappa * x)
        v = hyper.sigma_w2 * x / (1 + kappa * x) if average_w else 0.0
        return (L - 2 * w * y + w**2 * x + v) / (2 * L * V)

    return (V - 1) * part(a, g) + part(r, s)


__all__ = ["aG_from_y", "copy_ansatz", "iid_sector_action", "law_for", "linear_energy", "linear_posterior_action",
           "linear_profile", "linear_residual_saddle", "newton_minimize", "newton_root", "pattern_scalars",
           "residual_dims", "row_cumulant", "row_law", "ROW_LAW_SEED", "row_moments", "row_table", "RowLaw",
           "sector_action", "sector_loss", "softmax_aG", "softmax_energy", "softmax_free_energy",
           "softmax_mf_hessian", "softmax_mf_map", "softmax_mf_newton", "softmax_posterior_action", "span_scalars"]
