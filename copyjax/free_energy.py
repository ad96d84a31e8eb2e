"""Free energy of the exact posterior of G along the copy order parameter: umbrella sampling
recombined by MBAR (``copyjax.mbar``).

The exact marginal ``p(G | data) ∝ exp(-S_P(G))`` (W integrated out) is sampled in windows
``k`` with a harmonic bias on the copy coordinate

    xi(G) = <G, S - U> / <S, S - U>          (xi(lambda S) = lambda: the copy logit),

``u_k(G) = S_P(G) + kappa/2 (xi(G) - c_k)^2``, one batch of vmapped adaptive-MALA chains
(``sgmcmc.adaptive_mala.build_kernel``, its step size tuned per chain during the burn-in and
frozen) for all windows at once. xi is linear in G, so the bias is a quadratic in G that
MALA handles as well as the prior. Windows may also temper the likelihood, beta -> t beta,
which is exactly the posterior on the counts t C (the statistics enter S_P only through
beta C): MBAR over (window, t) then gives the free energy at every effective data size t P
in the sampled range from one run on the same sequences.

From the recombined samples: the free-energy profile F_P over the reported order parameter
(softmax a_G, linear |c_G|) or over xi, the mass on each side of the barrier (the phase
weights), the posterior mean of the order parameter, each with MBAR's asymptotic error
(draws subsampled to be near-uncorrelated first, per chain), and the transition point where
the two phases carry equal mass.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.base import SamplingAlgorithm
from jax.scipy.special import logsumexp

from copyjax import exact_posterior
from copyjax import masks
from copyjax import mbar
from copyjax.sgmcmc import adaptive_mala
from copyjax._checks import check_activation, check_burn_in, check_positive, check_size
from copyjax.action import action_from_KB, marginal_logdensity
from copyjax.chains import Layout, Schedule, run_chains
from copyjax.data import float_stats, stats_size
from copyjax.model import shift_matrix, uniform_matrix


def copy_direction(L: int, dtype=jnp.float32) -> jax.Array:
    """``(L, L)``: ``(S - U) / <S, S - U>``, so that ``xi(G) = <G, D>`` and ``xi(lambda S) = lambda``
    (the full mask's ``Mask.copy_direction``)."""
    return masks.FULL.copy_direction(L, dtype)


def copy_coordinate(G: jax.Array) -> jax.Array:
    """``xi(G) = <G, S - U> / <S, S - U>``: the copy logit above the row mean, ``G: (..., L, L) -> (...)``.
    For linear attention (A = G) this is c_G."""
    return masks.FULL.copy_coordinate(G)


def mean_coordinate(G: jax.Array) -> jax.Array:
    """``rho(G) = <G, U> = 1^T G 1 / L``, ``G: (..., L, L) -> (...)``. For linear attention this
    is rho = c_1 + c_G, the mean-sector amplitude: the order parameter of the onset (pooling
    first, docs/theory.md section 6) and, with c_G > 0, the label of the sign family
    (g s > 0 where rho > 0). It is orthogonal to the copy coordinate (<U, S - U> = 0)."""
    return jnp.sum(G, axis=(-2, -1)) / G.shape[-1]


# the biased coordinate of an umbrella run: "copy" (xi, both activations) or "mean" (rho, linear)
COORDINATES = {"copy": copy_coordinate, "mean": mean_coordinate}


def check_coordinate(coordinate: str, activation: str, mask="full") -> str:
    if coordinate not in COORDINATES:
        raise ValueError(f"coordinate must be one of {sorted(COORDINATES)}, got {coordinate!r}")
    if coordinate == "mean" and activation != "linear":
        raise ValueError("coordinate 'mean' needs activation 'linear' (softmax rows sum to 1: "
                         "a_1 + a_G = 1 at every G)")
    mask = masks.get(mask)
    mask.check(activation)
    if coordinate != "copy" and mask != masks.FULL:
        raise ValueError(f"coordinate {coordinate!r} is the full mask's; under mask {mask.spec!r} the umbrella "
                         "biases its copy coordinate ('copy')")
    return coordinate


def _coordinate_fn(coordinate: str, mask):
    """The biased coordinate as a function of G: the ``mask``'s copy coordinate, or the full
    mask's mean coordinate."""
    return masks.get(mask).copy_coordinate if coordinate == "copy" else COORDINATES[coordinate]


# ------------------------------------------------------------------ umbrella kernel


class UmbrellaState(NamedTuple):
    """``inner``: the adaptive MALA state on the biased density; ``center``: the window's
    centre c_k; ``t``: its likelihood temper (beta -> t beta). ``position`` is G."""

    inner: adaptive_mala.AdaptiveMALAState
    center: jax.Array
    t: jax.Array

    @property
    def position(self):
        return self.inner.position


def biased_logdensity(G, stats, hyper, activation: str, center, kappa, t, coordinate: str = "copy",
                      mask="full"):
    """``-S_P^{(t)}(G) - kappa/2 (x(G) - center)^2`` with x the ``coordinate`` (``-inf``, not
    NaN, where M is not positive definite), under ``mask`` (its density and copy coordinate)."""
    th = hyper._replace(beta=hyper.beta * t)
    lp = marginal_logdensity(G, stats, th, activation, mask)
    return lp - 0.5 * kappa * (_coordinate_fn(coordinate, mask)(G) - center) ** 2


class UmbrellaSampler(NamedTuple):
    """Hashable spec for ``run_chains(..., data=...)``: per chain, adaptive MALA on the
    biased, tempered exact marginal of ``data["stats"]``. Positions are ``(G, center, t)``."""

    hyper: object
    activation: str
    kappa: float
    n_adapt: int
    target: float = 0.57
    coordinate: str = "copy"
    mask: object = "full"  # a masks name or Mask

    def build(self, data) -> SamplingAlgorithm:
        kernel = adaptive_mala.build_kernel(self.n_adapt, self.target)
        lp = lambda c, t: (lambda G: biased_logdensity(G, data["stats"], self.hyper, self.activation,
                                                       c, self.kappa, t, self.coordinate, self.mask))

        def init(position):
            G, c, t = position
            return UmbrellaState(adaptive_mala.init(G, lp(c, t), data["step_size"], self.target), c, t)

        def step(key, state):
            inner, info = kernel(key, state.inner, lp(state.center, state.t))
            return UmbrellaState(inner, state.center, state.t), info

        return SamplingAlgorithm(init, step)


class UmbrellaObserver(NamedTuple):
    """Per draw: ``xi``, the biased coordinate (``coordinate``), the reported order parameters
    ``op`` (softmax a_G, linear |c_G|), ``abs_rho`` and ``family`` (``order.reported_order_parameters``),
    the prior term ``||G||^2 / (2 sigma_g2)`` and the data action at every temper of ``t_grid``
    (one contraction, one V x V Cholesky per temper): what MBAR needs for any (window, t).
    Under a ``mask``: its order parameters (``Mask.order``) and contractions over its loss rows;
    ``prior`` over every entry of G, as the masked density puts N(0, sigma_g2) on the masked
    ones too (the same term in every state)."""

    hyper: object
    activation: str
    t_grid: tuple
    coordinate: str = "copy"
    mask: object = "full"  # a masks name or Mask

    def __call__(self, G, data) -> dict:
        stats = float_stats(data["stats"])
        Gs = G.astype(stats.dtype)  # the contraction in the statistics' dtype; xi and the prior in G's
        P = stats_size(stats).astype(Gs.dtype)
        mask = masks.get(self.mask)
        A = mask.attention(Gs, self.activation)
        K, B, n = mask.contractions(A, stats)
        rep = mask.order(A, self.activation)
        out = {"xi": _coordinate_fn(self.coordinate, self.mask)(G), "op": rep["cG"], "abs_rho": rep["abs_rho"],
               "family": rep["family"], "prior": 0.5 * jnp.sum(G**2) / self.hyper.sigma_g2}
        for i, t in enumerate(self.t_grid):
            out[f"data{i}"] = action_from_KB(K, B, P, n, self.hyper._replace(beta=self.hyper.beta * t))
        return out


def start_positions(key, centers, L: int, hyper, dtype=jnp.float64, coordinate: str = "copy",
                    copy_start: float | None = None, mask="full") -> jax.Array:
    """``(n, L, L)``: a prior draw moved so that each chain starts with its coordinate at its
    window's centre: ``+ (center - xi) S`` (``"copy"``), ``+ (center - rho) U`` (``"mean"``; with
    ``copy_start``, also ``+ (copy_start - xi) (S - U)``, which leaves rho unchanged: it picks
    the sign of c_G, a slow variable above the linear crossover that the bias on rho does not
    move); under a ``mask``, ``+ (center - xi) S`` with its copy coordinate and copy pattern
    (the causal one has no wrap at row 0)."""
    centers = jnp.asarray(centers, dtype)
    G = jnp.sqrt(hyper.sigma_g2) * jax.random.normal(key, (centers.shape[0], L, L), dtype)
    if coordinate == "copy":
        mask = masks.get(mask)
        return G + (centers - mask.copy_coordinate(G))[:, None, None] * mask.copy_pattern(L, dtype)
    check_coordinate(coordinate, "linear")
    S, U = shift_matrix(L, dtype), uniform_matrix(L, dtype)
    if copy_start is not None:
        G = G + (copy_start - copy_coordinate(G))[:, None, None] * (S - U)
    return G + (centers - mean_coordinate(G))[:, None, None] * U


class UmbrellaRun(NamedTuple):
    """Draws after the burn-in, ``(chain, draw)``: ``xi`` (the biased coordinate), ``op``,
    ``abs_rho``, ``family``, ``prior`` and ``data`` ``(chain, draw, len(t_grid))``; per chain
    ``center`` and ``t``; ``kappa``; ``t_grid``; ``acceptance`` per chain; ``P`` the number
    of sequences of the statistics; ``coordinate``: which coordinate was biased."""

    xi: np.ndarray
    op: np.ndarray
    prior: np.ndarray
    data: np.ndarray
    center: np.ndarray
    t: np.ndarray
    kappa: float
    t_grid: np.ndarray
    acceptance: np.ndarray
    P: float
    abs_rho: np.ndarray
    family: np.ndarray
    coordinate: str = "copy"
    mask: object = "full"  # a masks name or Mask


def sample_umbrella(key, stats, hyper, activation: str, centers, *, kappa: float, num_steps: int,
                    burn_in: int | None = None, thin: int = 5, temps=(1.0,), t_grid=None,
                    chains_per_window: int = 1, initial_step_size=None, progress: bool = False,
                    devices=None, chain_block: int | None = None, desc: str = "umbrella",
                    coordinate: str = "copy", copy_start: float | None = None, mask="full") -> UmbrellaRun:
    """Umbrella sampling of ``exp(-S_P(G))``, ``stats: (L, L, V, V)``: ``chains_per_window``
    chains per (centre, temper) pair of ``centers x temps``, one compiled run. ``t_grid``
    (default ``temps``): tempers at which each draw's data action is recorded, the states
    MBAR can evaluate; it must contain ``temps``. ``chain_block``: chains vmapped together
    (``run_chains``); default all chains of a device in one block, the fastest measured
    (``benchmarks/chain_block.py``: 633 chain-steps/s at L = 64 with 64 chains in one block,
    419 in blocks of 16). The stall once seen with 32 or more chains in a block was jaxlib
    0.10-0.11.1's LAPACK deadlock, excluded by the dependency bounds (docs/lapack_hang.md).
    ``coordinate``: ``"copy"`` (xi) or ``"mean"`` (rho, linear attention only); ``copy_start``:
    with ``"mean"``, the copy coordinate every chain starts at (``start_positions``). ``mask``: a
    ``copyjax.masks`` name or ``Mask`` (its copy logit biased, ``op`` its ``Mask.order``'s c_G:
    under the causal mask the mean over rows of a_G(l))."""
    check_activation(activation)
    check_coordinate(coordinate, activation, mask)
    num_steps = check_size("num_steps", num_steps, 2)
    burn_in = num_steps // 3 if burn_in is None else check_burn_in(burn_in, num_steps, minimum=1)
    check_positive("kappa", kappa)
    centers = np.atleast_1d(np.asarray(centers, float))
    temps = np.atleast_1d(np.asarray(temps, float))
    if centers.size < 1 or np.any(~np.isfinite(centers)):
        raise ValueError("centers must be a non-empty array of finite numbers")
    if np.any(temps <= 0):
        raise ValueError(f"temps must be > 0, got {temps.tolist()}")
    t_grid = temps if t_grid is None else np.atleast_1d(np.asarray(t_grid, float))
    if not all(np.any(np.isclose(t_grid, t)) for t in temps):
        raise ValueError("t_grid must contain every sampled temper in temps")
    stats = float_stats(stats)
    L = stats.shape[0]
    cpw = check_size("chains_per_window", chains_per_window, 1)
    cc, tt = np.meshgrid(centers, temps, indexing="ij")
    c = np.repeat(cc.ravel(), cpw)
    t = np.repeat(tt.ravel(), cpw)
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    k0, k1 = jax.random.split(key)
    G0 = start_positions(k0, c, L, hyper, dtype, coordinate, copy_start, mask)
    eps0 = exact_posterior.default_initial_step(activation, hyper) if initial_step_size is None else initial_step_size
    data = {"stats": stats, "step_size": jnp.asarray(eps0, dtype)}
    smp = run_chains(k1, UmbrellaSampler(hyper, activation, float(kappa), burn_in, coordinate=coordinate, mask=mask),
                     (G0, jnp.asarray(c, dtype), jnp.asarray(t, dtype)),
                     UmbrellaObserver(hyper, activation, tuple(float(x) for x in t_grid), coordinate, mask),
                     data, schedule=Schedule(num_steps, burn_in, thin), progress=progress, desc=desc,
                     layout=Layout(devices=devices,
                                   chain_block=None if chain_block is None else min(int(chain_block), c.size)))
    d = smp.draws
    data_t = np.stack([np.asarray(d[f"data{i}"], float) for i in range(len(t_grid))], axis=-1)
    P = float(stats_size(stats))
    return UmbrellaRun(np.asarray(d["xi"], float), np.asarray(d["op"], float), np.asarray(d["prior"], float),
                       data_t, c, t, float(kappa), np.asarray(t_grid, float),
                       np.asarray(smp.info["acceptance_rate"]), P, np.asarray(d["abs_rho"], float),
                       np.asarray(d["family"], float), coordinate, masks.get(mask).spec)


# ------------------------------------------------------------------ recombination


class Profile(NamedTuple):
    """MBAR estimates at one temper ``t`` (data size ``P = t P_0``).

    ``edges``/``F``/``F_sd``: free energy (nats, min 0) of the density of the coordinate in
    each bin and its error (``nan`` for empty bins); ``weights``/``weights_sd``: mass below
    and above ``divide`` (pooling, copy); ``log_ratio``/``log_ratio_sd``: log(copy / pooling);
    ``mean``/``mean_sd``: posterior mean of the chosen observable (default the reported order
    parameter ``op``), ``var``/``var_sd`` its posterior variance (the susceptibility);
    ``minima``: indices of the local minima of F deeper than their noise (``local_minima``);
    ``barrier``: F at the highest bin between the two lowest minima minus the higher of the
    two (nan with one minimum)."""

    t: float
    P: float
    edges: np.ndarray
    F: np.ndarray
    F_sd: np.ndarray
    weights: np.ndarray
    weights_sd: np.ndarray
    log_ratio: float
    log_ratio_sd: float
    mean: float
    mean_sd: float
    minima: tuple
    barrier: float
    var: float = float("nan")
    var_sd: float = float("nan")

    @property
    def minima_centres(self) -> list:
        """The coordinate at the centre of each minimum's bin."""
        return bin_centres(self.edges, self.minima)


class Recombined(NamedTuple):
    """MBAR over all (window, temper) states of an ``UmbrellaRun``: ``result``; the kept
    (subsampled) draws ``xi``, ``op``, ``prior``, ``data``, ``abs_rho``, ``family``; the
    sampled states' energies ``u_kn``; ``n_kept``."""

    result: mbar.MBARResult
    u_kn: np.ndarray
    xi: np.ndarray
    op: np.ndarray
    prior: np.ndarray
    data: np.ndarray
    n_kept: int
    abs_rho: np.ndarray
    family: np.ndarray


def recombine(run: UmbrellaRun) -> Recombined:
    """Subsample each chain (``mbar.subsample`` on its xi series), then solve MBAR over the
    distinct (centre, temper) states."""
    states = sorted({(float(c), float(t)) for c, t in zip(run.center, run.t)})
    idx = {s: i for i, s in enumerate(states)}
    keep = [mbar.subsample(run.xi[i]) for i in range(run.xi.shape[0])]
    state_of = np.concatenate([np.full(len(k), idx[(float(run.center[i]), float(run.t[i]))])
                               for i, k in enumerate(keep)])
    pick = lambda a: np.concatenate([a[i][k] for i, k in enumerate(keep)])
    xi, op, prior = pick(run.xi), pick(run.op), pick(run.prior)
    abs_rho, family = pick(run.abs_rho), pick(run.family)
    data = np.concatenate([run.data[i][k] for i, k in enumerate(keep)])
    order = np.argsort(state_of, kind="stable")
    xi, op, prior, data, state_of = xi[order], op[order], prior[order], data[order], state_of[order]
    abs_rho, family = abs_rho[order], family[order]
    N_k = np.bincount(state_of, minlength=len(states))
    if np.any(N_k == 0):
        raise ValueError("a window has no draws after subsampling; run more steps")
    col = {float(t): int(np.argmin(np.abs(run.t_grid - t))) for _, t in states}
    u_kn = np.stack([data[:, col[t]] + prior + 0.5 * run.kappa * (xi - c) ** 2 for c, t in states])
    res = mbar.solve(jnp.asarray(u_kn), jnp.asarray(N_k))
    return Recombined(res, u_kn, xi, op, prior, data, int(xi.size), abs_rho, family)


def _observable(rec: Recombined, name: str) -> np.ndarray:
    if name not in ("op", "xi", "abs_rho", "family"):
        raise ValueError(f"coordinate must be 'op', 'xi', 'abs_rho' or 'family', got {name!r}")
    return getattr(rec, name)


def profile(rec: Recombined, run: UmbrellaRun, t_index: int, edges, divide: float,
            coordinate: str = "op", phase: str | None = None, mean_of: str = "op") -> Profile:
    """MBAR free-energy profile, phase weights and posterior moments at the temper
    ``run.t_grid[t_index]``; ``edges``: bin edges of ``coordinate`` (``"op"``, ``"xi"``,
    ``"abs_rho"``); ``divide``: the value of ``phase`` (default: the same coordinate; linear
    attention's sign families: ``"family"`` with divide 0) that separates the two phases;
    ``mean_of``: the observable (> -1) whose posterior mean and variance are reported."""
    x = _observable(rec, coordinate)
    xp = x if phase is None else _observable(rec, phase)
    m = _observable(rec, mean_of)
    edges = np.asarray(edges, float)
    u0 = rec.data[:, t_index] + rec.prior
    inf = np.inf
    b = np.digitize(x, edges) - 1
    nb = len(edges) - 1
    filled = [j for j in range(nb) if np.any(b == j)]  # empty bins have f = inf: left out
    u_bins = np.stack([np.where(b == j, u0, inf) for j in filled]).reshape(len(filled), -1)
    sides = [xp < divide, xp >= divide]
    if not (np.any(sides[0]) or np.any(sides[1])):
        raise ValueError("no draws to split into phases")
    # a phase without draws has weight 0 (log ratio -+inf): its state is left out of MBAR
    # (replaced by the whole, a placeholder, to keep the indices)
    empty = [not np.any(side) for side in sides]
    u_phase = np.stack([np.where(side, u0, inf) if not e else u0 for side, e in zip(sides, empty)])
    # moments of m through the states u0 - k log(1 + m), k = 1, 2 (m > -1: a_G, |c_G|, |rho| are)
    u_mom = np.stack([u0 - np.log1p(m), u0 - 2 * np.log1p(m)])
    f, theta = mbar.covariance(rec.result, rec.u_kn, np.concatenate([u0[None, :], u_bins, u_phase, u_mom]))
    f, theta = np.asarray(f), np.asarray(theta)
    K = rec.u_kn.shape[0]
    nf = len(filled)
    i0, ib, ip, im = K, K + 1, K + 1 + nf, K + 3 + nf
    sd = lambda i: float(mbar.difference_sd(theta, i, i0))
    width = np.diff(edges)
    Fb, F_sd = np.full(nb, np.nan), np.full(nb, np.nan)
    for n, j in enumerate(filled):
        Fb[j] = f[ib + n] - f[i0] + np.log(width[j])
        F_sd[j] = sd(ib + n)
    Fb = Fb - np.nanmin(Fb)
    w = np.array([0.0 if empty[j] else np.exp(-(f[ip + j] - f[i0])) for j in range(2)])
    w_sd = np.array([0.0 if empty[j] else w[j] * sd(ip + j) for j in range(2)])
    if any(empty):
        lr, lr_sd = (np.inf if empty[0] else -np.inf), float("nan")
    else:
        lr = float(f[ip] - f[ip + 1])
        lr_sd = float(mbar.difference_sd(theta, ip, ip + 1))
    m1, m2 = np.exp(-(f[im:im + 2] - f[i0]))
    mean = float(m1 - 1.0)
    mean_sd = float(m1 * sd(im))
    # Var m = E(1+m)^2 - (E(1+m))^2; its error by the delta method on (f_0, f_1, f_2)
    var = float(m2 - m1**2)
    g = np.array([m2 - 2 * m1**2, 2 * m1**2, -m2])
    ix = [i0, im, im + 1]
    var_sd = float(np.sqrt(max(g @ theta[np.ix_(ix, ix)] @ g, 0.0)))
    minima = local_minima(Fb, F_sd=F_sd)
    return Profile(float(run.t_grid[t_index]), float(run.t_grid[t_index] * run.P), edges, Fb, F_sd, w, w_sd,
                   lr, lr_sd, mean, mean_sd, minima, barrier_height(Fb, minima), var, var_sd)


class SoftmaxWindows(NamedTuple):
    """The softmax windows and bins ``scripts/free_energy.py`` and ``phase_diagram.py
    --free-energy`` use at length L: ``centers`` over the copy logit from -0.4 to log L + 1.5
    (the pooling basin sits near xi = 0, the copy basin near log L), ``divide`` = a_G of the
    pattern at xi = log(L) / 2 (between the basins: the barrier region carries no mass),
    ``edges``: bins of a_G. Under a ``mask``: the same centres on its copy logit, the divide
    from its pattern ``log(L) / 2 * S`` (``Mask.divide``: under the causal mask the mean over
    rows of a_G(l))."""

    centers: np.ndarray
    divide: float
    edges: np.ndarray


def softmax_windows(L: int, spacing: float = 0.09, mask="full") -> SoftmaxWindows:
    centers = np.arange(-0.4, np.log(L) + 1.5 + 1e-9, spacing)
    return SoftmaxWindows(centers, masks.get(mask).divide(L), np.linspace(-0.02, 0.8, 83))


def softmax_phase_weights(key, stats, hyper, *, spacing: float = 0.09, kappa: float = 400.0,
                          num_steps: int = 900, chains_per_window: int = 1, progress: bool = False,
                          desc: str = "umbrella", devices=None, mask="full") -> tuple[Profile, Recombined, UmbrellaRun]:
    """Softmax at the data ``stats: (L, L, V, V)``: umbrella windows ``softmax_windows``,
    recombined by MBAR; the profile over a_G with the pooling / copy weights and the posterior
    mean of a_G. ``devices``: as ``sample_umbrella``'s (default all of ``jax.devices()``);
    ``mask``: a ``copyjax.masks`` name or ``Mask`` (a_G its ``Mask.order``'s: under the causal
    mask the mean over rows of a_G(l))."""
    L = stats.shape[0]
    win = softmax_windows(L, spacing, mask)
    run = sample_umbrella(key, stats, hyper, "softmax", win.centers, kappa=kappa, num_steps=num_steps,
                          chains_per_window=chains_per_window, progress=progress, desc=desc, devices=devices,
                          mask=mask)
    rec = recombine(run)
    return profile(rec, run, 0, win.edges, win.divide, coordinate="op"), rec, run


class Scan(NamedTuple):
    """Softmax free energy over a range of P from one tempered umbrella run (``softmax_scan``).

    ``P0``: the sequences sampled (the data); ``temps``: the sampled tempers (each with every
    window); ``P``: ``(n,)`` the effective data sizes ``t P0`` of the MBAR targets (``t_grid``);
    ``profiles``: a ``Profile`` per target; ``log_ratio`` / ``log_ratio_sd`` / ``mean`` /
    ``mean_sd`` / ``copy_weight`` / ``copy_weight_sd`` / ``barrier`` / ``n_minima``: ``(n,)``
    across the scan; ``P_star`` / ``P_star_err``: where the log-odds cross 0 (MBAR's error through
    the interpolation), ``P_star_boot_sd``: the sd of P* over a bootstrap of the draws (nan
    without one), ``P_star_boot``: the replicates; ``barrier_at_P_star``; ``spinodal_low`` /
    ``spinodal_high``: the smallest / largest P of the scan whose profile has two minima
    (``None`` if that is the scan's edge: the spinodal lies outside it, or the profile there is
    too noisy to say)."""

    P0: float
    temps: np.ndarray
    P: np.ndarray
    profiles: list
    log_ratio: np.ndarray
    log_ratio_sd: np.ndarray
    mean: np.ndarray
    mean_sd: np.ndarray
    copy_weight: np.ndarray
    copy_weight_sd: np.ndarray
    barrier: np.ndarray
    n_minima: np.ndarray
    P_star: float
    P_star_err: float
    P_star_boot_sd: float
    P_star_boot: np.ndarray
    barrier_at_P_star: float
    spinodal_low: float | None
    spinodal_high: float | None


def scan_tempers(P0: float, P_lo: float, P_hi: float, spacing: float = 0.06, n_grid: int | None = None):
    """``(temps, t_grid)`` for a scan of ``[P_lo, P_hi]`` on data of ``P0`` sequences: sampled
    tempers evenly spaced in log t, at most ``spacing`` apart (the data actions of neighbouring
    tempers then overlap: at L = 64 their difference has sd ~20 nats per unit of t over a
    window's draws, so 0.06 keeps it near one nat), from ``P_lo / P0`` to ``P_hi / P0``; targets
    ``t_grid`` on a finer even grid in log t (``n_grid``, default four per sampled interval),
    containing every sampled temper."""
    check_positive("P0", P0)
    if not (0 < P_lo < P_hi):
        raise ValueError(f"the scan needs 0 < P_lo < P_hi, got P_lo={P_lo}, P_hi={P_hi}")
    check_positive("spacing", spacing)
    lo, hi = np.log(P_lo / P0), np.log(P_hi / P0)
    n_t = max(2, int(np.ceil((hi - lo) / spacing)) + 1)
    temps = np.exp(np.linspace(lo, hi, n_t))
    n_grid = 4 * (n_t - 1) + 1 if n_grid is None else check_size("n_grid", n_grid, 2)
    t_grid = np.unique(np.concatenate([temps, np.exp(np.linspace(lo, hi, n_grid))]))
    return temps, t_grid


def _crossing_barrier(P, barrier, P_star):
    """The barrier interpolated in log P between the targets that bracket ``P_star``."""
    if not np.isfinite(P_star):
        return float("nan")
    i = int(np.clip(np.searchsorted(P, P_star) - 1, 0, len(P) - 2))
    w = (np.log(P_star) - np.log(P[i])) / (np.log(P[i + 1]) - np.log(P[i]))
    return float((1 - w) * barrier[i] + w * barrier[i + 1])


def _scan_profiles(log_denominator, data, prior, op, edges, divide):
    """Free-energy profiles over ``op`` and the phases' log-odds at every temper of ``data:
    (N, n_t)`` from one MBAR solution (its per-sample ``log_denominator: (N,)``), without
    covariances: ``(F: (n_t, n_bins), log_ratio: (n_t,))``, F in nats with min 0 per row (nan
    for empty bins)."""
    a = -(data + prior[:, None]).T - np.asarray(log_denominator)[None, :]  # (n_t, N): log weights
    b = np.digitize(op, edges) - 1
    width = np.diff(edges)
    F = np.full((a.shape[0], len(width)), np.nan)
    for j in range(len(width)):
        s = b == j
        if s.any():
            F[:, j] = -np.asarray(logsumexp(a[:, s], axis=1)) + np.log(width[j])
    F -= np.nanmin(F, axis=1, keepdims=True)
    copy = op >= divide
    lr = np.asarray(logsumexp(a[:, copy], axis=1) - logsumexp(a[:, ~copy], axis=1)) if copy.any() and (~copy).any() else np.full(a.shape[0], np.nan)
    return F, lr


def _scan_moments(rec: Recombined, divide: float):
    """Per temper: the log-odds of the phases, the copy weight and the posterior mean of a_G,
    each with MBAR's asymptotic error, from one covariance over all tempers' states (u0, the
    two phases and two moments of a_G per temper)."""
    n_t = rec.data.shape[1]
    u0 = (rec.data + rec.prior[:, None]).T  # (n_t, N)
    copy = rec.op >= divide
    inf = np.inf
    states = np.concatenate([u0, np.where(~copy, u0, inf), np.where(copy, u0, inf),
                             u0 - np.log1p(rec.op), u0 - 2 * np.log1p(rec.op)])
    f, theta = (np.asarray(x) for x in mbar.covariance(rec.result, rec.u_kn, states))
    K = rec.u_kn.shape[0]
    i0, ip, ic, i1, i2 = (K + k * n_t + np.arange(n_t) for k in range(5))
    sd = lambda i, j: np.array([float(mbar.difference_sd(theta, int(a), int(b))) for a, b in zip(i, j)])
    lr, lr_sd = f[ip] - f[ic], sd(ip, ic)
    w = np.exp(-(f[ic] - f[i0]))
    m1, m2 = np.exp(-(f[i1] - f[i0])), np.exp(-(f[i2] - f[i0]))
    return lr, lr_sd, w, w * sd(ic, i0), m1 - 1.0, m1 * sd(i1, i0), m2 - m1**2


def _bootstrap(rec: Recombined, edges, divide, n_boot: int, seed: int):
    """``(F: (n_boot, n_t, n_bins), log_ratio: (n_boot, n_t))`` over bootstrap replicates: the
    kept draws resampled within each sampled state, MBAR solved again, ``_scan_profiles``."""
    rng = np.random.default_rng(seed)
    K = rec.u_kn.shape[0]
    # recombine orders the kept draws by sampled state
    state_of = np.repeat(np.arange(K), np.asarray(rec.result.N_k, int))
    groups = [np.flatnonzero(state_of == k) for k in range(K)]
    Fs, lrs = [], []
    for _ in range(n_boot):
        idx = np.concatenate([rng.choice(g, g.size) for g in groups])
        res = mbar.solve(jnp.asarray(rec.u_kn[:, idx]), jnp.asarray(rec.result.N_k), f0=rec.result.f)
        F, lr = _scan_profiles(res.log_denominator, rec.data[idx], rec.prior[idx], rec.op[idx], edges, divide)
        Fs.append(F)
        lrs.append(lr)
    return np.array(Fs), np.array(lrs)


def softmax_scan(key, stats, hyper, P_lo: float, P_hi: float, *, temper_spacing: float = 0.06,
                 n_grid: int | None = None, spacing: float = 0.09, kappa: float = 400.0, num_steps: int = 900,
                 chains_per_window: int = 1, n_boot: int = 20, progress: bool = False, desc: str = "scan",
                 devices=None, mask="full") -> tuple[Scan, Recombined, UmbrellaRun]:
    """The softmax free energy at every P in ``[P_lo, P_hi]`` from one run on the data
    ``stats: (L, L, V, V)`` of P0 sequences: the windows of ``softmax_windows`` at each temper
    of ``scan_tempers`` (beta -> t beta is the posterior on the counts t C), one MBAR over all
    (window, temper) states; at every target t P0 the profile over a_G, the log-odds of the
    phases, the copy weight and the mean a_G (MBAR's errors); P* where the log-odds cross 0.
    ``n_boot`` bootstrap replicates of the draws (resampled within each sampled state, MBAR
    solved again) give the profiles' errors (the noise criterion of ``local_minima``, hence the
    barrier and the spinodals) and a second error of P*; with ``n_boot < 2`` the minima are
    those deeper than 1 nat, without a noise criterion. ``mask``: a ``copyjax.masks``
    name or ``Mask`` (``sample_umbrella``)."""
    L = stats.shape[0]
    P0 = float(stats_size(stats))
    temps, t_grid = scan_tempers(P0, P_lo, P_hi, temper_spacing, n_grid)
    win = softmax_windows(L, spacing, mask)
    run = sample_umbrella(key, stats, hyper, "softmax", win.centers, kappa=kappa, num_steps=num_steps,
                          temps=temps, t_grid=t_grid, chains_per_window=chains_per_window, progress=progress,
                          desc=desc, devices=devices, mask=mask)
    rec = recombine(run)
    P = t_grid * P0
    lr, lr_sd, w, w_sd, mean, mean_sd, var = _scan_moments(rec, win.divide)
    F, _ = _scan_profiles(rec.result.log_denominator, rec.data, rec.prior, rec.op, win.edges, win.divide)
    boot_F, boot_lr = _bootstrap(rec, win.edges, win.divide, n_boot, int(jax.random.randint(key, (), 0, 2**31 - 1)))
    F_sd = None
    if n_boot > 1:  # per bin over the replicates where it has draws (nan with fewer than two)
        ok = np.isfinite(boot_F)
        n = ok.sum(axis=0)
        mu = np.where(ok, boot_F, 0.0).sum(axis=0) / np.maximum(n, 1)
        ss = np.where(ok, (boot_F - mu) ** 2, 0.0).sum(axis=0)
        F_sd = np.where(n > 1, np.sqrt(ss / np.maximum(n - 1, 1)), np.nan)
    prs, barrier = [], []
    for i in range(len(t_grid)):
        Fi_sd = None if F_sd is None else F_sd[i]
        m = local_minima(F[i], F_sd=Fi_sd)
        barrier.append(barrier_height(F[i], m))
        prs.append(Profile(float(t_grid[i]), float(P[i]), win.edges, F[i],
                           np.full(F.shape[1], np.nan) if Fi_sd is None else Fi_sd,
                           np.array([1 - w[i], w[i]]), np.array([w_sd[i], w_sd[i]]), float(lr[i]), float(lr_sd[i]),
                           float(mean[i]), float(mean_sd[i]), m, barrier[-1], float(var[i])))
    barrier, n_min = np.array(barrier), np.array([len(p.minima) for p in prs])
    P_star, P_star_err = equal_weight_point(P, lr, lr_sd)
    boot = np.array([equal_weight_point(P, r, np.zeros_like(r))[0] for r in boot_lr])
    two = np.flatnonzero(n_min >= 2)
    lo = float(P[two[0]]) if two.size and two[0] > 0 else None
    hi = float(P[two[-1]]) if two.size and two[-1] < len(P) - 1 else None
    scan = Scan(P0, temps, P, prs, lr, lr_sd, mean, mean_sd, w, w_sd, barrier, n_min, P_star, P_star_err,
                float(np.nanstd(boot, ddof=1)) if np.isfinite(boot).sum() > 1 else float("nan"), boot,
                _crossing_barrier(P, barrier, P_star), lo, hi)
    return scan, rec, run


def local_minima(F: np.ndarray, depth: float = 1.0, F_sd: np.ndarray | None = None, z: float = 2.0) -> tuple:
    """Indices of the local minima of ``F`` (nan bins skipped) that are at least ``depth``
    nats below the highest point between them and each neighbouring minimum; with ``F_sd``
    (the bins' standard errors), at least ``depth + z * hypot(sd at the minimum, sd at the
    top)``: a dip that the statistical noise of the profile could make is not a minimum."""
    ok = np.flatnonzero(np.isfinite(F))
    y = F[ok]
    e = np.zeros_like(y) if F_sd is None else np.nan_to_num(np.asarray(F_sd, float)[ok])
    cand = [i for i in range(len(y)) if (i == 0 or y[i] <= y[i - 1]) and (i == len(y) - 1 or y[i] <= y[i + 1])]
    keep = []
    for i in cand:
        if keep:
            j = keep[-1]
            t = j + int(np.argmax(y[j:i + 1]))
            hi = i if y[i] > y[j] else j  # the shallower of the two sets the separation
            if y[t] - y[hi] < depth + z * np.hypot(e[hi], e[t]):
                if y[i] < y[j]:
                    keep[-1] = i
                continue
        keep.append(i)
    return tuple(int(ok[i]) for i in keep)


def bin_centres(edges, bins) -> list:
    """The coordinate at the centre of each of ``bins`` (indices into ``edges``' bins)."""
    return [float(0.5 * (edges[i] + edges[i + 1])) for i in bins]


def barrier_height(F: np.ndarray, minima: tuple) -> float:
    """F at the top between the two lowest minima minus the higher of them (nan if < 2)."""
    if len(minima) < 2:
        return float("nan")
    a, b = sorted(sorted(minima, key=lambda i: F[i])[:2])
    return float(np.nanmax(F[a:b + 1]) - max(F[a], F[b]))


def equal_weight_point(P: np.ndarray, log_ratio: np.ndarray, log_ratio_sd: np.ndarray) -> tuple[float, float]:
    """Where log(copy / pooling) crosses 0, by linear interpolation in log P between the
    bracketing points, and its error from the bracketing points' errors (delta method,
    independent). ``(nan, nan)`` if there is no crossing."""
    P, r, s = (np.asarray(a, float) for a in (P, log_ratio, log_ratio_sd))
    o = np.argsort(P)
    P, r, s = P[o], r[o], s[o]
    for i in range(len(P) - 1):
        if np.isfinite(r[i]) and np.isfinite(r[i + 1]) and r[i] < 0 <= r[i + 1]:
            x0, x1 = np.log(P[i]), np.log(P[i + 1])
            w = -r[i] / (r[i + 1] - r[i])
            x = x0 + w * (x1 - x0)
            slope = (r[i + 1] - r[i]) / (x1 - x0)
            err_r = np.hypot((1 - w) * s[i], w * s[i + 1])
            return float(np.exp(x)), float(np.exp(x) * err_r / abs(slope))
    return float("nan"), float("nan")


__all__ = ["barrier_height", "biased_logdensity", "bin_centres", "check_coordinate", "COORDINATES",
           "copy_coordinate", "copy_direction", "equal_weight_point", "local_minima", "mean_coordinate",
           "Profile", "profile", "recombine", "Recombined", "sample_umbrella", "Scan", "scan_tempers", "softmax_phase_weights",
           "softmax_scan",
           "softmax_windows", "SoftmaxWindows", "start_positions", "UmbrellaObserver", "UmbrellaRun",
           "UmbrellaSampler", "UmbrellaState"]
