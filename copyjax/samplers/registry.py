"""The sampler registry: every sampler of the network posterior p(W, G | data) as a plug-in,
the one list that the benchmark scores and the main job's chains run (``NetworkSampler``).

A sampler is a factory ``build(logdensity_fn, step_size) -> blackjax.SamplingAlgorithm`` (or,
for a minibatch sampler, ``build(logdensity_fn, grad_estimator, step_size)``: below) on
the position pytree ``{"W": (V, V), "G": (L, L)}``: ``init(position)`` (or
``init(position, rng_key)``) and ``step(rng_key, state) -> (state, info)``. ``logdensity_fn``
is the exact log posterior log p(W, G | data) (full batch, through the statistics);
``step_size`` is a Langevin step eps (noise sqrt(2 eps) per step: blackjax's MALA and SGLD
convention; a registered sampler with another convention converts it). A factory may set the
attribute ``grads_per_step`` (default 1): full-data gradients per ``step``, for the scores'
ESS per gradient. Give one by registry name (``SAMPLERS``) or by import path ``"module:function"`` (a module on
``PYTHONPATH``): adding a sampler to the leaderboard is one line here or one path. A sampler
whose gradient count varies per step reports it as a float ``num_grads`` in its info (``nuts``).
"""
from __future__ import annotations

import importlib
import inspect
from typing import NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from blackjax.base import SamplingAlgorithm

from copyjax.sgmcmc import psgld as _psgld
from copyjax.sgmcmc import sgld as _sgld



def sgld_from_grad(grad, step_size, temperature: float = 1.0) -> SamplingAlgorithm:
    """SGLD for any target (copyjax's blackjax kernel, ``sgmcmc.sgld``): ``grad(rng_key,
    position)`` returns (an estimate of) the gradient of the log density (the key is the
    estimator's "minibatch")."""
    return _sgld.as_top_level_api(lambda p, key: grad(key, p), lambda key: key, step_size, temperature)


def psgld_from_grad(grad, step_size, alpha: float = 0.99, eps_reg: float = 1e-5,
                    adapt_steps: int | None = None) -> SamplingAlgorithm:
    """pSGLD for any target (``sgmcmc.psgld``); ``grad(rng_key, position)`` as in ``sgld_from_grad``."""
    return _psgld.as_top_level_api(lambda p, key: grad(key, p), lambda key: key, step_size, alpha, eps_reg,
                                   adapt_steps)


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
    return sgld_from_grad(lambda key, p: grad(p), step_size)


def psgld(logdensity_fn, step_size):
    """RMSprop-preconditioned SGLD (``sgmcmc.psgld``), preconditioner frozen after 500 steps
    (a moving preconditioner without its Gamma term biases the chain)."""
    grad = jax.grad(logdensity_fn)
    return psgld_from_grad(lambda key, p: grad(p), step_size, adapt_steps=500)


class PositionState(NamedTuple):
    """A state that is only a position (blackjax's SGHMC keeps none other), as the chain
    driver reads it (``state.position``)."""

    position: dict


def _sghmc(grad, step_size, num_integration_steps: int = 10, alpha: float = 0.01):
    """blackjax's SGHMC on ``grad(rng_key, position)`` (the key draws a minibatch, or is ignored)."""
    alg = blackjax.sghmc(lambda p, key: grad(key, p), num_integration_steps, alpha)
    h = jnp.sqrt(2.0 * step_size)

    def step(key, state):
        k_step, k_batch = jax.random.split(key)
        return PositionState(alg.step(k_step, state.position, k_batch, h)), ()

    return SamplingAlgorithm(lambda position, rng_key=None: PositionState(alg.init(position)), step)


def sghmc(logdensity_fn, step_size, num_integration_steps: int = 10, alpha: float = 0.01):
    """blackjax's SGHMC (``blackjax.sghmc``, full-batch gradient): each step draws a fresh
    momentum and takes ``num_integration_steps`` Euler steps of the underdamped Langevin
    diffusion with friction ``alpha`` (blackjax's default) and time step h. An Euler /
    leapfrog step of time h moves like a Langevin step eps = h^2 / 2, so h = sqrt(2 eps) puts
    it on the other samplers' step axis; it costs ``num_integration_steps`` gradients per
    step (``grads_per_step``)."""
    grad = jax.grad(logdensity_fn)
    return _sghmc(lambda key, p: grad(p), step_size, num_integration_steps, alpha)


sghmc.grads_per_step = 10


def _sgnht(grad, step_size, alpha: float = 0.01):
    """blackjax's SGNHT on ``grad(rng_key, position)``."""
    alg = blackjax.sgnht(lambda p, key: grad(key, p), alpha)
    h = jnp.sqrt(2.0 * step_size)

    def step(key, state):
        k_step, k_batch = jax.random.split(key)
        return alg.step(k_step, state, k_batch, h), ()

    return SamplingAlgorithm(lambda position, rng_key: alg.init(position, rng_key), step)


def sgnht(logdensity_fn, step_size, alpha: float = 0.01):
    """blackjax's SGNHT (``blackjax.sgnht``, full-batch gradient): underdamped Langevin with a
    Nose-Hoover thermostat xi (started at ``alpha``) adapting the friction; momentum and xi are
    carried across steps, one gradient per step, time step h = sqrt(2 eps) as for SGHMC."""
    grad = jax.grad(logdensity_fn)
    return _sgnht(lambda key, p: grad(p), step_size, alpha)


# Minibatch samplers: ``build(logdensity_fn, grad_estimator, step_size)``, three required
# arguments. ``grad_estimator(rng_key, position)`` is the unbiased minibatch estimate of the
# log posterior's gradient, grad [log prior + P/B sum_b log p(y_b | x_b)], on B sequences drawn
# with replacement from the key (copyjax's one-hot-free ``minibatch.batch_loglik``); a step
# costs B / P of a full-data gradient per ``grads_per_step``. ``logdensity_fn`` is the exact
# log posterior, for a sampler that wants it (a Metropolis test; none of these does).

def sgld_mb(logdensity_fn, grad_estimator, step_size):
    """SGLD on minibatch gradients (copyjax's blackjax kernel; ``sgld`` with the estimator)."""
    return sgld_from_grad(grad_estimator, step_size)


def psgld_mb(logdensity_fn, grad_estimator, step_size):
    """pSGLD on minibatch gradients (``psgld``'s preconditioner, frozen after 500 steps)."""
    return psgld_from_grad(grad_estimator, step_size, adapt_steps=500)


def sghmc_mb(logdensity_fn, grad_estimator, step_size):
    """blackjax's SGHMC on minibatch gradients (one minibatch for a step's 10 integration
    steps, as blackjax's ``sghmc.step`` takes one)."""
    return _sghmc(grad_estimator, step_size)


sghmc_mb.grads_per_step = 10


def sgnht_mb(logdensity_fn, grad_estimator, step_size):
    """blackjax's SGNHT on minibatch gradients."""
    return _sgnht(grad_estimator, step_size)


def is_minibatch(build) -> bool:
    """Whether ``build`` is a minibatch sampler: three required positional arguments
    ``(logdensity_fn, grad_estimator, step_size)`` against the full-batch samplers' two."""
    try:
        params = inspect.signature(build).parameters.values()
    except (TypeError, ValueError):
        return False
    return sum(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
               for p in params) == 3


class GradInfo(NamedTuple):
    """The info of a step whose gradient count varies (NUTS): ``num_grads`` (a float, so the
    chain driver averages it), the acceptance rate and divergence of the step."""

    num_grads: jax.Array
    acceptance_rate: jax.Array
    is_divergent: jax.Array


def _size(position) -> int:
    """Entries of a position pytree (static under jit: from the shapes)."""
    return sum(int(np.prod(x.shape)) for x in jax.tree.leaves(position))


def nuts(logdensity_fn, step_size, max_num_doublings: int = 6):
    """blackjax's NUTS (``blackjax.nuts``, identity mass matrix, no adaptation): leapfrog
    time step h = sqrt(2 eps) (one leapfrog step with a fresh momentum is a MALA step of eps),
    trajectories of at most 2^``max_num_doublings`` - 1 steps (6: 63; blackjax's default 10
    would spend 1023 gradients a step on the soft G directions while the stiff W ones set h).
    Its gradients per step vary; the info's ``num_grads`` gives the scores' ESS per gradient."""
    h = jnp.sqrt(2.0 * step_size)
    alg = lambda position: blackjax.nuts(logdensity_fn, h, jnp.ones(_size(position)),
                                         max_num_doublings=max_num_doublings)

    def step(key, state):
        state, info = alg(state.position).step(key, state)
        return state, GradInfo(info.num_integration_steps.astype(h.dtype), info.acceptance_rate, info.is_divergent)

    return SamplingAlgorithm(lambda position: alg(position).init(position), step)


class MCLMCState(NamedTuple):
    """An MCLMC chain: blackjax's integrator state and the parameters its tuner chose for it."""

    state: object  # blackjax.mcmc.integrators.IntegratorState
    params: object  # blackjax.adaptation.mclmc_adaptation.MCLMCAdaptationState

    @property
    def position(self):
        return self.state.position


def mclmc(logdensity_fn, step_size, tune_steps: int = 1000):
    """blackjax's MCLMC (microcanonical Langevin, ``blackjax.mclmc``, isokinetic McLachlan
    integrator, 2 gradients a step), tuned by blackjax's own ``mclmc_find_L_and_step_size``
    (step size, decoherence length L and a diagonal preconditioner; about 0.33 x ``tune_steps``
    tuning steps) in each chain's ``init``, so the tuning is in the run's wall time. The tuner
    starts from the step on the common axis (MCLMC moves a unit-norm velocity: a step epsilon
    moves each of d coordinates by about epsilon / sqrt(d), so epsilon = sqrt(2 eps d)) and
    L = sqrt(d) (blackjax's default). The step size only seeds the tuner: MCLMC chooses its own."""
    from blackjax.adaptation.mclmc_adaptation import MCLMCAdaptationState

    kernel = blackjax.mcmc.mclmc.build_kernel()

    def init(position, rng_key):
        d = _size(position)
        k_init, k_tune = jax.random.split(rng_key)
        st = blackjax.mcmc.mclmc.init(position, logdensity_fn, k_init)
        dtype = jax.tree.leaves(position)[0].dtype
        p0 = MCLMCAdaptationState(jnp.sqrt(jnp.asarray(d, dtype)), jnp.sqrt(2.0 * step_size * d).astype(dtype),
                                  jnp.ones(d, dtype))
        st, params, _ = blackjax.mclmc_find_L_and_step_size(kernel, tune_steps, st, k_tune,
                                                            logdensity_fn=logdensity_fn, params=p0)
        return MCLMCState(st, params)

    def step(key, s):
        st, info = kernel(key, s.state, logdensity_fn, s.params.inverse_mass_matrix, s.params.L, s.params.step_size)
        return MCLMCState(st, s.params), info

    return SamplingAlgorithm(init, step)


mclmc.grads_per_step = 2


def grads_per_step(build, info: dict | None = None) -> float:
    """Full-data gradients one ``step`` of ``build``'s sampler costs: the mean of its info's
    ``num_grads`` where it reports one (NUTS), else its ``grads_per_step`` attribute (default 1)."""
    if info and "num_grads" in info:
        return float(np.mean(np.asarray(info["num_grads"])))
    return float(getattr(build, "grads_per_step", 1))


# the registry: name -> build(logdensity_fn, step_size), or build(logdensity_fn, grad_estimator,
# step_size) for the minibatch samplers (names ending in _mb)
SAMPLERS = {"mala": mala, "barker": barker, "sgld": sgld, "psgld": psgld, "sghmc": sghmc, "sgnht": sgnht,
            "nuts": nuts, "mclmc": mclmc, "sgld_mb": sgld_mb, "psgld_mb": psgld_mb, "sghmc_mb": sghmc_mb,
            "sgnht_mb": sgnht_mb}
FULL_BATCH = tuple(k for k, v in SAMPLERS.items() if not is_minibatch(v))


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


__all__ = ["barker", "FULL_BATCH", "GradInfo", "grads_per_step", "is_minibatch", "mala", "mclmc", "MCLMCState", "nuts",
           "PositionState", "psgld", "psgld_from_grad", "psgld_mb", "resolve", "SAMPLERS", "sghmc", "sghmc_mb", "sgld",
           "sgld_from_grad", "sgld_mb", "sgnht", "sgnht_mb"]
