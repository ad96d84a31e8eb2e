"""Figures of the phase diagram (``scripts/phase_diagram.py``). The shared figures (order
parameters, loss, coverage) draw every registered method's layer (``copyjax.point.METHODS``);
a method's own figures (the exact draws' histograms, the Adam curves) are here too and are
called by that method's ``figures``. Input ``res``: the sweep's results with ``res["points"]``
the typed points (``copyjax.point.Point``)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from copyjax.plots._common import save  # noqa: E402
from copyjax.point import METHODS  # noqa: E402
from copyjax.point.theory_forms import ACT_KEYS  # noqa: E402


def _points(res, act):
    return [p for p in res["points"] if p.activation == act]


def order_parameters(res, out):
    acts = res["activations"]
    fig, axes = plt.subplots(1, len(acts), figsize=(6.6 * len(acts), 4.8), squeeze=False)
    for ax, act in zip(axes[0], acts):
        pts = _points(res, act)
        for (key, label), color in zip(ACT_KEYS[act], ("tab:blue", "tab:red")):
            for m in METHODS:
                m.draw_order_parameter(ax, res, act, pts, key, label, color)
        for k, ls in (("P_star", ":"), ("P_onset", ":"), ("P_cross", "-.")):
            v = res["transitions"][act].get(k)
            if v:
                ax.axvline(v, color="gray", ls=ls, lw=1)
                ax.text(v, 1.02, k, rotation=90, va="bottom", ha="right",
                        fontsize=7, color="gray", transform=ax.get_xaxis_transform())
        ax.set_xscale("log")
        ax.set_xlabel("P (training sequences)")
        ax.set_ylabel("order parameter")
        ax.set_title(f"{act} attention, L={res['config']['L']}, V={res['config']['V']}")
        ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    return save(fig, out, "order_parameters")


def losses(res, out):
    acts = res["activations"]
    fig, axes = plt.subplots(1, len(acts), figsize=(6 * len(acts), 4), squeeze=False)
    for ax, act in zip(axes[0], acts):
        for m in METHODS:
            m.draw_loss(ax, res, act, _points(res, act))
        ax.set_xscale("log")
        ax.set_xlabel("P")
        ax.set_ylabel("loss per sequence")
        ax.set_title(f"{act}: loss vs P")
        ax.legend(fontsize=7)
    return save(fig, out, "loss")


def coverage(res, out):
    fig, ax = plt.subplots(figsize=(6, 4))
    for act in res["activations"]:
        for m in METHODS:
            m.draw_coverage(ax, act, _points(res, act))
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("P")
    ax.set_ylabel("coverage of span{U, S}")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    return save(fig, out, "coverage")


def figures(res, arrays, out) -> list:
    """Every figure of a sweep: the shared ones (coverage where a method draws it), then each
    method's own; returns the written paths."""
    paths = order_parameters(res, out) + losses(res, out)
    if any(p.sgld is not None and p.sgld.starts or p.adam is not None for p in res["points"]):
        paths += coverage(res, out)
    for m in METHODS:
        paths += m.figures(res, arrays, out)
    return paths


def exact_histograms(res, arrays, out):
    """Exact-posterior draws of the copy order parameter at the three grid points nearest the
    transition, each start family drawn separately (where they disagree the posterior's
    weights are not given by these counts: docs/phase_diagram.md)."""
    acts = res["activations"]
    fig, axes = plt.subplots(1, len(acts), figsize=(6 * len(acts), 4), squeeze=False)
    for ax, act in zip(axes[0], acts):
        pts = [p for p in _points(res, act) if p.exact is not None]
        if not pts:
            ax.set_visible(False)
            continue
        tr = res["transitions"][act]
        ref = tr.get("P_star") or tr.get("P_onset") or tr.get("P_steepest") or pts[len(pts) // 2].P
        order = np.argsort([abs(np.log(p.P / ref)) for p in pts])[:3]
        for i in sorted(order):
            p = pts[i]
            a = arrays[(act, p.P)]
            x, start = a["exact_cG"], a["exact_start"]
            line = None
            for code, ls in ((0, "-"), (1, "--")):
                v = x[start == code].ravel()
                if v.size:
                    h = ax.hist(v, bins=30, histtype="step", density=True, lw=1.5, ls=ls,
                                color=None if line is None else line,
                                label=f"P={p.P}, {('prior', 'copy')[code]} start")
                    line = h[2][0].get_edgecolor()
        ax.set_xlabel(("a_G" if act == "softmax" else "|c_G|") + " (exact posterior of G, MALA draws)")
        ax.set_ylabel("density")
        ax.set_title(f"{act}: exact posterior draws near the transition")
        ax.legend(fontsize=7)
    return save(fig, out, "histograms")


def adam_curves(res, arrays, out):
    acts = res["activations"]
    fig, axes = plt.subplots(1, len(acts), figsize=(6 * len(acts), 4), squeeze=False)
    for ax, act in zip(axes[0], acts):
        pts = [p for p in _points(res, act) if p.adam is not None]
        if not pts:
            continue
        for i in sorted({0, len(pts) // 2, len(pts) - 1}):
            p = pts[i]
            a = arrays[(act, p.P)]
            curves = a["adam_prior_loss_curve"]
            line = ax.plot(a["adam_steps"], curves[0], lw=1.5, label=f"P={p.P}")[0]
            for c in curves[1:]:
                ax.plot(a["adam_steps"], c, lw=0.6, alpha=0.5, color=line.get_color())
        ax.set_xscale("log")
        ax.set_xlabel("Adam step")
        ax.set_ylabel("training loss per sequence")
        ax.set_title(f"{act}: Adam from the prior")
        ax.legend(fontsize=8)
    return save(fig, out, "adam_curves")


__all__ = ["adam_curves", "coverage", "exact_histograms", "figures", "losses", "order_parameters"]
