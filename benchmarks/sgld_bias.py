"""SGLD bias against exact answers.

    python benchmarks/sgld_bias.py

1. Gaussian target N(m, 1): stationary variance of SGLD vs step size (theory 1/(1 - eps/2)),
   and the fitted order of the bias.
2. Network posterior at L = 4, V = 3, P = 20 (softmax): mean and sd of a_G from SGLD on (W, G)
   (full batch and minibatch) vs blackjax MALA on the exact marginal exp(-S_P(G)), for several
   step sizes and batch sizes, with Monte Carlo standard errors from blackjax's ESS.
"""
import jax
import jax.numpy as jnp
import numpy as np

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
    s = C.run_chains(jax.random.key(0), S.sgld_from_grad(lambda k, x: -(x - m), eps),
                     jnp.zeros((4096, 2)), lambda x: {"a": x[0], "b": x[1]},
                     num_steps=2200, burn_in=200, thin=5)
    x = np.stack([s.draws["a"], s.draws["b"]], -1).reshape(-1, 2)
    v = float(x.var(0).mean())
    bias.append(v - 1)
    print(f"| {eps} | {v:.4f} | {1 / (1 - eps / 2):.4f} | {v - 1:.4f} |")
print(f"\nfitted order of the bias in eps: {np.polyfit(np.log(eps_list), np.log(bias), 1)[0]:.3f}\n")

L, V, P, act = 4, 3, 20, "softmax"
h = cj.default_hyper(act, L)
toks = cj.sample_tokens(jax.random.key(3), P, L, V)
st = cj.sufficient_stats(toks, V).astype(jnp.float64)
n = 512
init = jax.vmap(lambda k: N.init_params(k, L, V, h, jnp.float64))(jax.random.split(jax.random.key(4), n))
ref = C.run_chains(jax.random.key(7), S.mala_marginal(st, h, act, 0.05), init.G,
                   lambda G: {"cG": cj.order_parameters(cj.attention(G, act))[1]},
                   num_steps=6000, burn_in=1000, thin=25)
r = C.summarize(ref.draws["cG"])
print(f"## Network posterior, L={L}, V={V}, P={P}, softmax, {n} chains\n")
print(f"exact marginal (MALA on S_P): a_G mean {r['mean']:.4f} +/- {r['mcse']:.4f}, sd {r['sd']:.4f}, "
      f"R-hat {r['rhat']:.3f}\n")
print("| SGLD | eps | batch | a_G mean | mcse | mean - exact | sd | R-hat |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
obs = lambda p: N.observables(p, st, h, act)
for eps in [1e-2, 5e-3, 2e-3]:
    for batch in [None, 10, 2]:
        alg = (S.sgld(st, h, act, eps) if batch is None else
               S.sgld(None, h, act, eps, tokens=toks, batch_size=batch))
        steps = int(6.0 / eps)
        s = C.run_chains(jax.random.key(6), alg, init, obs, num_steps=steps, burn_in=steps // 4,
                         thin=max(1, steps // 200))
        a = C.summarize(s.draws["cG"], s.divergent)
        print(f"| {'full' if batch is None else 'minibatch'} | {eps} | {batch or P} | {a['mean']:.4f} | "
              f"{a['mcse']:.4f} | {a['mean'] - r['mean']:+.4f} | {a['sd']:.4f} | {a['rhat']:.3f} |",
              flush=True)
