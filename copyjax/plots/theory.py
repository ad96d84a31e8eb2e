"""Figures of the reduced theory (``scripts/theory_figures.py``): landscapes, order parameters,
susceptibility and histograms over P. Inputs: the dictionary that script builds."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from copyjax.plots._common import ACT_LABEL, metastable_branches, save  # noqa: E402

def _mark_transitions(ax, res, act):
    tp = res["transitions"]
    keys = ("P_star", "P_steepest") if act == "softmax" else ("P_onset", "P_cross")
    for form, ls in (("map", ":"), ("posterior", "-.")):
        for k in keys:
            v = tp[f"{act}_{form}"].get(k)
            if v:
                ax.axvline(v, color="0.5", ls=ls, lw=1)
                ax.text(v, 1.0, f" {k} ({form})", rotation=90, va="top", ha="right", fontsize=7,
                        transform=ax.get_xaxis_transform(), color="0.4")


def theory_landscapes(res, out):
    land = res["landscapes"]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    for ax, d in zip(axes[0], land["softmax"]):
        aG, S = np.asarray(d["aG"]), np.asarray(d["S"])
        ax.plot(aG, S, color="tab:red")
        # Zoom on the part that decides the transition: up to 4x the highest point between
        # a_G = 0 and the global minimum (the barrier, when there are two minima).
        g = max(float(aG[np.argmin(S)]), 0.3)
        top = max(2.0, 4 * float(S[(aG >= 0) & (aG <= g)].max()))
        ax.set(xlim=(-0.05, min(1.0, g + 0.35)), ylim=(-0.05 * top, top))
        ax.set(xlabel="a_G (copy ansatz)", ylabel="S - min S",
               title=f"softmax MAP energy, P = {d['P']:.0f}")
    for ax, d in zip(axes[1], land["linear"]):
        c = np.asarray(d["c"])
        S = np.asarray(d["S"])
        cs = ax.contourf(c, c, np.log1p(S).T, levels=30, cmap="viridis")
        fig.colorbar(cs, ax=ax, label="log(1 + S - min S)")
        i = np.unravel_index(np.argmin(S), S.shape)
        ax.plot(c[i[0]], c[i[1]], "w*", ms=12)
        ax.set(xlabel="c_1", ylabel="c_G", title=f"linear MAP energy, P = {d['P']:.0f}")
    fig.subplots_adjust(hspace=0.35)
    fig.suptitle(f"Reduced action landscapes, L = {res['L']}, V = {res['V']} "
                 "(top: below / at / above the softmax P*; bottom: below / at / above the linear onset)")
    return save(fig, out, "landscapes")


def theory_order_parameters(res, out):
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
    for ax, act in zip(axes, ("softmax", "linear")):
        for form, alpha in (("map", 1.0), ("posterior", 0.5)):
            cur = res["curves"][f"{act}_{form}"]
            for key, color in (("c1", "tab:blue"), ("cG", "tab:red")):
                name = ACT_LABEL[act][0 if key == "c1" else 1]
                ax.plot(cur["P"], cur[key], "-", color=color, alpha=alpha, lw=2,
                        label=f"{form} global: {name}")
                for bi, branch in enumerate(metastable_branches(cur, key)):
                    if branch:
                        ax.plot(*zip(*branch), "--", color=color, alpha=alpha, lw=1.2,
                                label=f"{form} metastable: {name}" if bi == 0 else None)
        joint = res["curves"].get(f"{act}_joint_map")
        if joint:
            for key, color in (("c1", "tab:blue"), ("cG", "tab:red")):
                ax.plot(joint["P"], joint[key], ":", color=color, lw=1.5,
                        label=f"joint MAP of (W, G) (Adam's target): {ACT_LABEL[act][0 if key == 'c1' else 1]}")
        for key, color in (("c1", "tab:blue"), ("cG", "tab:red")):
            pts = res["susceptibility"][act]
            ax.errorbar([p["P"] for p in pts], [p[key]["mean"] for p in pts],
                        [p[key]["sd"] for p in pts], fmt="o", ms=3, color=color, capsize=2,
                        label=f"NUTS in OP space (mean +/- sd): {key}")
        _mark_transitions(ax, res, act)
        ax.set(xscale="log", xlabel="P", ylabel="order parameter", title=act)
        ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.suptitle(f"Order parameters vs P, L = {res['L']}, V = {res['V']}: reduced theory "
                 "(MAP dark, posterior form light, joint MAP dotted; global solid, metastable dashed)")
    return save(fig, out, "order_parameters")


def theory_susceptibility(res, out):
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.4))
    for ax, act in zip(axes, ("softmax", "linear")):
        pts = res["susceptibility"][act]
        for key, color in (("c1", "tab:blue"), ("cG", "tab:red")):
            if act == "softmax" and key == "c1":
                continue  # a_1 = 1 - a_G: the same variance
            ax.plot([p["P"] for p in pts], [p[key]["var"] for p in pts], "o-", color=color,
                    label=f"Var {ACT_LABEL[act][0 if key == 'c1' else 1]}")
        _mark_transitions(ax, res, act)
        ax.set(xscale="log", yscale="log", xlabel="P", ylabel="posterior variance (susceptibility)",
               title=act)
        ax.legend(fontsize=8)
    fig.suptitle(f"Susceptibility from NUTS in order-parameter space, L = {res['L']}, V = {res['V']}")
    return save(fig, out, "susceptibility")


def theory_histograms(res, out):
    hs = res["histograms"]
    fig, axes = plt.subplots(2, max(len(hs["softmax"]), len(hs["linear"]), 1),
                             figsize=(2.6 * max(len(hs["softmax"]), 3), 6.4), squeeze=False)
    for row, act, key in ((0, "softmax", "cG"), (1, "linear", "c1")):
        for ax, h in zip(axes[row], hs[act]):
            ax.hist(h[key], bins=40, color="tab:red" if act == "softmax" else "tab:blue", density=True)
            ax.set(title=f"{act}, P = {h['P']:.0f}", xlabel=ACT_LABEL[act][0 if key == "c1" else 1])
            if len(h["weights"]) > 1:
                ax.text(0.5, 0.9, "mode masses " + ", ".join(f"{w:.2f}" for w in h["weights"]),
                        transform=ax.transAxes, ha="center", fontsize=7)
        for ax in axes[row][len(hs[act]):]:
            ax.axis("off")
    fig.suptitle("Posterior histograms in order-parameter space (NUTS): softmax a_G around P*, "
                 "linear c_1 around the onset")
    fig.tight_layout()
    return save(fig, out, "histograms")


def theory_figures(res, out):
    """All four figures of ``scripts/theory_figures.py``; returns the written paths."""
    return (theory_landscapes(res, out) + theory_order_parameters(res, out)
            + theory_susceptibility(res, out) + theory_histograms(res, out))


__all__ = ["theory_figures", "theory_histograms", "theory_landscapes", "theory_order_parameters",
           "theory_susceptibility"]
