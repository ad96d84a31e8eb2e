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
# the theory's three actions: MAP of G, posterior form (W and G's fluctuations), joint MAP of (W, G)
FORMS = ("map", "posterior", "joint_map")


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


def check_burn_in(burn_in: int, num_steps: int, minimum: int = 0) -> int:
    """A burn-in that leaves steps to record: an integer in [minimum, num_steps)."""
    burn_in = check_size("burn_in", burn_in, minimum)
    if burn_in >= num_steps:
        raise ValueError(f"burn_in must be < num_steps = {num_steps}, got {burn_in}")
    return burn_in


def check_P(P, name: str = "P") -> float:
    """A finite number of sequences > 0 (real-valued: the theory interpolates in P)."""
    try:
        v = float(P)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number > 0, got {P!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {P!r}")
    return v


def check_P_grid(Ps, name: str = "Ps") -> np.ndarray:
    """A non-empty, strictly increasing grid of finite positive P."""
    arr = np.asarray(Ps, dtype=float).reshape(-1)
    if arr.size == 0:
        raise ValueError(f"{name} must be a non-empty grid of P > 0, got an empty one")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must hold finite values > 0, got {arr.tolist()}")
    if np.any(np.diff(arr) <= 0):
        raise ValueError(f"{name} must be strictly increasing, got {arr.tolist()}")
    return arr


def check_form(form) -> str:
    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    return form


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


__all__ = ["ACTIVATIONS", "check_activation", "check_burn_in", "check_form", "check_P", "check_P_grid",
           "check_positive", "check_size", "check_square", "check_stats", "check_step_size", "check_tokens",
           "FORMS", "is_concrete"]
