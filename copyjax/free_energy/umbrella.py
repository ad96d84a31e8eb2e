"""Umbrella sampling of the exact posterior of G: harmonic windows on a coordinate, optionally
tempering the likelihood, one batch of vmapped adaptive-MALA chains for all windows."""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.base import SamplingAlgorithm

from copyjax import exact_posterior
from copyjax import masks
from copyjax.sgmcmc import adaptive_mala
from copyjax._checks import check_activation, check_burn_in, check_positive, check_size
from copyjax.action import action_from_KB, marginal_logdensity
from copyjax.chains import Layout, Schedule, run_chains
from copyjax.data import float_stats, stats_size
from copyjax.model import shift_matrix, uniform_matrix
from copyjax.free_energy.coordinates import _coordinate_fn, check_coordinate, copy_coordinate, mean_coordinate
from copyjax.starts import prior_G


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
    move); under a ``mask``, ``+ (center - xi) P`` with its copy coordinate and
    ``copy_coordinate_pattern`` (the causal one has no wrap at row 0; two layers: layer 2's
    copy pattern), G then of the mask's ``param_shape``."""
    centers = jnp.asarray(centers, dtype)
    if coordinate == "copy":
        mask = masks.get(mask)
        shape = mask.param_shape(L)
        G = prior_G(key, (centers.shape[0], *shape), hyper, dtype)
        move = (centers - mask.copy_coordinate(G)).reshape((-1,) + (1,) * len(shape))
        return G + move * mask.copy_coordinate_pattern(L, dtype)
    G = prior_G(key, (centers.shape[0], L, L), hyper, dtype)
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


__all__ = ["biased_logdensity", "sample_umbrella", "start_positions", "UmbrellaObserver", "UmbrellaRun", "UmbrellaSampler", "UmbrellaState"]
