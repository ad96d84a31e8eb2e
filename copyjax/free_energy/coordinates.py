"""The coordinates the umbrella windows bias: the copy logit xi(G) = <G, S - U> / <S, S - U> under
a mask (``copy``), or the mean entry of G (``mean``, linear attention)."""
from __future__ import annotations


import jax
import jax.numpy as jnp

from copyjax import masks


def copy_direction(L: int, dtype=jnp.float32) -> jax.Array:
    """``(L, L)``: ``(S - U) / <S, S - U>``, so that ``xi(G) = <G, D>`` and ``xi(lambda S) = lambda``
    (the full mask's ``Mask.copy_direction``)."""
    return masks.FULL.copy_direction(L, dtype)


def copy_coordinate(G: jax.Array) -> jax.Array:
    """``xi(G) = <G, S - U> / <S, S - U>``: the copy logit above the row mean, ``G: (..., L, L) -> (...)``.
    For linear attention (A = G) this is c_G."""
    return masks.FULL.copy_coordinate(G)


def mean_coordinate(G: jax.Array) -> jax.Array:
    """``rho(G) = <G, U> = 1^T G 1 / L``, ``G: (..., L, L) -> (...)``. For linear attention this
    is rho = c_1 + c_G, the mean-sector amplitude: the order parameter of the onset (pooling
    first, docs/theory.md section 6) and, with c_G > 0, the label of the sign family
    (g s > 0 where rho > 0). It is orthogonal to the copy coordinate (<U, S - U> = 0)."""
    return jnp.sum(G, axis=(-2, -1)) / G.shape[-1]


# the biased coordinate of an umbrella run: "copy" (xi, both activations) or "mean" (rho, linear)
COORDINATES = {"copy": copy_coordinate, "mean": mean_coordinate}


def check_coordinate(coordinate: str, activation: str, mask="full") -> str:
    if coordinate not in COORDINATES:
        raise ValueError(f"coordinate must be one of {sorted(COORDINATES)}, got {coordinate!r}")
    if coordinate == "mean" and activation != "linear":
        raise ValueError("coordinate 'mean' needs activation 'linear' (softmax rows sum to 1: "
                         "a_1 + a_G = 1 at every G)")
    mask = masks.get(mask)
    mask.check(activation)
    if coordinate != "copy" and mask != masks.FULL:
        raise ValueError(f"coordinate {coordinate!r} is the full mask's; under mask {mask.spec!r} the umbrella "
                         "biases its copy coordinate ('copy')")
    return coordinate


def _coordinate_fn(coordinate: str, mask):
    """The biased coordinate as a function of G: the ``mask``'s copy coordinate, or the full
    mask's mean coordinate."""
    return masks.get(mask).copy_coordinate if coordinate == "copy" else COORDINATES[coordinate]


__all__ = ["check_coordinate", "COORDINATES", "copy_coordinate", "copy_direction", "mean_coordinate"]
