"""From the umbrella run to the free energy: MBAR recombination, the profile over the reported
order parameter, the phase weights and the softmax windows (the divide between the phases)."""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from copyjax import masks
from copyjax import mbar
from copyjax.free_energy.landscape import barrier_height, bin_centres, local_minima
from copyjax.free_energy.umbrella import UmbrellaRun, sample_umbrella


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
    sampled states' energies ``u_kn``; ``n_kept``; ``weakest_overlap``: the overlap of the
    weakest link joining the states (``mbar.weakest_overlap``; below ``mbar.MIN_OVERLAP`` the
    free energies between the groups it joins are unreliable: ``overlap_ok`` is False)."""

    result: mbar.MBARResult
    u_kn: np.ndarray
    xi: np.ndarray
    op: np.ndarray
    prior: np.ndarray
    data: np.ndarray
    n_kept: int
    abs_rho: np.ndarray
    family: np.ndarray
    weakest_overlap: float = float("nan")

    @property
    def overlap_ok(self) -> bool:
        return bool(self.weakest_overlap >= mbar.MIN_OVERLAP)


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
    weakest = mbar.weakest_overlap(mbar.overlap(res, u_kn))
    return Recombined(res, u_kn, xi, op, prior, data, int(xi.size), abs_rho, family, weakest)


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


__all__ = ["Profile", "profile", "recombine", "Recombined", "softmax_phase_weights", "softmax_windows", "SoftmaxWindows"]
