"""The MAP of the exact marginal posterior of G on the point's data: Adam on -log p(G | data)
(``exact_posterior.optimise_starts``) from a prior draw and from the copy pattern, the start
of higher posterior density kept. Where the two starts end in different basins (inside a
coexistence window) both are reported. Off unless ``cfg["exact_map_steps"]`` > 0
(``--exact-map-steps``).

This method is the worked example of docs/phase_diagram.md, "Adding a method": one module and
one line in ``copyjax.point.METHODS``.
"""
from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import exact_posterior
from copyjax.action import marginal_logdensity
from copyjax.point.base import Method
from copyjax.schema import _Record


@dataclass(frozen=True)
class ExactMAP(_Record):
    """a_G (softmax) or |c_G| (linear) and log p(G | data) (up to its constant) at the end of
    each start's Adam run, and which start reached the higher density (``best``)."""

    cG: list  # [from the prior draw, from the copy pattern]
    logp: list
    best: int

    @classmethod
    def from_json(cls, d: dict) -> "ExactMAP":
        return cls(d["cG"], d["logp"], d["best"])


class ExactMAPMethod(Method):
    name = "exact_map"
    prefix = "exact_map"
    config = {"exact_map_steps": 0, "exact_map_lr": 0.05}
    csv_columns = ("exact_map_cG", "exact_map_basins")
    result_type = ExactMAP

    def enabled(self, ctx):
        return ctx.cfg["exact_map_steps"] > 0

    def run(self, ctx):
        h, act = ctx.hyper, ctx.activation
        stats = ctx.stats.astype(jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
        m = ctx.mask
        G0 = exact_posterior.start_positions(jax.random.fold_in(ctx.key, 104), 1, 1, ctx.L, h, act, stats.dtype, m)
        G = exact_posterior.optimise_starts(G0, stats, h, act, ctx.cfg["exact_map_steps"], ctx.cfg["exact_map_lr"], m)
        logp = np.asarray(jax.vmap(lambda g: marginal_logdensity(g, stats, h, act, m))(G), float)
        cG = np.asarray(jax.vmap(lambda g: m.order(m.attention(g, act), act)["cG"])(G), float)
        result = ExactMAP([float(c) for c in cG], [float(v) for v in logp], int(np.argmax(logp)))
        return result, {"G": np.asarray(G), "cG": cG, "logp": logp}


    def csv_cells(self, p):
        r = p.exact_map
        # two basins: the starts' a_G differ by more than a tenth of the copy scale
        return {"exact_map_cG": r.cG[r.best], "exact_map_basins": 1 + (abs(r.cG[0] - r.cG[1]) > 0.1)}

    def report(self, p):
        r = p.exact_map
        s = f"exact MAP {r.cG[r.best]:.3f}"
        if abs(r.cG[0] - r.cG[1]) > 0.1:
            s += f" (other basin {r.cG[1 - r.best]:.3f}, {r.logp[r.best] - r.logp[1 - r.best]:.1f} nats lower)"
        return s

    def draw_order_parameter(self, ax, res, act, pts, key, label, color):
        ps = [p for p in pts if p.exact_map is not None]
        if ps and key == "cG":
            ax.plot([p.P * 0.985 for p in ps], [p.exact_map.cG[p.exact_map.best] for p in ps], "h", color=color,
                    mfc="none", ms=9, label=f"exact MAP of G (Adam on -log p(G | data)): {label}")


METHOD = ExactMAPMethod()


__all__ = ["ExactMAP", "ExactMAPMethod", "METHOD"]
