"""Argument checks shared by the public functions.

Every check raises ``ValueError`` naming the argument and the allowed range. Value
checks run only on concrete inputs (Python numbers, NumPy arrays, non-traced JAX
arrays); under ``jit`` the static parts (shapes, names) are still checked.
"""
from __future__ import annotations

import math
import numbers

import jax
import jax.numpy as jnp
import numpy as np

ACTIVATIONS = ("linear", "softmax")


def is_concrete(x) -> bool:
    """True when ``x`` holds values we can inspect now (not a tracer)."""
    return not isinstance(x, jax.core.Tracer)


def check_size(name: str, value, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (bools and floats like 3.0 are refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_positive(name: str, value) -> None:
    """A finite number > 0 (checked only when concrete)."""
    if not is_concrete(value):
        return
    arr = np.asarray(value)
    if arr.dtype.kind not in "iuf" or arr.ndim != 0:
        raise ValueError(f"{name} must be a finite real number > 0, got {value!r}")
    v = float(arr)
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite real number > 0, got {value!r}")


def check_activation(activation) -> str:
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {ACTIVATIONS}, got {activation!r}")
    return activation


def check_square(name: str, x, L: int | None = None) -> int:
    """A float array of shape (..., L, L); returns L."""
    shape = np.shape(x)
    if len(shape) < 2 or shape[-1] != shape[-2] or shape[-1] < 2:
        want = "(..., L, L) with L >= 2" if L is None else f"(..., {L}, {L})"
        raise ValueError(f"{name} must have shape {want}, got {shape}")
    if L is not None and shape[-1] != L:
        raise ValueError(f"{name} must have shape (..., {L}, {L}), got {shape}")
    return shape[-1]


def check_stats(stats, L: int | None = None) -> tuple[int, int]:
    """Sufficient statistics of shape (L, L, V, V); returns (L, V)."""
    shape = np.shape(stats)
    ok = len(shape) == 4 and shape[0] == shape[1] and shape[2] == shape[3]
    ok = ok and shape[0] >= 2 and shape[2] >= 2
    if not ok or (L is not None and shape[0] != L):
        want = "(L, L, V, V) with L, V >= 2" if L is None else f"({L}, {L}, V, V)"
        raise ValueError(f"stats must have shape {want}, got {shape}")
    return shape[0], shape[2]


def check_tokens(tokens, V: int) -> tuple[int, int]:
    """Integer tokens of shape (P, L) in [0, V); returns (P, L)."""
    shape = np.shape(tokens)
    if len(shape) != 2 or shape[0] < 1 or shape[1] < 2:
        raise ValueError(f"tokens must have shape (P, L) with P >= 1, L >= 2, got {shape}")
    # (not getattr with a default: the default, np.asarray, would be evaluated on tracers too)
    dtype = np.dtype(tokens.dtype if hasattr(tokens, "dtype") else np.asarray(tokens).dtype)
    if dtype.kind not in "iu":
        raise ValueError(f"tokens must be integers in [0, V), got dtype {dtype}")
    if is_concrete(tokens):
        arr = np.asarray(tokens)
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= V:
            raise ValueError(
                f"tokens must lie in [0, V) = [0, {V}), found values in [{lo}, {hi}]"
            )
    return shape[0], shape[1]


def check_step_size(step_size):
    """A sampler's step size as a schedule ``t -> eps_t``: a callable (an optax schedule, say)
    is returned as it is; a number must be finite and > 0 (checked when concrete: a traced
    step size, e.g. one passed as data to a compiled sweep, is taken as it is)."""
    if callable(step_size):
        return step_size
    if is_concrete(step_size):
        v = float(step_size)
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"step_size must be a finite number > 0 (or a schedule), got {step_size!r}")
        return lambda t: jnp.asarray(v)
    return lambda t: step_size
