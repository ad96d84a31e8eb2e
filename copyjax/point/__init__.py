"""One point of the phase diagram: every registered method at (activation, P).

``METHODS`` is the registry, in the order the methods run (a method may use the results of
those before it: the free energy runs where the exact chains' start families disagree, SGLD
starts from exact draws). The point's result (``Point``), its JSON, CSV row, report line,
figure layers and netCDF chains are each the methods' contributions in that order, so a new
method is one module (a ``base.Method``) plus one line here: docs/phase_diagram.md, "Adding a
method", walks through one.

Results are written one file per point, atomically (``copyjax.results``), so an interrupted
sweep resumes with the finished points reused.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from copyjax import results
from copyjax.point import adam_runs, exact_chains, exact_map, llc_column, op_nuts, phase_weights, sgld_chains, theory_forms
from copyjax.point.base import Context, Method

# the registry: (method, ...) in the order they run
METHODS: tuple[Method, ...] = (
    theory_forms.METHOD,  # theory: reduced theory's forms at P
    op_nuts.METHOD,  # op_nuts: the posterior form sampled by NUTS in order-parameter space
    exact_chains.METHOD,  # exact: the exact marginal posterior of G (MALA)
    exact_map.METHOD,  # exact_map: the MAP of that posterior (Adam), off by default
    phase_weights.METHOD,  # free_energy: umbrella + MBAR where the exact start families disagree
    sgld_chains.METHOD,  # sgld: SGLD on (W, G) from each start
    adam_runs.METHOD,  # adam: Adam ensembles
    llc_column.METHOD,  # llc: the exact local learning coefficient per phase, off by default
)


def method_names() -> tuple:
    """The registered methods' names (``METHODS`` read when called: a test may extend it)."""
    return tuple(m.name for m in METHODS)


@dataclass(frozen=True)
class Point:
    """Everything measured at one (activation, P): ``results`` maps each method's name to its
    typed result (None where it did not run), read as attributes (``point.exact``,
    ``point.sgld.starts["prior"]``). ``wall_s_by_part``: seconds per method."""

    activation: str
    P: int
    results: dict
    wall_s_by_part: dict | None = None
    wall_s: float | None = None
    config_hash: str | None = None

    def __post_init__(self):
        # every registered method present (None: did not run), so that a point built with
        # some methods left out equals its JSON round trip
        unknown = set(self.results) - set(method_names())
        if unknown:
            raise ValueError(f"results: unknown methods {sorted(unknown)} (registered: {method_names()})")
        object.__setattr__(self, "results", {n: self.results.get(n) for n in method_names()})

    def __getattr__(self, name):
        # only reached for names that are not fields: a registered method's result
        if name in method_names():
            return self.results.get(name)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r} (methods: {method_names()})")

    def to_json(self) -> dict:
        """The layout of ``points/*.json`` and ``results.json["points"]`` (docs/phase_diagram.md)."""
        d = {"activation": self.activation, "P": self.P}
        for m in METHODS:
            r = self.results.get(m.name)
            if r is not None:
                d |= m.to_json(r)
        extra = {"wall_s_by_part": self.wall_s_by_part, "wall_s": self.wall_s, "config_hash": self.config_hash}
        return d | {k: v for k, v in extra.items() if v is not None}

    @classmethod
    def from_json(cls, d: dict) -> "Point":
        return cls(d["activation"], d["P"], {m.name: m.from_json(d) for m in METHODS}, d.get("wall_s_by_part"),
                   d.get("wall_s"), d.get("config_hash"))

    def replace(self, **changes) -> "Point":
        return dataclasses.replace(self, **changes)


def defaults() -> dict:
    """Every registered method's configuration fields with their defaults."""
    out = {}
    for m in METHODS:
        out |= m.config
    return out


def run_point(cfg: dict, activation: str, P: int, index: int, progress: bool = False) -> tuple[Point, dict]:
    """Every registered method at one (activation, P), in registry order. ``cfg``: the sweep's
    configuration (``scripts/phase_diagram.py``'s ``config.json``; fields a method declares
    and ``cfg`` lacks take the method's default). Returns (``Point``, arrays by
    ``<prefix>_<name>``)."""
    t0 = time.perf_counter()
    ctx = Context(defaults() | cfg, activation, int(P), index, progress)
    arrays, clock = {}, {}
    for m in METHODS:
        t1 = time.perf_counter()
        if m.enabled(ctx):
            ctx.done[m.name], arr = m.run(ctx)
            arrays |= {f"{m.prefix}_{k}": v for k, v in arr.items()}
        else:
            ctx.done[m.name] = None
        clock[m.name] = time.perf_counter() - t1
    return Point(activation, int(P), dict(ctx.done), clock, time.perf_counter() - t0), arrays


def csv_columns() -> tuple:
    """The columns of summary.csv, one row per (activation, P): each method's in registry
    order between the point's own (documented column by column in docs/phase_diagram.md)."""
    return ("activation", "P") + tuple(c for m in METHODS for c in m.csv_columns) + ("wall_s",)


def csv_row(p: Point) -> list:
    """The ``csv_columns()`` of one point: empty where a method did not run or a quantity does
    not apply (None, False)."""
    row = {"activation": p.activation, "P": p.P, "wall_s": p.wall_s}
    for m in METHODS:
        if p.results.get(m.name) is not None:
            row |= m.csv_cells(p)
    return ["" if row.get(c) is None or row.get(c) is False else row[c] for c in csv_columns()]


def point_line(p: Point) -> str:
    """One line of the script's report for a point: each method that ran, in registry order."""
    parts = [m.report(p) for m in METHODS if p.results.get(m.name) is not None]
    return f"P={p.P:>7}: " + " | ".join(s for s in parts if s)


def chains(arrays: dict) -> dict:
    """The point's chains for ArviZ, ``{family: {observable: (chain, draw)}}``, from every method."""
    out = {}
    for m in METHODS:
        out |= m.chains(arrays)
    return out


def _in_every_process(flag: bool) -> bool:
    """``flag`` where it holds in every process of a ``jax.distributed`` run (a point is
    reused only where every process can read it, so that all compute the same points)."""
    import jax

    if not jax.distributed.is_initialized():
        return flag
    import numpy as np
    from jax.experimental import multihost_utils

    return bool(np.min(multihost_utils.process_allgather(np.int32(flag))))


def load_or_run_point(cfg, out, activation, P, index, progress=False) -> tuple[Point, dict, bool]:
    """Reuse a finished point (same configuration hash) or compute and save it
    (``copyjax.results``: atomic writes, summary last). Returns (point, arrays, reused)."""
    base = results.point_path(out, activation, index)
    key = {"config_hash": results.config_hash(cfg), "P": int(P)}
    done = results.load_point(base, key)
    if _in_every_process(done is not None):
        return Point.from_json(done[0]), done[1], True
    point, arrays = run_point(cfg, activation, P, index, progress)
    point = point.replace(config_hash=results.config_hash(cfg))
    results.save_point(base, key, point.to_json(), arrays)
    return point, arrays, False


__all__ = ["chains", "Context", "csv_columns", "csv_row", "defaults", "load_or_run_point", "Method", "method_names",
           "METHODS", "Point", "point_line", "run_point"]
