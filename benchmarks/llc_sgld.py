"""SGLD's estimate of the local learning coefficient scored against the exact one: for rows of a
``scripts/llc.py`` run (their ``inputs_<i>.npz``: tokens, W*, G*), full-batch SGLD on (W, G)
(``copyjax.llc.sgld_llc``: blackjax's kernel, started at w*, a third burn-in) at each step size,
its lambda_hat with the first half and with all of its recorded draws, and the relative error
against the row's exact value.

    python scripts/llc.py --L 16 --V 32 --P 300 700 1500 2500 --gamma 10 100 --out runs/llc16
    python benchmarks/llc_sgld.py runs/llc16 --rows 3 5 13 --step-sizes 1e-2 3e-3 1e-3 3e-4 1e-4

    python benchmarks/llc_sgld.py runs/llc16 --rows 3 --step-sizes 3e-3 1e-3 --batch 32   # minibatch SGLD

Prints a markdown table: row, activation, P, phase, gamma, exact, step size, SGLD (half), SGLD
(all), relative error (all) and whether it is within 5 % (|error| + 2 se < 5 %).
"""
import argparse
import json
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
import copyjax as cj  # noqa: E402
from copyjax import llc  # noqa: E402
from copyjax.chains import summarize  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a scripts/llc.py output folder")
    ap.add_argument("--rows", type=int, nargs="+", help="row indices (default: all)")
    ap.add_argument("--step-sizes", type=float, nargs="+", default=[1e-2, 3e-3, 1e-3, 3e-4, 1e-4])
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=0, help="minibatch of sequences per chain and step (0: full batch)")
    a = ap.parse_args(argv)
    d = json.load(open(os.path.join(a.run, "llc.json")))
    rows = d["rows"]
    V = d["config"]["V"]
    idx = a.rows if a.rows else range(len(rows))
    print("| row | activation | P | phase | gamma | exact | step | SGLD, first half | SGLD, all | rel. error | within 5 % |")
    print("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---|")
    for i in idx:
        r = rows[i]
        z = np.load(os.path.join(a.run, r["inputs"]))
        st = cj.sufficient_stats(jnp.asarray(z["tokens"]), V).astype(jnp.float64)
        for eps in a.step_sizes:
            t0 = time.perf_counter()
            s = llc.sgld_llc(jax.random.key(i), st, z["W_star"], z["G_star"], r["activation"], step_size=eps,
                             nbeta=r["nbeta"], gamma=r["gamma"], n_chains=a.chains, num_steps=a.steps,
                             tokens=z["tokens"] if a.batch else None, batch_size=a.batch or None)
            ok = np.all(np.isfinite(s.loss), axis=1)
            half = s.loss[ok, : s.loss.shape[1] // 2]
            if ok.sum() >= 2:
                h = summarize(half)
                lam_half = r["nbeta"] * (h.mean - r["loss_star"])
                half_s = f"{lam_half:.3f} ± {r['nbeta'] * h.mcse:.3f}"
            else:
                half_s = "diverged"
            rel = (s.llc - r["llc_exact"]) / r["llc_exact"]
            within = bool(np.isfinite(rel) and abs(rel) + 2 * s.llc_se / abs(r["llc_exact"]) < 0.05)
            print(f"| {i} | {r['activation']} | {r['P']} | {r['phase']} | {r['gamma']:g} | {r['llc_exact']:.3f} "
                  f"| {eps:g} | {half_s} | {s.llc:.3f} ± {s.llc_se:.3f} | {rel:+.1%} | {'yes' if within else 'no'} |",
                  flush=True)
            print(f"<!-- {time.perf_counter() - t0:.0f} s, {s.nonfinite} chains diverged -->", file=sys.stderr)


if __name__ == "__main__":
    main()
