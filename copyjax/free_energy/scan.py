"""The tempered scan: one umbrella run at P0 whose windows temper the likelihood, recombined
by MBAR at every P of a grid, giving P*, the spinodals and the barrier with a bootstrap error."""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import mbar
from copyjax._checks import check_positive, check_size
from copyjax.data import stats_size
from copyjax.free_energy.landscape import barrier_height, equal_weight_point, local_minima
from copyjax.free_energy.recombination import Profile, Recombined, recombine, softmax_windows
from copyjax.free_energy.umbrella import UmbrellaRun, sample_umbrella


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


def _binned_logsumexp(a, b, n_bins: int) -> np.ndarray:
    """``(n_t, n_bins)``: the logsumexp of ``a: (n_t, N)`` over the samples of each bin ``b:
    (N,)`` (samples outside [0, n_bins) left out; -inf for an empty bin), in NumPy: one pass,
    no array whose shape depends on the bins' counts (jax's logsumexp compiled one program per
    bin and bootstrap replicate, 85 % of a scan's time at L = 16)."""
    ok = (b >= 0) & (b < n_bins)
    a, b = np.asarray(a, float)[:, ok], b[ok]
    top = np.full((n_bins, a.shape[0]), -np.inf)
    np.maximum.at(top, b, a.T)
    top = np.where(np.isfinite(top), top, 0.0)
    total = np.zeros_like(top)
    np.add.at(total, b, np.exp(a.T - top[b]))
    with np.errstate(divide="ignore"):
        return (top + np.log(total)).T


def _scan_profiles(log_denominator, data, prior, op, edges, divide):
    """Free-energy profiles over ``op`` and the phases' log-odds at every temper of ``data:
    (N, n_t)`` from one MBAR solution (its per-sample ``log_denominator: (N,)``), without
    covariances: ``(F: (n_t, n_bins), log_ratio: (n_t,))``, F in nats with min 0 per row (nan
    for empty bins)."""
    a = -(data + prior[:, None]).T - np.asarray(log_denominator)[None, :]  # (n_t, N): log weights
    b = np.digitize(op, edges) - 1
    width = np.diff(edges)
    counts = np.bincount(b[(b >= 0) & (b < len(width))], minlength=len(width))
    F = np.where(counts > 0, -_binned_logsumexp(a, b, len(width)) + np.log(width), np.nan)
    F -= np.nanmin(F, axis=1, keepdims=True)
    copy = np.asarray(op) >= divide
    if copy.any() and (~copy).any():
        pool_copy = _binned_logsumexp(a, copy.astype(int), 2)
        lr = pool_copy[:, 1] - pool_copy[:, 0]
    else:
        lr = np.full(a.shape[0], np.nan)
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


__all__ = ["Scan", "scan_tempers", "softmax_scan"]
