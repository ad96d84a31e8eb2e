"""SGLD with blackjax's kernel (``x + eps grad + sqrt(2 eps T) xi``), a step counter for
step-size schedules, and the positions' dtypes kept (a float64 step size must not promote
float32 chains)."""
from __future__ import annotations

from typing import Callable, NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import optax
from blackjax.base import SamplingAlgorithm

from copyjax._checks import check_step_size


class SGLDState(NamedTuple):
    position: object
    step: jax.Array  # steps taken so far (for step-size schedules)


class SGLDInfo(NamedTuple):
    step_size: jax.Array


def init(position, rng_key=None) -> SGLDState:
    del rng_key  # blackjax's init convention; SGLD draws nothing at init
    return SGLDState(position, jnp.zeros((), jnp.int32))


def build_kernel(temperature: float = 1.0) -> Callable:
    """``kernel(rng_key, state, grad_estimator, minibatch, step_size) -> (state, info)``."""
    move = blackjax.sgld.build_kernel()

    def kernel(rng_key, state: SGLDState, grad_estimator, minibatch, step_size):
        new = move(rng_key, state.position, grad_estimator, minibatch, step_size, temperature)
        return SGLDState(optax.tree.cast_like(new, state.position), state.step + 1), SGLDInfo(step_size)

    return kernel


def as_top_level_api(grad_estimator: Callable, draw_minibatch: Callable, step_size,
                     temperature: float = 1.0) -> SamplingAlgorithm:
    """Each step draws ``draw_minibatch(key)`` and moves with ``grad_estimator(position,
    minibatch)``. ``step_size``: a number or a schedule ``t -> eps_t`` (an optax schedule)."""
    schedule = check_step_size(step_size)
    kernel = build_kernel(temperature)

    def step(rng_key, state: SGLDState):
        kb, kn = jax.random.split(rng_key)
        return kernel(kn, state, grad_estimator, draw_minibatch(kb), schedule(state.step))

    return SamplingAlgorithm(init, step)


__all__ = ["SGLDInfo", "SGLDState", "as_top_level_api", "build_kernel", "init"]
