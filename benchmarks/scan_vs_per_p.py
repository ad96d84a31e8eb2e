"""P* of the exact posterior (softmax) from one tempered umbrella run (``free_energy.softmax_scan``)
against the per-P method (one umbrella run per P, ``softmax_phase_weights``), on the same data:
the sequences of P0 = the theory's posterior-form P*, the per-P runs on the tempered counts
t C of those sequences (beta -> t beta is the posterior on t C), so the two estimate the same
P* and differ only by Monte Carlo error. Both cover the same range of P; the per-P grid is
``scripts/free_energy.py``'s default (0.85, 0.93, 1, 1.08, 1.2 x P0).

Reports both P* with their errors, the wall time of each and the efficiency ratio at equal
error, (time_perP err_perP^2) / (time_scan err_scan^2) (Monte Carlo error falls as
1 / sqrt(time)). MBAR's error for both (for the scan also a bootstrap over its draws).

    python benchmarks/scan_vs_per_p.py --L 32 --V 32
    python benchmarks/scan_vs_per_p.py --L 64 --V 32
"""
from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np


def transition_data(ap, L: int, V: int, seed: int):
    """``(hyper, P0, key, stats)``: softmax's default hyperparameters at L, P0 = the theory's
    posterior-form P* (an argument error where there is none), the key of
    ``scripts/free_energy.py``'s data at P = P0 and those data's statistics (float32)."""
    import copyjax as cj

    hyper = cj.default_hyper("softmax", L)
    tp = cj.transition_points(L, V, "softmax", hyper, "posterior")
    if tp.P_star is None:
        ap.error(f"--L {L} --V {V}: the theory's posterior form has no first-order transition there (no P* to "
                 "compare); try a larger L or V (L = 16, V = 8 has one)")
    P0 = int(round(tp.P_star))
    key = cj.point_key(seed, P0)
    return hyper, P0, key, cj.sampled_stats(jax.random.fold_in(key, 0), P0, L, V).astype(jnp.float32)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=32)
    ap.add_argument("--V", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=900, help="MALA steps per window, both methods")
    ap.add_argument("--scan-steps", type=int, help="steps per window for the scan (default --steps)")
    ap.add_argument("--grid", type=float, nargs="+", default=[0.85, 0.93, 1.0, 1.08, 1.2])
    ap.add_argument("--bootstrap", type=int, default=20)
    ap.add_argument("--out", help="write the figures as JSON here")
    a = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    from copyjax import free_energy as FE

    L, V = a.L, a.V
    hyper, P0, key, stats = transition_data(ap, L, V, a.seed)
    grid = np.array(sorted(a.grid))
    print(f"L={L}, V={V}: data of P0 = {P0} sequences (theory P*); per-P at t = {grid.tolist()}; "
          f"scan over [{grid[0] * P0:.0f}, {grid[-1] * P0:.0f}]", flush=True)

    # warm both compilations on a tiny run first so that neither timing holds a compile
    FE.softmax_phase_weights(jax.random.key(9), stats, hyper, num_steps=30)
    FE.softmax_scan(jax.random.key(9), stats, hyper, grid[0] * P0, grid[-1] * P0, num_steps=30, n_boot=2)

    t0 = time.perf_counter()
    lr, lr_sd = [], []
    for i, t in enumerate(grid):
        pr, _, _ = FE.softmax_phase_weights(jax.random.fold_in(key, 10 + i), stats * t, hyper, num_steps=a.steps)
        lr.append(pr.log_ratio)
        lr_sd.append(pr.log_ratio_sd)
        print(f"  per-P t={t:.3f} (P={t * P0:.0f}): log(copy/pool) {pr.log_ratio:+.2f} +- {pr.log_ratio_sd:.2f}",
              flush=True)
    time_p = time.perf_counter() - t0
    P_p, err_p = FE.equal_weight_point(grid * P0, np.array(lr), np.array(lr_sd))

    t0 = time.perf_counter()
    sc, rec, _ = FE.softmax_scan(jax.random.fold_in(key, 1), stats, hyper, grid[0] * P0, grid[-1] * P0,
                                 num_steps=a.scan_steps or a.steps, n_boot=a.bootstrap)
    time_s = time.perf_counter() - t0
    err_s = max(sc.P_star_err, sc.P_star_boot_sd if np.isfinite(sc.P_star_boot_sd) else 0.0)
    z = (sc.P_star - P_p) / np.hypot(err_s, err_p)
    ratio = (time_p * err_p**2) / (time_s * err_s**2)
    print(f"per-P: P* = {P_p:.1f} +- {err_p:.1f} ({len(grid)} runs, {time_p:.0f} s)")
    print(f"scan:  P* = {sc.P_star:.1f} +- {sc.P_star_err:.1f} (MBAR), bootstrap sd {sc.P_star_boot_sd:.1f} "
          f"({sc.temps.size} tempers, one run, {time_s:.0f} s); two minima from P = {sc.spinodal_low} to "
          f"{sc.spinodal_high}; barrier at P* {sc.barrier_at_P_star:.1f} nats")
    print(f"difference {sc.P_star - P_p:+.1f} = {z:+.2f} combined sd; efficiency at equal error "
          f"(time x err^2, per-P / scan): {ratio:.2f}")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"L": L, "V": V, "P0": P0, "grid": grid.tolist(), "steps": a.steps,
                       "scan_steps": a.scan_steps or a.steps, "per_P": {"P_star": P_p, "err": err_p, "seconds": time_p,
                       "log_ratio": lr, "log_ratio_sd": lr_sd},
                       "scan": {"P_star": sc.P_star, "err_mbar": sc.P_star_err, "boot_sd": sc.P_star_boot_sd,
                                "seconds": time_s, "n_temps": int(sc.temps.size), "spinodal_low": sc.spinodal_low,
                                "spinodal_high": sc.spinodal_high, "barrier_at_P_star": sc.barrier_at_P_star},
                       "z": z, "efficiency_ratio": ratio}, f, indent=1)


if __name__ == "__main__":
    main()
