"""Validate the reduced theory against the exact posterior exp(-S_P(G)) on sampled data.

    python scripts/validate_theory.py [--LV 16,8 32,8] [--n-P 8] [--chains 64] [--steps 1500]
                                      [--out results/validate]

For each (L, V), activation and P (n-P log-spaced values across the posterior-form
transitions), it samples G from the exact marginal posterior of one fixed sampled data set
(copyjax.exact_posterior: Adam warm-up, then blackjax MALA on all L^2 entries with the step
of each chain tuned by dual averaging during the burn-in; half of the chains started from the
prior, half from the copy pattern), and compares the
posterior mean and sd of the order parameters and the expected training loss with
(a) the MAP form of the reduced theory (global minimum) and (b) its posterior form sampled
in order-parameter space (NUTS, copyjax.op_posterior). Writes validate.json and prints a
markdown table (the one in docs/theory.md section 11).
"""
import argparse
import os
import sys
import time

from _cli import lv_pair, nonneg_int, positive_int


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--LV", type=lv_pair, nargs="+", default=[(16, 8), (32, 8)],
                    help="L,V pairs (default 16,8 32,8)")
    ap.add_argument("--activation", choices=["softmax", "linear", "both"], default="both")
    ap.add_argument("--n-P", type=positive_int("--n-P"), default=8, help="P values per transition")
    ap.add_argument("--chains", type=positive_int("--chains"), default=64, help="MALA chains on G")
    ap.add_argument("--steps", type=positive_int("--steps"), default=1500, help="MALA steps per chain")
    ap.add_argument("--thin", type=positive_int("--thin"), default=10)
    ap.add_argument("--op-chains", type=positive_int("--op-chains"), default=32,
                    help="NUTS chains in order-parameter space")
    ap.add_argument("--seed", type=nonneg_int("--seed"), default=0)
    ap.add_argument("--out", default=os.path.join("results", "validate"))
    return ap


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    if a.steps < 3 * a.thin:
        ap.error("--steps must be at least 3 x --thin")
    try:
        os.makedirs(a.out, exist_ok=True)
    except OSError as e:
        ap.error(f"--out {a.out!r} is not writable: {e}")

    import jax

    jax.config.update("jax_enable_x64", True)
    import numpy as np
    from tqdm.auto import tqdm

    import copyjax as cj
    from copyjax import op_posterior as O
    from copyjax import exact_posterior as X
    from copyjax.results import write_json
    from copyjax.theory import minimum_loss

    acts = ["softmax", "linear"] if a.activation == "both" else [a.activation]
    key = jax.random.key(a.seed)
    rows, t0 = [], time.time()
    jobs = []
    for L, V in a.LV:
        for act in acts:
            tp = cj.transition_points(L, V, act, form="posterior")
            if act == "softmax":
                Pc = tp.P_star or tp.P_steepest
                Ps = Pc * np.geomspace(1 / 3, 3, a.n_P)
            else:
                Ps = np.geomspace(tp.P_onset / 3, (tp.P_cross or tp.P_onset) * 3, a.n_P)
            jobs += [(L, V, act, float(np.round(P))) for P in Ps]
    for i, (L, V, act, P) in enumerate(tqdm(jobs, desc="exact posterior vs theory")):
        t1 = time.time()
        h = cj.default_hyper(act, L)
        k = jax.random.fold_in(key, i)
        stats = cj.sufficient_stats(cj.sample_tokens(jax.random.fold_in(k, 0), int(P), L, V), V)
        run = X.sample_exact_posterior(jax.random.fold_in(k, 1), stats.astype(jax.numpy.float64), h, act,
                                       n_chains=a.chains, num_steps=a.steps, thin=a.thin)
        ex = X.summarize_exact(run, ("c1", "cG", "loss"))
        branch = {"prior_start": ex.cG.prior.mean, "copy_start": ex.cG.copy.mean}
        eps = float(np.median(run.step_size))
        ms = cj.minima(P, L, V, act, h, "map")
        best = min(ms, key=lambda m: m.action)
        op = O.op_summary(O.sample_op_posterior(jax.random.fold_in(k, 2), P, L, V, act, h,
                                                n_chains=a.op_chains, n_draws=100, n_warmup=50))
        row = {"L": L, "V": V, "activation": act, "P": P, "mala_step": eps,
               "exact": ex.to_json(), "exact_cG_by_start": branch,
               "map": {"c1": best.c1, "cG": best.cG, "loss": minimum_loss(best, P, L, V, act, h, "map"),
                       "n_minima": len(ms)},
               "posterior_form": {q: getattr(op, q).to_json() for q in ("c1", "cG", "loss")}
               | {"weights": list(op.weights)},
               "seconds": time.time() - t1}
        rows.append(row)
        write_json(os.path.join(a.out, "validate.json"), {"rows": rows, "args": dict(vars(a))})

    print("\n| L | V | act | P | exact c_1, c_G (sd c_G) | c_G prior / copy starts | R-hat c_G | "
          "posterior form c_1, c_G (sd c_G) | MAP c_1, c_G | loss: exact / post. form / MAP |")
    print("|---:|---:|---|---:|---|---|---:|---|---|---|")
    for r in rows:
        e, p, m = r["exact"], r["posterior_form"], r["map"]
        print(f"| {r['L']} | {r['V']} | {r['activation']} | {r['P']:.0f} | "
              f"{e['c1']['mean']:.3f}, {e['cG']['mean']:.3f} ({e['cG']['sd']:.3f}) | "
              f"{r['exact_cG_by_start']['prior_start']:.3f} / {r['exact_cG_by_start']['copy_start']:.3f} | "
              f"{e['cG']['rhat']:.2f} | {p['c1']['mean']:.3f}, {p['cG']['mean']:.3f} ({p['cG']['sd']:.3f}) | "
              f"{m['c1']:.3f}, {m['cG']:.3f} | "
              f"{e['loss']['mean']:.4f} / {p['loss']['mean']:.4f} / {m['loss']:.4f} |")
    print(f"\n{len(rows)} points in {time.time() - t0:.0f} s; wrote {os.path.join(a.out, 'validate.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
