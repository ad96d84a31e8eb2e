"""copyjax: exact Bayesian theory and posterior sampling of copy-head emergence in attention.

Float64: call ``jax.config.update("jax_enable_x64", True)`` in your own code before
creating arrays; copyjax never changes JAX's configuration.
"""
from copyjax.action import action_from_features, data_action, exact_action
from copyjax.data import (
    copy_targets,
    expected_stats,
    sample_tokens,
    sampled_stats,
    stats_size,
    streamed_tokens,
    sufficient_stats,
)
from copyjax.hyper import Hyper, default_hyper, normalised_hyper
from copyjax.model import (
    attention,
    forward,
    log_likelihood,
    log_likelihood_from_stats,
    log_posterior,
    log_prior,
    per_sequence_loss,
    pooled_features,
    shift_matrix,
    uniform_matrix,
)
from copyjax.order import (
    coverage,
    order_parameters,
    reported_order_parameters,
    sector_order_parameters,
    sign_invariant,
)
from copyjax.theory import TransitionPoints, minima, theory_curve, transition_points
from copyjax.tokens import TokenLaw, token_law

__version__ = "0.2.0"

__all__ = [
    "Hyper",
    "action_from_features",
    "attention",
    "copy_targets",
    "coverage",
    "data_action",
    "default_hyper",
    "exact_action",
    "expected_stats",
    "forward",
    "log_likelihood",
    "log_likelihood_from_stats",
    "log_posterior",
    "log_prior",
    "minima",
    "normalised_hyper",
    "order_parameters",
    "per_sequence_loss",
    "reported_order_parameters",
    "pooled_features",
    "sample_tokens",
    "sampled_stats",
    "sector_order_parameters",
    "shift_matrix",
    "sign_invariant",
    "stats_size",
    "streamed_tokens",
    "sufficient_stats",
    "theory_curve",
    "token_law",
    "TokenLaw",
    "transition_points",
    "TransitionPoints",
    "uniform_matrix",
]
