"""copyjax: exact Bayesian theory and posterior sampling of copy-head emergence in attention.

Float64: call ``jax.config.update("jax_enable_x64", True)`` in your own code before
creating arrays; copyjax never changes JAX's configuration.

The names below (and the submodules, ``copyjax.chains`` ...) load on first use, so
``import copyjax`` and ``copyjax.specs`` (the option parsers of the scripts) load no JAX.
"""
from __future__ import annotations

import importlib
import importlib.util

__version__ = "0.2.0"

# name -> the module that defines it
_EXPORTS = {
    "Hyper": "copyjax.hyper",
    "action_from_features": "copyjax.action",
    "attention": "copyjax.model",
    "copy_targets": "copyjax.data",
    "coverage": "copyjax.order",
    "data_action": "copyjax.action",
    "default_hyper": "copyjax.hyper",
    "exact_action": "copyjax.action",
    "expected_stats": "copyjax.data",
    "forward": "copyjax.model",
    "log_likelihood": "copyjax.model",
    "log_likelihood_from_stats": "copyjax.model",
    "log_posterior": "copyjax.model",
    "log_prior": "copyjax.model",
    "minima": "copyjax.theory",
    "normalised_hyper": "copyjax.hyper",
    "order_parameters": "copyjax.order",
    "per_sequence_loss": "copyjax.model",
    "point_key": "copyjax.data",
    "reported_order_parameters": "copyjax.order",
    "pooled_features": "copyjax.model",
    "sample_tokens": "copyjax.data",
    "sampled_stats": "copyjax.data",
    "sector_order_parameters": "copyjax.order",
    "shift_matrix": "copyjax.model",
    "sign_invariant": "copyjax.order",
    "stats_size": "copyjax.data",
    "streamed_tokens": "copyjax.data",
    "sufficient_stats": "copyjax.data",
    "theory_curve": "copyjax.theory",
    "token_law": "copyjax.tokens",
    "TokenLaw": "copyjax.tokens",
    "transition_points": "copyjax.theory",
    "TransitionPoints": "copyjax.theory",
    "uniform_matrix": "copyjax.model",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    """A public name (``_EXPORTS``) or a submodule, imported on first use."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
