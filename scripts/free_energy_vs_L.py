"""P* and the barrier of the exact posterior against L (and V), from the summary.json of softmax
runs of ``scripts/free_energy.py`` (per-P or ``--scan``; every seed of each drawn), beside the
theory's posterior-form and MAP-form P*; fits P*(L) at the most common V. Prints the table and
the fits, writes the figure and a JSON of the table.

    python scripts/free_energy_vs_L.py runs/fe16 runs/fe32 runs/fe64 --out docs/figures/free_energy_vs_L
    python scripts/free_energy_vs_L.py runs/fe32 runs/fe64 runs/fe128_scan --theory runs/theory.json --out fig

``--theory FILE``: the theory's P* and spinodals (MAP and posterior form) for every (L, V) of the
runs, read from FILE and computed (``copyjax.transition_points``; about 75 s per posterior form at
L = 64) where FILE lacks them, then saved back. Fits (over seeds' means, L >= 32 where P* is
finite): P* = A L^alpha, and P* = a L ln^2 L + b L, beside a = V / ((V - 1) beta), the coefficient
of a full copy head (docs/theory.md section 7: the prior cost L ln^2 L / 2 of a copy logit ln L
against the data gain beta P (V - 1) / (2 V)); section 9: the MAP form's P* grows more slowly
(like L ln L up to L = 65536), the transition happening at ever smaller a_G.
"""
from __future__ import annotations

import argparse
import json
import os
from collections import Counter


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="output folders of scripts/free_energy.py (softmax)")
    ap.add_argument("--out", default="free_energy_vs_L", help="figure path without extension (the table: OUT.json)")
    ap.add_argument("--theory", metavar="FILE", help="cache of the theory's transition points (computed where missing)")
    return ap


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)

    import numpy as np

    from copyjax.plots.free_energy import free_energy_vs_L

    rows = []
    for d in a.runs:
        path = os.path.join(d, "summary.json")
        if not os.path.exists(path):
            ap.error(f"{path} does not exist (run scripts/free_energy.py --out {d} first)")
        with open(path) as f:
            s = json.load(f)
        if s["config"].get("activation", "softmax") != "softmax":
            ap.error(f"{d} is not a softmax run")
        s["run"] = d
        rows.append(s)
    rows.sort(key=lambda s: (s["config"]["V"], s["config"]["L"], s["config"].get("steps", 0)))

    theory: dict = {}
    if a.theory:
        import jax

        jax.config.update("jax_enable_x64", True)
        import copyjax as cj

        if os.path.exists(a.theory):
            with open(a.theory) as f:
                theory = json.load(f)
        for L, V in sorted({(s["config"]["L"], s["config"]["V"]) for s in rows}):
            for form in ("map", "posterior"):
                key = f"{L},{V},{form}"
                if key not in theory:
                    tp = cj.transition_points(L, V, "softmax", form=form)
                    theory[key] = {"P_star": tp.P_star, "lo": tp.P_spinodal_low, "hi": tp.P_spinodal_high}
                    with open(a.theory, "w") as f:
                        json.dump(theory, f, indent=1)


    def th(L, V, form, k="P_star"):
        return theory.get(f"{L},{V},{form}", {}).get(k)


    f0 = lambda x: "-" if x is None or not np.isfinite(x) else f"{x:.0f}"
    table = []
    print(f"{'L':>4} {'V':>3} {'method':>7} {'steps':>5} {'seed':>4} {'P*':>12} {'theory P* (post / MAP)':>23} "
          f"{'barrier':>8} {'two minima from / to (exact)':>29} {'theory spinodals':>17}")
    for s in rows:
        L, V = s["config"]["L"], s["config"]["V"]
        method, steps = s.get("method", "per-P"), s["config"].get("steps")
        post = th(L, V, "posterior") if theory else s.get("theory_P_star")
        mp = th(L, V, "map")
        spin = f"{f0(th(L, V, 'posterior', 'lo'))}-{f0(th(L, V, 'posterior', 'hi'))}" if theory else ""
        for seed, v in s["per_seed"].items():
            lo, hi = v.get("spinodal_low"), v.get("spinodal_high")
            ex_spin = "" if method != "scan" else f"{f0(lo) if lo else '<edge'} / {f0(hi) if hi else '>edge'}"
            if method == "scan" and max(v.get("n_minima") or [2]) < 2:
                ex_spin = "none (one minimum)"
            bar = v["barrier_at_P_star"]
            print(f"{L:>4} {V:>3} {method:>7} {steps or '':>5} {seed:>4} {v['P_star']:>7.0f} +- {v['P_star_err']:<3.0f}"
                  f"{f0(post):>12} / {f0(mp):<8} {'none' if bar is None or not np.isfinite(bar) else f'{bar:.1f}':>8} "
                  f"{ex_spin:>29} {spin:>17}")
        ps = np.array([np.nan if v["P_star"] is None else v["P_star"] for v in s["per_seed"].values()], float)
        es = np.array([v["P_star_err"] or np.nan for v in s["per_seed"].values()], float)
        bs = np.array([np.nan if v["barrier_at_P_star"] is None else v["barrier_at_P_star"]
                       for v in s["per_seed"].values()], float)
        n = int(np.isfinite(ps).sum())
        mean = float(np.nanmean(ps)) if n else float("nan")
        # error of the mean: the spread over data sets (several seeds) or the run's own error (one)
        err = float(np.nanstd(ps, ddof=1) / np.sqrt(n)) if n > 1 else float(np.nanmax(es)) if n else float("nan")
        fb = bs[np.isfinite(bs)]
        row = {"L": L, "V": V, "method": method, "steps": steps, "run": s["run"], "n_seeds": n, "P_star": mean,
               "P_star_err": err, "P_star_sd": float(np.nanstd(ps, ddof=1)) if n > 1 else None,
               "barrier": float(fb.mean()) if fb.size else None,
               "barrier_sd": float(fb.std(ddof=1)) if fb.size > 1 else None,
               "theory_posterior_P_star": post, "theory_map_P_star": mp,
               "seconds": s.get("seconds"), "per_seed": s["per_seed"]}
        table.append(row)
        if n > 1:
            bar = f"{fb.mean():>8.1f} sd {fb.std(ddof=1):.1f}" if fb.size > 1 else f"{'none':>8}"
            gap = "" if not post else f"  exact / theory - 1 = {mean / post - 1:+.2%} ({(mean - post) / err:+.1f} se)"
            print(f"{L:>4} {V:>3} {method:>7} {steps or '':>5} {'all':>4} {mean:>7.0f} +- {err:<3.0f}"
                  f"{'(sd ' + f0(row['P_star_sd']) + ')':>12}   {bar}{gap}")

    # fits at the most common V: the seeds' mean P* per L (the longest run where an (L, V) has several)
    V0 = Counter(r["V"] for r in table).most_common(1)[0][0]
    best = {}
    for r in table:
        if r["V"] == V0 and np.isfinite(r["P_star"]) and r["L"] >= 32:
            best[r["L"]] = r if r["L"] not in best or (r["steps"] or 0) >= (best[r["L"]]["steps"] or 0) else best[r["L"]]
    fits = {}
    if len(best) >= 2:
        from copyjax.theory import least_squares

        Ls = np.array(sorted(best), float)
        P = np.array([best[int(L)]["P_star"] for L in Ls])
        (c, alpha), (_, se) = least_squares(np.stack([np.ones_like(Ls), np.log(Ls)], 1), np.log(P))
        fits["power"] = {"alpha": float(alpha), "alpha_se": float(se), "A": float(np.exp(c))}
        f = Ls * np.log(Ls) ** 2
        (ca, cb), (sa, sb) = least_squares(np.stack([f, Ls], 1), P)
        fits["L_ln2L"] = {"a": float(ca), "a_se": float(sa), "b": float(cb), "b_se": float(sb),
                          "a_large_L": V0 / (V0 - 1.0)}
        print(f"\nV = {V0}, L = {', '.join(str(int(L)) for L in Ls)}: exact P* ~ L^{alpha:.3f} (se {se:.3f}); "
              f"local exponents {', '.join(f'{x:.3f}' for x in np.diff(np.log(P)) / np.diff(np.log(Ls)))} "
              f"(L ln^2 L: {', '.join(f'{x:.3f}' for x in np.diff(np.log(f)) / np.diff(np.log(Ls)))})")
        print(f"  P* / (L ln^2 L) = {', '.join(f'{x:.2f}' for x in P / f)}; "
              f"P* = a L ln^2 L + b L: a = {ca:.2f} (se {sa:.2f}), b = {cb:.0f} (se {sb:.0f}); "
              f"a full copy head's a = V / (V - 1) = {V0 / (V0 - 1):.3f}")
        if theory:
            tpost = np.array([th(int(L), V0, "posterior") or np.nan for L in Ls])
            print(f"  theory (posterior form) P* / (L ln^2 L) = {', '.join(f'{x:.2f}' for x in tpost / f)}")
        b = np.array([best[int(L)]["barrier"] or np.nan for L in Ls])
        if np.isfinite(b).all():
            (cb0, beta), (_, bse) = least_squares(np.stack([np.ones_like(Ls), np.log(Ls)], 1), np.log(b))
            fits["barrier_power"] = {"exponent": float(beta), "se": float(bse)}
            print(f"  barrier at P* ~ L^{beta:.2f} (se {bse:.2f}); barrier / L = {', '.join(f'{x:.2f}' for x in b / Ls)}")

    with open(a.out + ".json", "w") as f:
        json.dump({"rows": [{k: v for k, v in r.items() if k != "per_seed"} for r in table], "fits": fits,
                   "theory": theory}, f, indent=1)
    print("figure:", ", ".join(free_energy_vs_L(rows, a.out, theory=theory or None)))


if __name__ == "__main__":
    main()
