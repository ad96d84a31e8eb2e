"""Minima of the reduced actions, their order parameters and losses, and transition points.

``form="map"``: the energy (MAP) forms of the marginal p(G | data); ``form="posterior"``: the
posterior forms; ``form="joint_map"``: the energy that joint MAP training of (W, G) (Adam)
minimises, the MAP form without the Occam factor (V/2) log det M;
(linear: residual norms at their saddle; softmax: mean field over rows). See
``copyjax.reduced`` and docs/theory.md.
"""
from __future__ import annotations

import functools
import math
from functools import lru_cache, partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import reduced
from copyjax.reduced import law_for
from copyjax._checks import FORMS, check_activation, check_form, check_P, check_P_grid, check_size
from copyjax.hyper import Hyper, default_hyper
from copyjax.tokens import UNIFORM, token_law


def _in_float64(fn):
    """Run ``fn`` with 64-bit types on, whatever the caller's ``jax_enable_x64``: the reduced
    actions are sums of O(beta P) terms whose differences decide which minimum is global, and
    in float32 they lose that (softmax, L = 64, V = 32, posterior form: P* 5633 instead of
    4225, one of the two minima at P = 5000 missed). The switch is scoped to the call
    (``jax.enable_x64``), never global; the results are Python floats."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with jax.enable_x64(True):
            return fn(*args, **kwargs)
    return wrapped

def least_squares(X, y):
    """Least squares ``y = X b``: returns ``(b, standard errors)`` from the residual
    variance (used for the log-log fits of transition points and exponents)."""
    X, y = np.asarray(X, float), np.asarray(y, float)
    b = np.linalg.lstsq(X, y, rcond=None)[0]
    s2 = float(np.sum((y - X @ b) ** 2)) / max(1, len(y) - X.shape[1])
    return b, np.sqrt(np.diag(s2 * np.linalg.inv(X.T @ X)))


class Minimum(NamedTuple):
    """One local minimum of a reduced action.

    ``c1, cG``: order parameters (a_1, a_G for softmax; for linear the sign is fixed by
    rho = c_1 + c_G >= 0); ``action``: the reduced action there; ``coords``: the raw
    coordinates (softmax MAP: gamma; softmax posterior: (lam_a, mu_g); linear: (c_1, c_G)).
    """

    c1: float
    cG: float
    action: float
    coords: tuple


# ---------------------------------------------------------------- cached jitted kernels
# One compiled function per (L, V, hyper, form); P is a traced argument, so a sweep over P
# never recompiles.


@lru_cache(maxsize=64)
def _softmax_map_grid(L, V, hyper, occam=True, tokens=UNIFORM):
    return jax.jit(jax.vmap(lambda g, P: reduced.softmax_energy(g, P, L, V, hyper, occam, tokens), (0, None)))


@lru_cache(maxsize=64)
def _softmax_map_newton(L, V, hyper, occam=True, tokens=UNIFORM):
    E = lambda g, P: reduced.softmax_energy(g, P, L, V, hyper, occam, tokens)

    @jax.jit
    def refine(g, P):
        g = reduced.newton_minimize(lambda x: E(x[0], P), g[None], steps=30, max_step=0.5)[0]
        return g, E(g, P)

    return jax.vmap(refine, (0, None))


@_in_float64
def gamma_grid(P, L, hyper, n=3001):
    """The copy logits gamma searched for softmax MAP minima: ``n`` points from -4 to the
    largest gamma the data can pay for."""
    # The prior cost L gamma^2 / (2 sigma_g2) cannot exceed the largest data gain beta P / 2.
    top = math.sqrt(hyper.beta * P * hyper.sigma_g2 / L) + math.log(L) + 4.0
    return np.linspace(-4.0, top, n)


@_in_float64
def softmax_map_minima(P, L: int, V: int, hyper: Hyper, occam: bool = True, tokens=None) -> list[Minimum]:
    """All local minima of the softmax MAP energy in the copy logit gamma, by a dense grid
    then Newton refinement. Sorted by a_G. ``occam=False``: the joint-MAP energy.
    ``tokens``: an i.i.d. token law (``copyjax.tokens``; rows of A sum to one, so the MAP
    stays on the symmetric copy ansatz for any such law)."""
    tokens = token_law(tokens)
    grid = gamma_grid(P, L, hyper)
    E = np.asarray(_softmax_map_grid(L, V, hyper, occam, tokens)(jnp.asarray(grid), P))
    idx = np.where((E[1:-1] < E[:-2]) & (E[1:-1] <= E[2:]))[0] + 1
    if idx.size == 0:
        idx = np.array([int(np.argmin(E))])
    g, e = _softmax_map_newton(L, V, hyper, occam, tokens)(jnp.asarray(grid[idx]), P)
    out = []
    for gi, ei in zip(np.asarray(g), np.asarray(e)):
        aG = float(reduced.softmax_aG(gi, L))
        if all(abs(aG - m.cG) > 1e-6 for m in out):
            out.append(Minimum(1.0 - aG, aG, float(ei), (float(gi),)))
    return sorted(out, key=lambda m: m.cG)


@lru_cache(maxsize=64)
def _linear_newton(L, V, hyper, form, backtrack=False, tokens=UNIFORM):
    # The posterior profile's minima are the minima of the 4-d action in (c, u_row, u_bulk):
    # one joint Newton with the exact Hessian instead of nested solves.
    if form in ("map", "joint_map"):
        occam = form == "map"
        fun, lift = partial(reduced.linear_energy, occam=occam), lambda c: c
    else:
        fun = reduced.linear_posterior_action
        d_r, d_b = reduced.residual_dims(L)
        u0 = jnp.log(jnp.array([d_r, d_b]) * hyper.sigma_g2)
        lift = lambda c: jnp.concatenate([c, u0.astype(c.dtype)])

    @jax.jit
    def refine(c, P):
        f = lambda z: fun(z, P, L, V, hyper, tokens=tokens)
        z = reduced.newton_minimize(f, lift(c), steps=60, backtrack=backtrack)
        return z[:2], f(z), jnp.linalg.norm(jax.grad(f)(z)), jnp.linalg.eigvalsh(jax.hessian(f)(z))[0]

    return jax.vmap(refine, (0, None))


def _linear_starts(n=4):
    a = np.linspace(-0.3, 1.2, n)
    c = np.stack(np.meshgrid(a, a), -1).reshape(-1, 2) + 0.013
    return c[c.sum(1) > 0]


@_in_float64
def linear_minima(P, L: int, V: int, hyper: Hyper, form: str = "map", tokens=None) -> list[Minimum]:
    """Local minima of the linear reduced action (MAP energy or posterior profile) in
    (c_1, c_G) with rho >= 0 (the action is even in c), by multi-start damped Newton.
    ``tokens``: an i.i.d. token law (default uniform)."""
    tokens = token_law(tokens)
    starts = jnp.asarray(_linear_starts())
    for k in range(4):
        # Plain Newton first (its jumps reach every basin from few starts); where no start
        # converges (stiff actions: large P, large sigma_w2), backtracking Newton from the
        # same starts, then continued from where the last round stopped.
        c, E, gn, hmin = (np.asarray(x) for x in _linear_newton(L, V, hyper, form, k > 0, tokens)(starts, P))
        scale = max(1.0, float(np.max(np.abs(E[np.isfinite(E)]), initial=1.0)))
        if np.any(np.isfinite(E) & (gn <= 1e-6 * scale)):
            break
        if k > 0:
            starts = jnp.asarray(np.where(np.isfinite(c), c, np.asarray(starts)))
    out: list[Minimum] = []
    for ci, ei, gi, hi in zip(c, E, gn, hmin):
        if not np.isfinite(ei) or gi > 1e-6 * scale or hi < -1e-9 * scale:
            continue
        if ci.sum() < 0:
            ci = -ci
        if all(np.hypot(ci[0] - m.c1, ci[1] - m.cG) > 1e-4 for m in out):
            out.append(Minimum(float(ci[0]), float(ci[1]), float(ei), (float(ci[0]), float(ci[1]))))
    if not out:
        raise RuntimeError(f"linear_minima: Newton did not converge from any start at P={P}, "
                           f"L={L}, V={V}, {hyper}")
    return sorted(out, key=lambda m: m.c1 + m.cG)


def _opposite_starts():
    a1, a2 = np.linspace(-1.6, -0.4, 7), np.linspace(0.3, 1.0, 6)
    return np.stack(np.meshgrid(a1, a2), -1).reshape(-1, 2)


@_in_float64
def linear_family_minima(P, L: int, V: int, hyper: Hyper, form: str = "posterior") -> dict:
    """The lowest minimum of the linear reduced action in each sign family.

    The action depends on g = c_1 + L c_G and s = L (c_1 + c_G) only through g^2 and s^2, so
    beside the mirror c -> -c there can be a second, distinct state with g s < 0 (c_G and rho
    of opposite signs; ``order.sector_order_parameters``). Returns ``{"same": Minimum,
    "opposite": Minimum or None, "delta_action": S_opposite - S_same or None}``: the opposite
    family's posterior weight relative to the same-sign one is about exp(-delta_action)
    (posterior form: the residual directions' entropy is included). Minimum coordinates are
    plain (c_1, c_G) here, with c_G > 0.
    """
    check_form(form)
    P = check_P(P)
    same = min(linear_minima(P, L, V, hyper, form), key=lambda m: m.action)
    c, E, gn, hmin = (np.asarray(x) for x in _linear_newton(L, V, hyper, form, True)(
        jnp.asarray(_opposite_starts()), P))
    scale = max(1.0, float(np.max(np.abs(E[np.isfinite(E)]), initial=1.0)))
    fam = np.sign((c[:, 0] + L * c[:, 1]) * (c[:, 0] + c[:, 1]))
    ok = np.isfinite(E) & (gn <= 1e-6 * scale) & (hmin > 0) & (fam < 0)
    if not ok.any():
        return {"same": same, "opposite": None, "delta_action": None}
    i = np.flatnonzero(ok)[np.argmin(E[ok])]
    opp = Minimum(float(c[i, 0]), float(c[i, 1]), float(E[i]), (float(c[i, 0]), float(c[i, 1])))
    return {"same": same, "opposite": opp, "delta_action": opp.action - same.action}


# ---------------------------------------------------------------- softmax mean field


@lru_cache(maxsize=64)
def _mf_solver(L, V, hyper, tokens=UNIFORM):
    # One start at a time (lax.map, not vmap), each stopping when it has converged: most
    # converge in 3-17 of the 30 steps, and a vmapped while loop would run every start as long
    # as the slowest. Measured: the posterior form's transition points at L = 4, 16 and 64 in
    # 9.1, 24.2 and 31.3 s against 19.5, 38.2 and 40.3, the same numbers to 1e-12.
    solve = lambda m, P, law: reduced.softmax_mf_newton(m, P, L, V, hyper, law, steps=30, max_step=5.0,
                                                        tokens=tokens, tol=1e-12)
    return jax.jit(lambda starts, P, law: jax.lax.map(lambda m: solve(m, P, law), starts))


@_in_float64
def softmax_mf_minima(P, L: int, V: int, hyper: Hyper, law: reduced.RowLaw | None = None,
                      tokens=None) -> list[Minimum]:
    """Stable phases of the softmax mean field at P: Newton on the self-consistency
    equations from several starts (multipliers at no copy and at strong copy), kept when
    converged (|residual| < 1e-8 (1 + |m|)) and a local minimum of Psi. ``tokens``: an
    i.i.d. token law (the rows still couple only through a and g)."""
    tokens = token_law(tokens)
    law = law_for(L, hyper, P) if law is None else law
    s = P / L
    # Newton from a fan of multipliers (no copy ... strong copy): each phase must be the
    # limit of some start; a fan of 12 finds both phases where three starts found one
    # (L = 64, V = 8).
    starts = jnp.array([[0.0, 0.0], [-s, s], [-0.1 * s, 0.5 * s]]
                       + [[-a * s, b * s] for a in (0.01, 0.3, 3.0) for b in (0.05, 0.2, 2.0)])
    m, res, Phi, x, y, hmin = (np.asarray(v) for v in _mf_solver(L, V, hyper, tokens)(starts, P, law))
    out: list[Minimum] = []
    for mi, ri, pi, yi, hi in zip(m, res, Phi, y, hmin):
        if not (np.isfinite(pi) and ri < 1e-8 * (1 + np.abs(mi).max()) and hi > 0):
            continue
        aG = float(reduced.aG_from_y(yi, L))
        if all(abs(aG - o.cG) > 1e-5 for o in out):
            out.append(Minimum(1.0 - aG, aG, float(pi), (float(mi[0]), float(mi[1]))))
    return sorted(out, key=lambda o: o.cG)


# ---------------------------------------------------------------- dispatch and curves


def _check_law_form(tokens, activation, form):
    law = token_law(tokens)
    if not law.iid and not (activation == "softmax" and form in ("map", "joint_map")):
        raise ValueError(f"tokens={law.spec!r}: a Markov law has only the softmax MAP and joint-MAP forms (along "
                         f"the copy ansatz); got activation={activation!r}, form={form!r}")


@_in_float64
def minima(P, L: int, V: int, activation: str, hyper: Hyper | None = None,
           form: str = "map", P_max: float | None = None, tokens=None) -> list[Minimum]:
    """Every local minimum of the reduced action at P (sorted by the copy order parameter
    for softmax, by rho for linear). ``P_max``: softmax posterior form only, the largest P
    of a sweep, so that one row law (and one compilation) serves the whole sweep.
    ``tokens``: an i.i.d. token law (``copyjax.tokens``; default uniform)."""
    check_activation(activation)
    check_form(form)
    L, V = check_size("L", L, 2), check_size("V", V, 2)
    P = check_P(P)
    hyper = default_hyper(activation, L) if hyper is None else hyper
    _check_law_form(tokens, activation, form)
    if activation == "softmax":
        if form in ("map", "joint_map"):
            return softmax_map_minima(P, L, V, hyper, occam=form == "map", tokens=tokens)
        return softmax_mf_minima(P, L, V, hyper, law_for(L, hyper, P_max or P), tokens)
    return linear_minima(P, L, V, hyper, form, tokens)


@_in_float64
def minimum_scalars(m: Minimum, P, L: int, V: int, activation: str, hyper: Hyper, form: str,
                    law: reduced.RowLaw | None = None, tokens=None):
    """(a, r, g, s) of the pattern at a minimum (residual norms included in the linear
    posterior form)."""
    if activation == "softmax":
        a_G = m.cG
        if form in ("map", "joint_map"):
            p, q = reduced.copy_ansatz(m.coords[0], L)
            return float(L * (p**2 + (L - 1) * q**2)), float(L), float(L * p), float(L)
        law = law_for(L, hyper, P) if law is None else law
        x = float(jax.grad(reduced.row_cumulant)(m.coords[0], m.coords[1], law))
        return L * x, float(L), 1.0 + (L - 1) * a_G, float(L)
    c = jnp.array([m.c1, m.cG])
    q, r, g, s = (float(v) for v in reduced.span_scalars(c[0], c[1], L))
    if form == "posterior":
        t_r, t_b = np.exp(np.asarray(reduced.linear_residual_saddle(c, P, L, V, hyper, token_law(tokens))))
        return q + t_r + t_b, r + L * t_r, g, s
    return q, r, g, s


@_in_float64
def minimum_loss(m: Minimum, P, L, V, activation, hyper, form, law=None, tokens=None) -> float:
    """Per-sequence loss at a minimum: W averaged over its posterior, or at its posterior
    mean for the joint MAP (what a trained network uses)."""
    return float(reduced.sector_loss(*minimum_scalars(m, P, L, V, activation, hyper, form, law, tokens),
                                     P, L, V, hyper, average_w=form != "joint_map", tokens=tokens))


@_in_float64
def theory_curve(Ps, L: int, V: int, activation: str, hyper: Hyper | None = None,
                 form: str = "map", tokens=None) -> dict:
    """Global and metastable minima along a P grid.

    Returns arrays over P: ``c1, cG, action, loss`` of the global minimum, and
    ``meta``: a list per P of the other minima as (c1, cG, action, loss) tuples.
    """
    Ps = check_P_grid(Ps)
    hyper = default_hyper(activation, L) if hyper is None else hyper
    out = {k: [] for k in ("c1", "cG", "action", "loss", "meta", "n_minima")}
    law = law_for(L, hyper, Ps[-1]) if activation == "softmax" and form == "posterior" else None
    for P in Ps:
        ms = minima(P, L, V, activation, hyper, form, P_max=Ps[-1], tokens=tokens)
        if not ms:
            # The softmax mean-field solver can fail where the tilt outgrows the row law's
            # quadrature (large P / V^2); leave a gap rather than guess.
            for k, v in (("c1", np.nan), ("cG", np.nan), ("action", np.nan), ("loss", np.nan),
                         ("n_minima", 0), ("meta", [])):
                out[k].append(v)
            continue
        best = min(ms, key=lambda m: m.action)
        out["c1"].append(best.c1)
        out["cG"].append(best.cG)
        out["action"].append(best.action)
        out["loss"].append(minimum_loss(best, P, L, V, activation, hyper, form, law, tokens))
        out["n_minima"].append(len(ms))
        out["meta"].append([(m.c1, m.cG, m.action, minimum_loss(m, P, L, V, activation, hyper, form, law, tokens))
                            for m in ms if m is not best])
    res = {k: np.asarray(v) for k, v in out.items() if k != "meta"}
    res["meta"] = out["meta"]
    res["P"] = Ps
    return res


# ---------------------------------------------------------------- transition points


def _bisect(pred, lo, hi, iters=40, rtol=1e-5):
    """Boundary in log P between pred(lo) and pred(hi) (which must differ)."""
    plo = pred(lo)
    for _ in range(iters):
        mid = math.sqrt(lo * hi)
        if pred(mid) == plo:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + rtol:
            break
    return math.sqrt(lo * hi)


def _softmax_transitions(L, V, hyper, form, P_lo, P_hi, n_scan=None, tokens=UNIFORM):
    n_scan = n_scan or (20 if form == "posterior" else 48)
    seen: dict[float, list] = {}  # the scan and the bisections ask for the same P again

    def mins(P):
        if P not in seen:
            seen[P] = minima(P, L, V, "softmax", hyper, form, P_max=P_hi, tokens=tokens)
        return seen[P]

    grid = np.geomspace(P_lo, P_hi, n_scan)
    two = [len(mins(P)) >= 2 for P in grid]
    for _ in range(3):
        # A coexistence window narrower than the grid step (the posterior form at small L, or
        # Zipf tokens) shows as a jump of a_G between two neighbours: refine there.
        if any(two):
            break
        aG = np.array([min(mins(P), key=lambda m: m.action).cG if mins(P) else np.nan for P in grid])
        k = int(np.nanargmax(np.abs(np.diff(aG)))) if np.isfinite(np.diff(aG)).any() else -1
        if k < 0 or abs(aG[k + 1] - aG[k]) < 0.1:
            break
        grid = np.unique(np.concatenate([grid, np.geomspace(grid[k], grid[k + 1], 12)[1:-1]]))
        two = [len(mins(P)) >= 2 for P in grid]
    if not any(two):
        # One minimum everywhere: the copy order parameter grows continuously.
        aG = [min(mins(P), key=lambda m: m.action).cG if mins(P) else np.nan for P in grid]
        k = int(np.nanargmax(np.diff(aG) / np.diff(np.log(grid))))
        return {"P_star": None, "P_spinodal_low": None, "P_spinodal_high": None,
                "first_order": False, "P_steepest": float(math.sqrt(grid[k] * grid[k + 1])),
                "aG_jump": 0.0}
    i0 = two.index(True)
    i1 = len(two) - 1 - two[::-1].index(True)
    has_two = lambda P: len(mins(P)) >= 2
    P_sl = _bisect(has_two, grid[i0 - 1], grid[i0]) if i0 > 0 else None
    P_sh = _bisect(has_two, grid[i1], grid[i1 + 1]) if i1 < len(grid) - 1 else None

    def copy_wins(P):
        ms = mins(P)
        if not ms:
            return P >= grid[i1]
        return min(ms, key=lambda m: m.action) is ms[-1] and len(ms) >= 2 or (
            len(ms) == 1 and P >= grid[i1])

    lo = P_sl * 1.000001 if P_sl else grid[i0]
    hi = P_sh / 1.000001 if P_sh else grid[i1]
    P_star = _bisect(copy_wins, lo, hi) if copy_wins(lo) != copy_wins(hi) else None
    jump = None
    if P_star is not None:
        ms = mins(P_star)
        jump = ms[-1].cG - ms[0].cG
    return {"P_star": P_star, "P_spinodal_low": P_sl, "P_spinodal_high": P_sh,
            "first_order": True, "aG_jump": jump}


@lru_cache(maxsize=64)
def _linear_hessian_fn(L, V, hyper, form, tokens=UNIFORM):
    fun = {"map": reduced.linear_energy, "posterior": reduced.linear_profile,
           "joint_map": partial(reduced.linear_energy, occam=False)}[form]
    return jax.jit(lambda P: jax.hessian(lambda c: fun(c, P, L, V, hyper, tokens=tokens))(jnp.zeros(2)))


@_in_float64
def linear_hessian_at_zero(P, L, V, hyper, form, tokens=None):
    """Hessian of the linear reduced action at the symmetric point c = 0: ``(2, 2)``.

    In the posterior form the residual saddle is even in c, so the profile's Hessian at 0
    is the (c, c) block of the 4-d Hessian at the saddle (what ``linear_profile`` gives
    with the saddle held fixed)."""
    return _linear_hessian_fn(L, V, hyper, form, token_law(tokens))(P)


def _linear_transitions(L, V, hyper, form, P_lo, P_hi, tokens=UNIFORM):
    unstable = lambda P: bool(np.linalg.eigvalsh(
        np.asarray(linear_hessian_at_zero(P, L, V, hyper, form, tokens)))[0] < 0)
    if unstable(P_lo) or not unstable(P_hi):
        raise ValueError(f"P range [{P_lo}, {P_hi}] does not bracket the linear onset")
    P_on = _bisect(unstable, P_lo, P_hi)
    w, v = np.linalg.eigh(np.asarray(linear_hessian_at_zero(P_on * 1.001, L, V, hyper, form, tokens)))

    def copy_dominant(P):
        ms = linear_minima(P, L, V, hyper, form, tokens)
        best = min(ms, key=lambda m: m.action)
        return best.cG > best.c1

    P_x, hi = None, P_on * 1.01
    while hi <= P_hi:
        if copy_dominant(hi):
            P_x = _bisect(copy_dominant, P_on * 1.0001, hi) if not copy_dominant(P_on * 1.0001) else None
            break
        hi *= 1.5
    onset_dir = v[:, 0] * np.sign(v[:, 0].sum() or 1.0)
    return {"P_onset": P_on, "P_cross": P_x, "onset_direction": onset_dir.tolist(),
            "pooling_first": bool(abs(onset_dir[0]) > abs(onset_dir[1]))}


class TransitionPoints(NamedTuple):
    """Transition points of the reduced theory at (L, V) (``transition_points``); a field is
    None where it does not apply (the other activation's points, a transition that does
    not happen). ``as_dict()`` for JSON."""

    L: int
    V: int
    activation: str
    form: str
    hyper: tuple
    P_star: float | None = None  # softmax: the global minimum switches to the copy branch
    P_spinodal_low: float | None = None  # softmax: the copy minimum appears
    P_spinodal_high: float | None = None  # softmax: the uninformed minimum disappears
    first_order: bool | None = None  # softmax: two minima somewhere
    aG_jump: float | None = None  # softmax: a_G jump at P_star (0 without one)
    P_steepest: float | None = None  # softmax without two minima: steepest growth of a_G
    P_onset: float | None = None  # linear: c = 0 loses stability
    P_cross: float | None = None  # linear: c_G = c_1 along the global minimum
    onset_direction: list | None = None  # linear: unit (c_1, c_G) of the unstable mode
    pooling_first: bool | None = None  # linear: the onset mode is mostly c_1
    tokens: str = "uniform"  # the token law (copyjax.tokens spec)

    def as_dict(self) -> dict:
        return dict(self._asdict())


@_in_float64
def transition_points(L: int, V: int, activation: str, hyper: Hyper | None = None,
                      form: str = "map", P_range: tuple[float, float] | None = None,
                      tokens=None) -> TransitionPoints:
    """Transition points of the reduced theory at (L, V).

    softmax: ``P_star`` (the global minimum switches to the copy branch),
    ``P_spinodal_low`` (the copy minimum appears), ``P_spinodal_high`` (the uninformed
    minimum disappears); None where there is only one minimum.
    linear: ``P_onset`` (the symmetric point c = 0 loses stability), ``P_cross``
    (c_G = c_1 along the global minimum; None if c_G dominates from the onset on),
    ``onset_direction`` (unit (c_1, c_G) of the unstable mode).
    ``tokens``: an i.i.d. token law (``"zipf:S"``; default uniform).
    """
    check_activation(activation)
    check_form(form)
    L, V = check_size("L", L, 2), check_size("V", V, 2)
    tokens = token_law(tokens)
    _check_law_form(tokens, activation, form)
    hyper = default_hyper(activation, L) if hyper is None else hyper
    if P_range is None:
        if activation == "softmax" and form == "posterior":
            # Bracket by the MAP transition (cheap), widened; keeps the mean-field grid fine.
            ref = transition_points(L, V, activation, hyper, "map", tokens=tokens)
            lo = ref.P_spinodal_low or ref.P_steepest or L
            hi = ref.P_spinodal_high or ref.P_steepest or L
            P_range = (lo / 8, hi * 8)
        else:
            P_range = (1.0, 1e4 * L * V * max(1.0, math.log(L)) ** 2)
    P_lo, P_hi = check_P(P_range[0], "P_range"), check_P(P_range[1], "P_range")
    if not P_lo < P_hi:
        raise ValueError(f"P_range must be increasing, got {P_range}")
    if activation == "softmax":
        out = _softmax_transitions(L, V, hyper, form, P_lo, P_hi, tokens=tokens)
    else:
        out = _linear_transitions(L, V, hyper, form, P_lo, P_hi, tokens)
    return TransitionPoints(L=L, V=V, activation=activation, form=form, hyper=tuple(map(float, hyper)),
                            tokens=tokens.spec, **out)


__all__ = ["FORMS", "gamma_grid", "least_squares",
           "linear_family_minima", "linear_hessian_at_zero", "linear_minima", "minima", "Minimum",
           "minimum_loss", "minimum_scalars", "softmax_map_minima", "softmax_mf_minima", "theory_curve",
           "transition_points", "TransitionPoints"]
