"""Figures of the exact posterior's free energy (``scripts/free_energy.py``,
``scripts/free_energy_vs_L.py``)."""
from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from copyjax.plots._common import save  # noqa: E402

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
        ax.plot(x, F, "-", color=c, label=f"P = {p['P']:.0f} (copy mass {p['weights'][1]:.2g})")
        ax.fill_between(x, F - s, F + s, color=c, alpha=0.25, lw=0)
        if p.get("theory_F") is not None:
            ax.plot(x, np.array([np.nan if v is None else v for v in p["theory_F"]], float), "--", color=c, lw=1)
    if any(p.get("theory_F") is not None for p in points):
        ax.plot([], [], "k--", lw=1, label="theory, posterior form (same P)")
    ax.set_xlabel("a_G (copy order parameter)")
    ax.set_ylabel("F_P(a_G) - min  [nats]")
    ax.set_title("Exact posterior (solid) and theory (dashed): F along a_G"
                 if any(p.get("theory_F") is not None for p in points) else "Exact posterior: F along a_G")
    ax.legend(fontsize=7)
    P = np.array([p["P"] for p in points], float)
    r = np.array([p["log_ratio"] for p in points], float)
    rs = np.array([p["log_ratio_sd"] for p in points], float)
    sc = summary.get("scan")
    if sc:  # one tempered run: the log-odds as a continuous function of P, per data seed
        for j, (seed, c) in enumerate(sc.items()):
            x, y = np.asarray(c["P"], float), np.asarray(c["log_ratio"], float)
            e = np.asarray(c["log_ratio_sd"], float)
            bx.plot(x, y, "-", color=f"C{j}", label=f"exact posterior, one tempered run (seed {seed})")
            bx.fill_between(x, y - e, y + e, color=f"C{j}", alpha=0.25, lw=0)
    else:
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
    return save(fig, os.path.dirname(out) or ".", os.path.basename(out))


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
    return save(fig, os.path.dirname(out) or ".", os.path.basename(out))


def free_energy_vs_L(summaries: list, out: str, theory: dict | None = None):
    """Left: the barrier height at P* against L, one point per data seed (nan: one minimum,
    no barrier, drawn at 0 with an open marker); right: the exact posterior's P* per seed
    (with its error) against L, divided by L ln^2 L (the paper's form: flat if it holds), beside
    the theory's posterior-form (and, given ``theory``, MAP-form) P*. Runs at the most common V
    only. ``summaries``: the summary.json of softmax runs of ``scripts/free_energy.py``;
    ``theory``: ``{"L,V,form": {"P_star": ...}}`` (``scripts/free_energy_vs_L.py --theory``);
    ``out``: path without extension."""
    from collections import Counter

    V0 = Counter(s["config"]["V"] for s in summaries).most_common(1)[0][0]
    summaries = [s for s in summaries if s["config"]["V"] == V0]
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    labels = {"none": "one minimum (no barrier)", "bar": "exact posterior (per data seed)",
              "P": "exact posterior, equal mass (per data seed)", "th": "theory, posterior form",
              "map": "theory, MAP form"}
    once = lambda k: labels.pop(k, None)
    norm = lambda L: L * np.log(L) ** 2
    Ls = sorted({s["config"]["L"] for s in summaries})
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
            if v["P_star"] is not None:
                bx.errorbar(x, v["P_star"] / norm(L), (v["P_star_err"] or 0) / norm(L), fmt="o", color="C0",
                            capsize=2, label=once("P"))
    for form, mk, col, lab in (("posterior", "x", "C3", "th"), ("map", "+", "C2", "map")):
        pts = [(L, (theory or {}).get(f"{L},{V0},{form}", {}).get("P_star")) for L in Ls]
        if form == "posterior" and not theory:
            pts = [(s["config"]["L"], s.get("theory_P_star")) for s in summaries]
        pts = [(L, P) for L, P in pts if P]
        if pts:
            bx.plot([L for L, _ in pts], [P / norm(L) for L, P in pts], mk + "--", color=col, ms=9, lw=0.8,
                    label=once(lab))
    for z in (ax, bx):
        z.set_xscale("log", base=2)
        z.set_xticks(Ls)
        z.set_xticklabels([str(L) for L in Ls])
        z.set_xlabel("L (sequence length)")
    ax.set_ylim(bottom=-3)
    ax.set_ylabel("barrier at P*  [nats]")
    ax.set_title(f"Free-energy barrier of the exact posterior (V = {V0})")
    bx.set_ylabel("P* / (L ln^2 L)")
    bx.set_title("Transition point against the paper's L ln^2 L")
    for z in (ax, bx):
        if z.get_legend_handles_labels()[0]:
            z.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, os.path.dirname(out) or ".", os.path.basename(out))


def p_star_vs_tokens(rows: list, L: int, V: int, out: str):
    """P* against the Zipf exponent S (left) and the Markov stay probability Q (right), the
    uniform law at S = Q = 0 in both: the theory's MAP and posterior forms and the exact
    posterior (with its error). ``rows``: dicts with ``kind``, ``param`` and any of
    ``theory_map``, ``theory_posterior``, ``exact``, ``exact_err`` (``scripts/token_laws.py``);
    ``out``: path without extension."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, kind, name in ((axes[0], "zipf", "Zipf exponent S"), (axes[1], "markov", "Markov stay probability Q")):
        sel = sorted((r for r in rows if r["kind"] in ("uniform", kind)), key=lambda r: r["param"])
        for key, mk, col, lab in (("theory_map", "+--", "C2", "theory, MAP form"),
                                  ("theory_posterior", "x--", "C3", "theory, posterior form")):
            pts = [(r["param"], r[key]) for r in sel if r.get(key)]
            if pts:
                ax.plot(*zip(*pts), mk, color=col, ms=9, lw=0.8, label=lab)
        pts = [(r["param"], r["exact"], r["exact_err"]) for r in sel if r.get("exact")]
        if pts:
            x, y, e = zip(*pts)
            ax.errorbar(x, y, e, fmt="o", color="C0", capsize=3, label="exact posterior (equal mass)")
        ax.set_xlabel(name)
        ax.set_ylabel("P* (training sequences)")
        ax.set_title(f"softmax, L = {L}, V = {V}: tokens {kind if kind == 'markov' else 'Zipf'}")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return save(fig, os.path.dirname(out) or ".", os.path.basename(out))


__all__ = ["free_energy", "free_energy_linear", "free_energy_vs_L", "p_star_vs_tokens"]
