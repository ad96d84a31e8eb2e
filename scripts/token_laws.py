"""P* of the exact posterior and of the theory under other token laws (Zipf S, Markov Q) at one
(L, V): a table and a figure (P* against S and against Q), from ``scripts/free_energy.py`` runs
(``--tokens``, softmax) and ``scripts/transitions.py --json`` outputs (docs/beyond.md).

    python scripts/token_laws.py --L 32 --V 32 --runs runs/beyond/* runs/pstarL/L32V32 \
        --transitions runs/beyond/transitions_*.json --out docs/figures/token_laws

A run's law is its summary.json's ``tokens`` (uniform where absent); a transitions file's, its
rows' ``softmax.tokens``. Rows at other (L, V) are skipped.
"""
from __future__ import annotations

import argparse
import json
import os


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, required=True)
    ap.add_argument("--V", type=int, required=True)
    ap.add_argument("--runs", nargs="*", default=[], help="output folders of scripts/free_energy.py (softmax)")
    ap.add_argument("--transitions", nargs="*", default=[], help="JSON files of scripts/transitions.py --json")
    ap.add_argument("--out", default="token_laws", help="figure path without extension (the table: OUT.json)")
    return ap


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)

    import numpy as np

    from copyjax.plots.free_energy import p_star_vs_tokens
    from copyjax.tokens import token_law

    laws: dict = {}


    def entry(spec):
        law = token_law(spec)
        return laws.setdefault(law.spec, {"tokens": law.spec, "kind": law.kind, "param": law.param})


    for path in a.transitions:
        if not os.path.exists(path):
            ap.error(f"--transitions: {path} does not exist")
        with open(path) as f:
            for row in json.load(f):
                s = row["softmax"]
                if (s["L"], s["V"]) == (a.L, a.V):
                    entry(s.get("tokens", "uniform"))[f"theory_{s['form']}"] = s["P_star"]
    for d in a.runs:
        path = os.path.join(d, "summary.json")
        if not os.path.exists(path):
            continue  # a run still going, or another script's folder
        with open(path) as f:
            s = json.load(f)
        c = s["config"]
        if (c["L"], c["V"]) != (a.L, a.V) or c.get("activation", "softmax") != "softmax" or s.get("P_star") is None:
            continue
        e = entry(s.get("tokens", "uniform"))
        if "exact" in e and e["n_seeds"] >= len(s["per_seed"]):
            continue
        bars = [v["barrier_at_P_star"] for v in s["per_seed"].values() if v["barrier_at_P_star"] is not None]
        e.update(exact=s["P_star"], exact_err=s["P_star_err"], n_seeds=len(s["per_seed"]), method=s.get("method", "per-P"),
                 barrier=float(np.mean(bars)) if bars else None, seconds=s.get("seconds"), run=d)
    if not laws:
        ap.error(f"nothing at L={a.L}, V={a.V} in --runs / --transitions")

    f0 = lambda x: "-" if x is None else f"{x:.0f}"
    rows = sorted(laws.values(), key=lambda e: (e["kind"] != "uniform", e["kind"], e["param"]))
    print(f"L = {a.L}, V = {a.V}, softmax")
    print("| tokens | theory P* (MAP) | theory P* (posterior) | exact P* | exact / posterior - 1 | barrier at P* (nats) |")
    print("|---|---:|---:|---:|---:|---:|")
    for e in rows:
        ex = "-" if "exact" not in e else f"{e['exact']:.0f} ± {e['exact_err']:.0f}" + (
            f" ({e['n_seeds']} seeds)" if e["n_seeds"] > 1 else "")
        post = e.get("theory_posterior")
        gap = f"{e['exact'] / post - 1:+.2%}" if "exact" in e and post else "-"
        bar = "-" if e.get("barrier") is None else f"{e['barrier']:.1f}"
        print(f"| {e['tokens']} | {f0(e.get('theory_map'))} | {f0(post)} | {ex} | {gap} | {bar} |")
    with open(a.out + ".json", "w") as f:
        json.dump({"L": a.L, "V": a.V, "rows": rows}, f, indent=1)
    print("figure:", ", ".join(p_star_vs_tokens(rows, a.L, a.V, a.out)))


if __name__ == "__main__":
    main()
