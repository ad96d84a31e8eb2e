"""Samplers the benchmark scores: anything blackjax-shaped.

A sampler is a factory ``build(logdensity_fn, step_size) -> blackjax.SamplingAlgorithm`` on
the position pytree ``{"W": (V, V), "G": (L, L)}``: ``init(position)`` (or
``init(position, rng_key)``) and ``step(rng_key, state) -> (state, info)``. ``logdensity_fn``
is the exact log posterior log p(W, G | data) (full batch, through the statistics);
``step_size`` is a Langevin step eps (noise sqrt(2 eps) per step: blackjax's MALA and SGLD
convention; a registered sampler with another convention converts it). A factory may set the
attribute ``grads_per_step`` (default 1): full-data gradients per ``step``, for the scores'
ESS per gradient. Give one by registry name (``SAMPLERS``) or by import path ``"module:function"`` (a module on
``PYTHONPATH``): adding a sampler to the leaderboard is one line here or one path.
"""
from __future__ import annotations

import importlib
from typing import NamedTuple

import blackjax
import jax
import jax.numpy as jnp
from blackjax.base import SamplingAlgorithm

from copyjax import samplers as _samplers


def mala(logdensity_fn, step_size):
    """blackjax's MALA (Metropolis-adjusted: exact for any step, slower for large ones)."""
    return blackjax.mala(logdensity_fn, step_size)


def barker(logdensity_fn, step_size):
    """blackjax's Barker proposal (Metropolis-adjusted, robust to gradient scale). Its
    ``step_size`` is the proposal's standard deviation; here ``step_size`` is the Langevin
    step eps of the other samplers (noise sqrt(2 eps)), so Barker gets sqrt(2 eps) and all
    samplers share one step axis."""
    return blackjax.barker_proposal(logdensity_fn, jnp.sqrt(2.0 * step_size))


def sgld(logdensity_fn, step_size):
    """SGLD (copyjax's blackjax kernel, ``sgmcmc.sgld``) with the full-batch gradient: no
    Metropolis test, O(step_size) bias."""
    grad = jax.grad(logdensity_fn)
    return _samplers.sgld_from_grad(lambda key, p: grad(p), step_size)


def psgld(logdensity_fn, step_size):
    """RMSprop-preconditioned SGLD (``sgmcmc.psgld``), preconditioner frozen after 500 steps
    (a moving preconditioner without its Gamma term biases the chain)."""
    grad = jax.grad(logdensity_fn)
    return _samplers.psgld_from_grad(lambda key, p: grad(p), step_size, adapt_steps=500)


class PositionState(NamedTuple):
    """A state that is only a position (blackjax's SGHMC keeps none other), as the chain
    driver reads it (``state.position``)."""

    position: dict


def sghmc(logdensity_fn, step_size, num_integration_steps: int = 10, alpha: float = 0.01):
    """blackjax's SGHMC (``blackjax.sghmc``, full-batch gradient): each step draws a fresh
    momentum and takes ``num_integration_steps`` Euler steps of the underdamped Langevin
    diffusion with friction ``alpha`` (blackjax's default) and time step h. An Euler /
    leapfrog step of time h moves like a Langevin step eps = h^2 / 2, so h = sqrt(2 eps) puts
    it on the other samplers' step axis; it costs ``num_integration_steps`` gradients per
    step (``grads_per_step``)."""
    grad = jax.grad(logdensity_fn)
    alg = blackjax.sghmc(lambda p, _: grad(p), num_integration_steps, alpha)
    h = jnp.sqrt(2.0 * step_size)
    return SamplingAlgorithm(lambda position, rng_key=None: PositionState(alg.init(position)),
                             lambda key, state: (PositionState(alg.step(key, state.position, None, h)), ()))


sghmc.grads_per_step = 10


def sgnht(logdensity_fn, step_size, alpha: float = 0.01):
    """blackjax's SGNHT (``blackjax.sgnht``, full-batch gradient): underdamped Langevin with a
    Nose-Hoover thermostat xi (started at ``alpha``) adapting the friction; momentum and xi are
    carried across steps, one gradient per step, time step h = sqrt(2 eps) as for SGHMC."""
    grad = jax.grad(logdensity_fn)
    alg = blackjax.sgnht(lambda p, _: grad(p), alpha)
    h = jnp.sqrt(2.0 * step_size)
    return SamplingAlgorithm(lambda position, rng_key: alg.init(position, rng_key),
                             lambda key, state: (alg.step(key, state, None, h), ()))


def grads_per_step(build) -> int:
    """Full-data gradients one ``step`` of ``build``'s sampler costs (its ``grads_per_step``
    attribute, default 1)."""
    return int(getattr(build, "grads_per_step", 1))


# the registry: name -> build(logdensity_fn, step_size)
SAMPLERS = {"mala": mala, "barker": barker, "sgld": sgld, "psgld": psgld, "sghmc": sghmc, "sgnht": sgnht}


def resolve(spec: str):
    """``(name, build)`` for a registry name or an import path ``module:function``."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"sampler must be a name in {sorted(SAMPLERS)} or 'module:function', got {spec!r}")
    if ":" in spec:
        mod, _, fn = spec.partition(":")
        try:
            build = getattr(importlib.import_module(mod), fn)
        except (ImportError, AttributeError) as e:
            raise ValueError(f"sampler {spec!r}: cannot import {fn!r} from {mod!r} ({e})") from e
        if not callable(build):
            raise ValueError(f"sampler {spec!r} is not callable")
        return spec, build
    if spec not in SAMPLERS:
        raise ValueError(f"sampler must be a name in {sorted(SAMPLERS)} or 'module:function', got {spec!r}")
    return spec, SAMPLERS[spec]


__all__ = ["barker", "grads_per_step", "mala", "PositionState", "psgld", "resolve", "SAMPLERS", "sghmc", "sgld", "sgnht"]
