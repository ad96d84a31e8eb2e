"""The exact local learning coefficient across the copy-head transition (copyjax.llc).

    python scripts/llc.py --L 16 --V 32 --P 500 1000 2000 --activation softmax linear --out runs/llc
    python scripts/llc.py --L 16 --V 32 --P 1000 --gamma 10 100 --out runs/llc_gamma

For each (activation, P, gamma): one data set (tokens from --data-seed and P), the local
minima of the joint posterior that Adam reaches from prior and from copy starts (one per phase
reached: both where they coexist), and at each minimum w* the exact lambda_hat = nbeta
(E_pi[L_n] - L_n(w*)) with its Monte Carlo error and R-hat (docs/llc.md).

Writes into --out: llc.json (``{"config": ..., "rows": [...]}``, one row per (activation, P,
gamma, phase), rewritten after every row: a killed run resumes and skips the rows it has),
inputs_<row>.npz (``tokens`` (P, L), ``W_star``, ``G_star``: enough to recompute the row), and
llc.png / llc.pdf (lambda_hat vs P, one marker per phase).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _cli import (add_distributed_options, int_at_least, mask_arg, nonneg_int, positive_float, positive_int,
                  start_distributed)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--L", type=int_at_least("--L", 2), default=16)
    ap.add_argument("--V", type=int_at_least("--V", 2), default=32)
    ap.add_argument("--P", type=int_at_least("--P", 2), nargs="+", default=[500, 1000, 2000],
                    help="numbers of sequences (>= 2: nbeta = P / log P)")
    ap.add_argument("--activation", choices=["softmax", "linear"], nargs="+", default=["softmax", "linear"])
    ap.add_argument("--gamma", type=positive_float("--gamma"), nargs="+", default=[100.0],
                    help="localisation of W and G (docs/llc.md: 100 keeps softmax chains in their phase at L = 16)")
    ap.add_argument("--nbeta", type=positive_float("--nbeta"), help="n beta~ (default P / log P)")
    ap.add_argument("--data-seed", type=nonneg_int("--data-seed"), default=0)
    ap.add_argument("--adam-seeds", type=positive_int("--adam-seeds"), default=4, help="Adam runs per start family")
    ap.add_argument("--adam-steps", type=positive_int("--adam-steps"), default=2000)
    ap.add_argument("--adam-lr", type=positive_float("--adam-lr"), default=1e-2)
    ap.add_argument("--chains", type=int_at_least("--chains", 2), default=8)
    ap.add_argument("--steps", type=int_at_least("--steps", 30), default=2000, help="MALA steps per chain (a third burn-in)")
    ap.add_argument("--mask", type=mask_arg, default="full",
                    help="attention mask (copyjax.masks): full, causal or window:W; the loss over its loss rows")
    ap.add_argument("--out", default="runs/llc")
    ap.add_argument("--no-progress", action="store_true")
    add_distributed_options(ap)
    return ap


def main(argv=None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        ap.error(f"--out {a.out!r} cannot be created: {e}")

    start_distributed(ap, a)  # before any other JAX call
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import copyjax as cj
    from copyjax import llc

    config = {k: getattr(a, k) for k in ("L", "V", "data_seed", "adam_seeds", "adam_steps", "adam_lr", "chains",
                                         "steps", "nbeta")}
    if a.mask != "full":  # (named only where not full: earlier runs' outputs stay valid)
        config["mask"] = a.mask
    path = os.path.join(a.out, "llc.json")
    rows = []
    if os.path.exists(path):
        old = json.load(open(path))
        if old.get("config") != config:
            ap.error(f"--out {a.out!r} holds a run with another configuration ({old.get('config')}); "
                     "use another --out")
        rows = old["rows"]
    done = {(r["activation"], r["P"], r["gamma"]) for r in rows}

    def save():
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"config": config, "rows": rows, "versions": {"copyjax": cj.__version__, "jax": jax.__version__}},
                      f, indent=1)
        os.replace(tmp, path)

    t_all = time.perf_counter()
    for act in a.activation:
        h = cj.default_hyper(act, a.L)
        for P in a.P:
            todo = [g for g in a.gamma if (act, P, g) not in done]
            if not todo:
                continue
            key = cj.point_key(a.data_seed, P)
            tokens = cj.sample_tokens(key, P, a.L, a.V)
            stats = cj.sufficient_stats(tokens, a.V).astype(jnp.float64)
            mins = llc.find_minima(jax.random.fold_in(key, 1), stats, h, act, n_seeds=a.adam_seeds,
                                   steps=a.adam_steps, learning_rate=a.adam_lr, mask=a.mask)
            for g in todo:
                for m in mins:
                    t0 = time.perf_counter()
                    r = llc.estimate_llc(jax.random.fold_in(key, 2), stats, m.W, m.G, act, nbeta=a.nbeta, gamma=g,
                                         n_chains=a.chains, num_steps=a.steps, progress=not a.no_progress,
                                         mask=a.mask)
                    i = len(rows)
                    np.savez(os.path.join(a.out, f"inputs_{i}.npz"), tokens=np.asarray(tokens), W_star=m.W, G_star=m.G)
                    rows.append({"activation": act, "P": P, "phase": m.phase, "start": m.start, "nbeta": r.nbeta,
                                 "gamma": g, "llc_exact": r.llc, "llc_exact_se": r.llc_se, "rhat": r.rhat,
                                 "ess": r.ess, "loss_star": r.loss_star, "logpost_star": m.logpost, "cG_star": m.cG,
                                 "cG_mean": float(np.mean(r.cG)), "left_phase": r.left_phase,
                                 "llc_w_block": float(llc.regular_w_llc(jnp.asarray(m.G), stats, jnp.asarray(m.W),
                                                                        r.nbeta, g, act, a.mask)),
                                 "acceptance": float(np.mean(r.acceptance)), "chain_key": [a.data_seed, P, 2],
                                 "inputs": f"inputs_{i}.npz", "wall_s": time.perf_counter() - t0})
                    save()
                    print(f"{act:7s} P={P:6d} gamma={g:g} {m.phase:11s} lambda_hat = {r.llc:9.3f} +- {r.llc_se:.3f} "
                          f"(R-hat {r.rhat:.3f}, left phase {r.left_phase:.2f}, L_n(w*) {r.loss_star:.5f}) "
                          f"{time.perf_counter() - t0:.0f} s", flush=True)
                done.add((act, P, g))
    save()
    from copyjax.plots.llc import plot_llc

    plot_llc(rows, a.out)
    print(f"wrote {path} ({len(rows)} rows) and llc.png in {time.perf_counter() - t_all:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
