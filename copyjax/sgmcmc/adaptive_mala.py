"""Adaptive MALA shaped like blackjax's kernels (``init``, ``build_kernel``,
``as_top_level_api``; NamedTuple state and info): blackjax's MALA step, with the step size of
*each chain* tuned by blackjax's dual averaging during the burn-in and frozen after it. Dual
averaging restarts at the window boundaries ``windows`` (fractions of the burn-in), so a chain
whose transient needed a small step (far from the mode MALA's optimal step scales as d^-1/2, at
stationarity as d^-1/3) is re-tuned once it reaches the typical set; optional preconditioning
directions get their scales re-estimated at each window start. The exact posterior of G
(``exact_posterior``), the umbrella windows (``free_energy``) and the LLC's tempered chains run it.
"""
from __future__ import annotations

from typing import NamedTuple

import blackjax
import jax
import jax.numpy as jnp
from blackjax.adaptation.step_size import DualAveragingAdaptationState, dual_averaging_adaptation
from blackjax.base import SamplingAlgorithm
from blackjax.mcmc.mala import MALAState


# dual-averaging restarts and scale re-estimates, as fractions of the burn-in: the last one
# at 3/4 re-estimates the scales once chains that relaxed slowly from their start have
# settled (with the last at 1/2, scales measured on a chain still drifting stayed inflated
# and froze two chains of 32 at linear P = 15802, L = 64: ESS 24 -> 522)
WINDOWS = (0.15, 0.3, 0.5, 0.75)




class AdaptiveMALAState(NamedTuple):
    """``position``: x (G for the exact posterior); ``z``: the sampled coordinates,
    ``x = T z`` with ``T = I + sum_k (scales_k - 1) d_k d_k^T`` (``d_k`` the orthonormal
    preconditioning directions); ``logdensity``/``logdensity_grad``: of z (blackjax's MALA
    state in z); ``da``: dual averaging; ``step_size``: the step once adaptation ends;
    ``step``: steps taken; ``scales``: ``(k,)``; ``moments``: window sums for the scales
    (count, sum and sum of squares of the projections ``<x, d_k>`` and of x)."""

    position: jax.Array
    z: jax.Array
    logdensity: jax.Array
    logdensity_grad: jax.Array
    da: DualAveragingAdaptationState
    step_size: jax.Array
    step: jax.Array
    scales: jax.Array
    moments: tuple


class AdaptiveMALAInfo(NamedTuple):
    acceptance_rate: jax.Array
    is_accepted: jax.Array
    step_size: jax.Array
    adapting: jax.Array


def _apply(x, directions, factors):
    """``x + sum_k (factors_k - 1) <x, d_k> d_k`` (``directions: (k, *x.shape)`` orthonormal)."""
    if directions.shape[0] == 0:
        return x
    proj = jnp.tensordot(directions, x, axes=x.ndim)
    return x + jnp.tensordot((factors - 1.0) * proj, directions, axes=1)


def _zero_moments(x, k):
    z = jnp.zeros((), x.dtype)
    return (z, jnp.zeros(k, x.dtype), jnp.zeros(k, x.dtype), jnp.zeros_like(x), jnp.zeros_like(x))


def init(position, logdensity_fn, initial_step_size, target: float = 0.57,
         directions=None) -> AdaptiveMALAState:
    """State at ``position`` with dual averaging started at ``initial_step_size`` and unit
    scales along ``directions`` (``(k, *position.shape)``, orthonormal; None: k = 0)."""
    da_init, _, _ = dual_averaging_adaptation(target)
    position = jnp.asarray(position)
    directions = _directions(directions, position)
    ms = blackjax.mala.init(position, logdensity_fn)  # T = I at unit scales: z = x
    eps = jnp.asarray(initial_step_size, position.dtype)
    k = directions.shape[0]
    return AdaptiveMALAState(position, ms.position, ms.logdensity, ms.logdensity_grad, da_init(eps), eps,
                             jnp.zeros((), jnp.int32), jnp.ones(k, position.dtype),
                             _zero_moments(position, k))


def _directions(directions, x):
    if directions is None:
        return jnp.zeros((0,) + jnp.shape(x), jnp.result_type(x))
    return jnp.asarray(directions, jnp.result_type(x))


def window_starts(n_adapt: int, windows=WINDOWS) -> tuple[int, ...]:
    """Steps at which dual averaging restarts (from the last window's averaged step) and the
    scales along the preconditioning directions are re-estimated."""
    return tuple(sorted({t for f in windows if 0 < (t := int(round(f * n_adapt))) < n_adapt}))


def build_kernel(n_adapt: int, target: float = 0.57, windows=WINDOWS, directions=None,
                 max_scale: float = 100.0):
    """``kernel(rng_key, state, logdensity_fn) -> (state, info)``: blackjax's MALA step on
    ``z``, the coordinates in which the target ``logdensity_fn(x)`` is sampled, ``x = T z``.

    While ``step < n_adapt``, the step is ``exp(da.log_step_size)`` and dual averaging is
    updated with the acceptance probability; at each window start dual averaging restarts
    and the scale along each direction d_k becomes sqrt(Var<x, d_k> / mean per-entry Var x)
    over the window that ended (clipped to [1/max_scale, max_scale]): a direction along which
    the posterior is much wider than the bulk (the copy direction of linear attention between
    its onset and its crossover) is then crossed in proportionally longer steps. Changing T
    keeps x, the log density and (transformed) its gradient: no extra evaluation. After
    ``n_adapt`` steps, step and scales are frozen: a fixed-step, fixed-T MALA, exact."""
    da_init, da_update, da_final = dual_averaging_adaptation(target)
    mala = blackjax.mala.build_kernel()
    restarts = jnp.asarray(window_starts(n_adapt, windows) or (-1,), jnp.int32)

    def kernel(rng_key, state: AdaptiveMALAState, logdensity_fn):
        D = _directions(directions, state.position)
        adapting = state.step < n_adapt
        eps = jnp.where(adapting, jnp.exp(state.da.log_step_size), state.step_size).astype(state.step_size.dtype)
        lp_z = lambda z: logdensity_fn(_apply(z, D, state.scales))
        ms, info = mala(rng_key, MALAState(state.z, state.logdensity, state.logdensity_grad), lp_z, eps)
        x = _apply(ms.position, D, state.scales)
        acc = jnp.where(jnp.isfinite(info.acceptance_rate), info.acceptance_rate, 0.0)
        nxt = state.step + 1
        restart = adapting & jnp.any(nxt == restarts)
        # window moments of x and of its projections
        n, s1, s2, x1, x2 = state.moments
        p = jnp.tensordot(D, x, axes=x.ndim) if D.shape[0] else jnp.zeros(0, x.dtype)
        n, s1, s2, x1, x2 = n + 1, s1 + p, s2 + p * p, x1 + x, x2 + x * x
        var_p = s2 / n - (s1 / n) ** 2
        var_bulk = jnp.mean(x2 / n - (x1 / n) ** 2)
        new_scales = jnp.clip(jnp.sqrt(var_p / jnp.maximum(var_bulk, 1e-30)), 1.0 / max_scale, max_scale)
        scales = jnp.where(restart & (n >= 10), new_scales, state.scales).astype(state.scales.dtype)
        # same x, new coordinates: z = T^-1 x, grad_z = T grad_x = T T_old^-1 grad_z_old
        z = jnp.where(restart, _apply(x, D, 1.0 / scales), ms.position)
        grad = jnp.where(restart, _apply(_apply(ms.logdensity_grad, D, 1.0 / state.scales), D, scales),
                         ms.logdensity_grad)
        moments = jax.tree.map(lambda zero, m: jnp.where(restart, zero, m),
                               _zero_moments(x, D.shape[0]), (n, s1, s2, x1, x2))
        da = da_update(state.da, acc)
        averaged = da_final(da).astype(eps.dtype)
        da = jax.tree.map(lambda r, d: jnp.where(restart, r, d), da_init(averaged), da)
        da = jax.tree.map(lambda d, o: jnp.where(adapting, d, o), da, state.da)
        step_size = jnp.where(adapting & (nxt == n_adapt), averaged, state.step_size)
        new = AdaptiveMALAState(x, z, ms.logdensity, grad, da, step_size, nxt, scales, moments)
        return new, AdaptiveMALAInfo(acc, info.is_accepted, eps, adapting)

    return kernel


def as_top_level_api(logdensity_fn, initial_step_size, n_adapt: int, target: float = 0.57,
                     windows=WINDOWS, directions=None) -> SamplingAlgorithm:
    """``SamplingAlgorithm(init, step)`` of the adaptive MALA kernel for ``logdensity_fn``."""
    kernel = build_kernel(n_adapt, target, windows, directions)
    return SamplingAlgorithm(lambda x: init(x, logdensity_fn, initial_step_size, target, directions),
                             lambda k, s: kernel(k, s, logdensity_fn))


__all__ = ["AdaptiveMALAInfo", "AdaptiveMALAState", "as_top_level_api", "build_kernel", "init", "window_starts", "WINDOWS"]
