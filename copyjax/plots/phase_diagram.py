"""A phase-diagram method's own figures (the exact draws' histograms, the Adam curves), called
by that method's ``figures``; the figures every method shares are ``copyjax.point.figures``.
Input ``res``: the sweep's results with ``res["points"]`` the typed points."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from copyjax.plots._common import save  # noqa: E402


def _points(res, act):
    return [p for p in res["points"] if p.activation == act]


def layer_orders(res, arrays, out, keys):
    """Two layers: each layer's weight on x_l, x_{l-1}, x_{l-2} (``keys``, ``Mask.layer_order``)
    over P, the posterior mean and sd from the exact chains, prior and copy starts apart
    (where they disagree the phases coexist or the chains have not mixed)."""
    acts = res["activations"]
    fig, axes = plt.subplots(1, len(acts), figsize=(6 * len(acts), 4), squeeze=False)
    for ax, act in zip(axes[0], acts):
        pts = [p for p in _points(res, act) if p.exact is not None and p.exact.layers]
        if not pts:
            ax.set_visible(False)
            continue
        Ps = np.array([p.P for p in pts], float)
        for j, k in enumerate(keys):
            color = f"C{j}"
            for code, (ls, mk) in enumerate((("-", "o"), ("--", "s"))):
                vals = [arrays[(act, p.P)][f"exact_{k}"][arrays[(act, p.P)]["exact_start"] == code] for p in pts]
                m = [np.mean(v) if v.size else np.nan for v in vals]
                sd = [np.std(v) if v.size else np.nan for v in vals]
                ax.errorbar(Ps * (1 + 0.02 * code), m, sd, ls=ls, marker=mk, color=color, ms=4, capsize=2,
                            label=f"{k} ({('prior', 'copy')[code]} starts)")
        ax.set_xscale("log")
        ax.set_xlabel("P")
        ax.set_ylabel("mean attention weight (A_i's row average)")
        ax.set_title(f"{act}: each layer's attention (exact posterior)")
        ax.legend(fontsize=6, ncol=2)
    return save(fig, out, "layers")


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


__all__ = ["adam_curves", "exact_histograms", "layer_orders"]
