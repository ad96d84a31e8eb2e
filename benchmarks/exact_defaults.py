"""The exact-posterior column of the main job alone: adaptive MALA on exp(-S_P(G)) at the
default phase-diagram grid (L = 64, V = 32, P = 933 ... 15802), on the same data sets
(same keys as ``copyjax.point.run_point``), with the main job's defaults or the given
chains / steps. Prints R-hat, ESS, nested R-hat and the family means per point.

    python benchmarks/exact_defaults.py [--chains 16] [--steps-softmax 900] [--steps-linear 1800]
                                         [--activation softmax linear] [--P 5095 8973]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from _cli import positive_int  # noqa: E402

GRID = [933, 1643, 2893, 5095, 8973, 15802]  # the default grid at (64, 32), index = point index


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=positive_int("--chains"), default=16)
    ap.add_argument("--steps-softmax", type=positive_int("--steps-softmax"), default=None)
    ap.add_argument("--steps-linear", type=positive_int("--steps-linear"), default=None)
    ap.add_argument("--activation", nargs="+", choices=["softmax", "linear"], default=["softmax", "linear"])
    ap.add_argument("--P", type=int, nargs="+", choices=GRID, default=GRID)
    a = ap.parse_args(argv)

    import jax  # noqa: E402
    import jax.numpy as jnp  # noqa: E402

    jax.config.update("jax_enable_x64", True)
    import copyjax as cj  # noqa: E402
    from copyjax import exact_posterior as X  # noqa: E402
    from copyjax.point import exact_chains as E  # noqa: E402

    steps = {"softmax": a.steps_softmax or E.DEFAULT_EXACT_STEPS["softmax"],
             "linear": a.steps_linear or E.DEFAULT_EXACT_STEPS["linear"]}
    print("| activation | P | chains x steps | wall s | mean | R-hat | ESS | nested R-hat | prior-start | copy-start | families disagree | chains used |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for act in a.activation:
        h = cj.default_hyper(act, 64)
        for P in a.P:
            key = jax.random.fold_in(jax.random.key(0), GRID.index(P))
            stats = cj.sampled_stats(jax.random.split(key, 5)[0], P, 64, 32).astype(jnp.float32)
            n = steps[act]
            t = time.perf_counter()
            run = X.sample_exact_posterior(jax.random.fold_in(key, 102), stats, h, act, n_chains=a.chains,
                                           num_steps=n, burn_in=n // 3, thin=E.exact_thin(n))
            s = X.summarize_exact(run, E.EXACT_KEYS[act])
            g = s.cG
            print(f"| {act} | {P} | {a.chains} x {n} | {time.perf_counter() - t:.0f} | {g.mean:.4f} | {g.rhat:.3f} | "
                  f"{g.ess:.0f} | {g.nested_rhat:.3f} | {g.prior.mean:.4f} | {g.copy.mean:.4f} | "
                  f"{s.branches_disagree} | {s.n_used} |", flush=True)


if __name__ == "__main__":
    main()
