"""How the exact action's cost grows with the number of chains on CPU: its contraction is a
skinny GEMM, (2 x chains, L^2) @ (L^2, V^2), whose time grows much more slowly than its rows
(the GEMM streams and packs C whatever the rows), so the cost per chain falls with the batch.

    python benchmarks/skinny_gemm.py [--L 64 --V 32] [--out docs/figures/skinny_gemm_cpu_L64_V32.json]

Prints, in one run on one process: (1) the forward GEMM X @ C at 2 .. 128 rows, with C as
stored (L^2, V^2) and with C^T held, as time and GFLOP/s; (2) the value and gradient of S_P(G)
(``action.marginal_logdensity``, vmapped) at 1 .. 64 chains, as time per evaluation and per
chain. Ratios within one run are the claim; absolute times vary with the machine's load.
"""
from __future__ import annotations

import argparse
import json

from _timing import best_time


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=64)
    ap.add_argument("--V", type=int, default=32)
    ap.add_argument("--out", default=None, help="write the table as JSON here")
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    import jax
    import jax.numpy as jnp

    import copyjax as cj
    from copyjax.action import marginal_logdensity
    from copyjax.data import sampled_stats

    L, V = a.L, a.V
    C = jnp.abs(jax.random.normal(jax.random.key(0), (L * L, V * V), jnp.float32))
    Ct = jnp.asarray(C.T)  # a copy in the transposed layout
    gemm = []
    for rows in (2, 8, 32, 128):
        X = jax.random.normal(jax.random.key(1), (rows, L * L), jnp.float32)
        t_c = best_time(jax.jit(lambda x, c: x @ c), X, C)[1]
        t_ct = best_time(jax.jit(lambda x, ct: (ct @ x.T).T), X, Ct)[1]
        flop = 2.0 * rows * L * L * V * V
        gemm.append({"rows": rows, "ms_C": 1e3 * t_c, "ms_Ct": 1e3 * t_ct, "gflops_C": flop / t_c / 1e9,
                     "gflops_Ct": flop / t_ct / 1e9})
        print(f"GEMM rows {rows:4d}: X @ C {1e3 * t_c:6.2f} ms ({flop / t_c / 1e9:5.0f} GFLOP/s)   "
              f"C^T held {1e3 * t_ct:6.2f} ms ({flop / t_ct / 1e9:5.0f} GFLOP/s)", flush=True)
    stats = sampled_stats(jax.random.key(2), 2000, L, V).astype(jnp.float32)
    hyper = cj.default_hyper("softmax", L)
    vg = jax.jit(jax.vmap(jax.value_and_grad(lambda g, s: marginal_logdensity(g, s, hyper, "softmax")),
                          in_axes=(0, None)))
    action = []
    for n in (1, 4, 16, 64):
        G = 0.1 * jax.random.normal(jax.random.key(3), (n, L, L), jnp.float32)
        t = best_time(vg, G, stats)[1]
        action.append({"chains": n, "ms": 1e3 * t, "ms_per_chain": 1e3 * t / n})
        print(f"value and gradient of S_P, {n:3d} chains: {1e3 * t:7.2f} ms ({1e3 * t / n:6.2f} ms a chain)", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"L": L, "V": V, "device": str(jax.devices()[0]), "gemm": gemm, "action": action}, f, indent=1)


if __name__ == "__main__":
    main()
