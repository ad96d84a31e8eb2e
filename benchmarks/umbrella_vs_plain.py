"""Check of the free-energy machinery at full size: at a P outside the softmax coexistence
window (plain chains mix there), the posterior mean of a_G recombined by MBAR from umbrella
windows equals the mean of plain exact-posterior chains on the same data, within errors.

    python benchmarks/umbrella_vs_plain.py --L 64 --V 32 --P 2893 8973

Data: the statistics ``scripts/free_energy.py`` samples for (seed, P); umbrella: its
windows, 900 steps; plain: 16 adaptive-MALA chains (half from the prior, half from the copy
pattern), the main job's 900 steps.
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
    ap = argparse.ArgumentParser()
    ap.add_argument("--L", type=int, default=64)
    ap.add_argument("--V", type=int, default=32)
    ap.add_argument("--P", type=int, nargs="+", default=[2893, 8973])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=900)
    a = ap.parse_args(argv)
    L, V = a.L, a.V
    h = cj.default_hyper("softmax", L)
    print(f"L={L} V={V} softmax, seed {a.seed}: posterior mean of a_G, umbrella + MBAR vs plain chains")
    print(f"{'P':>6} {'umbrella':>18} {'plain':>18} {'R-hat':>6} {'diff / se':>9} {'s umb':>6} {'s plain':>7}")
    for P in a.P:
        key = cj.point_key(a.seed, P)
        stats = cj.sampled_stats(jax.random.fold_in(key, 0), P, L, V).astype(jnp.float32)
        t0 = time.perf_counter()
        pr, _, _ = FE.softmax_phase_weights(jax.random.fold_in(key, 1), stats, h, num_steps=a.steps)
        t1 = time.perf_counter()
        run = X.sample_exact_posterior(jax.random.fold_in(key, 2), stats, h, "softmax", n_chains=16,
                                       num_steps=a.steps, thin=5)
        s = X.summarize_exact(run, ("cG",)).cG
        t2 = time.perf_counter()
        z = (pr.mean - s.mean) / np.hypot(pr.mean_sd, s.mcse)
        print(f"{P:>6} {pr.mean:>9.4f} +- {pr.mean_sd:.4f} {s.mean:>9.4f} +- {s.mcse:.4f} {s.rhat:>6.3f} "
              f"{z:>9.2f} {t1 - t0:>6.0f} {t2 - t1:>7.0f}", flush=True)


if __name__ == "__main__":
    main()
