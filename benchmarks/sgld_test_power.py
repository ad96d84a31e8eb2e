"""Power of tests/test_samplers.py::test_sgld_on_network_matches_exact_marginal: SGLD on
(W, G) at the test's settings, correct and with planted bugs, against MALA on the exact
marginal (docs/testing.md, "Planted bugs").

    python benchmarks/sgld_test_power.py [--P 200 --eps 2e-3 --steps 6000]

Prints, per sampler, the mean and sd of c_G and z = (mean - exact mean) / combined MCSE:
`sgld` (correct), `sgld_tempered` (likelihood^0.5), `sgld_noprior` (the prior's gradient
dropped: sigma_w2 = sigma_g2 = 1e6).
"""
import argparse


import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, default=200)
    ap.add_argument("--eps", type=float, default=2e-3)
    ap.add_argument("--steps", type=int, default=6000)
    a = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)

    import copyjax as cj  # noqa: E402
    from copyjax import chains as C, network as N, samplers as S  # noqa: E402

    L, V, act = 4, 3, "softmax"
    h = cj.default_hyper(act, L)
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(3), a.P, L, V), V).astype(jnp.float64)
    init = jax.vmap(lambda k: N.init_params(k, L, V, h, jnp.float64))(jax.random.split(jax.random.key(4), 512))
    obs_G = lambda G: {"cG": cj.order_parameters(cj.attention(G, act))[1]}
    ref = {}
    for name, s in (("exact", st), ("exact, likelihood^0.5", 0.5 * st)):
        r = C.run_algorithm(jax.random.key(7), S.mala_marginal(s, h, act, 0.05), init.G, obs_G,
                            schedule=C.Schedule(3000, 1000, 20))
        ref[name] = C.summarize(r.draws["cG"])
        print(f"{name}: mean {ref[name].mean:.4f}, sd {ref[name].sd:.4f}, mcse {ref[name].mcse:.4f}", flush=True)
    b = ref["exact"]
    print(f"\n| sampler (P = {a.P}, eps = {a.eps}, {a.steps} steps) | mean | sd | z | sd / exact sd |\n|---|---:|---:|---:|---:|")
    for name, s, hh in (("sgld", st, h), ("sgld_tempered", 0.5 * st, h),
                        ("sgld_noprior", st, h._replace(sigma_w2=1e6, sigma_g2=1e6))):
        r = C.run_algorithm(jax.random.key(6), S.sgld(s, hh, act, a.eps), init, lambda p: N.observables(p, st, h, act),
                            schedule=C.Schedule(a.steps, a.steps // 3, 20))
        s_ = C.summarize(r.draws["cG"])
        print(f"| {name} | {s_.mean:.4f} | {s_.sd:.4f} | {(s_.mean - b.mean) / np.hypot(s_.mcse, b.mcse):+.1f} | "
              f"{s_.sd / b.sd:.3f} |", flush=True)


if __name__ == "__main__":
    main()
