"""Figures and measurements of the reduced theory at one (L, V): landscapes, order
parameters vs P (global solid, metastable dashed), posterior susceptibility from NUTS in
order-parameter space, posterior histograms, and the fitted onset exponent of linear attention.

    python scripts/theory_figures.py [--L 64 --V 32] [--chains 64 --draws 100] [--out results/theory_L64_V32]

Writes theory.json (everything the figures need; --replot redraws them) and landscapes /
order_parameters / susceptibility / histograms (PNG and PDF) into --out; prints the
transition points, the onset exponent with its standard error, and where the susceptibility
peaks. About 5 minutes on 2 CPU cores with --chains 48 --draws 80 --softmax-points 6.
"""
import argparse
import os
import sys
import time

from _cli import int_at_least, nonneg_int, positive_int


def onset_exponent(L, V, hyper, form, P_1, deltas):
    """Fit |c| = A (P - P_1)^b on P = P_1 (1 + delta): returns (b, se(b), points)."""
    import numpy as np

    from copyjax.theory import least_squares as fit
    from copyjax.theory import linear_minima

    pts = []
    for d in deltas:
        P = P_1 * (1 + d)
        best = min(linear_minima(P, L, V, hyper, form), key=lambda m: m.action)
        pts.append((P - P_1, float(np.hypot(best.c1, best.cG))))
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    b, se = fit(np.stack([np.ones_like(x), x], 1), y)
    return float(b[1]), float(se[1]), pts


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=positive_int("--L"), default=64, help="sequence length (>= 2)")
    ap.add_argument("--V", type=positive_int("--V"), default=32, help="vocabulary size (>= 2)")
    ap.add_argument("--n-P", type=positive_int("--n-P"), default=14, help="points of the P grid")
    ap.add_argument("--chains", type=positive_int("--chains"), default=64, help="NUTS chains per P")
    ap.add_argument("--draws", type=positive_int("--draws"), default=100, help="draws per chain")
    ap.add_argument("--softmax-points", type=positive_int("--softmax-points"), default=7,
                    help="P values at which the softmax posterior is sampled (costlier)")
    ap.add_argument("--curve-points", type=int_at_least("--curve-points", 2), default=40,
                    help="log-spaced P values of the theory curves (plus 8 inside each softmax window)")
    ap.add_argument("--seed", type=nonneg_int("--seed"), default=0)
    ap.add_argument("--out", default=None, help="output folder (default results/theory_L{L}_V{V})")
    ap.add_argument("--replot", action="store_true",
                    help="redraw the figures from --out/theory.json without recomputing")
    return ap


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    if a.L < 2 or a.V < 2:
        ap.error("--L and --V must be >= 2")
    out = a.out or os.path.join("results", f"theory_L{a.L}_V{a.V}")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        ap.error(f"--out {out!r} is not writable: {e}")

    if a.replot:
        from copyjax.plots import theory as plotting

        from copyjax.results import read_json

        try:
            res = read_json(os.path.join(out, "theory.json"))
        except (OSError, ValueError) as e:
            ap.error(f"--replot needs a readable theory.json in --out ({os.path.join(out, 'theory.json')}): {e}")
        print(f"wrote {len(plotting.theory_figures(res, out))} figure files in {out}")
        return 0

    import jax

    jax.config.update("jax_enable_x64", True)
    import numpy as np
    from tqdm.auto import tqdm

    import copyjax as cj
    from copyjax import op_posterior as O
    from copyjax.plots import theory as plotting
    from copyjax.results import RECORDED_PACKAGES, package_versions, write_json

    L, V, t0 = a.L, a.V, time.time()
    hs, hl = cj.default_hyper("softmax", L), cj.default_hyper("linear", L)
    tp = {f"{act}_{form}": cj.transition_points(L, V, act, form=form)
          for act in ("softmax", "linear") for form in ("map", "posterior")}
    for k, v in tp.items():
        keep = {q: getattr(v, q) for q in ("P_star", "P_spinodal_low", "P_spinodal_high", "aG_jump",
                                           "P_steepest", "P_onset", "P_cross") if getattr(v, q) is not None}
        print(f"{k:18s} " + "  ".join(f"{q}={w:.1f}" if isinstance(w, float) else f"{q}={w}"
                                      for q, w in keep.items()), flush=True)
    marks = [tp[k].P_star or tp[k].P_steepest for k in ("softmax_map", "softmax_posterior")] + [
        tp["linear_map"].P_onset, tp["linear_posterior"].P_cross or tp["linear_map"].P_cross]
    Ps = np.geomspace(min(marks) / 3, max(marks) * 3, a.n_P)

    # Theory curves on a finer grid than the sampled points, with extra points inside the
    # coexistence windows so that the metastable branches show as lines.
    windows = [np.geomspace(t.P_spinodal_low, t.P_spinodal_high, 8)
               for t in (tp["softmax_map"], tp["softmax_posterior"]) if t.P_spinodal_low and t.P_spinodal_high]
    fine = np.unique(np.round(np.concatenate([np.geomspace(Ps[0], Ps[-1], a.curve_points), *windows]), 3))
    curves = {}
    for act in ("softmax", "linear"):
        for form in ("map", "posterior", "joint_map"):
            curves[f"{act}_{form}"] = cj.theory_curve(fine, L, V, act, form=form)
    print(f"theory curves done ({time.time() - t0:.0f} s)", flush=True)

    # Landscapes: softmax MAP energy along the copy ansatz at P below / at / above P*,
    # linear MAP energy over (c_1, c_G) below / at / above the onset.
    from copyjax import reduced as R
    from copyjax.theory import gamma_grid

    P_s = tp["softmax_map"].P_star or tp["softmax_map"].P_steepest
    P_1 = tp["linear_map"].P_onset
    land = {"softmax": [], "linear": []}
    for P in (0.8 * P_s, P_s, 1.25 * P_s):
        g = jax.numpy.asarray(gamma_grid(P, L, hs, 600))
        E = np.asarray(jax.vmap(lambda x: R.softmax_energy(x, P, L, V, hs))(g))
        land["softmax"].append({"P": P, "aG": np.asarray(R.softmax_aG(g, L)).tolist(),
                                "S": (E - E.min()).tolist()})
    c = np.linspace(-0.6, 0.9, 121)
    cc = jax.numpy.asarray(np.stack(np.meshgrid(c, c, indexing="ij"), -1))
    for P in (0.7 * P_1, P_1, 1.6 * P_1):
        E = np.asarray(R.linear_energy(cc, P, L, V, hl))
        land["linear"].append({"P": P, "c": c.tolist(), "S": (E - E.min()).tolist()})

    # Onset exponent of linear attention, both forms (|c| ~ (P - P_1)^b just above P_1).
    deltas = np.geomspace(1e-4, 1e-2, 9)
    expo = {}
    for form in ("map", "posterior"):
        b, se, pts = onset_exponent(L, V, hl, form, tp[f"linear_{form}"].P_onset, deltas)
        expo[form] = {"exponent": b, "se": se, "points": pts}
        print(f"linear {form}: |c| ~ (P - P_1)^{b:.4f} (se {se:.4f}) for P - P_1 in "
              f"[{pts[0][0]:.3g}, {pts[-1][0]:.3g}]", flush=True)

    # Posterior in order-parameter space: NUTS at every linear P, at a few softmax P
    # around the posterior-form P* (where the histogram turns bimodal).
    sus = {"linear": [], "softmax": []}
    hists = {"linear": [], "softmax": []}
    key = jax.random.key(a.seed)
    P_lin_hist = tp["linear_posterior"].P_onset * np.array([0.8, 1.0, 1.5])
    lin_Ps = np.unique(np.concatenate([Ps, P_lin_hist]))
    Pc = tp["softmax_posterior"].P_star or tp["softmax_map"].P_star or tp["softmax_map"].P_steepest
    # One row law for the whole softmax sweep; the histograms sit at (and 1 % either side
    # of) the P where its copy phase holds half the posterior mass.
    law = O.sampling_law(L, hs, 2.0 * Pc)
    P_eq = None
    if tp["softmax_posterior"].P_star:
        try:
            P_eq = O.equal_mass_point(L, V, Pc / 1.5, Pc * 1.5, hs, law)
            print(f"softmax: equal posterior mass of the two phases at P = {P_eq:.1f} "
                  f"(sampling row law)", flush=True)
        except ValueError as e:
            print(f"softmax: {e}", flush=True)
    soft_Ps = Pc * np.geomspace(0.5, 2.0, a.softmax_points)
    soft_hist = P_eq * np.array([0.99, 1.0, 1.01]) if P_eq else Pc * np.array([0.8, 1.0, 1.25])
    soft_Ps = np.unique(np.concatenate([soft_Ps, soft_hist]))
    todo = [("linear", P) for P in lin_Ps] + [("softmax", P) for P in soft_Ps]
    for i, (act, P) in enumerate(tqdm(todo, desc="NUTS in order-parameter space")):
        s = O.sample_op_posterior(jax.random.fold_in(key, i), float(P), L, V, act,
                                  n_chains=a.chains, n_draws=a.draws, n_warmup=max(50, a.draws // 2),
                                  law=law if act == "softmax" else None)
        summ = O.op_summary(s)
        sus[act].append({"P": float(P), **{k: getattr(summ, k).to_json() for k in ("c1", "cG", "loss")},
                         "weights": summ.weights, "acceptance": summ.acceptance,
                         "n_divergent_transitions": summ.n_divergent_transitions})
        if np.any(np.isclose(P, P_lin_hist if act == "linear" else soft_hist)):
            hists[act].append({"P": float(P), "cG": s.draws["cG"].reshape(-1).tolist(),
                               "c1": s.draws["c1"].reshape(-1).tolist(), "weights": summ.weights})
    for act in ("linear", "softmax"):
        var = [p["cG"]["var"] if act == "softmax" else p["c1"]["var"] for p in sus[act]]
        k = int(np.argmax(var))
        print(f"{act}: posterior variance of {'a_G' if act == 'softmax' else 'c_1'} peaks at "
              f"P = {sus[act][k]['P']:.1f} ({var[k]:.3g})", flush=True)

    res = {"L": L, "V": V, "P": Ps.tolist(), "transitions": {k: t.as_dict() for k, t in tp.items()}, "P_equal_mass": P_eq, "onset_exponent": expo,
           "curves": {k: {q: (v.tolist() if hasattr(v, "tolist") else v) for q, v in c.items()}
                      for k, c in curves.items()},
           "susceptibility": sus, "histograms": hists, "landscapes": land, "seconds": time.time() - t0,
           "versions": package_versions(RECORDED_PACKAGES)}
    paths = plotting.theory_figures(res, out)
    write_json(os.path.join(out, "theory.json"), res)
    print(f"wrote {os.path.join(out, 'theory.json')} and {len(paths)} figure files "
          f"in {time.time() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
