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
from copyjax.minibatch import batch_loglik, check_batch_size, check_layout, draw_batch, shared_batch
from copyjax.model import log_prior
from copyjax.network import Params, logdensity_from_stats


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


def _estimator(stats, tokens, batch_size, hyper, activation):
    """``(estimator(position, minibatch), draw(rng_key) -> minibatch)`` in blackjax's
    ``grad_estimator`` convention: the exact gradient through ``stats`` (``tokens=None``; the
    minibatch is unused) or the unbiased minibatch estimate ``grad [log prior + P/B sum_b
    log p(y_b | x_b)]`` with the batch's log-likelihood in one matrix product
    (``minibatch.batch_loglik``, no one-hot tensors)."""
    if tokens is None:
        g = jax.grad(lambda p: logdensity_from_stats(p, stats, hyper, activation))
        return (lambda p, _: g(p)), (lambda key: None)
    P = tokens.shape[0]
    batch_size = check_batch_size(batch_size, P)

    def logdensity_estimate(p, batch):
        return log_prior(p.W, p.G, hyper) + (P / batch_size) * batch_loglik(p, batch, hyper, activation)

    return jax.grad(logdensity_estimate), (lambda key: tokens[draw_batch(key, P, batch_size)])


def _grad_fn(stats, tokens, batch_size, hyper, activation):
    """``grad(rng_key, position)``: the estimator at a freshly drawn minibatch."""
    est, draw = _estimator(stats, tokens, batch_size, hyper, activation)
    return lambda key, p: est(p, draw(key))


def sgld(stats=None, hyper=None, activation: str = "softmax", step_size=1e-3, *,
         tokens=None, batch_size: int | None = None, temperature: float = 1.0) -> SamplingAlgorithm:
    """SGLD on the network posterior with blackjax's kernel.

    Full batch (``tokens=None``): exact gradient through ``stats``. Minibatch: pass
    ``tokens: (P, L)`` and ``batch_size``. ``step_size``: a number or ``t -> eps_t``.
    """
    check_activation(activation)
    est, draw = _estimator(stats, tokens, batch_size, hyper, activation)
    return sgld_from_estimator(est, draw, step_size, temperature)


def sgld_from_estimator(estimator, draw, step_size, temperature: float = 1.0) -> SamplingAlgorithm:
    """SGLD with blackjax's kernel and a real gradient estimator: each step draws a minibatch
    ``draw(rng_key)`` and hands blackjax ``estimator(position, minibatch)`` with it."""
    schedule = _check_step_size(step_size)
    kernel = blackjax.sgld.build_kernel()

    def init(position: Params) -> SGLDState:
        return SGLDState(position, jnp.zeros((), jnp.int32))

    def step(rng_key, state: SGLDState):
        kb, kn = jax.random.split(rng_key)
        eps = schedule(state.step)
        new = kernel(kn, state.position, estimator, draw(kb), eps, temperature)
        return SGLDState(_like(new, state.position), state.step + 1), SGLDInfo(eps)

    return SamplingAlgorithm(init, step)


def sgld_from_grad(grad, step_size, temperature: float = 1.0) -> SamplingAlgorithm:
    """SGLD for any target: ``grad(rng_key, position)`` returns (an estimate of) the
    gradient of the log density (the key is the estimator's "minibatch")."""
    return sgld_from_estimator(lambda p, key: grad(key, p), lambda key: key, step_size, temperature)


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
    ``SamplingAlgorithm`` from ``data = {"stats", "step_size"[, "tokens"[, "batch_key"]]}``.
    Passing it with ``data`` to ``chains.run_chains`` keeps the statistics out of the compiled
    code, so one compilation serves a whole sweep over P.

    Minibatches (``batch_size`` set, ``data["tokens"]`` given): ``layout="independent"``, each
    chain draws its own every step; ``"shared"``, one per step for all chains, drawn from
    ``data["batch_key"]`` and the step number (``minibatch.shared_batch``; ``run_chains``
    calls ``data_at_step`` once per step, outside the chains' vmap)."""

    hyper: object
    activation: str
    kind: str = "sgld"  # "sgld", "psgld" or "mala"
    batch_size: int | None = None
    layout: str = "independent"

    @property
    def preferred_chain_block(self) -> int | None:
        """Chains per vmapped block that ``run_chains`` uses by default: 8 for independent
        minibatches, whose per-chain (L, B V) operands overflow the cache when many chains
        share a block (``benchmarks/minibatch.py``, L = 64, V = 32, B = 256, 64 chains on 2
        CPU cores: 267 chain-steps/s in one block, 479 in blocks of 8); None otherwise."""
        independent = self.batch_size is not None and check_layout(self.layout) == "independent"
        return 8 if independent else None

    def data_at_step(self, data, step):
        """The data the chains see at ``step``: the shared minibatch's scaled counts in
        place of the statistics (``layout="shared"``), else ``data`` itself."""
        if self.batch_size is None or check_layout(self.layout) != "shared" or data.get("tokens") is None:
            return data
        return shared_batch(data, step, data["stats"].shape[-1], self.batch_size)

    def build(self, data) -> SamplingAlgorithm:
        if self.batch_size is not None and check_layout(self.layout) == "shared":
            data = {k: v for k, v in data.items() if k != "tokens"}  # the statistics are the batch's
        if self.kind == "mala":
            return blackjax.mala(
                lambda p: logdensity_from_stats(p, data["stats"], self.hyper, self.activation),
                data["step_size"])
        make = {"sgld": sgld, "psgld": psgld}[self.kind]
        return make(data.get("stats"), self.hyper, self.activation,
                    lambda t: data["step_size"], tokens=data.get("tokens"),
                    batch_size=self.batch_size)
