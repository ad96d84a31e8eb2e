"""What a method of a phase-diagram point is, and what it is given.

A method (theory forms, NUTS in order-parameter space, the exact posterior, SGLD, Adam, the
free energy, ...) is one ``Method``: it names the configuration fields it reads (with their
defaults), runs on a ``Context`` and returns a typed result and its arrays, and contributes
the result's JSON keys, CSV columns, report text, figure layers and netCDF chains. The point
(``copyjax.point``) iterates over the registry; nothing else knows the methods' names.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from copyjax.data import sampled_stats
from copyjax import masks
from copyjax.hyper import Hyper
from copyjax.tokens import token_law
from copyjax.schema import _maybe


@dataclass
class Context:
    """One (activation, P) of a sweep: the configuration (every registered method's defaults
    filled in), the data, and the random streams.

    ``key`` = fold_in(key(seed), index); ``k_data, k_test, k_chain, k_adam, k_init`` its
    split into five (the streams of every method; methods of their own draw from
    ``fold_in(key, n)`` with an n no other method uses). ``stats: (L, L, V, V)`` the training
    statistics of P sequences, ``stats_test`` those of ``cfg["test_P"]`` fresh ones (float32).
    ``done``: the results of the methods that ran before, by name; ``shared``: objects a method
    hands to later ones (the exact run's final states, say), by the name of the method.
    ``tokens``: the token law of the data (``cfg["tokens"]``, absent: uniform; i.i.d. laws only).
    ``mask``: the attention mask (``copyjax.masks``; ``cfg["mask"]``, absent: ``"full"``): every
    method runs under it, the reduced theory's lines and its posterior form only under the full
    mask (they are the cyclic model's)."""

    cfg: dict
    activation: str
    P: int
    index: int
    progress: bool = False
    done: dict = field(default_factory=dict)
    shared: dict = field(default_factory=dict)

    def __post_init__(self):
        c = self.cfg
        self.L, self.V = c["L"], c["V"]
        self.hyper = Hyper(c["beta"], c["sigma_w2"], c["sigma_g2"][self.activation])
        self.tokens = token_law(c.get("tokens"))
        self.mask = masks.get(c.get("mask", "full"))
        self.mask.check(self.activation)
        self.key = jax.random.fold_in(jax.random.key(c["seed"]), self.index)
        self.k_data, self.k_test, self.k_chain, self.k_adam, self.k_init = jax.random.split(self.key, 5)
        self.stats = sampled_stats(self.k_data, self.P, self.L, self.V, tokens=self.tokens).astype(jnp.float32)
        self.stats_test = sampled_stats(self.k_test, c["test_P"], self.L, self.V,
                                        tokens=self.tokens).astype(jnp.float32)


class Method:
    """One method of a phase-diagram point. Subclasses set the class attributes and
    override what they contribute; every hook but ``run`` has a default that contributes
    nothing.

    ``name``: the point's attribute (``point.<name>``) and the key of its wall time.
    ``prefix``: its arrays are saved as ``<prefix>_<array>`` (``results.npz``, figures).
    ``config``: the configuration fields it reads, with the defaults a configuration without
    them takes (so configurations, and their hashes, of runs before the method existed keep
    working). ``csv_columns``: its columns of ``summary.csv``."""

    name: str = ""
    prefix: str = ""
    config: dict = {}
    csv_columns: tuple = ()

    def enabled(self, ctx: Context) -> bool:
        """Whether it runs at this point (its result is None otherwise)."""
        return True

    def run(self, ctx: Context) -> tuple[Any, dict]:
        """(typed result, arrays by name without the prefix)."""
        raise NotImplementedError

    # the result's JSON: its keys at the top level of the point's JSON (file layout of
    # docs/phase_diagram.md), and back. By default one section, ``json_key`` (the name unless
    # the file layout predates the method), holding ``result_type``'s JSON; methods whose
    # result spans several keys override both.
    json_key: str | None = None
    result_type: Any = None

    def to_json(self, result) -> dict:
        return {self.json_key or self.name: result.to_json()}

    def from_json(self, d: dict):
        """The result from a point's JSON, None where it did not run."""
        return _maybe(self.result_type, d.get(self.json_key or self.name))

    def csv_cells(self, point) -> dict:
        """``csv_columns`` -> value for a point where it ran (``point.<name>`` is not None)."""
        return {}

    def report(self, point) -> str:
        """Its part of the point's report line (from `` | ``), for a point where it ran."""
        return ""

    # figure layers (matplotlib axes of copyjax.plots.phase_diagram's shared figures)
    def draw_order_parameter(self, ax, res: dict, act: str, pts: list, key: str, label: str, color) -> None:
        """Its series of the order parameter ``key`` (``label``) over P."""

    def draw_loss(self, ax, res: dict, act: str, pts: list) -> None:
        """Its series of the loss per sequence over P."""

    def draw_coverage(self, ax, act: str, pts: list) -> None:
        """Its series of the coverage of span{U, S} over P."""

    def figures(self, res: dict, arrays: dict, out: str) -> list:
        """Figures of its own (paths written), given the sweep's results and arrays."""
        return []

    def chains(self, arrays: dict) -> dict:
        """Its chains for ArviZ: ``{family: {observable: (chain, draw)}}`` from the point's
        arrays (prefixed names)."""
        return {}


def draws_with_prefix(arrays: dict, family: str, keys) -> dict:
    """``{k: arrays[f"{family}_{k}"]}`` for the ``keys`` present as (chain, draw) arrays."""
    import numpy as np

    return {k: arrays[f"{family}_{k}"] for k in keys
            if f"{family}_{k}" in arrays and np.ndim(arrays[f"{family}_{k}"]) == 2}


__all__ = ["Context", "draws_with_prefix", "Method"]
