"""Inside a softmax coexistence window (the exact chains' start families disagree) equal-time
averages cannot weigh the phases: umbrella sampling along a_G + MBAR on the same data does
(``copyjax.free_energy``). Runs with ``cfg["free_energy"] = {"steps": ...}``."""
from __future__ import annotations

import jax
import numpy as np

from copyjax.point.base import Method
from copyjax.schema import Estimate, PhaseWeights


class PhaseWeightsMethod(Method):
    name = "free_energy"
    prefix = "fe"
    config = {"free_energy": None}
    csv_columns = ("exact_fe_cG", "exact_fe_cG_sd", "exact_fe_cG_mcse", "exact_fe_copy_weight",
                   "exact_fe_copy_weight_sd")
    json_key = "exact_free_energy"
    result_type = PhaseWeights

    def enabled(self, ctx):
        ex = ctx.done.get("exact")
        return bool(ctx.cfg["free_energy"]) and ctx.activation == "softmax" and ex is not None \
            and ex.branches_disagree

    def run(self, ctx):
        from copyjax import free_energy

        pr, _, urun = free_energy.softmax_phase_weights(
            jax.random.fold_in(ctx.key, 103), ctx.stats, ctx.hyper, num_steps=ctx.cfg["free_energy"]["steps"],
            progress=ctx.progress, desc=f"{ctx.activation} P={ctx.P} free energy", mask=ctx.mask)
        result = PhaseWeights(
            Estimate(pr.mean, pr.mean_sd, float(np.sqrt(max(pr.var, 0.0)))),
            copy_weight=float(pr.weights[1]), copy_weight_sd=float(pr.weights_sd[1]),
            log_ratio=pr.log_ratio, log_ratio_sd=pr.log_ratio_sd, barrier=pr.barrier,
            minima_cG=pr.minima_centres, acceptance_min=float(urun.acceptance.min()))
        return result, {"edges": pr.edges, "F": pr.F, "F_sd": pr.F_sd}



    def csv_cells(self, p):
        fe = p.free_energy
        return {"exact_fe_cG": fe.cG.mean, "exact_fe_cG_sd": fe.cG.sd, "exact_fe_cG_mcse": fe.cG.mcse,
                "exact_fe_copy_weight": fe.copy_weight, "exact_fe_copy_weight_sd": fe.copy_weight_sd}

    def report(self, p):
        fe = p.free_energy
        bar = "" if not np.isfinite(fe.barrier) else f", barrier {fe.barrier:.1f} nats"
        return (f"free energy (umbrella + MBAR): log(copy/pool) {fe.log_ratio:+.1f}+-{fe.log_ratio_sd:.1f}, "
                f"copy mass {fe.copy_weight:.3g}+-{fe.copy_weight_sd:.2g}{bar}")

    def draw_order_parameter(self, ax, res, act, pts, key, label, color):
        fe = [p for p in pts if p.free_energy is not None and key == "cG"]  # the umbrella weighs a_G
        if fe:
            ax.errorbar([p.P * 1.015 for p in fe], [p.free_energy.cG.mean for p in fe],
                        [p.free_energy.cG.sd for p in fe], fmt="P", color=color, ms=10, mec="k",
                        mew=0.8, capsize=2, label=f"exact, both phases weighed (umbrella + MBAR): {label}")


METHOD = PhaseWeightsMethod()


__all__ = ["METHOD", "PhaseWeightsMethod"]
