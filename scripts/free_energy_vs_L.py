"""Barrier height at P* and P* against L, from the summary.json of several softmax runs of
``scripts/free_energy.py`` (one per L; every seed of each drawn), with the theory's
posterior-form P*. Prints the table and writes the figure.

    python scripts/free_energy_vs_L.py runs/fe16 runs/fe32 runs/fe64 --out docs/figures/free_energy_vs_L
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument("runs", nargs="+", help="output folders of scripts/free_energy.py (softmax)")
ap.add_argument("--out", default="free_energy_vs_L", help="figure path without extension")
a = ap.parse_args()

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import numpy as np  # noqa: E402

from copyjax.plots.free_energy import free_energy_vs_L  # noqa: E402

rows = []
for d in a.runs:
    path = os.path.join(d, "summary.json")
    if not os.path.exists(path):
        ap.error(f"{path} does not exist (run scripts/free_energy.py --out {d} first)")
    with open(path) as f:
        s = json.load(f)
    if s["config"].get("activation", "softmax") != "softmax":
        ap.error(f"{d} is not a softmax run")
    rows.append(s)
rows.sort(key=lambda s: s["config"]["L"])
print(f"{'L':>4} {'seed':>4} {'P*':>12} {'theory P*':>10} {'barrier at P* (nats)':>21}")
for s in rows:
    for seed, v in s["per_seed"].items():
        th = s["theory_P_star"]
        print(f"{s['config']['L']:>4} {seed:>4} {v['P_star']:>7.0f} +- {v['P_star_err']:<3.0f}"
              f"{'none' if th is None else f'{th:.0f}':>10} {v['barrier_at_P_star']:>21.1f}")
    ps = np.array([v["P_star"] for v in s["per_seed"].values()], float)
    bs = np.array([v["barrier_at_P_star"] for v in s["per_seed"].values()], float)
    if ps.size > 1:
        fb = bs[np.isfinite(bs)]
        bar = f"{fb.mean():>14.1f} sd {fb.std(ddof=1):.1f}" if fb.size > 1 else f"{'none':>14}"
        print(f"{s['config']['L']:>4} {'all':>4} {np.nanmean(ps):>7.0f} sd {np.nanstd(ps, ddof=1):<3.0f}"
              f"{'':>10} {bar}")
print("figure:", ", ".join(free_energy_vs_L(rows, a.out)))
