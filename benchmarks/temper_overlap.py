"""How far apart the sampled tempers of a P scan (``free_energy.softmax_scan``) may be: the
spread, over one umbrella window's draws, of the difference between the data actions at
tempers t and 1 (beta -> t beta). MBAR reweights a window's draws from one temper to another
well while that spread is about a nat or less.

    python benchmarks/temper_overlap.py            # L = 32 at P = 2463, L = 64 at P = 4225 (V = 32)

Prints, per window (two chains each, 600 MALA steps), sd and mean of S_t - S_1 for t = 1.01,
1.02, 1.05, 1.1.
"""
import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--LP", nargs="+", default=["32,2463", "64,4225"], help="L,P pairs (V = 32)")
    ap.add_argument("--steps", type=int, default=600)
    a = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    import copyjax as cj
    from copyjax import free_energy as FE

    tg = np.array([1.0, 1.01, 1.02, 1.05, 1.1])
    for L, P in (tuple(int(x) for x in s.split(",")) for s in a.LP):
        V = 32
        h = cj.default_hyper("softmax", L)
        key = cj.point_key(0, P)
        stats = cj.sampled_stats(jax.random.fold_in(key, 0), P, L, V).astype(jnp.float32)
        centers = np.array([0.0, 0.3, 1.0, 2.0, np.log(L), np.log(L) + 0.5])
        t0 = time.time()
        run = FE.sample_umbrella(jax.random.key(1), stats, h, "softmax", centers, kappa=400.0, num_steps=a.steps,
                                 t_grid=tg, chains_per_window=2)
        print(f"L={L}, V={V}, P={P} ({time.time() - t0:.0f} s)")
        for i, c in enumerate(run.center):
            d = run.data[i]
            print(f"  window xi={c:.2f} (mean xi {run.xi[i].mean():.2f}): " + "; ".join(
                f"t={t}: sd {np.std(d[:, j] - d[:, 0]):.2f}, mean {np.mean(d[:, j] - d[:, 0]):.1f}"
                for j, t in enumerate(tg) if j))


if __name__ == "__main__":
    main()
