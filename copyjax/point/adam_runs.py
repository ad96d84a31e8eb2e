"""Adam ensembles on the joint posterior of (W, G) from the prior and from the copy pattern;
the runs that reach the global maximum (``training.reached_global``) are summarised."""
from __future__ import annotations

import jax
import numpy as np

from copyjax import training
from copyjax.point.base import Method
from copyjax.point.sgld_chains import OBS_KEYS, held_out_loss
from copyjax.schema import AdamSummary


class AdamMethod(Method):
    name = "adam"
    prefix = "adam"
    config = {"adam_seeds": 4, "adam_steps": 300, "adam_lr": 2e-2, "adam_rtol": 1e-3}
    csv_columns = ("adam_cG", "adam_n_global", "adam_loss", "adam_test_loss")
    json_key = "adam_global"
    result_type = AdamSummary

    def enabled(self, ctx):
        return bool(ctx.cfg["adam_seeds"])

    def run(self, ctx):
        c, act, h = ctx.cfg, ctx.activation, ctx.hyper
        arrays = {}
        for start in ("prior", "copy"):
            ki = jax.random.fold_in(ctx.k_init, start == "copy")
            init = training.init_ensemble(ki, c["adam_seeds"], ctx.L, ctx.V, h, act, start, mask=ctx.mask)
            ens = training.train_ensemble(jax.random.fold_in(ctx.k_adam, start == "copy"), init, ctx.stats, h, act,
                                          steps=c["adam_steps"], learning_rate=c["adam_lr"],
                                          record_every=max(1, c["adam_steps"] // 50), mask=ctx.mask)
            for k in OBS_KEYS:
                arrays[f"{start}_{k}_curve"] = ens.curves[k]
                arrays[f"{start}_{k}"] = ens.final_obs[k]
            arrays["steps"] = ens.steps
            arrays[f"{start}_test_loss"] = held_out_loss(ens.final, ctx.stats_test, h, act, ctx.mask)
        lp = np.concatenate([arrays["prior_logpost"], arrays["copy_logpost"]])
        best = training.reached_global(lp, rtol=c["adam_rtol"])
        arrays["global_mask"] = best
        pick = lambda k: np.concatenate([arrays[f"prior_{k}"], arrays[f"copy_{k}"]])[best]
        return AdamSummary(int(best.sum()), int(best.size), **{
            k: float(np.mean(pick(k))) for k in ("c1", "cG", "abs_rho", "loss", "coverage", "test_loss")}), arrays



    def csv_cells(self, p):
        ad = p.adam
        return {"adam_cG": ad.cG, "adam_n_global": ad.n, "adam_loss": ad.loss, "adam_test_loss": ad.test_loss}

    def report(self, p):
        return f"Adam {p.adam.cG:.3f} ({p.adam.n}/{p.adam.of})"

    def draw_order_parameter(self, ax, res, act, pts, key, label, color):
        ps = [p for p in pts if p.adam is not None]
        if ps:
            ax.plot([p.P for p in ps], [getattr(p.adam, key) for p in ps], "^", color=color, ms=7,
                    label=f"Adam (global-min runs): {label}")

    def draw_loss(self, ax, res, act, pts):
        ps = [p for p in pts if p.adam is not None]
        if ps:
            ax.plot([p.P for p in ps], [p.adam.loss for p in ps], "^", label="Adam train")
            ax.plot([p.P for p in ps], [p.adam.test_loss for p in ps], "v", label="Adam test")

    def draw_coverage(self, ax, act, pts):
        ps = [p for p in pts if p.adam is not None]
        if ps:
            ax.plot([p.P for p in ps], [p.adam.coverage for p in ps], "^--", label=f"{act}, Adam")

    def figures(self, res, arrays, out):
        if not any(p.adam is not None for p in res["points"]):
            return []
        from copyjax.plots.phase_diagram import adam_curves

        return adam_curves(res, arrays, out)


METHOD = AdamMethod()


__all__ = ["AdamMethod", "METHOD"]
