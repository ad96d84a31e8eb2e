"""Attention masks as plug-ins: a ``Mask`` (``masks.base``) per module, registered by name in
``copyjax.specs`` (``MASKS``, ``MASK_FAMILIES``: the one list, which the scripts check options
against without importing JAX).

``get(spec)`` turns a name (``"full"``, ``"causal"``, ``"window:4"``), a mask with an
architecture over it (``"full+layers=2+shift=2"``: ``masks.stack``) or a ``Mask`` into the
mask; everything that depends on the mask (the action, the samplers, the network, the free
energy, the order parameters) takes one. A new mask is one module with its ``allowed`` (and
whatever else differs) plus one line in ``copyjax.specs``."""
from __future__ import annotations

import importlib

from copyjax import specs
from copyjax.masks.base import Mask


def _load(path: str):
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


# name -> the mask; for a parametrised family "name:param" -> the mask's class
MASKS = {name: _load(path) for name, path in specs.MASKS.items()}
FAMILIES = {name: _load(path) for name, (path, _, _) in specs.MASK_FAMILIES.items()}


def get(spec) -> Mask:
    """The mask named ``spec`` (a key of ``MASKS``, ``family:param`` for ``FAMILIES``), or
    ``spec`` itself if it is a ``Mask``; ``ValueError`` naming the choices otherwise."""
    if isinstance(spec, Mask):
        return spec
    name, param = specs.mask_spec(spec)
    if name == "stack":
        from copyjax.masks.stack import Stack

        return Stack(get(param.base), param.layers, param.residual, param.shift, param.first)
    return MASKS[name] if param is None else FAMILIES[name](param)


FULL = MASKS["full"]
CAUSAL = MASKS["causal"]

__all__ = ["CAUSAL", "FAMILIES", "FULL", "get", "Mask", "MASKS"]
