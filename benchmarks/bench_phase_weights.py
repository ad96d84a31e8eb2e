"""The leaderboard's two-phase references against the exact chains' own copy fraction.

    python benchmarks/bench_phase_weights.py                  # L = 16, 20, 32 (docs/leaderboard.md)

For each ``inside`` task of the leaderboard (softmax, V = 32, P the posterior form's P*,
data seed 0) the two-phase reference (``bench.reference(..., phases=True)`` with the
leaderboard's 1800 x 4 umbrella steps per window: read from the cache if the leaderboard ran)
gives the copy phase's weight from the free energy. Where the reference's exact chains (32 x
1500 steps, every fifth draw, the same run) cross the barrier, the fraction of their draws in
the copy phase is an independent estimate (its error from the indicator's ESS); where they do
not cross (L = 32: a 21-nat barrier) it is only the start families' 50 / 50 split, and the free
energy is the only estimate there is. Also printed: the mixture's c_G against the pooled
draws' mean.
"""
import argparse
import time

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

from copyjax import bench, chains  # noqa: E402
from copyjax import exact_posterior as X  # noqa: E402
from copyjax import theory  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, nargs="+", default=[16, 20, 32])
    ap.add_argument("--V", type=int, default=32)
    a = ap.parse_args(argv)
    for L in a.L:
        t0 = time.perf_counter()
        P = int(round(theory.transition_points(L, a.V, "softmax", form="posterior").P_star))
        task = bench.Task(L, a.V, "softmax", P, 0)
        ref = bench.reference(task, phases=True, phase_steps=1800, phase_chains=4)
        ph = ref.phases
        run = X.sample_exact_posterior(jax.random.key(0), task.stats(), task.hyper, "softmax", n_chains=32,
                                       num_steps=1500, thin=5)
        x = np.asarray(run.samples.draws["cG"], float)
        ind = (x >= ph.divide).astype(float)
        s = chains.summarize(ind)
        changes = int(np.abs(np.diff(ind, axis=1)).sum())
        z = (ph.weights[1] - s.mean) / np.hypot(ph.weights_sd[1], s.mcse)
        print(f"L = {L}, P = {P}: copy weight {ph.weights[1]:.3f} +- {ph.weights_sd[1]:.3f} (free energy) | exact "
              f"chains' copy fraction {s.mean:.3f} +- {s.mcse:.3f} (ESS {s.ess:.0f}, {changes} phase changes"
              f"{'' if changes else ': their start split, not an estimate'}), z {z:+.2f} | mixture c_G "
              f"{ref.summary_cG.mean:.4f} +- {ref.summary_cG.mcse:.4f}, pooled draws {x.mean():.4f} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
