"""Adam ensembles: many networks trained at once on the (W, G) log posterior (MAP training).

Networks are vmapped over seeds; each step uses the exact full-batch gradient through the
statistics (O(L^2 V^2), any P) or a minibatch of sequences. Curves record the loss, the
order parameters and the log posterior every ``record_every`` steps.
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import optax

from copyjax import masks
from copyjax._checks import check_activation, check_positive, check_size
from copyjax.chains import chain_keys
from copyjax.minibatch import check_batch_size, draw_batch
from copyjax.network import Params, copy_init, init_params, logdensity_from_stats, observables, sequence_loglik
from copyjax.model import log_prior


class Ensemble(NamedTuple):
    """``curves``: dict name -> ``(seed, record)``; ``steps``: ``(record,)`` step numbers;
    ``final``: Params with a leading seed axis; ``final_obs``: dict name -> ``(seed,)``."""

    curves: dict
    steps: np.ndarray
    final: Params
    final_obs: dict


def init_ensemble(key, n_seeds: int, L: int, V: int, hyper, activation: str,
                  start: str = "prior", dtype=jnp.float32, mask="full") -> Params:
    """``n_seeds`` starting points: prior draws (``start="prior"``, uninformed) or the
    ``mask``'s copy pattern plus noise (``start="copy"``)."""
    n_seeds = check_size("n_seeds", n_seeds, 1)
    if start not in ("prior", "copy"):
        raise ValueError(f"start must be 'prior' or 'copy', got {start!r}")
    keys = jax.random.split(key, n_seeds)
    if start == "prior":
        return jax.vmap(lambda k: init_params(k, L, V, hyper, dtype, mask))(keys)
    return jax.vmap(lambda k: copy_init(k, L, V, hyper, activation, dtype, mask))(keys)


def train_ensemble(key, init: Params, stats, hyper, activation: str, *, steps: int,
                   learning_rate: float = 1e-2, record_every: int = 10, tokens=None,
                   batch_size: int | None = None, mask="full") -> Ensemble:
    """Train every network of ``init`` (leading seed axis) with optax Adam to maximise the
    log posterior (under ``mask``). Full batch through ``stats`` unless ``tokens`` and
    ``batch_size`` are given (then minibatches drawn with replacement, scaled by P)."""
    check_activation(activation)
    steps = check_size("steps", steps, 1)
    record_every = check_size("record_every", record_every, 1)
    check_positive("learning_rate", learning_rate)
    if tokens is not None:
        batch_size = check_batch_size(batch_size, tokens.shape[0])
    keys = chain_keys(key, jax.tree.leaves(init)[0].shape[0])
    final, curves, final_obs = _train(
        init, keys, stats, tokens, hyper=hyper, activation=activation, steps=steps,
        learning_rate=float(learning_rate), record_every=record_every, batch_size=batch_size,
        mask=masks.get(mask))
    n_rec = steps // record_every
    return Ensemble({k: np.asarray(v) for k, v in curves.items()},
                    record_every * (1 + np.arange(n_rec)), final,
                    {k: np.asarray(v) for k, v in final_obs.items()})


@partial(jax.jit, static_argnames=("hyper", "activation", "steps", "learning_rate",
                                   "record_every", "batch_size", "mask"))
def _train(init, keys, stats, tokens, *, hyper, activation, steps, learning_rate,
           record_every, batch_size, mask):
    # Module-level and jitted with the data as arguments: one compilation per shape, reused
    # across a sweep over P.
    if tokens is None:
        loss = lambda p, k: -logdensity_from_stats(p, stats, hyper, activation, mask)
    else:
        P = tokens.shape[0]
        # blackjax's estimator: log prior + P * (mean log-likelihood over the minibatch)
        estimate = blackjax.sgmcmc.gradients.logdensity_estimator(
            lambda p: log_prior(p.W, p.G, hyper), lambda p, t: sequence_loglik(p, t, hyper, activation, mask), P)
        loss = lambda p, k: -estimate(p, tokens[draw_batch(k, P, batch_size)])

    opt = optax.adam(learning_rate)
    obs = lambda p: observables(p, stats, hyper, activation, mask)
    n_rec = steps // record_every

    def run_one(p, k):
        def inner(carry, t):
            p, s = carry
            g = jax.grad(loss)(p, jax.random.fold_in(k, t))
            u, s = opt.update(g, s, p)
            return (optax.apply_updates(p, u), s), None

        def outer(carry, r):
            carry, _ = jax.lax.scan(inner, carry, r * record_every + jnp.arange(record_every))
            return carry, obs(carry[0])

        (p, _), curves = jax.lax.scan(outer, (p, opt.init(p)), jnp.arange(n_rec))
        return p, curves

    final, curves = jax.vmap(run_one)(init, keys)
    return final, curves, jax.vmap(obs)(final)


def reached_global(final_logpost, rtol: float = 1e-3, reference: float | None = None) -> np.ndarray:
    """Mask of runs whose final log posterior is within ``rtol`` (relative) of the best run
    and, if given, of ``reference`` (e.g. the theory's MAP value), as the paper filters its
    Adam runs to those that reached the global minimum."""
    lp = np.asarray(final_logpost, float)
    ok = np.isfinite(lp)
    if not ok.any():
        return ok
    best = np.max(lp[ok]) if reference is None else max(np.max(lp[ok]), reference)
    return ok & (best - lp <= rtol * abs(best))


__all__ = ["Ensemble", "init_ensemble", "reached_global", "train_ensemble"]
