"""The exact local learning coefficient at each phase's minimum of the point's data
(``copyjax.llc``, docs/llc.md): Adam on the joint MAP from prior and copy starts
(``llc.find_minima``), then lambda_hat at every phase reached (W integrated, G by adaptive
MALA). Off unless ``cfg["llc_steps"]`` > 0 (``--llc-steps``): it costs the Adam runs (8 x 2000
steps) and one MALA run per phase, about 1 min per point at L = 32 on 2 cores (docs/llc.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from copyjax.point.base import Method
from copyjax.schema import _Record

PHASES = ("pooling", "copy", "below_onset", "above_onset")


@dataclass(frozen=True)
class PointLLC(_Record):
    """lambda_hat at nbeta (P / log P) and gamma per phase reached: ``phases[phase]`` holds
    ``llc``, ``se`` (ESS-based), ``rhat``, ``loss_star`` (L_n(w*)), ``cG_star`` and
    ``left_phase`` (the fraction of draws outside w*'s phase)."""

    nbeta: float
    gamma: float
    phases: dict

    @classmethod
    def from_json(cls, d: dict) -> "PointLLC":
        return cls(d["nbeta"], d["gamma"], d["phases"])


class LLCMethod(Method):
    name = "llc"
    prefix = "llc"
    config = {"llc_steps": 0, "llc_gamma": 100.0}
    csv_columns = tuple(c for ph in PHASES for c in (f"llc_{ph}", f"llc_{ph}_se"))
    result_type = PointLLC

    def enabled(self, ctx):
        return ctx.cfg["llc_steps"] > 0

    def run(self, ctx):
        from copyjax import llc

        act, gamma = ctx.activation, float(ctx.cfg["llc_gamma"])
        stats = ctx.stats.astype(jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
        nbeta = llc.default_nbeta(ctx.P)
        phases, arrays = {}, {}
        for j, m in enumerate(llc.find_minima(jax.random.fold_in(ctx.key, 105), stats, ctx.hyper, act, mask=ctx.mask)):
            r = llc.estimate_llc(jax.random.fold_in(ctx.key, 106 + j), stats, m.W, m.G, act, nbeta=nbeta,
                                 gamma=gamma, num_steps=ctx.cfg["llc_steps"], progress=ctx.progress, mask=ctx.mask)
            phases[m.phase] = {"llc": r.llc, "se": r.llc_se, "rhat": r.rhat, "loss_star": r.loss_star,
                               "cG_star": m.cG, "left_phase": r.left_phase}
            arrays |= {f"loss_{m.phase}": np.asarray(r.loss), f"W_{m.phase}": np.asarray(m.W),
                       f"G_{m.phase}": np.asarray(m.G)}  # w*: a row can be recomputed from the point's arrays
        return PointLLC(nbeta, gamma, phases), arrays

    def csv_cells(self, p):
        out = {}
        for ph, r in p.llc.phases.items():
            out[f"llc_{ph}"], out[f"llc_{ph}_se"] = r["llc"], r["se"]
        return out

    def report(self, p):
        r = p.llc
        parts = [f"{ph} {v['llc']:.2f}+-{v['se']:.2f}" + (" (left its phase)" if v["left_phase"] > 0.05 else "")
                 for ph, v in r.phases.items()]
        return f"LLC (gamma {r.gamma:g}, nbeta {r.nbeta:.0f}): " + ", ".join(parts)


METHOD = LLCMethod()


__all__ = ["LLCMethod", "METHOD", "PHASES", "PointLLC"]
