"""Figures of the phase diagram that every method shares (``scripts/phase_diagram.py``): order
parameters, loss and coverage against P, each drawing every registered method's layer
(``copyjax.point.METHODS``), then each method's own figures. Input ``res``: the sweep's results
with ``res["points"]`` the typed points (``copyjax.point.Point``)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

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


__all__ = ["coverage", "figures", "losses", "order_parameters"]
