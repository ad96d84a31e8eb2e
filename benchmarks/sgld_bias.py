"""SGLD bias against exact answers.

    python benchmarks/sgld_bias.py

1. Gaussian target N(m, 1): stationary variance of SGLD vs step size (theory 1/(1 - eps/2)),
   and the fitted order of the bias.
2. Network posterior at L = 4, V = 3, P = 20 (softmax), at equilibrium: SGLD on (W, G) (full
   batch and minibatch) started from exact joint posterior draws (G by blackjax MALA on
   exp(-S_P(G)), W from its Gaussian conditional), mean and sd of a_G vs the exact ones, for
   several step sizes and batch sizes; standard errors from independent chains.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np


def main(argv=None):
    argparse.ArgumentParser(description="SGLD bias against exact answers (no options)").parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    import copyjax as cj  # noqa: E402
    from copyjax import chains as C  # noqa: E402
    from copyjax import network as N  # noqa: E402
    from copyjax import samplers as S  # noqa: E402

    m = jnp.array([1.0, -2.0])
    print("## Gaussian N(m, 1), 4096 chains x 400 draws\n")
    print("| eps | variance | theory 1/(1-eps/2) | bias |")
    print("|---:|---:|---:|---:|")
    eps_list, bias = [0.025, 0.05, 0.1, 0.2], []
    for eps in eps_list:
        s = C.run_algorithm(jax.random.key(0), S.sgld_from_grad(lambda k, x: -(x - m), eps),
                            jnp.zeros((4096, 2)), lambda x: {"a": x[0], "b": x[1]}, schedule=C.Schedule(2200, 200, 5))
        x = np.stack([s.draws["a"], s.draws["b"]], -1).reshape(-1, 2)
        v = float(x.var(0).mean())
        bias.append(v - 1)
        print(f"| {eps} | {v:.4f} | {1 / (1 - eps / 2):.4f} | {v - 1:.4f} |")
    print(f"\nfitted order of the bias in eps: {np.polyfit(np.log(eps_list), np.log(bias), 1)[0]:.3f}\n")

    L, V, P, act = 4, 3, 20, "softmax"
    h = cj.default_hyper(act, L)
    toks = cj.sample_tokens(jax.random.key(3), P, L, V)
    st = cj.sufficient_stats(toks, V).astype(jnp.float64)
    n = 1024
    init = jax.vmap(lambda k: N.init_params(k, L, V, h, jnp.float64))(jax.random.split(jax.random.key(4), n))
    # Exact joint draws: G from blackjax MALA on exp(-S_P(G)) (one independent draw per chain,
    # its final state), then W from its exact Gaussian conditional.
    ref = C.run_algorithm(jax.random.key(7), S.mala_marginal(st, h, act, 0.05), init.G,
                          lambda G: {"cG": cj.order_parameters(cj.attention(G, act))[1]},
                          schedule=C.Schedule(6000, 1000, 25))
    G0 = ref.final.position
    W0 = jax.vmap(lambda k, G: N.sample_w_posterior(k, cj.attention(G, act), st, h))(
        jax.random.split(jax.random.key(8), n), G0)
    start = N.Params(W0, G0)


    def chain_level(draws):
        """Pooled mean, sd and the standard error from independent chains (sd of chain means
        / sqrt(n)): valid however slowly each chain mixes."""
        cm = draws.mean(1)
        return float(draws.mean()), float(draws.std()), float(cm.std(ddof=1) / np.sqrt(len(cm)))


    rm, rsd, rse = chain_level(ref.draws["cG"])
    print(f"## Network posterior at equilibrium, L={L}, V={V}, P={P}, softmax, {n} chains\n")
    print(f"exact marginal (MALA on S_P, R-hat {C.summarize(ref.draws['cG']).rhat:.3f}): "
          f"a_G mean {rm:.4f} +/- {rse:.4f}, sd {rsd:.4f}\n")
    print("SGLD chains start from exact joint draws of (W, G) and run 4 / eps steps (the first")
    print("1 / eps discarded); a deviation from the exact moments is the step-size / minibatch bias.\n")
    print("| SGLD | eps | batch | a_G mean | se | mean - exact | sd | sd - exact |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    obs = lambda p: N.observables(p, st, h, act)
    for eps in [2e-2, 1e-2, 5e-3, 2.5e-3]:
        for batch in [None, 10, 2]:
            alg = (S.sgld(st, h, act, eps) if batch is None else
                   S.sgld(None, h, act, eps, tokens=toks, batch_size=batch))
            steps = int(4.0 / eps)
            s = C.run_algorithm(jax.random.key(6), alg, start, obs,
                                schedule=C.Schedule(steps, steps // 4, max(1, steps // 200)))
            keep = ~s.nonfinite
            am, asd, ase = chain_level(s.draws["cG"][keep])
            print(f"| {'full' if batch is None else 'minibatch'} | {eps} | {batch or P} | {am:.4f} | "
                  f"{np.hypot(ase, rse):.4f} | {am - rm:+.4f} | {asd:.4f} | {asd - rsd:+.4f} |", flush=True)


if __name__ == "__main__":
    main()
