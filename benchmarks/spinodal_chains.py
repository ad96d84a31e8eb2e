"""Where the pooling phase of the exact posterior stops holding chains (the upper spinodal,
seen from the chains): plain exact-posterior chains on the data ``scripts/free_energy.py``
samples, half started from the prior and half from the copy pattern, at P above P*.

    python benchmarks/spinodal_chains.py --L 64 --V 32 --P 7000 7400 7800 8200 8600

Above P* the copy phase holds all the mass; the pooling phase survives as a metastable
minimum up to the upper spinodal (theory, posterior form: 7791 at L = 64, V = 32), so chains
from the prior stay there (a_G near 0) below it and run to the copy phase above it. Reported
per P: the prior-started chains' mean a_G and how many of them ended above the divide (the
a_G of G = (log L / 2) S), the copy-started chains' mean. Umbrella sampling cannot resolve
this region at kappa <= 1500: the free energy falls by ~3000 nats per unit a_G between the
phases and the windows there do not overlap (docs/free_energy.md, "Spinodals").
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
import copyjax as cj  # noqa: E402
from copyjax import exact_posterior as X  # noqa: E402
from copyjax import free_energy as FE  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=64)
    ap.add_argument("--V", type=int, default=32)
    ap.add_argument("--P", type=int, nargs="+", default=[7000, 7400, 7800, 8200, 8600])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chains", type=int, default=8, help="half from the prior, half from the copy pattern")
    ap.add_argument("--steps", type=int, default=900)
    a = ap.parse_args(argv)
    L, V = a.L, a.V
    h = cj.default_hyper("softmax", L)
    divide = FE.softmax_windows(L).divide
    print(f"L={L} V={V} softmax, seed {a.seed}, {a.chains} exact chains x {a.steps} MALA steps; divide a_G = {divide:.3f}")
    print("| P | prior-started: mean a_G | prior-started chains above the divide | copy-started: mean a_G | s |")
    print("|---:|---:|---:|---:|---:|")
    for P in a.P:
        key = cj.point_key(a.seed, P)
        stats = cj.sampled_stats(jax.random.fold_in(key, 0), P, L, V).astype(jnp.float32)
        t0 = time.perf_counter()
        run = X.sample_exact_posterior(jax.random.fold_in(key, 2), stats, h, "softmax", n_chains=a.chains,
                                       num_steps=a.steps, thin=5)
        d = np.asarray(run.samples.draws["cG"])  # (chains, draws); prior-started chains first
        n_prior = a.chains - a.chains // 2
        prior, copy = d[:n_prior], d[n_prior:]
        above = int((prior[:, -1] > divide).sum())
        print(f"| {P} | {prior.mean():.4f} | {above} of {prior.shape[0]} | {copy.mean():.4f} | "
              f"{time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
