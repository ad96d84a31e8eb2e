"""The theory's posterior form sampled by NUTS in order-parameter space
(``copyjax.op_posterior``), summarised on the observables the exact posterior reports."""
from __future__ import annotations

import dataclasses

import jax

from copyjax import masks
from copyjax.point.base import Method, draws_with_prefix
from copyjax.point.exact_chains import EXACT_KEYS
from copyjax.schema import OP_OBSERVABLES, OPSummary


class OPNutsMethod(Method):
    name = "op_nuts"
    prefix = "op"
    config = {"op_chains": 16, "op_draws": 50}
    csv_columns = ("op_cG", "op_cG_sd")
    json_key = "theory_posterior_sampled"
    result_type = OPSummary

    def enabled(self, ctx):
        return bool(ctx.cfg["op_chains"]) and ctx.mask == masks.FULL  # the theory's form is the cyclic model's

    def run(self, ctx):
        from copyjax import op_posterior  # brings NUTS: imported when it runs

        c = ctx.cfg
        s = op_posterior.sample_op_posterior(
            jax.random.fold_in(ctx.key, 101), float(ctx.P), ctx.L, ctx.V, ctx.activation, ctx.hyper,
            n_chains=c["op_chains"], n_draws=c["op_draws"], n_warmup=max(25, c["op_draws"] // 2), tokens=ctx.tokens)
        keys = EXACT_KEYS[ctx.activation]
        # the observables the exact posterior reports (softmax: no abs_rho)
        summary = dataclasses.replace(op_posterior.op_summary(s),
                                      **{k: None for k in OP_OBSERVABLES if k not in keys})
        return summary, {k: s.draws[k] for k in keys}



    def csv_cells(self, p):
        return {"op_cG": p.op_nuts.cG.mean, "op_cG_sd": p.op_nuts.cG.sd}

    def report(self, p):
        return f"NUTS(OP) {p.op_nuts.cG.mean:.3f}"

    def draw_order_parameter(self, ax, res, act, pts, key, label, color):
        pts = [p for p in pts if p.op_nuts is not None and getattr(p.op_nuts, key) is not None]
        if pts:
            ax.errorbar([p.P * 0.94 for p in pts], [getattr(p.op_nuts, key).mean for p in pts],
                        [getattr(p.op_nuts, key).sd for p in pts], fmt="D", color=color, ms=4, alpha=0.6,
                        capsize=2, label=f"theory posterior, NUTS in OP space: {label}")

    def chains(self, arrays):
        d = draws_with_prefix(arrays, self.prefix, OP_OBSERVABLES)
        return {self.prefix: d} if d else {}


METHOD = OPNutsMethod()


__all__ = ["METHOD", "OPNutsMethod"]
