"""Is the tempered scan's reported error of P* its Monte Carlo error? The scan
(``free_energy.softmax_scan``) repeated on the same data with independent chain keys: the sd
of P* over the repeats (what the error should be) against the two errors each run reports,
MBAR's asymptotic one (``P_star_err``) and the bootstrap over the run's own draws
(``P_star_boot_sd``), as the ratio (mean reported error) / (sd over repeats) with its 90 %
interval from the chi-square law of the sd of K normal draws; and the spread of the barrier at
P* over the repeats (the scan reports no error for it). With ``--per-p`` the per-P method
(``benchmarks/scan_vs_per_p.py``'s: one umbrella run per P of ``--grid`` on the tempered
counts) is repeated alike, and the efficiency at equal error is computed from the spreads,
(time x sd^2) per-P / scan, not from the errors the runs report.

    python benchmarks/scan_error.py --L 16 --V 8 --repeats 8 --steps 900 --per-p --out docs/figures/scan_error_L16_V8.json

The data are ``benchmarks/scan_vs_per_p.py``'s (the sequences of P0 = the theory's
posterior-form P*, key ``point_key(seed, P0)``), the scan over [0.9, 1.1] x P0.
"""
from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np


def sd_ratio_interval(ratio: float, k: int, level: float = 0.9) -> tuple[float, float]:
    """The ``level`` interval of (reported error / true sd) given the observed ``ratio`` =
    reported / sd over ``k`` repeats: (k - 1) s^2 / sigma^2 is chi-square with k - 1 degrees
    of freedom, so sigma lies in s sqrt((k - 1) / chi2_{hi, lo}) and the ratio scales inversely."""
    from scipy.stats import chi2

    lo_q, hi_q = chi2.ppf([(1 - level) / 2, (1 + level) / 2], k - 1)
    return ratio * float(np.sqrt(lo_q / (k - 1))), ratio * float(np.sqrt(hi_q / (k - 1)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=16)
    ap.add_argument("--V", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0, help="the data's seed (point_key(seed, P0))")
    ap.add_argument("--repeats", type=int, default=8, help="independent scans on the same data (>= 3)")
    ap.add_argument("--steps", type=int, default=300, help="MALA steps per window")
    ap.add_argument("--bootstrap", type=int, default=20)
    ap.add_argument("--span", type=float, nargs=2, default=[0.9, 1.1], help="the scan's P range, x P0")
    ap.add_argument("--per-p", action="store_true", help="repeat the per-P method too (at --grid x P0)")
    ap.add_argument("--grid", type=float, nargs="+", default=[0.9, 1.0, 1.1],
                    help="the per-P runs' t = P / P0 (default the scan's ends and P0)")
    ap.add_argument("--out", help="write the figures as JSON here")
    a = ap.parse_args(argv)
    if a.repeats < 3:
        ap.error(f"--repeats must be >= 3 (an sd over repeats), got {a.repeats}")
    jax.config.update("jax_enable_x64", True)
    from copyjax import free_energy as FE
    from scan_vs_per_p import transition_data  # the same data as that benchmark's

    L, V = a.L, a.V
    hyper, P0, key, stats = transition_data(ap, L, V, a.seed)
    lo, hi = a.span[0] * P0, a.span[1] * P0
    print(f"L={L}, V={V}: data of P0 = {P0} sequences; {a.repeats} scans over [{lo:.0f}, {hi:.0f}], "
          f"{a.steps} steps a window, {a.bootstrap} bootstrap replicates", flush=True)
    # compile both methods on a tiny run first, so that no timing holds a compilation
    FE.softmax_scan(jax.random.key(9), stats, hyper, lo, hi, num_steps=30, n_boot=2)
    if a.per_p:
        FE.softmax_phase_weights(jax.random.key(9), stats, hyper, num_steps=30)
    runs, per_p = [], []
    t_scan = t_per_p = 0.0
    grid = np.array(sorted(a.grid))
    for r in range(a.repeats):
        t0 = time.perf_counter()
        sc, _, _ = FE.softmax_scan(jax.random.fold_in(key, 100 + r), stats, hyper, lo, hi, num_steps=a.steps,
                                   n_boot=a.bootstrap)
        t_scan += time.perf_counter() - t0
        if a.per_p:
            t0 = time.perf_counter()
            lr, lr_sd = [], []
            for i, t in enumerate(grid):
                pr, _, _ = FE.softmax_phase_weights(jax.random.fold_in(key, 1000 + 10 * r + i), stats * t, hyper,
                                                    num_steps=a.steps)
                lr.append(pr.log_ratio)
                lr_sd.append(pr.log_ratio_sd)
            P_p, err_p = FE.equal_weight_point(grid * P0, np.array(lr), np.array(lr_sd))
            t_per_p += time.perf_counter() - t0
            per_p.append({"P_star": float(P_p), "err_mbar": float(err_p)})
            print(f"  per-P {r}: P* {P_p:.1f} (MBAR +- {err_p:.1f})", flush=True)
        runs.append({"P_star": float(sc.P_star), "err_mbar": float(sc.P_star_err), "boot_sd": float(sc.P_star_boot_sd),
                     "barrier": float(sc.barrier_at_P_star)})
        print(f"  scan {r}: P* {sc.P_star:.1f} (MBAR +- {sc.P_star_err:.1f}, bootstrap sd {sc.P_star_boot_sd:.1f}); "
              f"barrier {sc.barrier_at_P_star:.2f} nats", flush=True)
    seconds = t_scan
    P = np.array([r["P_star"] for r in runs])
    B = np.array([r["barrier"] for r in runs])
    ok = np.isfinite(P)
    out = {"L": L, "V": V, "P0": P0, "span": a.span, "steps": a.steps, "bootstrap": a.bootstrap,
           "repeats": a.repeats, "finite": int(ok.sum()), "seconds": seconds, "runs": runs}
    k = int(ok.sum())
    if k >= 3:
        sd_P = float(np.std(P[ok], ddof=1))
        for name, col in (("err_mbar", "err_mbar"), ("boot_sd", "boot_sd")):
            rep = float(np.mean([r[col] for r, g in zip(runs, ok) if g]))
            ratio = rep / sd_P
            out[name] = {"mean_reported": rep, "ratio": ratio, "interval90": sd_ratio_interval(ratio, k)}
        okb = np.isfinite(B)  # nan where the profile at P* has one minimum (no barrier to cross)
        out.update({"P_star_mean": float(P[ok].mean()), "P_star_sd": sd_P, "barrier_finite": int(okb.sum())})
        if okb.sum() >= 2:
            out.update({"barrier_mean": float(B[okb].mean()), "barrier_sd": float(np.std(B[okb], ddof=1))})
        if a.per_p:
            Pp = np.array([r["P_star"] for r in per_p])
            okp = np.isfinite(Pp)
            sd_p = float(np.std(Pp[okp], ddof=1))
            rep_p = float(np.mean([r["err_mbar"] for r, g in zip(per_p, okp) if g]))
            out["per_p"] = {"grid": grid.tolist(), "runs": per_p, "seconds": t_per_p, "P_star_mean": float(Pp[okp].mean()),
                            "P_star_sd": sd_p, "err_mbar": {"mean_reported": rep_p, "ratio": rep_p / sd_p,
                                                            "interval90": sd_ratio_interval(rep_p / sd_p, int(okp.sum()))},
                            "efficiency_from_spreads": (t_per_p * sd_p ** 2) / (t_scan * sd_P ** 2),
                            "efficiency_from_reported": (t_per_p * rep_p ** 2) / (
                                t_scan * max(out["err_mbar"]["mean_reported"], out["boot_sd"]["mean_reported"]) ** 2)}
        print(f"P*: mean {out['P_star_mean']:.1f}, sd over {k} scans {sd_P:.2f}")
        for name in ("err_mbar", "boot_sd"):
            d = out[name]
            print(f"  {name}: mean reported {d['mean_reported']:.2f}, ratio to the sd {d['ratio']:.2f} "
                  f"(90 % interval {d['interval90'][0]:.2f}-{d['interval90'][1]:.2f})")
        if "barrier_sd" in out:
            print(f"barrier at P*: mean {out['barrier_mean']:.2f} nats, sd over {out['barrier_finite']} scans "
                  f"{out['barrier_sd']:.3f}")
    if "per_p" in out:
        d = out["per_p"]
        print(f"per-P: mean {d['P_star_mean']:.1f}, sd over the repeats {d['P_star_sd']:.2f}; MBAR error "
              f"{d['err_mbar']['mean_reported']:.2f}, ratio {d['err_mbar']['ratio']:.2f} (90 % interval "
              f"{d['err_mbar']['interval90'][0]:.2f}-{d['err_mbar']['interval90'][1]:.2f}); {d['seconds']:.0f} s")
        print(f"efficiency at equal error, per-P / scan: {d['efficiency_from_spreads']:.2f} from the spreads, "
              f"{d['efficiency_from_reported']:.2f} from the reported errors")
    print(f"scans: {seconds:.0f} s")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
