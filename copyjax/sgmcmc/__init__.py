"""Stochastic-gradient samplers for any target, shaped like blackjax's algorithms: each
module has ``init``, ``build_kernel`` and ``as_top_level_api`` and NamedTuple state / info.
The gradient comes from an estimator in blackjax's convention, ``grad_estimator(position,
minibatch)``, with ``draw_minibatch(rng_key)`` drawing the minibatch each step.
``copyjax.samplers`` builds these for the network posterior."""
from copyjax.sgmcmc import psgld, sgld

__all__ = ["psgld", "sgld"]
