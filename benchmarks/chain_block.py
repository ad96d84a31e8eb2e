"""Chain-steps/s of the umbrella and exact samplers against the block size (chains vmapped
together; lax.map over blocks), at L = 64, V = 32, 64 chains, on one CPU device. Block sizes
are a speed choice now that the LAPACK deadlock is excluded (docs/lapack_hang.md).

    python benchmarks/chain_block.py [--chains 64] [--steps 60] [--blocks 8 16 32 64]

Each configuration is run twice (the first run compiles); the second is timed.
"""
import argparse

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

import copyjax as cj  # noqa: E402
from copyjax import free_energy  # noqa: E402

from _timing import best_time  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--chains", type=int, default=64)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--blocks", type=int, nargs="+", default=[8, 16, 32, 64])
    a = ap.parse_args(argv)
    L, V, P = 64, 32, 4000
    stats = cj.sufficient_stats(cj.sample_tokens(jax.random.key(0), P, L, V), V).astype(jnp.float64)
    h = cj.default_hyper("softmax", L)
    centers = jnp.linspace(0.0, 4.0, a.chains)
    print(f"jax {jax.__version__}; umbrella, L = {L}, V = {V}, {a.chains} chains, {a.steps} steps")
    print("| chain_block | s (second run) | chain-steps/s |\n|---:|---:|---:|")
    for b in a.blocks:
        run = lambda: free_energy.sample_umbrella(jax.random.key(1), stats, h, "softmax", centers, kappa=2.0,
                                                  num_steps=a.steps, thin=5, chain_block=b)
        _, s = best_time(run, repeat=1)  # a first call compiles; the second is timed
        print(f"| {b} | {s:.1f} | {a.chains * a.steps / s:.0f} |", flush=True)


if __name__ == "__main__":
    main()
