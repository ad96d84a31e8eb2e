"""Scaling of the transition points with L and V, fitted, plotted against the paper's forms.

    python scripts/scaling.py [--Ls 8 16 32 64 128 256] [--Vs 8 16 32] [--form map] [--out results/scaling]

softmax: P* (first-order switch; where the MAP has one minimum only, the steepest point of
a_G is reported separately and left out of the fit) against L at each V, fitted as
P* = A L^alpha and compared with L ln^2 L. linear: onset P_1 and crossover P_x on the
(L, V) grid, fitted as log P = c + alpha_L log L + alpha_V log V (least squares, standard
errors from the residual covariance), compared with the paper's V^2 and L^{3/2} V^{1/2}.
Writes scaling.json and scaling.png/pdf.
"""
import argparse
import os

import numpy as np

from _cli import int_at_least
from copyjax.theory import least_squares as fit


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--Ls", type=int_at_least("--Ls", 2), nargs="+", default=[8, 16, 32, 64, 128, 256])
    ap.add_argument("--Vs", type=int_at_least("--Vs", 2), nargs="+", default=[8, 16, 32])
    ap.add_argument("--form", choices=["map", "posterior"], default="map")
    ap.add_argument("--out", default=os.path.join("results", "scaling"))
    ap.add_argument("--activations", nargs="+", choices=["softmax", "linear"],
                    default=["softmax", "linear"])
    ap.add_argument("--loss", choices=["mean", "sum"], default="mean",
                    help="loss averaged over positions (design doc) or summed (beta -> beta L)")
    ap.add_argument("--w-prior", choices=["per_V", "unit"], default="per_V",
                    help="W_ij ~ N(0, 1/V) (design doc) or N(0, 1) (sigma_w2 -> V)")
    ap.add_argument("--g-prior", choices=["design", "unit", "per_L"], default="design",
                    help="G prior variance: design doc (1 softmax, 1/L linear), 1, or 1/L")
    return ap


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    if min(a.Ls) < 2 or min(a.Vs) < 2:
        ap.error("--Ls and --Vs need values >= 2")
    import jax

    jax.config.update("jax_enable_x64", True)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import copyjax as cj
    from copyjax.results import write_json

    os.makedirs(a.out, exist_ok=True)
    rows = []
    for V in a.Vs:
        for L in a.Ls:
            hy = {act: cj.normalised_hyper(act, L, V, a.loss, a.w_prior, a.g_prior)
                  for act in ("softmax", "linear")}
            none = lambda act: cj.TransitionPoints(L, V, act, a.form, tuple(hy[act]))  # not asked for
            s = (cj.transition_points(L, V, "softmax", hy["softmax"], form=a.form)
                 if "softmax" in a.activations else none("softmax"))
            lin = (cj.transition_points(L, V, "linear", hy["linear"], form=a.form)
                   if "linear" in a.activations else none("linear"))
            rows.append({"L": L, "V": V, "P_star": s.P_star, "first_order": s.first_order,
                         "P_steepest": s.P_steepest, "P_onset": lin.P_onset, "P_cross": lin.P_cross})
            print(f"L={L:4d} V={V:3d}  softmax P*={s.P_star or float('nan'):10.1f}  "
                  f"linear P_1={lin.P_onset or float('nan'):10.1f}  P_x={lin.P_cross or float('nan'):10.1f}",
                  flush=True)
    fits = {}
    for V in a.Vs:
        pts = [(r["L"], r["P_star"]) for r in rows if r["V"] == V and r["P_star"]]
        if len(pts) >= 3:
            L_, P_ = np.array(pts, float).T
            b, e = fit(np.c_[np.ones_like(L_), np.log(L_)], np.log(P_))
            ratio = P_ / (L_ * np.log(L_) ** 2)
            fits[f"softmax_V{V}"] = {"alpha_L": b[1], "alpha_L_se": e[1], "Ls": L_.tolist(),
                                     "P_star_over_L_ln2L": ratio.tolist()}
    for key in ("P_onset", "P_cross"):
        pts = [(r["L"], r["V"], r[key]) for r in rows if r[key]]
        if len(pts) >= 4:
            L_, V_, P_ = np.array(pts, float).T
            b, e = fit(np.c_[np.ones_like(L_), np.log(L_), np.log(V_)], np.log(P_))
            fits[f"linear_{key}"] = {"alpha_L": b[1], "alpha_L_se": e[1], "alpha_V": b[2],
                                     "alpha_V_se": e[2], "log_prefactor": b[0]}
    for k, f in fits.items():
        if k.startswith("softmax"):
            print(f"{k}: P* ~ L^{f['alpha_L']:.3f} (se {f['alpha_L_se']:.3f}); "
                  f"P*/(L ln^2 L) = {np.round(f['P_star_over_L_ln2L'], 2).tolist()}")
        else:
            print(f"{k}: P ~ L^{f['alpha_L']:.3f}(se {f['alpha_L_se']:.3f}) "
                  f"V^{f['alpha_V']:.3f}(se {f['alpha_V_se']:.3f})")
    write_json(os.path.join(a.out, "scaling.json"), {"form": a.form, "normalisation": {
        "loss": a.loss, "w_prior": a.w_prior, "g_prior": a.g_prior}, "rows": rows, "fits": fits})

    fig, axes = plt.subplots(1, 3, figsize=(16, 4.5))
    for V in a.Vs:
        pts = [(r["L"], r["P_star"]) for r in rows if r["V"] == V and r["P_star"]]
        if pts:
            L_, P_ = np.array(pts, float).T
            line = axes[0].loglog(L_, P_, "o-", label=f"P*, V={V}")[0]
            axes[0].loglog(L_, P_[-1] * (L_ * np.log(L_) ** 2) / (L_[-1] * np.log(L_[-1]) ** 2),
                           ":", color=line.get_color(), label=f"L ln^2 L (paper), V={V}")
        for ax, key in ((axes[1], "P_onset"), (axes[2], "P_cross")):
            pts = [(r["L"], r[key]) for r in rows if r["V"] == V and r[key]]
            if pts:
                L_, P_ = np.array(pts, float).T
                ax.loglog(L_, P_, "o-", label=f"V={V}")
    Ls = np.array(sorted(a.Ls), float)
    axes[1].loglog(Ls, np.full_like(Ls, np.nan))
    for ax, key, paper in ((axes[1], "P_onset", "paper: V^2 (no L)"),
                           (axes[2], "P_cross", "paper: L^{3/2} V^{1/2}")):
        f = fits.get(f"linear_{key}")
        ttl = f"linear {key}: fit L^{f['alpha_L']:.2f} V^{f['alpha_V']:.2f}" if f else f"linear {key}"
        ax.set_title(f"{ttl}\n({paper})", fontsize=9)
        ax.set_xlabel("L")
        ax.legend(fontsize=7)
    axes[1].plot(Ls, [max(a.Vs) ** 2] * len(Ls), "k:", label=f"V^2, V={max(a.Vs)}")
    v0 = max(a.Vs)
    axes[2].plot(Ls, Ls**1.5 * v0**0.5, "k:", label=f"L^1.5 V^0.5, V={v0}")
    axes[1].legend(fontsize=7)
    axes[2].legend(fontsize=7)
    axes[0].set_title(f"softmax P* ({a.form} form)")
    axes[0].set_xlabel("L")
    axes[0].set_ylabel("P")
    axes[0].legend(fontsize=7)
    for ext in ("png", "pdf"):
        fig.savefig(os.path.join(a.out, f"scaling.{ext}"), dpi=130, bbox_inches="tight")
    print(f"wrote {a.out}/scaling.json and scaling.png")


if __name__ == "__main__":
    main()
