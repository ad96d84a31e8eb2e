"""Attention masks as plug-ins: a ``Mask`` (``masks.base``) per module, and the registry.

``get(spec)`` turns a name (``"full"``, ``"causal"``, ``"window:4"``) or a ``Mask`` into the
mask; everything that depends on the mask (the action, the samplers, the network, the free
energy, the order parameters) takes one. A new mask is one module with its ``allowed`` (and
whatever else differs) plus one line here."""
from __future__ import annotations

from copyjax.masks import causal, full, window
from copyjax.masks.base import Mask

# name -> the mask, or for a parametrised family "name:param" -> a parser of param
MASKS = {"full": full.FULL, "causal": causal.CAUSAL}
FAMILIES = {"window": window.parse}


def get(spec) -> Mask:
    """The mask named ``spec`` (a key of ``MASKS``, ``family:param`` for ``FAMILIES``), or
    ``spec`` itself if it is a ``Mask``; ``ValueError`` naming the choices otherwise."""
    if isinstance(spec, Mask):
        return spec
    if isinstance(spec, str):
        if spec in MASKS:
            return MASKS[spec]
        name, sep, param = spec.partition(":")
        if sep and name in FAMILIES:
            return FAMILIES[name](param)
    raise ValueError(f"mask must be one of {sorted(MASKS)} or {', '.join(f'{k}:PARAM' for k in FAMILIES)} "
                     f"(e.g. window:4), got {spec!r}")


FULL = full.FULL
CAUSAL = causal.CAUSAL

__all__ = ["CAUSAL", "FAMILIES", "FULL", "get", "Mask", "MASKS"]
