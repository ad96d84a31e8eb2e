"""The learning coefficient of linear attention's copy phase against its theory value: at the
exact fit A = G = S, W = I (L_n = 0), f = G (x) W is regular up to the scale (G, W) -> (c G,
W / c), so lambda = (L^2 + V^2 - 1) / 2. copyjax.llc at large nbeta and small gamma (the
localisation negligible) for a few (L, V):

    python benchmarks/llc_asymptotic.py --LV 4,3 5,3 3,4 --nbeta 1e3 1e4 1e5
"""
import argparse
import time

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)
import copyjax as cj  # noqa: E402
from copyjax import llc  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--LV", nargs="+", default=["4,3", "5,3", "3,4"], help="L,V pairs")
    ap.add_argument("--nbeta", type=float, nargs="+", default=[1e3, 1e4, 1e5])
    ap.add_argument("--gamma", type=float, default=1e-2)
    ap.add_argument("--P", type=int, default=2000)
    a = ap.parse_args(argv)
    print("| L | V | nbeta | lambda_hat | (L^2 + V^2 - 1) / 2 | R-hat | s |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for lv in a.LV:
        L, V = (int(x) for x in lv.split(","))
        st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(3), a.P, L, V), V).astype(jnp.float64)
        W, G = jnp.eye(V), cj.shift_matrix(L, jnp.float64)
        for nb in a.nbeta:
            t0 = time.perf_counter()
            r = llc.estimate_llc(jax.random.key(0), st, W, G, "linear", nbeta=nb, gamma=a.gamma, n_chains=8,
                                 num_steps=3000)
            print(f"| {L} | {V} | {nb:g} | {r.llc:.2f} ± {r.llc_se:.2f} | {(L * L + V * V - 1) / 2} | {r.rhat:.3f} "
                  f"| {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
