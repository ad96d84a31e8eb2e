"""Figures of the phase diagram (matplotlib, Agg). Each function takes the combined results
of ``scripts/phase_diagram.py`` (``res["points"]``: ``schema.PointSummary`` per point) and
writes PNG and PDF."""
from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

# the two order parameters drawn per activation: key in the results, label
# (linear: the sector-invariant amplitudes, copyjax.order.sector_order_parameters)
ACT_KEYS = {"softmax": (("c1", "a_1"), ("cG", "a_G")), "linear": (("abs_rho", "|rho|"), ("cG", "|c_G|"))}
# labels of the c1 / cG keys (linear: sector-invariant, copyjax.order.sector_order_parameters)
ACT_LABEL = {"softmax": ("a_1", "a_G"), "linear": ("sign(rho) c_1", "|c_G|")}
SGLD_LABEL = {"prior": ("o", "SGLD relaxation from the prior"), "exact": ("s", "SGLD from exact posterior draws"),
              "copy": ("D", "SGLD from the copy pattern")}


def _theory_value(th, key, i=None):
    """A theory curve (or its i-th value); linear ``abs_rho`` = c_1 + c_G (rho >= 0 there)."""
    if key == "abs_rho" and "abs_rho" not in th:
        v = np.asarray(th["c1"], float) + np.asarray(th["cG"], float)
    else:
        v = np.asarray(th[key], float)
    return v if i is None else v[i]


def _save(fig, out, name):
    paths = []
    for ext in ("png", "pdf"):
        p = os.path.join(out, f"{name}.{ext}")
        fig.savefig(p, dpi=130, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


def _points(res, act):
    return [p for p in res["points"] if p.activation == act]


def order_parameters(res, out):
    acts = res["activations"]
    fig, axes = plt.subplots(1, len(acts), figsize=(6.6 * len(acts), 4.8), squeeze=False)
    for ax, act in zip(axes[0], acts):
        th = res["theory"][act]
        pts = _points(res, act)
        Ps = np.array([p.P for p in pts], float)
        for (key, name), color in zip(ACT_KEYS[act], ("tab:blue", "tab:red")):
            ax.plot(th["P"], _theory_value(th, key), "-", color=color, lw=2, label=f"theory MAP, global: {name}")
            if "joint_map" in th:
                ax.plot(th["P"], _theory_value(th["joint_map"], key), ":", color=color, lw=1.5,
                        label=f"theory joint MAP of (W, G) (Adam's target): {name}")
            if act == "softmax":  # linear's metastable MAP minima are sign-fixed, not |c_G|
                for bi, branch in enumerate(_metastable_branches(th, key)):
                    if branch:
                        ax.plot(*zip(*branch), "--", color=color, lw=1, alpha=0.8,
                                label=f"metastable {name}" if bi == 0 else None)
            ax.plot(Ps, [getattr(p.theory_posterior.best, key) for p in pts], "x", color=color,
                    ms=8, label=f"theory posterior form (minimum): {name}")
            if pts[0].theory_posterior_sampled is not None and key in pts[0].theory_posterior_sampled:
                ax.errorbar(Ps * 0.94, [getattr(p.theory_posterior_sampled, key).mean for p in pts],
                            [getattr(p.theory_posterior_sampled, key).sd for p in pts], fmt="D",
                            color=color, ms=4, alpha=0.6, capsize=2,
                            label=f"theory posterior, NUTS in OP space: {name}")
            if pts[0].exact is not None:
                _exact_points(ax, pts, key, color, name, act)
            for start, (mk, lab) in SGLD_LABEL.items():
                if start in pts[0].sgld:
                    off = {"prior": 0.97, "exact": 1.03, "copy": 1.09}[start]
                    ax.errorbar(Ps * off, [getattr(p.sgld[start], key).mean for p in pts],
                                [getattr(p.sgld[start], key).sd for p in pts], fmt=mk, color=color,
                                mfc="none", ms=5, capsize=2, alpha=0.7, label=f"{lab}: {name}")
            if pts[0].adam_global is not None:
                ax.plot(Ps, [getattr(p.adam_global, key) for p in pts], "^", color=color, ms=7,
                        label=f"Adam (global-min runs): {name}")
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
    return _save(fig, out, "order_parameters")


def _exact_points(ax, pts, key, color, name, act):
    """Exact-posterior means +- sd: one star per point where the start families agree,
    a star for each branch (filled: copy start, open: prior start) where they do not.
    Linear |rho|: the same-sign family where the sign families are separate metastable
    states (the opposite family's value drawn as a cross), else all chains."""
    one, two = [], []
    for p in pts:
        (two if p.exact.branches_disagree else one).append(p)

    def val(p, fam=None):
        if key == "abs_rho" and act == "linear":
            return p.exact.sign_families.abs_rho, p.exact.abs_rho.sd
        s = getattr(p.exact, key) if fam is None else getattr(getattr(p.exact, key), fam)
        return s.mean, s.sd
    if one:
        m, sd = zip(*(val(p) for p in one))
        ax.errorbar([p.P * 1.015 for p in one], m, sd, fmt="*", color=color, ms=10, capsize=2,
                    mec="k", mew=0.5, label=f"exact posterior of G (MALA): {name}")
    for fam, mfc in (("prior", "none"), ("copy", color)):
        if two:
            m, sd = zip(*(val(p, fam) for p in two))
            ax.errorbar([p.P * 1.015 for p in two], m, sd, fmt="*", color=color, mfc=mfc, ms=10,
                        capsize=2, label=f"exact, {fam}-start branch (families disagree): {name}")
    fe = [p for p in pts if p.exact_free_energy is not None and key == "cG"]  # the umbrella weighs a_G
    if fe:
        ax.errorbar([p.P * 1.015 for p in fe], [p.exact_free_energy.cG.mean for p in fe],
                    [p.exact_free_energy.cG.sd for p in fe], fmt="P", color=color, ms=10, mec="k",
                    mew=0.8, capsize=2, label=f"exact, both phases weighed (umbrella + MBAR): {name}")
    if key == "abs_rho" and act == "linear":
        opp = [(p.P, p.exact.sign_families.opposite.abs_rho) for p in pts if p.exact.sign_families.split]
        if opp:
            ax.plot(*zip(*opp), "+", color=color, ms=8, label="exact, opposite-sign family (g s < 0): |rho|")


def losses(res, out):
    acts = res["activations"]
    fig, axes = plt.subplots(1, len(acts), figsize=(6 * len(acts), 4), squeeze=False)
    for ax, act in zip(axes[0], acts):
        th = res["theory"][act]
        ax.plot(th["P"], th["loss"], "-k", lw=2, label="theory MAP (W averaged)")
        if "joint_map" in th:
            ax.plot(th["P"], th["joint_map"]["loss"], ":k", lw=1.5, label="theory joint MAP (W at its mean)")
        pts = _points(res, act)
        Ps = [p.P for p in pts]
        ax.plot(Ps, [p.theory_posterior.best.loss for p in pts], "xk", label="theory posterior form")
        if pts[0].exact is not None:
            ok = [p for p in pts if not p.exact.branches_disagree]
            ax.plot([p.P for p in ok], [p.exact.loss.mean for p in ok], "*k", ms=9,
                    label="exact posterior (W averaged)")
        for start, (mk, lab) in SGLD_LABEL.items():
            if start in pts[0].sgld:
                ax.plot(Ps, [p.sgld[start].loss.mean for p in pts], mk, mfc="none", label=f"{lab}: train")
                ax.plot(Ps, [np.nan if p.sgld[start].test_loss is None else p.sgld[start].test_loss
                             for p in pts], mk, alpha=0.5, label=f"{lab}: test")
        if pts[0].adam_global is not None:
            ax.plot(Ps, [p.adam_global.loss for p in pts], "^", label="Adam train")
            ax.plot(Ps, [p.adam_global.test_loss for p in pts], "v", label="Adam test")
        ax.set_xscale("log")
        ax.set_xlabel("P")
        ax.set_ylabel("loss per sequence")
        ax.set_title(f"{act}: loss vs P")
        ax.legend(fontsize=7)
    return _save(fig, out, "loss")


def histograms(res, arrays, out):
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
    return _save(fig, out, "histograms")


def adam_curves(res, arrays, out):
    acts = res["activations"]
    fig, axes = plt.subplots(1, len(acts), figsize=(6 * len(acts), 4), squeeze=False)
    for ax, act in zip(axes[0], acts):
        pts = _points(res, act)
        if pts[0].adam_global is None:
            continue
        idx = sorted({0, len(pts) // 2, len(pts) - 1})
        for i in idx:
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
    return _save(fig, out, "adam_curves")


def coverage(res, out):
    fig, ax = plt.subplots(figsize=(6, 4))
    for act in res["activations"]:
        pts = _points(res, act)
        Ps = [p.P for p in pts]
        for start, (mk, lab) in SGLD_LABEL.items():
            if start in pts[0].sgld:
                ax.plot(Ps, [p.sgld[start].coverage.mean for p in pts], mk + "-", mfc="none",
                        label=f"{act}, {lab}")
        if pts[0].adam_global is not None:
            ax.plot(Ps, [p.adam_global.coverage for p in pts], "^--", label=f"{act}, Adam")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("P")
    ax.set_ylabel("coverage of span{U, S}")
    ax.legend(fontsize=7)
    return _save(fig, out, "coverage")


# ----------------------------------------------------------------- reduced theory figures
# Inputs: the dictionary built by ``scripts/theory_figures.py``.


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


def _metastable_branches(cur, key):
    """Metastable minima split into the branch above and the branch below the global
    minimum in c_G, each a list of (P, value): one dashed line per branch, so that a
    line never joins the two sides of a transition."""
    j = 0 if key == "c1" else 1
    above, below = [], []
    for P, cG, ms in zip(cur["P"], cur["cG"], cur["meta"]):
        for m in ms:
            (above if m[1] > cG else below).append((P, m[j]))
    return above, below


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
    return _save(fig, out, "landscapes")


def theory_order_parameters(res, out):
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
    for ax, act in zip(axes, ("softmax", "linear")):
        for form, alpha in (("map", 1.0), ("posterior", 0.5)):
            cur = res["curves"][f"{act}_{form}"]
            for key, color in (("c1", "tab:blue"), ("cG", "tab:red")):
                name = ACT_LABEL[act][0 if key == "c1" else 1]
                ax.plot(cur["P"], cur[key], "-", color=color, alpha=alpha, lw=2,
                        label=f"{form} global: {name}")
                for bi, branch in enumerate(_metastable_branches(cur, key)):
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
    return _save(fig, out, "order_parameters")


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
    return _save(fig, out, "susceptibility")


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
    return _save(fig, out, "histograms")


def theory_figures(res, out):
    """All four figures of ``scripts/theory_figures.py``; returns the written paths."""
    return (theory_landscapes(res, out) + theory_order_parameters(res, out)
            + theory_susceptibility(res, out) + theory_histograms(res, out))


def free_energy(summary: dict, points: list, out: str):
    """Left: the exact posterior's free energy F_P(a_G) (umbrella sampling + MBAR) at each P,
    with its error band, and the theory's posterior-form profile at the same P (dashed, where
    the points hold ``theory_F``); right: log(copy mass / pooling mass) vs P with the measured
    equal-weight point P* and the theory's posterior-form P*. ``points``: per-P results of
    ``scripts/free_energy.py`` (one seed); ``out``: the path without extension."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.2))
    cmap = plt.get_cmap("viridis")
    for i, p in enumerate(points):
        e = np.asarray(p["edges"], float)
        x = 0.5 * (e[1:] + e[:-1])
        F = np.array([np.nan if v is None else v for v in p["F"]], float)
        s = np.array([np.nan if v is None else v for v in p["F_sd"]], float)
        c = cmap(i / max(1, len(points) - 1))
        ax.plot(x, F, "-", color=c, label=f"P = {p['P']} (copy mass {p['weights'][1]:.2g})")
        ax.fill_between(x, F - s, F + s, color=c, alpha=0.25, lw=0)
        if p.get("theory_F") is not None:
            ax.plot(x, np.array([np.nan if v is None else v for v in p["theory_F"]], float), "--", color=c, lw=1)
    if any(p.get("theory_F") is not None for p in points):
        ax.plot([], [], "k--", lw=1, label="theory, posterior form (same P)")
    ax.set_xlabel("a_G (copy order parameter)")
    ax.set_ylabel("F_P(a_G) - min  [nats]")
    ax.set_title("Exact posterior (solid) and theory (dashed): F along a_G")
    ax.legend(fontsize=7)
    P = np.array([p["P"] for p in points], float)
    r = np.array([p["log_ratio"] for p in points], float)
    rs = np.array([p["log_ratio_sd"] for p in points], float)
    bx.errorbar(P, r, yerr=rs, fmt="o-", color="C0", label="exact posterior (MBAR)")
    if all(p.get("theory_log_ratio") is not None for p in points):
        bx.plot(P, [p["theory_log_ratio"] for p in points], "s--", color="C3", ms=4, mfc="none",
                label="theory (posterior form), same P")
    bx.axhline(0.0, color="k", lw=0.8)
    ps = summary.get("P_star")
    if ps is not None and np.isfinite(ps):
        err = summary.get("P_star_err") or 0.0
        bx.axvspan(ps - err, ps + err, color="C0", alpha=0.2)
        bx.axvline(ps, color="C0", ls="--", label=f"P* = {ps:.0f} +- {err:.0f} (equal mass)")
    if summary.get("theory_P_star"):
        bx.axvline(summary["theory_P_star"], color="C3", ls=":",
                   label=f"theory (posterior form) P* = {summary['theory_P_star']:.0f}")
    bx.set_xlabel("P (training sequences)")
    bx.set_ylabel("log(copy mass / pooling mass)")
    bx.set_title("Phase weights")
    bx.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, os.path.dirname(out) or ".", os.path.basename(out))


def free_energy_linear(summary: dict, points: list, out: str):
    """Linear attention: the exact posterior's free energy over |rho| (the onset's order
    parameter), over rho given c_G > 0 (the two sign families: rho > 0 same sign, rho < 0
    opposite) and over |c_G| at each P (umbrella sampling on rho + MBAR, error bands), and vs
    P the susceptibility Var |rho| and the weight of the opposite-sign family (g s < 0), with
    the theory's onset P_1 and crossover P_x. ``points``: per-P results of
    ``scripts/free_energy.py --activation linear`` (one seed); ``out``: path without extension."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 8.4))
    axes = axes.ravel()
    cmap = plt.get_cmap("viridis")
    panels = ((axes[0], "F_abs_rho", "edges", "|rho| = |c_1 + c_G|", 40),
              (axes[1], "F_rho", "edges_rho", "rho = c_1 + c_G, given c_G > 0", None),
              (axes[3], "F", "edges", "|c_G|", 40))
    for ax, key, ekey, label, top in panels:
        for i, p in enumerate(points):
            if key not in p:
                continue
            e = np.asarray(p[ekey], float)
            x = 0.5 * (e[1:] + e[:-1])
            F = np.array([np.nan if v is None else v for v in p[key]], float)
            s = np.array([np.nan if v is None else v for v in p[key + "_sd"]], float)
            c = cmap(i / max(1, len(points) - 1))
            ax.plot(x, F, "-", color=c, label=f"P = {p['P']}")
            ok = s < 10  # MBAR's error bands beyond 10 nats (states of weight ~e^-200) say nothing
            ax.fill_between(x, np.where(ok, F - s, np.nan), np.where(ok, F + s, np.nan), color=c, alpha=0.25, lw=0)
        ax.set_xlabel(label)
        ax.set_ylabel("F_P - min  [nats]")
        if top:
            ax.set_ylim(-1, top)
        else:
            ax.set_ylim(-5, None)
        ax.set_title(f"Exact posterior: free energy along {label.split(' =')[0].split(',')[0]}")
        ax.legend(fontsize=7)
    axes[1].axvline(0.0, color="gray", lw=0.8)
    axes[1].text(0.02, 0.97, "opposite-sign family | same-sign family", transform=axes[1].transAxes,
                 fontsize=7, va="top")
    cx = axes[2]
    P = np.array([p["P"] for p in points], float)
    v = np.array([p["var_abs_rho"] for p in points], float)
    vs = np.array([p["var_abs_rho_sd"] for p in points], float)
    cx.errorbar(P, v, yerr=vs, fmt="o-", color="C0", label="Var |rho| (susceptibility)")
    cx.set_xscale("log")
    cx.set_yscale("log")
    cx.set_xlabel("P (training sequences)")
    cx.set_ylabel("Var |rho|", color="C0")
    if summary.get("theory_P_onset"):
        cx.axvline(summary["theory_P_onset"], color="C3", ls=":", label=f"theory onset P_1 = {summary['theory_P_onset']:.0f}")
    if summary.get("theory_P_cross"):
        cx.axvline(summary["theory_P_cross"], color="C2", ls=":", label=f"theory crossover P_x = {summary['theory_P_cross']:.0f}")
    dx = cx.twinx()
    w = np.array([p["family_weights"][0] for p in points], float)
    ws = np.array([p["family_weights_sd"][0] for p in points], float)
    dx.errorbar(P, w, yerr=ws, fmt="s--", color="C1", label="weight of family g s < 0")
    dx.set_ylim(-0.02, 1.02)
    dx.set_ylabel("weight of the opposite-sign family", color="C1")
    h1, l1 = cx.get_legend_handles_labels()
    h2, l2 = dx.get_legend_handles_labels()
    cx.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")
    cx.set_title("Onset and sign families")
    fig.tight_layout()
    return _save(fig, os.path.dirname(out) or ".", os.path.basename(out))


def free_energy_vs_L(summaries: list, out: str):
    """Left: the barrier height at P* against L, one point per data seed (nan: one minimum,
    no barrier, drawn at 0 with an open marker); right: the exact posterior's P* per seed
    (with its MBAR error) and the theory's posterior-form P*, against L. ``summaries``: the
    summary.json of softmax runs of ``scripts/free_energy.py``; ``out``: path without extension."""
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    labels = {"none": "one minimum (no barrier)", "bar": "exact posterior (per data seed)",
              "P": "exact posterior, equal mass (per data seed)", "th": "theory (posterior form) P*"}
    once = lambda k: labels.pop(k, None)
    for s in summaries:
        L = s["config"]["L"]
        seeds = list(s["per_seed"].values())
        for i, v in enumerate(seeds):
            x = L * (1 + 0.03 * (i - (len(seeds) - 1) / 2))
            b = v["barrier_at_P_star"]
            if b is None or not np.isfinite(b):
                ax.plot(x, 0.0, "o", mfc="none", color="C0", label=once("none"))
            else:
                ax.plot(x, b, "o", color="C0", label=once("bar"))
            bx.errorbar(x, v["P_star"], v["P_star_err"], fmt="o", color="C0", capsize=2, label=once("P"))
        if s.get("theory_P_star"):
            bx.plot(L, s["theory_P_star"], "x", color="C3", ms=9, label=once("th"))
    for z in (ax, bx):
        z.set_xscale("log", base=2)
        z.set_xticks([s["config"]["L"] for s in summaries])
        z.set_xticklabels([str(s["config"]["L"]) for s in summaries])
        z.set_xlabel("L (sequence length)")
    ax.set_ylim(bottom=-3)
    ax.set_ylabel("barrier at P*  [nats]")
    ax.set_title(f"Free-energy barrier of the exact posterior (V = {summaries[0]['config']['V']})")
    bx.set_ylabel("P* (training sequences)")
    bx.set_yscale("log")
    bx.set_title("Transition point")
    for z in (ax, bx):
        if z.get_legend_handles_labels()[0]:
            z.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, os.path.dirname(out) or ".", os.path.basename(out))


__all__ = ["ACT_KEYS", "ACT_LABEL", "adam_curves", "coverage", "free_energy", "free_energy_linear",
           "free_energy_vs_L", "histograms", "losses", "order_parameters", "SGLD_LABEL", "theory_figures",
           "theory_histograms", "theory_landscapes", "theory_order_parameters", "theory_susceptibility"]
