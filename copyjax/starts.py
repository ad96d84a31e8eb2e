"""Where chains and optimisers start: the two families every sampler and ensemble draws from.

* ``prior_G``: draws of G from its prior N(0, sigma_g2), any leading shape: the uninformed
  start (the exact posterior's prior family, the umbrella windows before they are moved to
  their centres, the network's and the Adam ensembles' prior starts);
* ``copy_G``: the mask's copy pattern at a copy logit (softmax: ``logit x`` the pattern, so the
  previous token gets ``logit`` more than the others; linear: the pattern itself, A = S): the
  copy start. The exact posterior starts at logit log(4L) (a_G ~ 0.8), the network's copy
  initialisation at log(L) + 2.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from copyjax import masks


def prior_G(key, shape: tuple, hyper, dtype=jnp.float32) -> jax.Array:
    """``shape`` (ending in ``(L, L)``) draws of G ~ N(0, ``hyper.sigma_g2``) entrywise."""
    return jnp.sqrt(hyper.sigma_g2) * jax.random.normal(key, shape, dtype)


def copy_G(L: int, activation: str, logit, mask="full", dtype=jnp.float32) -> jax.Array:
    """``(L, L)``: the ``mask``'s copy pattern (``Mask.copy_pattern``) at copy logit ``logit``
    (softmax), or the pattern itself (linear: A = G = S)."""
    return masks.get(mask).copy_starts(L, activation, logit, dtype)[0]


__all__ = ["copy_G", "prior_G"]
