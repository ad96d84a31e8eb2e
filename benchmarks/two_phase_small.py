"""The free energy inside a two-phase window, against two independent references, at a size
where plain chains still cross the barrier (softmax, L = 20, V = 32): umbrella + MBAR
(``free_energy.softmax_phase_weights``), long plain exact-posterior chains (their histogram
of a_G and the fraction of draws in each phase) and the theory's quadrature profile
(``op_posterior.softmax_aG_profile``), bin by bin.

    python benchmarks/two_phase_small.py                 # the table of docs/free_energy.md
    python benchmarks/two_phase_small.py --planted       # + the planted bugs of docs/testing.md

``--planted`` reruns the umbrella on the posterior of ``P x 0.97`` sequences (a transition
shifted by 3 %, equivalently a likelihood tempered by 0.97) and recombines the original run
with kappa mismatched (x 0.5, x 2): what ``tests/test_free_energy.py::
test_two_phase_window_at_L20_against_plain_chains_and_the_theory`` must and need not catch.
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
from copyjax import op_posterior as OP  # noqa: E402
from copyjax.chains import summarize  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--L", type=int, default=20)
    ap.add_argument("--V", type=int, default=32)
    ap.add_argument("--P", type=int, default=1742, help="default: the theory's equal-mass point at L = 20, V = 32")
    ap.add_argument("--chains", type=int, default=64, help="plain chains")
    ap.add_argument("--steps", type=int, default=6000, help="plain chains' steps")
    ap.add_argument("--umbrella-steps", type=int, default=900)
    ap.add_argument("--chains-per-window", type=int, default=2)
    ap.add_argument("--planted", action="store_true")
    a = ap.parse_args(argv)
    L, V, P = a.L, a.V, a.P
    h = cj.default_hyper("softmax", L)
    stats = cj.sampled_stats(jax.random.key(0), P, L, V).astype(jnp.float32)
    win = FE.softmax_windows(L)
    one = jax.devices()[:1]

    t0 = time.perf_counter()
    pr, rec, run = FE.softmax_phase_weights(jax.random.key(2), stats, h, num_steps=a.umbrella_steps,
                                            chains_per_window=a.chains_per_window, devices=one)
    t1 = time.perf_counter()
    plain = X.sample_exact_posterior(jax.random.key(1), stats, h, "softmax", n_chains=a.chains, num_steps=a.steps,
                                     thin=5, devices=one)
    t2 = time.perf_counter()
    th = OP.softmax_aG_profile(P, L, V, win.edges, win.divide, h)
    t3 = time.perf_counter()

    aG = np.asarray(plain.samples.draws["cG"])
    phase = (aG >= win.divide).astype(float)
    s = summarize(phase)
    p, p_se = s.mean, s.mcse
    lr_plain, lr_plain_sd = np.log(p / (1 - p)), p_se / (p * (1 - p))
    m = summarize(aG)
    cnt, _ = np.histogram(aG.ravel(), win.edges)
    F_plain = -np.log(np.where(cnt > 0, cnt, np.nan) / np.diff(win.edges))
    F_plain -= np.nanmin(F_plain)
    Ft = np.asarray(th.F)
    z = (pr.log_ratio - lr_plain) / np.hypot(pr.log_ratio_sd, lr_plain_sd)

    print(f"softmax L={L} V={V} P={P}, data seed 0; umbrella {len(win.centers)} windows x "
          f"{a.chains_per_window} chains x {a.umbrella_steps} steps ({t1 - t0:.0f} s), plain {a.chains} chains x "
          f"{a.steps} steps ({t2 - t1:.0f} s), theory quadrature ({t3 - t2:.0f} s)")
    print(f"plain chains: {int(np.abs(np.diff(phase, axis=1)).sum())} crossings of a_G = {win.divide:.3f}, "
          f"ESS of the phase indicator {s.ess:.0f}, R-hat {s.rhat:.2f}")
    print()
    print("| | umbrella + MBAR | plain chains | theory (quadrature) |")
    print("|---|---:|---:|---:|")
    print(f"| log(copy / pooling) | {pr.log_ratio:+.2f} ± {pr.log_ratio_sd:.2f} | {lr_plain:+.2f} ± {lr_plain_sd:.2f} "
          f"| {th.log_ratio:+.2f} |")
    print(f"| copy mass | {pr.weights[1]:.3f} ± {pr.weights_sd[1]:.3f} | {p:.3f} ± {p_se:.3f} "
          f"| {1 / (1 + np.exp(-th.log_ratio)):.3f} |")
    print(f"| posterior mean a_G | {pr.mean:.3f} ± {pr.mean_sd:.3f} | {m.mean:.3f} ± {m.mcse:.3f} | |")
    tm = FE.local_minima(Ft)
    print(f"| minima of F (a_G) | {', '.join(f'{c:.3f}' for c in pr.minima_centres)} "
          f"| {', '.join(f'{c:.3f}' for c in FE.bin_centres(win.edges, FE.local_minima(F_plain, depth=1.0)))} "
          f"| {', '.join(f'{c:.3f}' for c in FE.bin_centres(win.edges, tm))} |")
    print(f"| barrier (nats) | {pr.barrier:.2f} | {FE.barrier_height(F_plain, FE.local_minima(F_plain, depth=1.0)):.2f} "
          f"| {FE.barrier_height(Ft, tm):.2f} |")
    print(f"\numbrella vs plain log-odds: z = {z:+.2f} (combined error)")
    print()
    print("| a_G | F umbrella | F plain (draws in bin) | F theory |")
    print("|---:|---:|---:|---:|")
    for j in range(0, len(win.edges) - 1, 2):
        if np.isfinite(pr.F[j]) and Ft[j] < 12:
            fp = f"{F_plain[j]:.2f} ({cnt[j]})" if cnt[j] else "- (0)"
            print(f"| {0.5 * (win.edges[j] + win.edges[j + 1]):.3f} | {pr.F[j]:.2f} ± {pr.F_sd[j]:.2f} | {fp} "
                  f"| {Ft[j]:.2f} |")


    def excess(q):
        ok = np.isfinite(q.F) & (Ft < 8)
        return float(np.max(np.abs(q.F - Ft)[ok] - 4 * q.F_sd[ok] - 0.5))


    if a.planted:
        print("\nplanted bugs (the test's checks: |z| < 4 on the log-odds against the plain chains; "
              "F within 4 sd + 0.5 nat of the theory, excess < 0)")
        print("| bug | log-odds | z vs plain | F excess (nats) | minima |")
        print("|---|---:|---:|---:|---|")
        rows = [("none", pr)]
        for k in (0.5, 2.0):
            rows.append((f"MBAR energies with kappa x {k}",
                         FE.profile(FE.recombine(run._replace(kappa=run.kappa * k)), run, 0, win.edges, win.divide)))
        bad, _, _ = FE.softmax_phase_weights(jax.random.key(2), stats * 0.97, h, num_steps=a.umbrella_steps,
                                             chains_per_window=a.chains_per_window, devices=one)
        rows.append(("posterior of P x 0.97 (shifted transition)", bad))
        for name, q in rows:
            zq = (q.log_ratio - lr_plain) / np.hypot(q.log_ratio_sd, lr_plain_sd)
            print(f"| {name} | {q.log_ratio:+.2f} ± {q.log_ratio_sd:.2f} | {zq:+.1f} | {excess(q):+.2f} "
                  f"| {', '.join(f'{c:.3f}' for c in q.minima_centres)} |")


if __name__ == "__main__":
    main()
