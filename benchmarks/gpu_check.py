"""The accelerator check: chain-steps/s of the exact-posterior path (adaptive MALA on S_P(G))
and of SGLD on (W, G) at 10^3 to 10^5 chains, at L = 64, V = 32, float32 statistics.

    python benchmarks/gpu_check.py [--chains 1000 10000 100000] [--steps 20] [--block 4096]

Run by benchmarks/gpu.sh on the GPU machine; on a CPU it runs too (use small --chains).
Each configuration compiles once (first run) and is timed on a second run; a configuration
that fails (out of memory, say) prints its error and the next one runs.
"""
import argparse
import sys
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import copyjax as cj  # noqa: E402
from copyjax import exact_posterior, network, samplers  # noqa: E402
from _timing import chain_rate  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--block", type=int, default=4096, help="chains vmapped together (bounds memory)")
    ap.add_argument("--L", type=int, default=64)
    ap.add_argument("--V", type=int, default=32)
    a = ap.parse_args(argv)
    L, V, P, act = a.L, a.V, 5095, "softmax"
    dev = jax.devices()[0]
    print(f"# jax {jax.__version__}, device {dev.platform} ({dev.device_kind}) x {jax.device_count()}; "
          f"L = {L}, V = {V}, P = {P}, {a.steps} steps, chain block {a.block}", flush=True)
    h = cj.default_hyper(act, L)
    stats = cj.sampled_stats(jax.random.key(0), P, L, V).astype(jnp.float32)
    exact = exact_posterior.ExactSampler(h, act, n_adapt=a.steps // 2)
    sgld = samplers.NetworkSampler(h, act, "sgld")
    print("| chains | exact path (chain-steps/s) | compile (s) | SGLD (chain-steps/s) | compile (s) |")
    print("|---:|---:|---:|---:|---:|", flush=True)
    for n in a.chains:
        keys = jax.random.split(jax.random.key(n), n)
        cells = []
        for name, spec, init, data in (
                ("exact", exact, 0.1 * jax.vmap(lambda k: jax.random.normal(k, (L, L)))(keys),
                 {"stats": stats, "step_size": jnp.float32(exact_posterior.default_initial_step(act, h))}),
                ("sgld", sgld, jax.vmap(lambda k: network.init_params(k, L, V, h))(keys),
                 {"stats": stats, "step_size": jnp.float32(1e-4)})):
            try:
                c, r = chain_rate(spec, init, a.steps, data, chain_block=min(a.block, n))
                cells += [f"{r:,.0f}", f"{c:.1f}"]
            except Exception as e:  # noqa: BLE001 (report and go on: one size may not fit)
                print(f"# {name} at {n} chains failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
                cells += ["failed", "-"]
        print(f"| {n} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
