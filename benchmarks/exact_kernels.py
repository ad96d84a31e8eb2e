"""Which kernel for the exact posterior of G at L = 64: ESS of the copy order parameter per
gradient evaluation and per second.

    python benchmarks/exact_kernels.py [--L 64] [--V 32] [--chains 16] [--steps 600]

On one sampled data set per case (softmax above its transition, linear between onset and
crossover), all chains from the prior, the second half of the run recorded:

* adaptive MALA with the pooling / copy directions rescaled (copyjax.exact_posterior, the
  default), and without that preconditioning;
* blackjax NUTS after blackjax's window adaptation (step size and diagonal inverse mass
  matrix) run per chain, vmapped; gradient evaluations counted from its integration steps.

ESS and R-hat of a_G (|c_G| for linear) over all chains (numpyro ESS, blackjax R-hat).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from _cli import positive_int  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=positive_int("--L"), default=64)
    ap.add_argument("--V", type=positive_int("--V"), default=32)
    ap.add_argument("--chains", type=positive_int("--chains"), default=16)
    ap.add_argument("--steps", type=positive_int("--steps"), default=600, help="MALA steps (half recorded)")
    ap.add_argument("--nuts-steps", type=positive_int("--nuts-steps"), default=100,
                    help="NUTS warm-up steps and as many draws")
    ap.add_argument("--no-nuts", action="store_true", help="MALA rows only")
    a = ap.parse_args(argv)

    import blackjax  # noqa: E402
    import jax  # noqa: E402
    import jax.numpy as jnp  # noqa: E402
    import numpy as np  # noqa: E402

    jax.config.update("jax_enable_x64", True)
    import copyjax as cj  # noqa: E402
    from copyjax import chains as C  # noqa: E402
    from copyjax import exact_posterior as X  # noqa: E402
    from copyjax.action import marginal_logdensity  # noqa: E402

    L, V = a.L, a.V
    cases = [("softmax", 8973), ("linear", 5095)]
    print("| case | kernel | grad evals / chain | wall s | ESS | R-hat | ESS / 1000 grads | ESS / s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for act, P in cases:
        h = cj.default_hyper(act, L)
        stats = cj.sampled_stats(jax.random.key(P), P, L, V).astype(jnp.float32)
        G0 = X.start_positions(jax.random.key(1), a.chains, 0, L, h, act, jnp.float64)
        warm = X.default_warmup_steps(act)
        if warm:
            G0 = X.optimise_starts(G0, stats, h, act, warm, X.default_warmup_lr(act, h))
        obs = lambda G: cj.reported_order_parameters(cj.attention(G.astype(jnp.float32), act), act)["cG"]
        for name, pre in (("adaptive MALA, preconditioned", True), ("adaptive MALA", False)):
            data = {"stats": stats, "step_size": jnp.asarray(X.default_initial_step(act, h), jnp.float64)}
            t = time.perf_counter()
            s = C.run_chains(jax.random.key(2), X.ExactSampler(h, act, a.steps // 2, 0.57, pre), G0,
                             lambda G, d: {"cG": obs(G)}, data, schedule=C.Schedule(a.steps, a.steps // 2))
            wall = time.perf_counter() - t
            summ = C.summarize(s.draws["cG"])
            grads = a.steps + warm
            print(f"| {act} P={P} | {name} | {grads} | {wall:.0f} | {summ.ess:.0f} | {summ.rhat:.3f} | "
                  f"{1000 * summ.ess / (grads * a.chains):.2f} | {summ.ess / wall:.1f} |", flush=True)

        if a.no_nuts:
            continue
        lp = lambda G: marginal_logdensity(G, stats, h, act)

        def one_chain(key, G):
            k1, k2 = jax.random.split(key)
            adapt = blackjax.window_adaptation(blackjax.nuts, lp, is_mass_matrix_diagonal=True)
            (state, params), ainfo = adapt.run(k1, G, num_steps=a.nuts_steps)
            kernel = blackjax.nuts(lp, **params)

            def body(st, k):
                st, info = kernel.step(k, st)
                return st, (obs(st.position), info.num_integration_steps)

            _, (x, n) = jax.lax.scan(body, state, jax.random.split(k2, a.nuts_steps))
            return x, jnp.sum(n) + jnp.sum(ainfo.info.num_integration_steps)

        t = time.perf_counter()
        x, n = jax.jit(jax.vmap(one_chain))(jax.random.split(jax.random.key(3), a.chains), G0)
        x = np.asarray(x)
        wall = time.perf_counter() - t
        summ = C.summarize(x)
        grads = float(np.mean(n)) + warm
        print(f"| {act} P={P} | NUTS (window adaptation, diagonal mass) | {grads:.0f} | {wall:.0f} | "
              f"{summ.ess:.0f} | {summ.rhat:.3f} | {1000 * summ.ess / (grads * a.chains):.2f} | "
              f"{summ.ess / wall:.1f} |", flush=True)


if __name__ == "__main__":
    main()
