"""Stochastic-gradient samplers for any target, shaped like blackjax's algorithms: each
module has ``init``, ``build_kernel`` and ``as_top_level_api`` and NamedTuple state / info.
The gradient comes from an estimator in blackjax's convention, ``grad_estimator(position,
minibatch)``, with ``draw_minibatch(rng_key)`` drawing the minibatch each step.
``copyjax.samplers`` builds these for the network posterior. ``adaptive_mala``: blackjax's MALA
with each chain's step tuned by dual averaging in the burn-in (the exact posterior's kernel)."""
from copyjax.sgmcmc import adaptive_mala, psgld, sgld

__all__ = ["adaptive_mala", "psgld", "sgld"]
