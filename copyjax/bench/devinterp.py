"""devinterp's SGLD and RMSprop-SGLD as benchmark samplers (the ``bench`` extra: torch and
devinterp), by import path::

    python scripts/bench_samplers.py ... --samplers copyjax.bench.devinterp:sgld copyjax.bench.devinterp:rmsprop_sgld
    python scripts/bench_samplers.py ... --samplers copyjax.bench.devinterp:sgld_mb --batch-size 32

Each step runs devinterp's own update (``devinterp.optim.SGMCMC.sgld`` / ``.rmsprop_sgld``,
its ``step``) on torch tensors, called from the JAX chain through ``jax.pure_callback``: the
gradient comes from JAX (the exact log posterior's, or copyjax's minibatch estimate for the
``_mb`` factories), devinterp moves the parameters and draws the noise. All chains of a step
go to torch as one batched tensor (``vmap_method="expand_dims"``): both updates are
elementwise, so one optimizer over the batch is the per-chain optimizers at once.

Conventions (read in devinterp's ``SGMCMC.step``): its update is ``theta -= (lr / 2) (nbeta
grad + prior grad) G + sqrt(lr G) N(0, 1)`` with ``G`` the preconditioner (RMSprop: ``1 /
(sqrt(v) + eps)``, ``v`` the running mean of grad^2 with ``alpha`` 0.99, ``eps`` 0.1 by its
defaults). The adapter hands it the gradient of the negative log posterior (prior included,
since the interface gives the sampler only the log density) with ``nbeta = 1`` and no prior
term, and ``lr = 2 eps``: the blackjax step eps of the other samplers (``eps grad log p +
sqrt(2 eps) N``). RMSprop-SGLD's running mean ``v`` is carried in the chain's state, so the
sampler stays a pair of pure functions; devinterp applies no correction term for a moving
preconditioner, so it is biased where ``v`` varies over the posterior (the leaderboard
measures how much).
"""
from __future__ import annotations

import os
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.base import SamplingAlgorithm


class DevinterpState(NamedTuple):
    """A chain: ``position`` {"W", "G"} and RMSprop-SGLD's running mean of grad^2 per leaf
    (zeros, unused, for SGLD)."""

    position: dict
    square_avg: dict


def _torch():
    try:
        # torch's OpenMP workers spin after each parallel region by default and would take the
        # cores from XLA's threads between callbacks; let them sleep instead
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import torch
        from devinterp.optim.sgmcmc import SGMCMC
    except ImportError as e:
        raise ImportError("copyjax.bench.devinterp needs the bench extra: pip install -e '.[bench]' "
                          "(torch and devinterp)") from e
    return torch, SGMCMC


def _devinterp_step(method: str, lr: float, seed, position: dict, grad: dict, square_avg: dict):
    """devinterp's update on numpy arrays (a batch of chains in the leading axis, or one chain):
    ``(new position, new square_avg)``."""
    torch, SGMCMC = _torch()
    names = sorted(position)
    params = [torch.nn.Parameter(torch.from_numpy(np.array(position[k]))) for k in names]
    for p, k in zip(params, names):
        p.grad = torch.from_numpy(-np.asarray(grad[k], dtype=np.asarray(position[k]).dtype))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "nbeta set to 1": the gradient is the log posterior's
        opt = (SGMCMC.sgld(params, lr=lr, nbeta=1.0) if method == "sgld"
               else SGMCMC.rmsprop_sgld(params, lr=lr, nbeta=1.0))
    if method == "rmsprop_sgld":
        for p, k in zip(params, names):
            opt.state[p]["square_avg"] = torch.from_numpy(np.array(square_avg[k]))
    gen = torch.Generator().manual_seed(int(np.asarray(seed).ravel()[0]))
    opt.step(noise_generator=gen)
    new_avg = ({k: opt.state[p]["square_avg"].numpy() for p, k in zip(params, names)} if method == "rmsprop_sgld"
               else {k: np.asarray(square_avg[k]) for k in names})
    return {k: p.detach().numpy() for p, k in zip(params, names)}, new_avg


def _build(grad, step_size, method: str) -> SamplingAlgorithm:
    """The sampler on ``grad(rng_key, position)`` (an estimate of the log posterior's gradient)."""
    _torch()  # fail at build time, with the install hint, where the extra is missing
    lr = 2.0 * float(step_size)

    def init(position, rng_key=None):
        return DevinterpState(position, jax.tree.map(jnp.zeros_like, position))

    def step(key, state):
        k_grad, k_noise = jax.random.split(key)
        g = grad(k_grad, state.position)
        seed = jax.random.randint(k_noise, (), 0, 2 ** 31 - 1)
        shapes = (jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), state.position),
                  jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), state.square_avg))
        pos, avg = jax.pure_callback(lambda s, p, gr, v: _devinterp_step(method, lr, s, p, gr, v), shapes,
                                     seed, state.position, g, state.square_avg, vmap_method="expand_dims")
        return DevinterpState(pos, avg), ()

    return SamplingAlgorithm(init, step)


def sgld(logdensity_fn, step_size):
    """devinterp's SGLD (``SGMCMC.sgld``) on the exact log posterior's gradient."""
    g = jax.grad(logdensity_fn)
    return _build(lambda key, p: g(p), step_size, "sgld")


def rmsprop_sgld(logdensity_fn, step_size):
    """devinterp's RMSprop-SGLD (``SGMCMC.rmsprop_sgld``, its defaults alpha 0.99, eps 0.1) on the
    exact log posterior's gradient."""
    g = jax.grad(logdensity_fn)
    return _build(lambda key, p: g(p), step_size, "rmsprop_sgld")


def sgld_mb(logdensity_fn, grad_estimator, step_size):
    """devinterp's SGLD on copyjax's minibatch gradient estimate (``--batch-size``)."""
    return _build(grad_estimator, step_size, "sgld")


def rmsprop_sgld_mb(logdensity_fn, grad_estimator, step_size):
    """devinterp's RMSprop-SGLD on copyjax's minibatch gradient estimate."""
    return _build(grad_estimator, step_size, "rmsprop_sgld")


__all__ = ["DevinterpState", "rmsprop_sgld", "rmsprop_sgld_mb", "sgld", "sgld_mb"]
