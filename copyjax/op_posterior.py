"""Posterior sampling directly in order-parameter space (blackjax NUTS, vmapped chains).

The reduced posterior forms of ``copyjax.reduced`` are low-dimensional densities:
    linear:  ``z = (c_1, c_G, log t_row, log t_bulk)``, ``-log p = linear_posterior_action``
             (exact at the expected statistics; 4-d);
    softmax: the mean-field macrostate in its multipliers ``m = (lam_a, mu_g)``,
             ``-log p = softmax_posterior_action`` (2-d; exact as L -> infinity).
Both can be multimodal (two phases in a first-order window; +-c for linear attention),
and a barrier of height ~L keeps a local sampler in the mode it starts in. So the chains
start from the modes with probabilities equal to the modes' Laplace masses
``exp(-S_k) det(H_k)^(-1/2)`` (drawn from the Laplace Gaussian of their mode), and each
chain runs blackjax NUTS with its mode's step size (blackjax ``window_adaptation``) and
inverse mass matrix. Within a mode the draws are exact MCMC; the split between the modes
is the Laplace estimate. Linear attention's +-c modes carry the same mass: only +c is run
and the sign-invariant order parameters are reported.
"""
from __future__ import annotations

import math
from functools import partial
from typing import NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np

from copyjax import masks, reduced
from copyjax._checks import check_activation, check_P, check_size
from copyjax.chains import chain_keys, summarize
from copyjax.schema import OPStat, OPSummary
from copyjax.order import sector_order_parameters
from copyjax.hyper import Hyper, default_hyper
from copyjax.theory import linear_minima, softmax_mf_minima
from copyjax.tokens import UNIFORM, token_law


def sampling_law(L: int, hyper: Hyper, P_max: float, n_bulk: int = 64, n_z: int = 256) -> reduced.RowLaw:
    """The row law the softmax sampler uses by default: 64 bulk draws and 256 quadrature
    nodes (12x fewer points than ``theory.law_for``, 20x cheaper gradients). Its modes and
    weights are computed with the same law, so the sampler is self-consistent; its P* can
    differ from the ``transition_points(form="posterior")`` value by the bulk Monte Carlo
    error (docs/theory.md section 10)."""
    return reduced.law_for(L, hyper, P_max, n_bulk, n_z)


class OPSamples(NamedTuple):
    """Draws of the reduced posterior at one P.

    ``draws``: dict name -> ``(chain, draw)`` arrays: ``c1, cG`` (a_1, a_G for softmax;
    for linear the sector-invariant ``sign(rho) c_1``, ``|c_G|`` and ``abs_rho``:
    ``copyjax.order.sector_order_parameters``) and ``loss`` (expected per-sequence
    loss, W averaged over its posterior); ``mode``: ``(chain,)`` index of the start mode;
    ``modes``: ``(n_modes, dim)`` mode coordinates; ``weights``: their Laplace masses
    (sum 1); ``divergent``: ``(chain,)`` count of NUTS divergent transitions;
    ``acceptance``: ``(chain,)`` mean acceptance rate.
    """

    draws: dict
    mode: np.ndarray
    modes: np.ndarray
    weights: np.ndarray
    divergent: np.ndarray
    acceptance: np.ndarray


def _action_fn(P, L, V, activation, hyper, law, tokens=UNIFORM):
    if activation == "linear":
        return lambda z: reduced.linear_posterior_action(z, P, L, V, hyper, tokens)
    return lambda m: reduced.softmax_posterior_action(m, P, L, V, hyper, law, tokens)


def _observe_fn(P, L, V, activation, hyper, law, tokens=UNIFORM):
    """coordinates -> dict of (c1, cG, loss)."""
    if activation == "linear":
        def observe(z):
            c1, cG, t_r, t_b = z[0], z[1], jnp.exp(z[2]), jnp.exp(z[3])
            q, r, g, s = reduced.span_scalars(c1, cG, L)
            loss = reduced.sector_loss(q + t_r + t_b, r + L * t_r, g, s, P, L, V, hyper, tokens=tokens)
            sec = sector_order_parameters(c1, cG, L)
            return {"c1": sec["c1"], "cG": sec["cG"], "abs_rho": sec["abs_rho"], "loss": loss}
        return observe

    def observe(m):
        _, x, y, _, _, _ = reduced.row_moments(m, law)
        aG = reduced.aG_from_y(y, L)
        return {"c1": 1.0 - aG, "cG": aG, "loss": reduced.sector_loss(L * x, L, L * y, L, P, L, V, hyper, tokens=tokens)}
    return observe


@partial(jax.jit, static_argnames=("L", "V", "activation", "hyper", "max_steps", "tokens"))
def _refine_mode(x0, P, law, *, L, V, activation, hyper, max_steps: int = 200, tol: float = 1e-9, tokens=UNIFORM):
    """Minimise the reduced action from ``x0`` with optax L-BFGS (zoom line search, so every
    step descends: the softmax density in m is very flat along one direction at large P,
    where undamped Newton steps overshoot). Returns (x, action, Hessian). P and the row law
    are traced: one compilation per (L, V, activation, hyper)."""
    from copyjax._optim import lbfgs_minimize

    fun = _action_fn(P, L, V, activation, hyper, law, tokens)
    x, _ = lbfgs_minimize(fun, x0, max_steps=max_steps, tol=tol)
    return x, fun(x), jax.hessian(fun)(x)


@partial(jax.jit, static_argnames=("L", "V", "activation", "hyper", "n_adapt", "tokens"))
def _adapt(key, x, cov, P, law, *, L, V, activation, hyper, n_adapt, tokens=UNIFORM):
    """blackjax window adaptation of NUTS (step size, dense inverse mass matrix) on one chain
    from ``x``; compiled once per (L, V, activation, hyper, n_adapt)."""
    fun = _action_fn(P, L, V, activation, hyper, law, tokens)
    adapt = blackjax.window_adaptation(blackjax.nuts, lambda z: -fun(z), is_mass_matrix_diagonal=False,
                                       initial_inverse_mass_matrix=cov)
    (_, params), _ = adapt.run(key, x, num_steps=n_adapt)
    return params["step_size"], params["inverse_mass_matrix"]


def _floor_curvature(cov, max_var: float = 1.0):
    """``cov`` with its eigenvalues capped at ``max_var``."""
    w, v = np.linalg.eigh(cov)
    return (v * np.minimum(w, max_var)) @ v.T


def posterior_modes(P, L: int, V: int, activation: str, hyper: Hyper | None = None,
                    law=None, tokens=None):
    """Modes of the reduced posterior density at P with their Laplace masses.

    Returns ``(modes: (k, dim), actions: (k,), covs: (k, dim, dim), weights: (k,))``.
    The starts are the posterior-form minima of ``copyjax.theory.minima``; each is refined
    by damped Newton on the density itself (for softmax the density in m carries the
    Jacobian ``det Hess Lambda``, which shifts the mode slightly off the mean-field phase).
    ``tokens``: an i.i.d. token law (``copyjax.tokens``; default uniform).
    """
    tokens = token_law(tokens)
    hyper = default_hyper(activation, L) if hyper is None else hyper
    starts = []
    if activation == "softmax" and law is None:
        law = sampling_law(L, hyper, P)
    found = (linear_minima(P, L, V, hyper, "posterior", tokens) if activation == "linear"
             else softmax_mf_minima(P, L, V, hyper, law, tokens))
    for m in found:
        if activation == "linear":
            c = jnp.array([m.c1, m.cG])
            starts.append(jnp.concatenate([c, reduced.linear_residual_saddle(c, P, L, V, hyper, tokens)]))
        else:
            starts.append(jnp.array(m.coords))
    modes, actions, covs = [], [], []
    for x0 in starts:
        x, val, H = _refine_mode(jnp.asarray(x0), P, law, L=L, V=V, activation=activation, hyper=hyper,
                                 tokens=tokens)
        H = np.asarray(H)
        w = np.linalg.eigvalsh(H)
        if not (np.all(np.isfinite(H)) and w[0] > 0):
            continue
        if any(np.allclose(np.asarray(x), o, rtol=1e-6, atol=1e-8) for o in modes):
            continue
        modes.append(np.asarray(x))
        actions.append(float(val))
        covs.append(np.linalg.inv(H))
    if not modes:
        raise RuntimeError(f"no mode of the {activation} posterior found at P={P}")
    actions = np.asarray(actions)
    logw = -actions - 0.5 * np.array([np.linalg.slogdet(np.linalg.inv(c))[1] for c in covs])
    weights = np.exp(logw - logw.max())
    return np.stack(modes), actions, np.stack(covs), weights / weights.sum()


@partial(jax.jit, static_argnames=("L", "V", "activation", "hyper", "n_draws", "n_warmup", "thin", "tokens"))
def _run_nuts(keys, x0, step_size, imm, P, law, *, L, V, activation, hyper, n_draws, n_warmup, thin, tokens=UNIFORM):
    fun = _action_fn(P, L, V, activation, hyper, law, tokens)
    logdensity = lambda x: -fun(x)
    observe = _observe_fn(P, L, V, activation, hyper, law, tokens)
    kernel = blackjax.nuts.build_kernel()

    def one_chain(key, x, eps, M):
        state = blackjax.nuts.init(x, logdensity)

        def step(state, k):
            state, info = kernel(k, state, logdensity, eps, M)
            return state, (observe(state.position), info.is_divergent, info.acceptance_rate)

        def block(state, k):
            state, outs = jax.lax.scan(step, state, jax.random.split(k, thin))
            obs, div, acc = outs
            return state, (jax.tree.map(lambda v: v[-1], obs), div.sum(), acc.mean())

        kw, kd = jax.random.split(key)
        state, (_, dw, aw) = jax.lax.scan(step, state, jax.random.split(kw, n_warmup))
        state, (obs, div, acc) = jax.lax.scan(block, state, jax.random.split(kd, n_draws))
        return obs, div.sum() + dw.sum(), acc.mean()

    return jax.vmap(one_chain)(keys, x0, step_size, imm)


def sample_op_posterior(key, P, L: int, V: int, activation: str, hyper: Hyper | None = None, *,
                        n_chains: int = 256, n_draws: int = 200, n_warmup: int = 100,
                        thin: int = 1, n_adapt: int = 300, law=None, tokens=None) -> OPSamples:
    """Sample the reduced posterior of ``activation`` at P in order-parameter space.

    ``n_chains`` NUTS chains (vmapped) start in the modes of ``posterior_modes`` with
    probability equal to their Laplace masses; each mode's step size and dense inverse mass
    matrix come from blackjax ``window_adaptation`` (``n_adapt`` steps, one chain per mode,
    started at the mode with the Laplace covariance). Chain i uses ``fold_in(key, i)``.
    Returns ``OPSamples`` with ``(chain, draw)`` arrays. Needs float64 for L >= 32
    (``jax.config.update("jax_enable_x64", True)`` in the caller). ``tokens``: an i.i.d. token
    law (``copyjax.tokens``; default uniform).
    """
    check_activation(activation)
    tokens = token_law(tokens)
    L, V = check_size("L", L, 2), check_size("V", V, 2)
    P = check_P(P)
    for name, v in (("n_chains", n_chains), ("n_draws", n_draws), ("thin", thin), ("n_adapt", n_adapt)):
        check_size(name, v, 1)
    check_size("n_warmup", n_warmup, 0)
    hyper = default_hyper(activation, L) if hyper is None else hyper
    if activation == "softmax" and law is None:
        law = sampling_law(L, hyper, P)
    modes, _, covs, weights = posterior_modes(P, L, V, activation, hyper, law, tokens)
    k_assign, k_jitter, k_adapt, k_run = jax.random.split(key, 4)

    eps, imms = [], []
    for j, (x, cov) in enumerate(zip(modes, covs)):
        e, imm = _adapt(jax.random.fold_in(k_adapt, j), jnp.asarray(x), jnp.asarray(_floor_curvature(cov)),
                        P, law, L=L, V=V, activation=activation, hyper=hyper, n_adapt=n_adapt, tokens=tokens)
        eps.append(float(e))
        imms.append(np.asarray(imm))

    keys = chain_keys(k_run, n_chains)
    u = jax.vmap(lambda k: jax.random.uniform(k))(chain_keys(k_assign, n_chains))
    mode = np.minimum(np.searchsorted(np.cumsum(weights), np.asarray(u)), len(weights) - 1)
    xi = jax.vmap(lambda k: jax.random.normal(k, (modes.shape[1],)))(chain_keys(k_jitter, n_chains))
    # Start from the Laplace Gaussian, but no wider than unit sd per coordinate: at a
    # critical point (the linear onset) H is nearly singular and the Laplace width diverges.
    init_covs = np.stack([_floor_curvature(c) for c in covs])
    chol = np.stack([np.linalg.cholesky(c) for c in init_covs])
    x0 = modes[mode] + np.einsum("cij,cj->ci", chol[mode], np.asarray(xi))
    obs, div, acc = _run_nuts(keys, jnp.asarray(x0), jnp.asarray(np.asarray(eps)[mode]),
                              jnp.asarray(np.stack(imms)[mode]), P, law, L=L, V=V,
                              activation=activation, hyper=hyper, n_draws=n_draws,
                              n_warmup=n_warmup, thin=thin, tokens=tokens)
    return OPSamples({k: np.asarray(v) for k, v in obs.items()}, mode, modes, weights,
                     np.asarray(div), np.asarray(acc))


def op_summary(samples: OPSamples) -> OPSummary:
    """Posterior mean, sd, variance (the susceptibility), MCSE, R-hat and ESS of each
    observable; chains whose draws are not finite are left out (``summarize``)."""
    bad = ~np.all(np.stack([np.all(np.isfinite(v), axis=1) for v in samples.draws.values()]), axis=0)
    stats = {}
    for k, v in samples.draws.items():
        s = summarize(v, bad)
        stats[k] = OPStat(**s.to_json(), var=s.sd**2)
    return OPSummary(samples.weights.tolist(), int(samples.divergent.sum()), float(np.mean(samples.acceptance)),
                     **stats)


def histogram(samples: OPSamples, name: str = "cG", bins: int = 40, range_=None):
    """Normalised histogram of one observable over all chains and draws: ``(density, edges)``."""
    x = np.asarray(samples.draws[name]).reshape(-1)
    x = x[np.isfinite(x)]
    return np.histogram(x, bins=bins, range=range_, density=True)


def equal_mass_point(L: int, V: int, P_lo: float, P_hi: float, hyper: Hyper | None = None,
                     law=None, rtol: float = 1e-4) -> float:
    """The P at which the copy phase of the softmax reduced posterior holds half the mass
    (Laplace masses of ``posterior_modes``): where the a_G histogram is most bimodal.
    Bisection in log P on [P_lo, P_hi], which must bracket it; ``law`` defaults to
    ``sampling_law(L, hyper, P_hi)`` (use the same law when sampling)."""
    hyper = default_hyper("softmax", L) if hyper is None else hyper
    P_lo, P_hi = check_P(P_lo, "P_lo"), check_P(P_hi, "P_hi")
    law = sampling_law(L, hyper, P_hi) if law is None else law
    divide = masks.FULL.divide(L)  # the one phase divide (the free energy's and the LLC's)

    def copy_mass(P):
        modes, _, _, w = posterior_modes(P, L, V, "softmax", hyper, law)
        aG = np.array([float(reduced.aG_from_y(reduced.row_moments(jnp.asarray(m), law)[2], L)) for m in modes])
        return float(np.sum(w[aG >= divide]))

    if not (copy_mass(P_lo) < 0.5 <= copy_mass(P_hi)):
        raise ValueError(f"[P_lo, P_hi] = [{P_lo}, {P_hi}] does not bracket the equal-mass point")
    while P_hi / P_lo > 1 + rtol:
        mid = math.sqrt(P_lo * P_hi)
        if copy_mass(mid) < 0.5:
            P_lo = mid
        else:
            P_hi = mid
    return math.sqrt(P_lo * P_hi)


class TheoryProfile(NamedTuple):
    """The reduced posterior's free energy over a_G at one P (``softmax_aG_profile``).

    ``edges: (nb + 1,)`` bin edges of a_G; ``F: (nb,)`` ``-log`` (mass in the bin / its
    width), minimum 0, nan where no grid point falls; ``log_ratio``: log(mass with a_G >=
    ``divide`` / mass below); ``boundary_gap``: over the bins, the least margin in nats by
    which the box's boundary is less probable than the bin (large: the box holds the mass)."""

    edges: np.ndarray
    F: np.ndarray
    log_ratio: float
    boundary_gap: float


@partial(jax.jit, static_argnames=("L", "V", "hyper", "tokens"))
def _grid_action(M, P, law, *, L, V, hyper, tokens=UNIFORM):
    def one(m):
        y = reduced.row_moments(m, law)[2]
        return reduced.softmax_posterior_action(m, P, L, V, hyper, law, tokens), reduced.aG_from_y(y, L)

    # lax.map in blocks: a vmap over the whole grid would hold (grid x law) arrays at once
    return jax.lax.map(one, M, batch_size=256)


def softmax_aG_profile(P, L: int, V: int, edges, divide: float, hyper: Hyper | None = None,
                       law=None, n_grid: int = 241, tokens=None) -> TheoryProfile:
    """The theory's posterior-form free energy along a_G, comparable bin for bin with the
    exact posterior's ``free_energy.profile``: the mean-field macrostate density
    ``exp(-softmax_posterior_action(m))`` integrated over the multipliers ``m = (lam_a, mu_g)``
    by the midpoint rule on an ``n_grid^2`` grid, each node's mass put in the a_G bin of its
    macrostate (the marginal of a_G with the residual direction integrated out, not a
    minimum over it). The box, ``lam_a in [-2.5 s - 30, 30]``, ``mu_g in [-30, 2.5 s + 30]``
    with ``s = beta P / L`` (the largest pull data can exert on a row), holds the modes and
    barrier path at every P tried; ``boundary_gap`` says by how much. ``law`` defaults to
    ``sampling_law(L, hyper, P)`` (the same as the NUTS sampler's); about 25 s per P at
    L = 64 on 2 CPU cores."""
    hyper = default_hyper("softmax", L) if hyper is None else hyper
    P = check_P(P)
    n_grid = check_size("n_grid", n_grid, 16)
    edges = np.asarray(edges, float)
    if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError("edges must be an increasing 1-d array of at least 2 bin edges")
    law = sampling_law(L, hyper, P) if law is None else law
    s = float(hyper.beta) * P / L
    lam = np.linspace(-2.5 * s - 30.0, 30.0, n_grid)
    mu = np.linspace(-30.0, 2.5 * s + 30.0, n_grid)
    M = np.stack(np.meshgrid(lam, mu, indexing="ij"), -1).reshape(-1, 2)
    S, a = _grid_action(jnp.asarray(M, law.z.dtype), jnp.asarray(P, law.z.dtype), law, L=L, V=V, hyper=hyper,
                        tokens=token_law(tokens))
    S, a = np.asarray(S).reshape(n_grid, n_grid), np.asarray(a).reshape(n_grid, n_grid)
    logm = -S + np.log((lam[1] - lam[0]) * (mu[1] - mu[0]))
    border = np.zeros_like(S, bool)
    border[[0, -1], :] = border[:, [0, -1]] = True
    b = np.digitize(a, edges) - 1
    nb = edges.size - 1
    F, gap = np.full(nb, np.nan), np.inf
    for j in range(nb):
        sel = (b == j) & np.isfinite(logm)
        if sel.any():
            log_mass = np.logaddexp.reduce(logm[sel])
            F[j] = -log_mass + np.log(edges[j + 1] - edges[j])
            if (sel & border).any():
                gap = min(gap, float(np.min(-logm[sel & border]) + log_mass))
    ok = np.isfinite(logm)
    hi, lo = ok & (a >= divide), ok & (a < divide)
    lr = (np.logaddexp.reduce(logm[hi]) if hi.any() else -np.inf) - (np.logaddexp.reduce(logm[lo]) if lo.any() else -np.inf)
    return TheoryProfile(edges, F - np.nanmin(F), float(lr), gap)


__all__ = ["equal_mass_point", "histogram", "op_summary", "OPSamples", "posterior_modes",
           "sample_op_posterior", "sampling_law", "softmax_aG_profile", "TheoryProfile"]
