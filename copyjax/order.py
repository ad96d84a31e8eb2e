"""Order parameters of an attention pattern (design doc section 3).

Oblique decomposition ``A = c_1 U + c_G S + R`` with R orthogonal (Frobenius) to U and S:

    c_G = (<A, S> - <A, U>) / (L - 1),   c_1 = <A, U> - c_G.

Uniform pooling U has (1, 0), the copy pattern S has (0, 1). For softmax the same numbers
are called (a_1, a_G).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from copyjax._checks import check_square
from copyjax.model import shift_matrix


def _overlaps(A):
    L = A.shape[-1]
    AS = jnp.sum(shift_matrix(L, A.dtype) * A, axis=(-2, -1))
    AU = jnp.sum(A, axis=(-2, -1)) / L
    return AS, AU


def order_parameters(A: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(c_1, c_G)`` of ``A: (..., L, L)``, each of shape ``(...)``."""
    check_square("A", A)
    A = jnp.asarray(A)
    A = A.astype(jnp.result_type(A, jnp.float32))
    L = A.shape[-1]
    AS, AU = _overlaps(A)
    c_G = (AS - AU) / (L - 1)
    return AU - c_G, c_G


def coverage(A: jax.Array) -> jax.Array:
    """Fraction ``||c_1 U + c_G S||^2 / ||A||^2`` of A in span{U, S}: ``(...)``.

    The zero pattern lies in the span; its coverage is defined as 1.
    """
    c1, cG = order_parameters(A)
    A = jnp.asarray(A).astype(c1.dtype)
    L = A.shape[-1]
    # ||c1 U + cG S||^2 with <U,U> = 1, <U,S> = 1, <S,S> = L.
    inside = c1**2 + 2 * c1 * cG + L * cG**2
    total = jnp.sum(A**2, axis=(-2, -1))
    safe = jnp.where(total > 0, total, 1.0)
    return jnp.where(total > 0, inside / safe, 1.0)


def sign_invariant(A: jax.Array) -> dict[str, jax.Array]:
    """Sign-invariant order parameters for linear attention (S_P is even in G):
    ``|rho|`` with ``rho = c_1 + c_G``, ``sign(rho) c_G``, ``rho^2``, ``c_G^2``."""
    c1, cG = order_parameters(A)
    rho = c1 + cG
    return {
        "abs_rho": jnp.abs(rho),
        "signed_cG": jnp.sign(rho) * cG,
        "rho2": rho**2,
        "cG2": cG**2,
    }
