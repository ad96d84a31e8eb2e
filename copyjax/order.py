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


def sector_order_parameters(c1, cG, L: int) -> dict[str, jax.Array]:
    """Sign-invariant order parameters of linear attention from plain ``(c_1, c_G)``.

    At the expected statistics the action depends on ``g = <A, S> = c_1 + L c_G`` (token
    sector) and ``s = 1^T A 1 = L (c_1 + c_G)`` (mean sector) only through ``g^2`` and
    ``s^2``; each sector's sign is carried by its own block of W. Beside the exact mirror
    ``G -> -G`` there are therefore two families of states, ``g s > 0`` and ``g s < 0``, that
    are not images of each other (docs/theory.md section 5). Returned, all invariant under
    ``G -> -G``:

    * ``cG``: ``|c_G|`` (copy amplitude, token sector);
    * ``abs_rho``: ``|rho|``, ``rho = c_1 + c_G`` (mean-sector amplitude);
    * ``c1``: ``sign(rho) c_1`` (= ``|rho| - |c_G|`` in the ``g s > 0`` family when c_G and rho
      share a sign, ``|rho| + |c_G|`` when they do not);
    * ``family``: ``sign(g s)`` (+1 same-sign family, -1 opposite-sign family, 0 on the
      boundary).

    Shapes follow ``c1`` and ``cG`` (broadcast).
    """
    rho = c1 + cG
    g = c1 + L * cG
    s = L * rho
    return {
        "c1": jnp.where(rho < 0, -c1, c1),
        "cG": jnp.abs(cG),
        "abs_rho": jnp.abs(rho),
        "family": jnp.sign(g * s),
    }


def reported_order_parameters(A: jax.Array, activation: str) -> dict[str, jax.Array]:
    """The order parameters copyjax reports for ``A: (..., L, L)``, each ``(...)``.

    softmax: ``c1 = a_1``, ``cG = a_G`` (plain: A >= 0, no sign ambiguity), ``abs_rho = a_1 +
    a_G`` (= 1), ``family = +1``. linear: ``sector_order_parameters``. The one place where
    the linear sign convention is decided; every observer, summary and plot goes through it.
    """
    c1, cG = order_parameters(A)
    if activation == "linear":
        return sector_order_parameters(c1, cG, A.shape[-1])
    return {"c1": c1, "cG": cG, "abs_rho": c1 + cG, "family": jnp.ones_like(cG)}


def sign_invariant(A: jax.Array) -> dict[str, jax.Array]:
    """Deprecated: use ``reported_order_parameters(A, "linear")``. ``sign(rho) c_G`` (the
    old ``signed_cG``) is not invariant under the opposite-sign family of linear attention.
    Returns ``|rho|``, ``rho^2``, ``c_G^2`` and the sector-invariant ``abs_cG`` and ``family``."""
    c1, cG = order_parameters(A)
    sec = sector_order_parameters(c1, cG, A.shape[-1])
    rho = c1 + cG
    return {"abs_rho": sec["abs_rho"], "abs_cG": sec["cG"], "family": sec["family"],
            "rho2": rho**2, "cG2": cG**2}


__all__ = ["coverage", "order_parameters", "reported_order_parameters", "sector_order_parameters",
           "sign_invariant"]
