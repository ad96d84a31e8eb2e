"""Free energy of the exact posterior of G along the copy order parameter: umbrella sampling
recombined by MBAR (``copyjax.mbar``).

The exact marginal ``p(G | data) ∝ exp(-S_P(G))`` (W integrated out) is sampled in windows
``k`` with a harmonic bias on the copy coordinate

    xi(G) = <G, S - U> / <S, S - U>          (xi(lambda S) = lambda: the copy logit),

``u_k(G) = S_P(G) + kappa/2 (xi(G) - c_k)^2``, one batch of vmapped adaptive-MALA chains
(``exact_posterior.build_kernel``, its step size tuned per chain during the burn-in and
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

from copyjax import exact_posterior as X
from copyjax import mbar
from copyjax._checks import check_activation, check_size
from copyjax.action import action_from_KB, marginal_logdensity
from copyjax.chains import run_chains
from copyjax.model import attention, shift_matrix, stats_contractions, uniform_matrix
from copyjax.order import reported_order_parameters


def copy_direction(L: int, dtype=jnp.float32) -> jax.Array:
    """``(L, L)``: ``(S - U) / <S, S - U>``, so that ``xi(G) = <G, D>`` and ``xi(lambda S) = lambda``."""
    S, U = shift_matrix(L, dtype), uniform_matrix(L, dtype)
    return (S - U) / jnp.sum(S * (S - U))


def copy_coordinate(G: jax.Array) -> jax.Array:
    """``xi(G) = <G, S - U> / <S, S - U>``: the copy logit above the row mean, ``G: (..., L, L) -> (...)``."""
    D = copy_direction(G.shape[-1], G.dtype)
    return jnp.sum(G * D, axis=(-2, -1))


# ------------------------------------------------------------------ umbrella kernel


class UmbrellaState(NamedTuple):
    """``inner``: the adaptive MALA state on the biased density; ``center``: the window's
    centre c_k; ``t``: its likelihood temper (beta -> t beta). ``position`` is G."""

    inner: X.AdaptiveMALAState
    center: jax.Array
    t: jax.Array

    @property
    def position(self):
        return self.inner.position


def biased_logdensity(G, stats, hyper, activation: str, center, kappa, t):
    """``-S_P^{(t)}(G) - kappa/2 (xi(G) - center)^2`` (``-inf``, not NaN, where M is not
    positive definite)."""
    lp = marginal_logdensity(G, stats, hyper._replace(beta=hyper.beta * t), activation)
    return lp - 0.5 * kappa * (copy_coordinate(G) - center) ** 2


class UmbrellaSampler(NamedTuple):
    """Hashable spec for ``run_chains(..., data=...)``: per chain, adaptive MALA on the
    biased, tempered exact marginal of ``data["stats"]``. Positions are ``(G, center, t)``."""

    hyper: object
    activation: str
    kappa: float
    n_adapt: int
    target: float = 0.57

    def build(self, data) -> SamplingAlgorithm:
        kernel = X.build_kernel(self.n_adapt, self.target)
        lp = lambda c, t: (lambda G: biased_logdensity(G, data["stats"], self.hyper, self.activation,
                                                       c, self.kappa, t))

        def init(position):
            G, c, t = position
            return UmbrellaState(X.init(G, lp(c, t), data["step_size"], self.target), c, t)

        def step(key, state):
            inner, info = kernel(key, state.inner, lp(state.center, state.t))
            return UmbrellaState(inner, state.center, state.t), info

        return SamplingAlgorithm(init, step)


class UmbrellaObserver(NamedTuple):
    """Per draw: ``xi``, the reported order parameter ``op`` (softmax a_G, linear |c_G|), the
    prior term ``||G||^2 / (2 sigma_g2)`` and the data action at every temper of ``t_grid``
    (one contraction, one V x V Cholesky per temper): what MBAR needs for any (window, t)."""

    hyper: object
    activation: str
    t_grid: tuple

    def __call__(self, G, data) -> dict:
        stats = data["stats"]
        A = attention(G.astype(stats.dtype), self.activation)
        K, B = stats_contractions(A, stats)
        P = jnp.trace(stats[0, 0]).astype(A.dtype)
        L = A.shape[-1]
        out = {"xi": copy_coordinate(G), "op": reported_order_parameters(A, self.activation)["cG"],
               "prior": 0.5 * jnp.sum(G**2) / self.hyper.sigma_g2}
        for i, t in enumerate(self.t_grid):
            out[f"data{i}"] = action_from_KB(K, B, P, L, self.hyper._replace(beta=self.hyper.beta * t))
        return out


def start_positions(key, centers, L: int, hyper, dtype=jnp.float64) -> jax.Array:
    """``(n, L, L)``: a prior draw plus ``(center - xi(draw)) S`` per chain, so each chain starts
    with xi at its window's centre."""
    centers = jnp.asarray(centers, dtype)
    G = jnp.sqrt(hyper.sigma_g2) * jax.random.normal(key, (centers.shape[0], L, L), dtype)
    return G + (centers - copy_coordinate(G))[:, None, None] * shift_matrix(L, dtype)


class UmbrellaRun(NamedTuple):
    """Draws after the burn-in, ``(chain, draw)``: ``xi``, ``op``, ``prior`` and ``data``
    ``(chain, draw, len(t_grid))``; per chain ``center`` and ``t``; ``kappa``; ``t_grid``;
    ``acceptance`` per chain; ``P`` the number of sequences of the statistics."""

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


def sample_umbrella(key, stats, hyper, activation: str, centers, *, kappa: float, num_steps: int,
                    burn_in: int | None = None, thin: int = 5, temps=(1.0,), t_grid=None,
                    chains_per_window: int = 1, initial_step_size=None, progress: bool = False,
                    devices=None, chain_block: int | None = 16, desc: str = "umbrella") -> UmbrellaRun:
    """Umbrella sampling of ``exp(-S_P(G))``, ``stats: (L, L, V, V)``: ``chains_per_window``
    chains per (centre, temper) pair of ``centers x temps``, one compiled run. ``t_grid``
    (default ``temps``): tempers at which each draw's data action is recorded, the states
    MBAR can evaluate; it must contain ``temps``. ``chain_block``: chains vmapped together
    (``run_chains``); 16 by default: at L = 64 on CPU (jax 0.10.2) a block of 32 or more
    umbrella chains stalled XLA (all threads idle in a futex wait, no progress), 24 and 16 ran."""
    check_activation(activation)
    num_steps = check_size("num_steps", num_steps, 2)
    burn_in = num_steps // 3 if burn_in is None else check_size("burn_in", burn_in, 1)
    if burn_in >= num_steps:
        raise ValueError(f"burn_in must be < num_steps = {num_steps}, got {burn_in}")
    if not kappa > 0:
        raise ValueError(f"kappa must be > 0, got {kappa}")
    centers = np.atleast_1d(np.asarray(centers, float))
    temps = np.atleast_1d(np.asarray(temps, float))
    if centers.size < 1 or np.any(~np.isfinite(centers)):
        raise ValueError("centers must be a non-empty array of finite numbers")
    if np.any(temps <= 0):
        raise ValueError(f"temps must be > 0, got {temps.tolist()}")
    t_grid = temps if t_grid is None else np.atleast_1d(np.asarray(t_grid, float))
    if not all(np.any(np.isclose(t_grid, t)) for t in temps):
        raise ValueError("t_grid must contain every sampled temper in temps")
    L = stats.shape[0]
    cpw = check_size("chains_per_window", chains_per_window, 1)
    cc, tt = np.meshgrid(centers, temps, indexing="ij")
    c = np.repeat(cc.ravel(), cpw)
    t = np.repeat(tt.ravel(), cpw)
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    k0, k1 = jax.random.split(key)
    G0 = start_positions(k0, c, L, hyper, dtype)
    eps0 = X.default_initial_step(activation, hyper) if initial_step_size is None else initial_step_size
    data = {"stats": stats, "step_size": jnp.asarray(eps0, dtype)}
    smp = run_chains(k1, UmbrellaSampler(hyper, activation, float(kappa), burn_in), (G0, jnp.asarray(c, dtype),
                     jnp.asarray(t, dtype)), UmbrellaObserver(hyper, activation, tuple(float(x) for x in t_grid)),
                     data=data, num_steps=num_steps, burn_in=burn_in, thin=thin, progress=progress,
                     devices=devices, desc=desc,
                     chain_block=None if chain_block is None else min(int(chain_block), c.size))
    d = smp.draws
    data_t = np.stack([np.asarray(d[f"data{i}"], float) for i in range(len(t_grid))], axis=-1)
    P = float(np.trace(np.asarray(stats[0, 0], float)))
    return UmbrellaRun(np.asarray(d["xi"], float), np.asarray(d["op"], float), np.asarray(d["prior"], float),
                       data_t, c, t, float(kappa), np.asarray(t_grid, float),
                       np.asarray(smp.info["acceptance_rate"]), P)


# ------------------------------------------------------------------ recombination


class Profile(NamedTuple):
    """MBAR estimates at one temper ``t`` (data size ``P = t P_0``).

    ``edges``/``F``/``F_sd``: free energy (nats, min 0) of the density of the coordinate in
    each bin and its error (``nan`` for empty bins); ``weights``/``weights_sd``: mass below
    and above ``divide`` (pooling, copy); ``log_ratio``/``log_ratio_sd``: log(copy / pooling);
    ``mean``/``mean_sd``: posterior mean of the reported order parameter ``op``; ``minima``:
    indices of the local minima of F; ``barrier``: F at the highest bin between the two
    lowest minima minus the higher of the two (nan with one minimum)."""

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


class Recombined(NamedTuple):
    """MBAR over all (window, temper) states of an ``UmbrellaRun``: ``result``; the kept
    (subsampled) draws ``xi``, ``op``, ``prior``, ``data``; the sampled states' energies
    ``u_kn``; ``n_kept``."""

    result: mbar.MBARResult
    u_kn: np.ndarray
    xi: np.ndarray
    op: np.ndarray
    prior: np.ndarray
    data: np.ndarray
    n_kept: int


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
    data = np.concatenate([run.data[i][k] for i, k in enumerate(keep)])
    order = np.argsort(state_of, kind="stable")
    xi, op, prior, data, state_of = xi[order], op[order], prior[order], data[order], state_of[order]
    N_k = np.bincount(state_of, minlength=len(states))
    if np.any(N_k == 0):
        raise ValueError("a window has no draws after subsampling; run more steps")
    col = {float(t): int(np.argmin(np.abs(run.t_grid - t))) for _, t in states}
    u_kn = np.stack([data[:, col[t]] + prior + 0.5 * run.kappa * (xi - c) ** 2 for c, t in states])
    res = mbar.solve(jnp.asarray(u_kn), jnp.asarray(N_k))
    return Recombined(res, u_kn, xi, op, prior, data, int(xi.size))


def profile(rec: Recombined, run: UmbrellaRun, t_index: int, edges, divide: float,
            coordinate: str = "op") -> Profile:
    """MBAR free-energy profile, phase weights and posterior mean at the temper
    ``run.t_grid[t_index]``; ``edges``: bin edges of ``coordinate`` (``"op"`` or ``"xi"``);
    ``divide``: the coordinate value separating the pooling and copy phases."""
    x = rec.op if coordinate == "op" else rec.xi
    edges = np.asarray(edges, float)
    u0 = rec.data[:, t_index] + rec.prior
    inf = np.inf
    b = np.digitize(x, edges) - 1
    nb = len(edges) - 1
    filled = [j for j in range(nb) if np.any(b == j)]  # empty bins have f = inf: left out
    u_bins = np.stack([np.where(b == j, u0, inf) for j in filled]).reshape(len(filled), -1)
    u_phase = np.stack([np.where(x < divide, u0, inf), np.where(x >= divide, u0, inf)])
    if not (np.any(x < divide) and np.any(x >= divide)):
        raise ValueError(f"divide = {divide} leaves one phase without draws")
    # the mean of op through the state u0 - log(1 + op) (op > -1: a_G and |c_G| are)
    u_mean = (u0 - np.log1p(rec.op))[None, :]
    f, theta = mbar.covariance(rec.result, rec.u_kn, np.concatenate([u0[None, :], u_bins, u_phase, u_mean]))
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
    w = np.exp(-(f[ip:ip + 2] - f[i0]))
    w_sd = np.array([w[j] * sd(ip + j) for j in range(2)])
    lr = float(f[ip] - f[ip + 1])
    lr_sd = float(mbar.difference_sd(theta, ip, ip + 1))
    mean = float(np.exp(-(f[im] - f[i0])) - 1.0)
    mean_sd = float((1.0 + mean) * sd(im))
    minima = local_minima(Fb)
    return Profile(float(run.t_grid[t_index]), float(run.t_grid[t_index] * run.P), edges, Fb, F_sd, w, w_sd,
                   lr, lr_sd, mean, mean_sd, minima, barrier_height(Fb, minima))


def local_minima(F: np.ndarray, depth: float = 1.0) -> tuple:
    """Indices of the local minima of ``F`` (nan bins skipped) that are at least ``depth``
    nats below the highest point between them and each neighbouring minimum."""
    ok = np.flatnonzero(np.isfinite(F))
    y = F[ok]
    cand = [i for i in range(len(y)) if (i == 0 or y[i] <= y[i - 1]) and (i == len(y) - 1 or y[i] <= y[i + 1])]
    keep = []
    for i in cand:
        if keep:
            j = keep[-1]
            top = y[j:i + 1].max()
            if top - max(y[i], y[j]) < depth:
                if y[i] < y[j]:
                    keep[-1] = i
                continue
        keep.append(i)
    return tuple(int(ok[i]) for i in keep)


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
