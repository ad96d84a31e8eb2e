"""Many-chain samplers for the network posterior, blackjax-style.

A sampler is ``blackjax.base.SamplingAlgorithm(init, step)``: ``init(position) -> state``
and ``step(rng_key, state) -> (state, info)``, pure functions over NamedTuple states.

* ``sgld``: blackjax's SGLD kernel (``x + eps grad + sqrt(2 eps) xi``) driven either by the
  exact full-batch gradient through the statistics or by blackjax's minibatch
  ``grad_estimator`` (sequences drawn uniformly with replacement each step);
* ``psgld``: RMSprop-preconditioned SGLD (Li et al. 2016, without the small Gamma term),
  a kernel of our own with the same contract, for the stiff posteriors of large L;
* ``mala``: blackjax's Metropolis-adjusted Langevin on the exact log posterior (no
  step-size bias).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import blackjax
import jax
import jax.numpy as jnp
from blackjax.base import SamplingAlgorithm

from copyjax._checks import check_activation, check_size
from copyjax.network import Params, logdensity_from_stats, sequence_loglik
from copyjax.model import log_prior


class SGLDState(NamedTuple):
    position: Params
    step: jax.Array  # steps taken so far (for step-size schedules)


class SGLDInfo(NamedTuple):
    step_size: jax.Array


def _check_step_size(step_size):
    if callable(step_size):
        return step_size
    v = float(step_size)
    if not v > 0 or v != v or v == float("inf"):
        raise ValueError(f"step_size must be a finite number > 0 (or a schedule), got {step_size!r}")
    return lambda t: jnp.asarray(v)


def _like(new, old):
    """Keep the positions' dtypes (a float64 step size must not promote float32 chains)."""
    return jax.tree.map(lambda n, o: n.astype(o.dtype), new, old)


def _grad_fn(stats, tokens, batch_size, hyper, activation):
    """Gradient of the log posterior: exact (stats) or a minibatch estimate (tokens)."""
    if tokens is None:
        g = jax.grad(lambda p: logdensity_from_stats(p, stats, hyper, activation))
        return lambda key, p: g(p)
    P = tokens.shape[0]
    batch_size = check_size("batch_size", batch_size, 1)
    if batch_size > P:
        raise ValueError(f"batch_size must be in [1, P] = [1, {P}], got {batch_size}")
    est = blackjax.sgmcmc.gradients.grad_estimator(
        lambda p: log_prior(p.W, p.G, hyper),
        lambda p, t: sequence_loglik(p, t, hyper, activation),
        P,
    )

    def grad(key, p):
        idx = jax.random.randint(key, (batch_size,), 0, P)
        return est(p, tokens[idx])

    return grad


def sgld(stats=None, hyper=None, activation: str = "softmax", step_size=1e-3, *,
         tokens=None, batch_size: int | None = None, temperature: float = 1.0) -> SamplingAlgorithm:
    """SGLD on the network posterior with blackjax's kernel.

    Full batch (``tokens=None``): exact gradient through ``stats``. Minibatch: pass
    ``tokens: (P, L)`` and ``batch_size``. ``step_size``: a number or ``t -> eps_t``.
    """
    check_activation(activation)
    grad = _grad_fn(stats, tokens, batch_size, hyper, activation)
    return sgld_from_grad(grad, step_size, temperature)


def sgld_from_grad(grad, step_size, temperature: float = 1.0) -> SamplingAlgorithm:
    """SGLD for any target: ``grad(rng_key, position)`` returns (an estimate of) the
    gradient of the log density. blackjax's SGLD kernel does the update."""
    schedule = _check_step_size(step_size)
    kernel = blackjax.sgld.build_kernel()

    def init(position: Params) -> SGLDState:
        return SGLDState(position, jnp.zeros((), jnp.int32))

    def step(rng_key, state: SGLDState):
        kb, kn = jax.random.split(rng_key)
        eps = schedule(state.step)
        g = grad(kb, state.position)
        new = kernel(kn, state.position, lambda p, _: g, None, eps, temperature)
        new = _like(new, state.position)
        return SGLDState(new, state.step + 1), SGLDInfo(eps)

    return SamplingAlgorithm(init, step)


class PSGLDState(NamedTuple):
    position: Params
    sq_avg: Params  # running average of squared gradients
    step: jax.Array


def psgld(stats=None, hyper=None, activation: str = "softmax", step_size=1e-3, *,
          tokens=None, batch_size: int | None = None, alpha: float = 0.99,
          eps_reg: float = 1e-5, adapt_steps: int | None = None) -> SamplingAlgorithm:
    """RMSprop-preconditioned SGLD: ``x += eps D grad + sqrt(2 eps D) xi``,
    ``D = 1 / (sqrt(v) + eps_reg)``, ``v`` the running mean of squared gradients.

    D adapts to the very different curvatures of W and G at large beta P / L, so one
    step size serves both. The Gamma (divergence of D) term is dropped, as usual; a D that
    keeps adapting to the chain's own state is then biased (measured: +14 % and +33 % in
    the variances of a badly scaled Gaussian). With ``adapt_steps`` the preconditioner is
    frozen after that many steps (use the burn-in): a fixed D needs no Gamma term and the
    chain targets the posterior up to the usual O(eps) discretisation bias.
    """
    check_activation(activation)
    grad = _grad_fn(stats, tokens, batch_size, hyper, activation)
    return psgld_from_grad(grad, step_size, alpha, eps_reg, adapt_steps)


def psgld_from_grad(grad, step_size, alpha: float = 0.99, eps_reg: float = 1e-5,
                    adapt_steps: int | None = None) -> SamplingAlgorithm:
    """pSGLD for any target; ``grad(rng_key, position)`` as in ``sgld_from_grad``."""
    schedule = _check_step_size(step_size)

    def init(position) -> PSGLDState:
        g = grad(jax.random.key(0), position)
        sq = jax.tree.map(lambda x: x * x, g)
        return PSGLDState(position, sq, jnp.zeros((), jnp.int32))

    def step(rng_key, state: PSGLDState):
        kb, kn = jax.random.split(rng_key)
        eps = schedule(state.step)
        g = grad(kb, state.position)
        a = alpha if adapt_steps is None else jnp.where(state.step < adapt_steps, alpha, 1.0)
        sq = jax.tree.map(lambda v, x: a * v + (1 - a) * x * x, state.sq_avg, g)
        D = jax.tree.map(lambda v: 1.0 / (jnp.sqrt(v) + eps_reg), sq)
        leaves, tdef = jax.tree.flatten(state.position)
        keys = jax.tree.unflatten(tdef, list(jax.random.split(kn, len(leaves))))
        new = jax.tree.map(
            lambda x, gx, d, k: x + eps * d * gx + jnp.sqrt(2 * eps * d) * jax.random.normal(k, x.shape, x.dtype),
            state.position, g, D, keys)
        return PSGLDState(_like(new, state.position), _like(sq, state.sq_avg), state.step + 1), SGLDInfo(eps)

    return SamplingAlgorithm(init, step)


def mala(stats, hyper, activation: str, step_size: float) -> SamplingAlgorithm:
    """blackjax MALA on the exact network log posterior (through the statistics)."""
    check_activation(activation)
    _check_step_size(step_size)
    return blackjax.mala(lambda p: logdensity_from_stats(p, stats, hyper, activation), step_size)


def mala_marginal(stats, hyper, activation: str, step_size: float) -> SamplingAlgorithm:
    """blackjax MALA with a fixed step on the exact marginal posterior of G,
    ``exp(-S_P(G))`` (position: G). For per-chain adapted steps and the two start families,
    ``copyjax.exact_posterior``."""
    from copyjax.action import marginal_logdensity

    check_activation(activation)
    _check_step_size(step_size)
    return blackjax.mala(lambda G: marginal_logdensity(G, stats, hyper, activation), step_size)


class NetworkSampler(NamedTuple):
    """Hashable description of a network sampler; ``build(data)`` makes the blackjax
    ``SamplingAlgorithm`` from ``data = {"stats", "step_size"[, "tokens"]}``. Passing it with
    ``data`` to ``chains.run_chains`` keeps the statistics out of the compiled code, so one
    compilation serves a whole sweep over P."""

    hyper: object
    activation: str
    kind: str = "sgld"  # "sgld", "psgld" or "mala"
    batch_size: int | None = None

    def build(self, data) -> SamplingAlgorithm:
        if self.kind == "mala":
            return blackjax.mala(
                lambda p: logdensity_from_stats(p, data["stats"], self.hyper, self.activation),
                data["step_size"])
        make = {"sgld": sgld, "psgld": psgld}[self.kind]
        return make(data.get("stats"), self.hyper, self.activation,
                    lambda t: data["step_size"], tokens=data.get("tokens"),
                    batch_size=self.batch_size)
