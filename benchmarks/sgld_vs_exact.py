"""SGLD on (W, G) against the exact posterior of G (W integrated out): bias and relaxation.

    python benchmarks/sgld_vs_exact.py [--L 16 32 64] [--V 32] [--chains 16] [--steps 800]
                                       [--relax-steps 3000] [--out results/sgld_vs_exact]

For each L, activation and two P (below and above the transition: 0.5 and 2.5 x the MAP
form's P* for softmax, 0.5 x P_1 and 3 x P_x for linear), on one sampled data set:

1. exact reference: ``copyjax.exact_posterior`` (Adam warm-up, per-chain adaptive MALA, prior
   and copy starts): mean, sd and MCSE of a_G (|c_G| for linear), |rho| and the loss;
2. drift: SGLD chains started at exact joint draws (G from the exact chains, W from its
   Gaussian conditional) for ``--steps`` steps, the second half recorded, at step sizes
   4x, 1x and 1/4x the automatic one (0.05 / largest curvature in W), full batch, and at the
   automatic step with minibatches of ``--batch`` sequences: SGLD mean - exact mean (in
   units of the combined standard error) and SGLD sd / exact sd;
3. relaxation (the P above the transition): chains from the prior; the first recorded
   step (and its wall time) at which the mean over chains is within 2 standard errors of the
   exact mean, for SGLD (automatic step), pSGLD (step 1e-3, preconditioner frozen after a
   fifth of the run) and the exact-marginal sampler (``--exact-steps`` steps, counting its
   Adam warm-up steps for softmax).

Writes ``OUT/sgld_vs_exact.json`` and prints the markdown tables of docs/sampling.md.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from _cli import positive_int  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=positive_int("--L"), nargs="+", default=[16, 32, 64])
    ap.add_argument("--V", type=positive_int("--V"), default=32)
    ap.add_argument("--activation", choices=["softmax", "linear", "both"], default="both")
    ap.add_argument("--chains", type=positive_int("--chains"), default=16)
    ap.add_argument("--exact-chains", type=positive_int("--exact-chains"), default=32)
    ap.add_argument("--exact-steps", type=positive_int("--exact-steps"), default=600)
    ap.add_argument("--steps", type=positive_int("--steps"), default=800, help="SGLD steps from exact draws")
    ap.add_argument("--batch", type=positive_int("--batch"), default=64, help="minibatch size (sequences)")
    ap.add_argument("--relax-steps", type=positive_int("--relax-steps"), default=3000)
    ap.add_argument("--psgld-step", type=float, default=1e-3)
    ap.add_argument("--out", default=os.path.join("results", "sgld_vs_exact"))
    a = ap.parse_args(argv)
    if min(a.L) < 2 or a.V < 2:
        ap.error("--L and --V must be >= 2")
    if a.exact_chains < 4 or a.exact_steps < 30:
        ap.error("--exact-chains must be >= 4 and --exact-steps >= 30")
    os.makedirs(a.out, exist_ok=True)

    import jax  # noqa: E402
    import jax.numpy as jnp  # noqa: E402
    import numpy as np  # noqa: E402

    jax.config.update("jax_enable_x64", True)
    import copyjax as cj  # noqa: E402
    from copyjax import chains as C  # noqa: E402
    from copyjax import exact_posterior as X  # noqa: E402
    from copyjax import network as N  # noqa: E402
    from copyjax import samplers as S  # noqa: E402
    from copyjax import training  # noqa: E402
    from copyjax.data import streamed_tokens  # noqa: E402
    from copyjax.point.exact_chains import EXACT_KEYS, exact_joint_starts, exact_thin  # noqa: E402
    from copyjax.hyper import auto_step_size  # noqa: E402
    from copyjax.results import write_json  # noqa: E402

    acts = ["softmax", "linear"] if a.activation == "both" else [a.activation]
    rows, relax = [], []


    def grid(L, act, h):
        tp = cj.transition_points(L, a.V, act, h, "map")
        if act == "softmax":
            Pc = tp.P_star or tp.P_steepest
            return [("below", 0.5 * Pc), ("above", 2.5 * Pc)]
        return [("below", 0.5 * tp.P_onset), ("above", 3.0 * (tp.P_cross or tp.P_onset))]


    def timed_chains(*args, **kw):
        t = time.perf_counter()
        s = C.run_chains(*args, **kw)
        jax.block_until_ready(s.final)
        return s, time.perf_counter() - t


    def first_within(traj, target, tol):
        """Index of the first recorded mean within tol of target (None if never)."""
        hit = np.flatnonzero(np.abs(traj - target) <= tol)
        return None if hit.size == 0 else int(hit[0])


    t_all = time.perf_counter()
    for L in a.L:
        for act in acts:
            h = cj.default_hyper(act, L)
            obs = N.Observer(h, act, ("cG", "abs_rho", "loss"))
            for where, P in grid(L, act, h):
                P = int(round(P))
                key = jax.random.key(1000 * L + P)
                k_data, k_ex, k_w, k_run = jax.random.split(key, 4)
                stats = cj.sampled_stats(k_data, P, L, a.V).astype(jnp.float32)
                t = time.perf_counter()
                ex = X.sample_exact_posterior(k_ex, stats, h, act, n_chains=a.exact_chains,
                                              num_steps=a.exact_steps, thin=exact_thin(a.exact_steps))
                es = X.summarize_exact(ex, EXACT_KEYS[act])
                ref = es.cG if not es.branches_disagree else getattr(es.cG, "prior" if where == "below" else "copy")
                # SGLD from exact joint draws
                start = exact_joint_starts(k_w, ex, a.chains, stats, h, act)
                auto = auto_step_size(P, a.V, h)
                configs = [(f, None) for f in (4.0, 1.0, 0.25)] + [(1.0, a.batch)]
                for factor, batch in configs:
                    eps = factor * auto
                    data = {"stats": stats, "step_size": jnp.asarray(eps, jnp.float32)}
                    if batch:
                        data["tokens"] = streamed_tokens(k_data, P, L, a.V)
                    alg = S.NetworkSampler(h, act, "sgld", batch and min(batch, P))
                    s, wall = timed_chains(k_run, alg, start, obs, data,
                                           schedule=C.Schedule(a.steps, a.steps // 2, max(1, a.steps // 100)))
                    sm = C.summarize(s.draws["cG"], s.nonfinite)
                    se = float(np.hypot(sm.mcse, ref.mcse))
                    rows.append({"L": L, "activation": act, "P": P, "where": where, "eps": eps,
                                 "eps_factor": factor, "batch": batch or P, "exact_mean": ref.mean,
                                 "exact_sd": ref.sd, "exact_mcse": ref.mcse,
                                 "exact_branches_disagree": es.branches_disagree,
                                 "sgld_mean": sm.mean, "sgld_sd": sm.sd, "sgld_mcse": sm.mcse,
                                 "drift": sm.mean - ref.mean, "drift_in_se": (sm.mean - ref.mean) / se,
                                 "sd_ratio": sm.sd / ref.sd if ref.sd > 0 else float("nan"),
                                 "n_nonfinite": sm.n_excluded, "wall_s": wall})
                    r = rows[-1]
                    print(f"L={L} {act} P={P} ({where}) eps={eps:.2e} batch={r['batch']}: SGLD {r['sgld_mean']:.4f} "
                          f"vs exact {r['exact_mean']:.4f} (drift {r['drift']:+.4f} = {r['drift_in_se']:+.1f} se), "
                          f"sd ratio {r['sd_ratio']:.2f}", flush=True)
                if where != "above":
                    continue
                # relaxation from the prior
                n = a.chains
                tol = 2 * float(np.hypot(ref.mcse, ref.sd / np.sqrt(n)))
                thin = max(1, a.relax_steps // 100)
                init = training.init_ensemble(jax.random.fold_in(k_run, 1), n, L, a.V, h, act, "prior")
                data = {"stats": stats, "step_size": jnp.asarray(auto, jnp.float32)}
                res = {"L": L, "activation": act, "P": P, "exact_mean": ref.mean, "tolerance": tol}
                for name, alg, d in (
                        ("SGLD", S.NetworkSampler(h, act, "sgld"), data),
                        ("pSGLD", C.Fixed(S.psgld(stats, h, act, a.psgld_step, adapt_steps=a.relax_steps // 5)),
                         None)):
                    s, wall = timed_chains(k_run, alg, init, obs if d is not None else
                                           C.PositionObserver(lambda p: N.observables(p, stats, h, act)),
                                           d, schedule=C.Schedule(a.relax_steps, thin=thin))
                    traj = s.draws["cG"][~s.nonfinite].mean(0)
                    i = first_within(traj, ref.mean, tol)
                    res[name] = {"steps": None if i is None else (i + 1) * thin,
                                 "seconds": None if i is None else wall * (i + 1) / len(traj),
                                 "final": float(traj[-1]), "budget": a.relax_steps, "wall_s": wall}
                # the exact sampler from the same kind of start: Adam warm-up, then adaptive MALA
                G0 = X.start_positions(jax.random.fold_in(k_run, 2), n, 0, L, h, act, jnp.float64)
                t = time.perf_counter()
                warm = X.default_warmup_steps(act)
                Gw = (jax.block_until_ready(X.optimise_starts(G0, stats, h, act, warm, X.default_warmup_lr(act, h)))
                      if warm else G0)
                t_w = time.perf_counter() - t
                steps_x = a.exact_steps
                dx = {"stats": stats, "step_size": jnp.asarray(X.default_initial_step(act, h), jnp.float64)}
                s, wall = timed_chains(k_run, X.ExactSampler(h, act, steps_x // 3, 0.57, act == "linear"), Gw,
                                       X.ExactObserver(h, act), dx, schedule=C.Schedule(steps_x, thin=10))
                traj = np.concatenate([[float(np.mean(cj.reported_order_parameters(
                    cj.attention(Gw.astype(stats.dtype), act), act)["cG"]))], s.draws["cG"].mean(0)])
                i = first_within(traj, ref.mean, tol)
                res["exact MALA"] = {"steps": None if i is None else warm + i * 10,
                                     "seconds": None if i is None else t_w + wall * i / (len(traj) - 1),
                                     "final": float(traj[-1]), "budget": warm + steps_x, "wall_s": t_w + wall}
                relax.append(res)
                print(f"relaxation L={L} {act} P={P}: " + ", ".join(
                    f"{k} {v['steps']} steps / {v['seconds'] if v['seconds'] is None else round(v['seconds'], 1)} s"
                    for k, v in res.items() if isinstance(v, dict)), flush=True)
                write_json(os.path.join(a.out, "sgld_vs_exact.json"), {"args": vars(a), "drift": rows, "relaxation": relax})

    write_json(os.path.join(a.out, "sgld_vs_exact.json"), {"args": vars(a), "drift": rows, "relaxation": relax,
                                                           "wall_s": time.perf_counter() - t_all})
    print(f"\n## SGLD from exact joint draws: drift from the exact posterior ({a.steps} steps, "
          f"second half recorded, {a.chains} chains)\n")
    print("| L | act | P | step (x auto) | batch | exact a_G / abs(c_G) | SGLD | drift (se) | sd SGLD / exact |")
    print("|---:|---|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['L']} | {r['activation']} | {r['P']} ({r['where']}) | {r['eps']:.2e} ({r['eps_factor']:g}) | "
              f"{r['batch']} | {r['exact_mean']:.4f} ± {r['exact_mcse']:.4f} | {r['sgld_mean']:.4f} | "
              f"{r['drift']:+.4f} ({r['drift_in_se']:+.1f}) | {r['sd_ratio']:.2f} |")
    print(f"\n## Relaxation from the prior: steps (seconds) until the chain mean is within 2 se of the "
          f"exact mean ({a.chains} chains)\n")
    print("| L | act | P | exact | SGLD | pSGLD | exact-marginal MALA (incl. Adam warm-up) |")
    print("|---:|---|---:|---:|---|---|---|")
    fmt = lambda v: (f"{v['steps']} ({v['seconds']:.1f} s)" if v["steps"] is not None
                     else f"not in {v['budget']} (at {v['final']:.3f})")
    for r in relax:
        print(f"| {r['L']} | {r['activation']} | {r['P']} | {r['exact_mean']:.3f} | {fmt(r['SGLD'])} | "
              f"{fmt(r['pSGLD'])} | {fmt(r['exact MALA'])} |")
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s")


if __name__ == "__main__":
    main()
