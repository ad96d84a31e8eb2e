"""Free energy of the exact posterior along the copy order parameter (umbrella sampling + MBAR):
phase weights, the posterior mean, the equal-weight point P* and the barrier, softmax attention.

    python scripts/free_energy.py --L 64 --V 32                 # 5 P around the theory's P*
    python scripts/free_energy.py --L 16 --V 32 --seeds 0 1 2   # finite-data spread of P*
    python scripts/free_energy.py --L 64 --V 32 --P 4000 4400   # explicit P

Writes into --out: points/ (one JSON + npz per (seed, P), written atomically; a killed run
resumes from them), summary.json (documented in docs/free_energy.md) and free_energy.png/pdf.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _cli import positive_float, positive_int

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                             formatter_class=argparse.ArgumentDefaultsHelpFormatter)
ap.add_argument("--L", type=positive_int("--L"), default=64)
ap.add_argument("--V", type=positive_int("--V"), default=32)
ap.add_argument("--activation", choices=["softmax"], default="softmax",
                help="softmax only for now (linear: see docs/free_energy.md)")
ap.add_argument("--P", type=positive_int("--P"), nargs="+",
                help="P values (default: the theory's posterior-form P* times 0.85 0.93 1 1.08 1.2)")
ap.add_argument("--seeds", type=int, nargs="+", default=[0], help="data seeds (one data set per seed and P)")
ap.add_argument("--spacing", type=positive_float("--spacing"), default=0.09,
                help="distance between window centres in the copy logit xi")
ap.add_argument("--kappa", type=positive_float("--kappa"), default=400.0,
                help="harmonic bias strength (nats per xi^2); must exceed the free energy's concavity")
ap.add_argument("--chains-per-window", type=positive_int("--chains-per-window"), default=1)
ap.add_argument("--steps", type=positive_int("--steps"), default=1200, help="MALA steps per chain (a third burn-in)")
ap.add_argument("--out", default="runs/free_energy", help="output directory")
ap.add_argument("--no-progress", action="store_true")
a = ap.parse_args()
if a.steps < 30:
    ap.error("--steps must be >= 30 (a third is burn-in, the rest is thinned by 5)")
if a.L < 4:
    ap.error("--L must be >= 4")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import copyjax as cj  # noqa: E402
from copyjax import free_energy as FE  # noqa: E402
from copyjax.experiments import atomic_savez, atomic_write_bytes  # noqa: E402

L, V, act = a.L, a.V, a.activation
hyper = cj.default_hyper(act, L)
tp = cj.transition_points(L, V, act, hyper, "posterior")
theory_P = tp["P_star"]
if a.P:
    Ps = sorted(set(a.P))
else:
    if theory_P is None:
        sys.exit(f"the theory has no first-order transition at L={L}, V={V}: give --P")
    Ps = sorted({int(round(theory_P * f)) for f in (0.85, 0.93, 1.0, 1.08, 1.2)})
# windows over the copy logit: the pooling basin sits near 0, the copy basin near log L
centers = np.arange(-0.4, np.log(L) + 1.5 + 1e-9, a.spacing)
xi_div = 0.5 * np.log(L)  # between the basins; the barrier region carries no mass
op_div = float(cj.reported_order_parameters(cj.attention(xi_div * cj.shift_matrix(L, jnp.float64), act), act)["cG"])
edges = np.linspace(-0.02, 0.8, 83)
os.makedirs(os.path.join(a.out, "points"), exist_ok=True)
cfg = dict(L=L, V=V, activation=act, spacing=a.spacing, kappa=a.kappa, steps=a.steps,
           chains_per_window=a.chains_per_window, n_windows=int(centers.size))
print(f"copyjax free energy, L={L}, V={V}, {act}: {centers.size} windows x {a.chains_per_window} chains, "
      f"kappa={a.kappa}, {a.steps} steps; theory (posterior form) P* = {theory_P}; P = {Ps}; seeds {a.seeds}",
      flush=True)


def point(seed: int, P: int) -> dict:
    base = os.path.join(a.out, "points", f"seed{seed}_P{P}")
    if os.path.exists(base + ".json"):
        old = json.load(open(base + ".json"))
        if old.get("config") == cfg:
            return old
    t0 = time.perf_counter()
    key = jax.random.fold_in(jax.random.key(seed), P)
    stats = cj.sampled_stats(jax.random.fold_in(key, 0), P, L, V).astype(jnp.float32)
    run = FE.sample_umbrella(jax.random.fold_in(key, 1), stats, hyper, act, centers, kappa=a.kappa,
                             num_steps=a.steps, chains_per_window=a.chains_per_window,
                             progress=not a.no_progress, desc=f"seed {seed} P={P}")
    rec = FE.recombine(run)
    pr = FE.profile(rec, run, 0, edges, op_div, coordinate="op")
    out = {"config": cfg, "seed": seed, "P": P, "wall_s": time.perf_counter() - t0,
           "n_kept": rec.n_kept, "mbar_grad_norm": float(rec.result.grad_norm),
           "acceptance_min": float(run.acceptance.min()), "divide_op": op_div,
           "weights": pr.weights.tolist(), "weights_sd": pr.weights_sd.tolist(),
           "log_ratio": pr.log_ratio, "log_ratio_sd": pr.log_ratio_sd,
           "mean": pr.mean, "mean_sd": pr.mean_sd, "minima_op": [float(0.5 * (edges[i] + edges[i + 1])) for i in pr.minima],
           "barrier": pr.barrier, "edges": edges.tolist(), "F": [None if not np.isfinite(v) else float(v) for v in pr.F],
           "F_sd": [None if not np.isfinite(v) else float(v) for v in pr.F_sd]}
    atomic_savez(base + ".npz", xi=run.xi, op=run.op, center=run.center, acceptance=run.acceptance)
    atomic_write_bytes(base + ".json", json.dumps(out, indent=1).encode())
    return out


t_all = time.perf_counter()
results = {}
for seed in a.seeds:
    for P in Ps:
        r = point(seed, P)
        results[(seed, P)] = r
        w, ws = r["weights"], r["weights_sd"]
        print(f"  seed {seed} P={P:6d}: copy weight {w[1]:.3g} +- {ws[1]:.2g}, log(copy/pool) "
              f"{r['log_ratio']:+.2f} +- {r['log_ratio_sd']:.2f}, mean a_G {r['mean']:.4f} +- {r['mean_sd']:.4f}, "
              f"minima at a_G {', '.join(f'{m:.3f}' for m in r['minima_op'])}, barrier {r['barrier']:.1f} nats "
              f"({r['wall_s']:.0f} s)", flush=True)

per_seed = {}
for seed in a.seeds:
    rs = [results[(seed, P)] for P in Ps]
    Pst, Pst_err = FE.equal_weight_point(np.array(Ps), np.array([r["log_ratio"] for r in rs]),
                                         np.array([r["log_ratio_sd"] for r in rs]))
    # barrier at P*: interpolated between the bracketing points (where both show two minima)
    bar = float("nan")
    if np.isfinite(Pst):
        i = int(np.searchsorted(Ps, Pst)) - 1
        b0, b1 = rs[i]["barrier"], rs[i + 1]["barrier"]
        wgt = (np.log(Pst) - np.log(Ps[i])) / (np.log(Ps[i + 1]) - np.log(Ps[i]))
        bar = float((1 - wgt) * b0 + wgt * b1)
    per_seed[seed] = {"P_star": Pst, "P_star_err": Pst_err, "barrier_at_P_star": bar}
    th = "none (no first-order transition)" if theory_P is None else f"{theory_P:.0f}"
    print(f"  seed {seed}: P* = {Pst:.0f} +- {Pst_err:.0f} (theory, posterior form: {th}); "
          f"barrier at P* {bar:.1f} nats", flush=True)

ps = np.array([v["P_star"] for v in per_seed.values()])
summary = {
    "config": cfg, "theory_P_star": theory_P, "P": Ps, "seeds": a.seeds,
    "P_star": float(np.nanmean(ps)) if np.isfinite(ps).any() else None,
    "P_star_err": (float(np.nanstd(ps, ddof=1) / np.sqrt(np.isfinite(ps).sum())) if np.isfinite(ps).sum() > 1
                   else per_seed[a.seeds[0]]["P_star_err"]),
    "barrier_at_P_star": float(np.nanmean([v["barrier_at_P_star"] for v in per_seed.values()])),
    "per_seed": {str(k): v for k, v in per_seed.items()},
    "points": [{k: results[(s, P)][k] for k in ("seed", "P", "weights", "weights_sd", "log_ratio",
                                                   "log_ratio_sd", "mean", "mean_sd", "minima_op", "barrier")}
               for s in a.seeds for P in Ps],
    "wall_s": time.perf_counter() - t_all,
}
atomic_write_bytes(os.path.join(a.out, "summary.json"), json.dumps(summary, indent=1).encode())

from copyjax.plotting import free_energy as plot_free_energy  # noqa: E402

plot_free_energy(summary, [results[(a.seeds[0], P)] for P in Ps], os.path.join(a.out, "free_energy"))
print(f"P* = {summary['P_star']} +- {summary['P_star_err']}; summary.json and free_energy.png in {a.out} "
      f"({summary['wall_s']:.0f} s)")
