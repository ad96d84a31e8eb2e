"""The network posterior over (W, G) as the samplers and optimisers see it.

Two paths to the log posterior and its gradient:
  * ``logdensity_from_stats``: full batch and exact through the statistics C, O(L^2 V^2)
    per evaluation whatever P is;
  * ``sequence_loglik``: one sequence's log-likelihood, for minibatch estimators
    (blackjax's ``grad_estimator`` scales the minibatch mean by P).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

from copyjax import masks
from copyjax._checks import check_activation, check_size
from copyjax.action import precision_M
from copyjax.data import one_hot, stats_size
from copyjax.model import log_prior
from copyjax.order import coverage
from copyjax.starts import copy_G, prior_G


class Params(NamedTuple):
    """Network parameters: readout ``W: (V, V)``, attention scores ``G: (L, L)``."""

    W: jax.Array
    G: jax.Array

    @classmethod
    def of(cls, position) -> Params:
        """``position`` as Params: a Params as it is, a mapping ``{"W", "G"}`` (the positions the
        bench hands its samplers) by key."""
        return position if isinstance(position, cls) else cls(position["W"], position["G"])


def init_params(key, L: int, V: int, hyper, dtype=jnp.float32, mask="full") -> Params:
    """A draw from the prior: ``W ~ N(0, sigma_w2 / V)``, ``G ~ N(0, sigma_g2)`` of the
    ``mask``'s ``param_shape`` (``(L, L)``; ``(2, L, L)`` for two layers)."""
    L, V = check_size("L", L, 2), check_size("V", V, 2)
    kw, kg = jax.random.split(key)
    W = jnp.sqrt(hyper.sigma_w2 / V) * jax.random.normal(kw, (V, V), dtype)
    return Params(W, prior_G(kg, masks.get(mask).param_shape(L), hyper, dtype))


def copy_init(key, L: int, V: int, hyper, activation: str, dtype=jnp.float32, mask="full") -> Params:
    """A start on the copy branch: ``W = I``, G the ``mask``'s copy pattern (softmax: logit
    ``log L + 2`` at the previous token, so a_G ~ 0.9) plus prior-scale noise on W."""
    check_activation(activation)
    p = init_params(key, L, V, hyper, dtype)
    return Params(jnp.eye(V, dtype=dtype) + 0.1 * p.W, copy_G(L, activation, jnp.log(L) + 2.0, mask, dtype))


def sample_w_posterior(key, A: jax.Array, stats, hyper, mask="full") -> jax.Array:
    """A draw of ``W: (V, V)`` from its exact Gaussian posterior given the pattern
    ``A: (L, L)`` and the statistics. With ``M = I + beta sigma_w2/(L V) K`` each row is
    ``w_i ~ N(beta sigma_w2/(L V) (M^-1 B)[:, i], sigma_w2/V M^-1)`` (docs/theory.md section 2).
    Paired with G from the exact marginal it gives exact joint draws of (W, G): the
    starting points of the equilibrium SGLD bias measurement. Under a ``mask``, L is its
    number n of loss rows and K, B their contractions."""
    K, B, L = masks.get(mask).contractions(A, stats)
    V = K.shape[-1]
    c = hyper.beta * hyper.sigma_w2 / (L * V)
    R = jnp.linalg.cholesky(precision_M(K, L, hyper))
    mean = c * jsl.cho_solve((R, True), B).T
    z = jax.random.normal(key, (V, V), K.dtype)
    # rows: R^-T z_i has covariance M^-1
    noise = jsl.solve_triangular(R.T, z.T, lower=False).T
    return mean + jnp.sqrt(hyper.sigma_w2 / V) * noise


def logdensity_from_stats(params, stats, hyper, activation: str, mask="full") -> jax.Array:
    """Exact log posterior ``log p(W, G | data)`` (unnormalised) through the statistics, under
    ``mask`` (its pattern, the loss over its loss rows; the prior over every entry of G).
    ``params``: a Params or a mapping ``{"W", "G"}`` (``Params.of``); its gradient has the same
    structure."""
    mask, params = masks.get(mask), Params.of(params)
    A = mask.attention(params.G, activation)
    return mask.log_likelihood(params.W, A, stats, hyper.beta) + log_prior(params.W, params.G, hyper)


def sequence_loglik(params: Params, tokens, hyper, activation: str, mask="full") -> jax.Array:
    """Log-likelihood of one sequence ``tokens: (L,)``: ``-beta/(2n) sum_l ||y - W h||^2``
    over the ``mask``'s n loss rows (all L for the full mask)."""
    mask = masks.get(mask)
    V, L = params.W.shape[0], params.G.shape[-1]
    A = mask.attention(params.G, activation)
    x = one_hot(tokens, V, A.dtype)
    f = (A @ x) @ params.W.T
    y = one_hot(mask.targets(tokens), V, A.dtype)
    rows = mask.row_weights(L)
    if rows is None:
        return -hyper.beta * jnp.sum((y - f) ** 2) / (2 * L)
    return -hyper.beta * jnp.sum(rows.astype(A.dtype)[:, None] * (y - f) ** 2) / (2 * jnp.sum(rows))


def observables(params: Params, stats, hyper, activation: str, mask="full") -> dict[str, jax.Array]:
    """Scalars recorded along chains and training runs: the ``mask``'s reported order
    parameters (``Mask.order``; the full mask's are ``order.reported_order_parameters``: a_1,
    a_G for softmax; for linear the sign-invariant ``c1 = sign(rho) c_1``, ``cG = |c_G|``,
    ``abs_rho``, ``family``), coverage, per-sequence training loss, log posterior."""
    mask = masks.get(mask)
    A = mask.attention(params.G, activation)
    P = stats_size(stats).astype(A.dtype)
    ll = mask.log_likelihood(params.W, A, stats, hyper.beta)
    return mask.order(A, activation) | {
        "coverage": coverage(A),
        "loss": -ll / (hyper.beta * P),
        "logpost": ll + log_prior(params.W, params.G, hyper),
    }


class Observer(NamedTuple):
    """Hashable ``observe(position, data)`` for ``chains.run_chains(..., data=...)``:
    ``observables`` with the statistics from ``data["stats"]``, restricted to ``keys``;
    ``position`` a Params or a mapping ``{"W", "G"}``."""

    hyper: object
    activation: str
    keys: tuple = ("c1", "cG", "coverage", "loss", "logpost")
    mask: object = "full"  # a masks name or Mask

    def __call__(self, position, data) -> dict:
        out = observables(Params.of(position), data["stats"], self.hyper, self.activation, self.mask)
        return {k: out[k] for k in self.keys}


__all__ = ["copy_init", "init_params", "logdensity_from_stats", "observables", "Observer", "Params",
           "sample_w_posterior", "sequence_loglik"]
