"""Samplers for the network posterior p(W, G | data), built from ``copyjax.sgmcmc`` (SGLD,
pSGLD) and blackjax (MALA).

A sampler is ``blackjax.base.SamplingAlgorithm(init, step)``: ``init(position[, rng_key]) ->
state`` and ``step(rng_key, state) -> (state, info)``, pure functions over NamedTuple states.

* ``sgld``: blackjax's SGLD kernel (``x + eps grad + sqrt(2 eps) xi``) driven either by the
  exact full-batch gradient through the statistics or by a minibatch estimate in blackjax's
  ``grad_estimator`` convention (sequences drawn uniformly with replacement each step;
  ``minibatch.batch_loglik``, no one-hot tensors), handed to the kernel with its minibatch;
* ``psgld``: RMSprop-preconditioned SGLD (``sgmcmc.psgld``), for the stiff posteriors of
  large L;
* ``mala``: blackjax's Metropolis-adjusted Langevin on the exact log posterior (no
  step-size bias); ``mala_marginal`` on exp(-S_P(G)), W integrated out.

``NetworkSampler`` is the hashable description ``chains.run_chains`` compiles once per sweep;
it builds any sampler of the registry (``samplers.registry.SAMPLERS``: the one list of
samplers, also the benchmark's) on the network's exact log posterior or its minibatch estimate.
"""
from __future__ import annotations

from typing import NamedTuple

import blackjax
import jax
from blackjax.base import SamplingAlgorithm

from copyjax._checks import check_activation, check_step_size
from copyjax.minibatch import batch_loglik, check_batch_size, check_layout, draw_batch, shared_batch
from copyjax.model import log_prior
from copyjax.network import Params, logdensity_from_stats
from copyjax.sgmcmc import psgld as _psgld
from copyjax.sgmcmc import sgld as _sgld
from copyjax.sgmcmc.psgld import PSGLDState
from copyjax.sgmcmc.sgld import SGLDInfo, SGLDState
from copyjax.samplers import registry
from copyjax.samplers.registry import psgld_from_grad, sgld_from_grad


def network_grad_estimator(stats, hyper, activation: str, tokens=None, batch_size: int | None = None,
                           mask="full"):
    """``(grad_estimator(position, minibatch), draw_minibatch(rng_key))`` in blackjax's
    convention: the exact gradient of the log posterior through ``stats: (L, L, V, V)``
    (``tokens=None``; the minibatch is unused) or the unbiased minibatch estimate ``grad [log
    prior + P/B sum_b log p(y_b | x_b)]`` over ``tokens: (P, L)``, the batch's
    log-likelihood in one matrix product (``minibatch.batch_loglik``); under ``mask``, the
    loss over its loss rows."""
    check_activation(activation)
    if tokens is None:
        g = jax.grad(lambda p: logdensity_from_stats(p, stats, hyper, activation, mask))
        return (lambda p, _: g(p)), (lambda key: None)
    P = tokens.shape[0]
    batch_size = check_batch_size(batch_size, P)

    def logdensity_estimate(p, batch):
        p = Params.of(p)
        return log_prior(p.W, p.G, hyper) + (P / batch_size) * batch_loglik(p, batch, hyper, activation, mask)

    return jax.grad(logdensity_estimate), (lambda key: tokens[draw_batch(key, P, batch_size)])


def sgld(stats=None, hyper=None, activation: str = "softmax", step_size=1e-3, *,
         tokens=None, batch_size: int | None = None, temperature: float = 1.0, mask="full") -> SamplingAlgorithm:
    """SGLD on the network posterior with blackjax's kernel.

    Full batch (``tokens=None``): exact gradient through ``stats``. Minibatch: pass
    ``tokens: (P, L)`` and ``batch_size``. ``step_size``: a number or a schedule ``t -> eps_t``
    (an optax schedule works).
    """
    est, draw = network_grad_estimator(stats, hyper, activation, tokens, batch_size, mask)
    return _sgld.as_top_level_api(est, draw, step_size, temperature)


def sgld_from_estimator(estimator, draw, step_size, temperature: float = 1.0) -> SamplingAlgorithm:
    """SGLD for any target with blackjax's kernel: each step draws a minibatch
    ``draw(rng_key)`` and hands blackjax ``estimator(position, minibatch)`` with it
    (``sgmcmc.sgld.as_top_level_api``)."""
    return _sgld.as_top_level_api(estimator, draw, step_size, temperature)


def psgld(stats=None, hyper=None, activation: str = "softmax", step_size=1e-3, *,
          tokens=None, batch_size: int | None = None, alpha: float = 0.99,
          eps_reg: float = 1e-5, adapt_steps: int | None = None, mask="full") -> SamplingAlgorithm:
    """RMSprop-preconditioned SGLD on the network posterior (``sgmcmc.psgld``; its docstring
    says why ``adapt_steps`` should freeze the preconditioner after the burn-in)."""
    est, draw = network_grad_estimator(stats, hyper, activation, tokens, batch_size, mask)
    return _psgld.as_top_level_api(est, draw, step_size, alpha, eps_reg, adapt_steps)


def mala(stats, hyper, activation: str, step_size, mask="full") -> SamplingAlgorithm:
    """blackjax MALA on the exact network log posterior (through the statistics);
    ``step_size`` a number (checked) or a traced value (a sweep's data)."""
    check_activation(activation)
    check_step_size(step_size)
    return blackjax.mala(lambda p: logdensity_from_stats(p, stats, hyper, activation, mask), step_size)


def mala_marginal(stats, hyper, activation: str, step_size: float) -> SamplingAlgorithm:
    """blackjax MALA with a fixed step on the exact marginal posterior of G,
    ``exp(-S_P(G))`` (position: G). For per-chain adapted steps and the two start families,
    ``copyjax.exact_posterior``."""
    from copyjax.action import marginal_logdensity

    check_activation(activation)
    check_step_size(step_size)
    return blackjax.mala(lambda G: marginal_logdensity(G, stats, hyper, activation), step_size)


class NetworkSampler(NamedTuple):
    """Hashable description of a network sampler; ``build(data)`` makes the blackjax
    ``SamplingAlgorithm`` from ``data = {"stats", "step_size"[, "tokens"[, "batch_key"]]}``.
    Passing it with ``data`` to ``chains.run_chains`` keeps the statistics out of the compiled
    code, so one compilation serves a whole sweep over P.

    ``kind``: a full-batch name of ``registry.SAMPLERS`` (its ``"<kind>_mb"`` under independent
    minibatches), or a build function of the registry's form, ``build(logdensity_fn,
    step_size)`` or, for a minibatch sampler, ``build(logdensity_fn, grad_estimator,
    step_size)`` (the bench's user samplers). ``step_size``: a fixed step, compiled in (a user's
    build may do Python arithmetic on it); None takes ``data["step_size"]``, one program for
    every step. Positions are Params or mappings ``{"W", "G"}`` (``network.Params.of``).

    Minibatches (``batch_size`` set, ``data["tokens"]`` given): ``layout="independent"``, each
    chain draws its own every step; ``"shared"``, one per step for all chains, drawn from
    ``data["batch_key"]`` and the step number (``minibatch.shared_batch``; ``run_chains``
    calls ``data_at_step`` once per step, outside the chains' vmap)."""

    hyper: object
    activation: str
    kind: object = "sgld"
    batch_size: int | None = None
    layout: str = "independent"
    mask: object = "full"  # a masks name or Mask
    step_size: float | None = None

    @property
    def preferred_chain_block(self) -> int | None:
        """Chains per vmapped block that ``run_chains`` uses by default: 8 for independent
        minibatches, whose per-chain (L, B V) operands overflow the cache when many chains
        share a block (``benchmarks/minibatch.py``, L = 64, V = 32, B = 256, 64 chains on 2
        CPU cores: 267 chain-steps/s in one block, 479 in blocks of 8); None otherwise."""
        return 8 if self._independent() else None

    def _independent(self) -> bool:
        return self.batch_size is not None and check_layout(self.layout) == "independent"

    def data_at_step(self, data, step):
        """The data the chains see at ``step``: the shared minibatch's scaled counts in
        place of the statistics (``layout="shared"``), else ``data`` itself."""
        if self.batch_size is None or check_layout(self.layout) != "shared" or data.get("tokens") is None:
            return data
        return shared_batch(data, step, data["stats"].shape[-1], self.batch_size)

    def factory(self):
        """The build function: ``kind`` itself when it is one, else the registry's ``kind``
        (``"<kind>_mb"`` under independent minibatches)."""
        if callable(self.kind):
            return self.kind
        if self.kind not in registry.SAMPLERS or registry.is_minibatch(registry.SAMPLERS[self.kind]):
            raise ValueError(f"kind must be one of {registry.FULL_BATCH} or a build function, got {self.kind!r}")
        if not self._independent():
            return registry.SAMPLERS[self.kind]
        if f"{self.kind}_mb" not in registry.SAMPLERS:
            raise ValueError(f"kind={self.kind!r} has no minibatch form (batch_size must be None); those with one: "
                             f"{tuple(k[:-3] for k in registry.SAMPLERS if k.endswith('_mb'))}")
        return registry.SAMPLERS[f"{self.kind}_mb"]

    def checked(self, P: int | None = None) -> "NetworkSampler":
        """This spec if its build and ``batch_size`` go together, else ``ValueError``: a
        minibatch build needs ``batch_size`` (in [1, P] when ``P`` is given), a user's full-batch
        build refuses one rather than run on the full batch; called by ``build``, and by callers
        that want the refusal before any compilation."""
        build = self.factory()
        if not registry.is_minibatch(build):
            if callable(self.kind) and self._independent():
                raise ValueError("batch_size is for minibatch builds (build(logdensity_fn, grad_estimator, "
                                 f"step_size)); this one takes full-batch gradients, got batch_size={self.batch_size}")
        elif self.batch_size is None:
            raise ValueError("a minibatch sampler (build(logdensity_fn, grad_estimator, step_size)) needs "
                             "batch_size, in [1, P]")
        elif P is not None:
            check_batch_size(self.batch_size, P)
        return self

    def build(self, data) -> SamplingAlgorithm:
        """``factory()`` on the exact log posterior through ``data["stats"]`` (under
        ``layout="shared"`` the step's minibatch statistics), or, for a minibatch sampler, with
        ``grad_estimator(rng_key, position)`` on each chain's own batch of ``data["tokens"]``
        (``network_grad_estimator``)."""
        build = self.checked().factory()
        stats = data.get("stats")
        step_size = data["step_size"] if self.step_size is None else self.step_size
        logdensity = lambda p: logdensity_from_stats(p, stats, self.hyper, self.activation, self.mask)
        if not registry.is_minibatch(build):
            return build(logdensity, step_size)
        est, draw = network_grad_estimator(stats, self.hyper, self.activation, data.get("tokens"), self.batch_size,
                                           self.mask)
        return build(logdensity, lambda key, p: est(p, draw(key)), step_size)


__all__ = ["NetworkSampler", "PSGLDState", "SGLDInfo", "SGLDState", "mala", "mala_marginal",
           "network_grad_estimator", "psgld", "psgld_from_grad", "sgld", "sgld_from_estimator", "sgld_from_grad"]
