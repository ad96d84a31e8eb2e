"""The reduced theory at the point's P (expected statistics): the global minimum and every
local minimum of the MAP and posterior forms, and the joint MAP of (W, G) that Adam finds."""
from __future__ import annotations

from copyjax import masks, theory
from copyjax.order import sector_order_parameters
from copyjax.plots._common import curve_value, metastable_branches
from copyjax.point.base import Method
from copyjax.schema import TheoryForm, TheoryForms, TheoryOP

# the order parameters drawn per activation: key in the results, label
# (linear: the sector-invariant amplitudes, copyjax.order.sector_order_parameters)
ACT_KEYS = {"softmax": (("c1", "a_1"), ("cG", "a_G")), "linear": (("abs_rho", "|rho|"), ("cG", "|c_G|"))}


def theory_op(m, L: int, activation: str, **extra) -> TheoryOP:
    """A theory minimum's order parameters in the reported convention
    (``order.sector_order_parameters`` for linear attention); ``extra``: its loss or action."""
    if activation == "linear":
        sec = sector_order_parameters(m.c1, m.cG, L)
        return TheoryOP(float(sec["c1"]), float(sec["cG"]), float(sec["abs_rho"]), **extra)
    return TheoryOP(float(m.c1), float(m.cG), float(m.c1 + m.cG), **extra)


class TheoryMethod(Method):
    name = "theory"
    csv_columns = ("theory_c1", "theory_cG", "theory_loss", "theory_abs_rho", "post_c1", "post_cG",
                   "post_abs_rho", "theory_in_window")

    def enabled(self, ctx):
        return ctx.mask == masks.FULL  # the reduced theory is the cyclic model's

    def run(self, ctx):
        L, V, act, h, P, tok = ctx.L, ctx.V, ctx.activation, ctx.hyper, ctx.P, ctx.tokens
        forms = {}
        for form in ("map", "posterior"):
            ms = theory.minima(P, L, V, act, h, form, tokens=tok)
            best = min(ms, key=lambda m: m.action)
            forms[form] = TheoryForm(
                theory_op(best, L, act, loss=theory.minimum_loss(best, P, L, V, act, h, form, tokens=tok)),
                [theory_op(m, L, act, action=m.action) for m in ms],
                # two minima: inside this form's coexistence window, where the exact chains'
                # start families are expected to disagree
                in_window=len(ms) > 1)
        # the joint MAP of (W, G): what Adam converges to (docs/theory.md, joint_map form)
        best = min(theory.minima(P, L, V, act, h, "joint_map", tokens=tok), key=lambda m: m.action)
        joint = theory_op(best, L, act, loss=theory.minimum_loss(best, P, L, V, act, h, "joint_map", tokens=tok))
        return TheoryForms(forms["map"], forms["posterior"], joint), {}

    def to_json(self, r):
        return {"theory_map": r.map.to_json(), "theory_posterior": r.posterior.to_json(),
                "theory_joint_map": r.joint_map.to_json()}

    def from_json(self, d):
        if d.get("theory_map") is None:  # not run (another mask than the full one)
            return None
        return TheoryForms(TheoryForm.from_json(d["theory_map"]), TheoryForm.from_json(d["theory_posterior"]),
                            TheoryOP.from_json(d["theory_joint_map"]))

    def csv_cells(self, p):
        m, post = p.theory.map.best, p.theory.posterior.best
        return {"theory_c1": m.c1, "theory_cG": m.cG, "theory_loss": m.loss, "theory_abs_rho": m.abs_rho,
                "post_c1": post.c1, "post_cG": post.cG, "post_abs_rho": post.abs_rho,
                "theory_in_window": str(p.theory.posterior.in_window).lower()}

    def report(self, p):
        lin = p.activation == "linear"
        th = p.theory.posterior.best
        s = f"theory (posterior form) {'|c_G|' if lin else 'a_G'}={th.cG:.3f}"
        if lin:
            s += f" |rho|={th.abs_rho:.3f}"
        if p.theory.posterior.in_window:
            s += " [two minima: coexistence window]"
        return s

    def draw_order_parameter(self, ax, res, act, pts, key, label, color):
        th = res["theory"].get(act)
        if th is None:  # no theory for this model (the causal mask)
            return
        ax.plot(th["P"], curve_value(th, key), "-", color=color, lw=2, label=f"theory MAP, global: {label}")
        if "joint_map" in th:
            ax.plot(th["P"], curve_value(th["joint_map"], key), ":", color=color, lw=1.5,
                    label=f"theory joint MAP of (W, G) (Adam's target): {label}")
        if act == "softmax":  # linear's metastable MAP minima are sign-fixed, not |c_G|
            for bi, branch in enumerate(metastable_branches(th, key)):
                if branch:
                    ax.plot(*zip(*branch), "--", color=color, lw=1, alpha=0.8,
                            label=f"metastable {label}" if bi == 0 else None)
        ax.plot([p.P for p in pts], [getattr(p.theory.posterior.best, key) for p in pts], "x", color=color,
                ms=8, label=f"theory posterior form (minimum): {label}")

    def draw_loss(self, ax, res, act, pts):
        th = res["theory"].get(act)
        if th is None:
            return
        ax.plot(th["P"], th["loss"], "-k", lw=2, label="theory MAP (W averaged)")
        if "joint_map" in th:
            ax.plot(th["P"], th["joint_map"]["loss"], ":k", lw=1.5, label="theory joint MAP (W at its mean)")
        ax.plot([p.P for p in pts], [p.theory.posterior.best.loss for p in pts], "xk", label="theory posterior form")


METHOD = TheoryMethod()


__all__ = ["ACT_KEYS", "METHOD", "TheoryMethod", "theory_op"]
