"""SGLD chain throughput on the network posterior at L = 64, V = 32.

    python benchmarks/throughput.py [--chains 1 16 256 1024 4096] [--steps 20]

Measures, in one run: chain-steps per second against the number of chains for the exact
statistics gradient and the minibatch gradient; the statistics path against the
per-sequence full-batch path at P = 4096 and 65536; vmapped chains against the same chains
run one after another; the achieved FLOP/s of the batched chain contraction against a plain
jnp.matmul of the same shape; compile times. Ratios are from this one run.
"""
import argparse

import jax
import jax.numpy as jnp

import copyjax as cj  # noqa: E402
from copyjax import network as N  # noqa: E402
from copyjax import samplers as S  # noqa: E402
from _timing import best_time, chain_rate  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=64)
    ap.add_argument("--V", type=int, default=32)
    ap.add_argument("--chains", type=int, nargs="+", default=[1, 16, 256, 1024, 4096])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq-Ps", type=int, nargs="+", default=[4096, 65536])
    ap.add_argument("--seq-chains", type=int, default=4)
    ap.add_argument("--vmap-chains", type=int, default=1024)
    a = ap.parse_args(argv)
    L, V, act = a.L, a.V, "softmax"
    h = cj.default_hyper(act, L)
    dev = jax.devices()[0]
    print(f"# device: {dev.platform} ({dev.device_kind}), {len(jax.devices())} device(s), L={L}, V={V}, float32")
    key = jax.random.key(0)
    P = 4096
    tokens = cj.streamed_tokens(key, P, L, V)
    stats = cj.sufficient_stats(tokens, V).astype(jnp.float32)
    data = {"stats": stats, "step_size": jnp.float32(1e-4)}
    data_mb = {"stats": stats, "tokens": tokens, "step_size": jnp.float32(1e-4)}
    exact = S.NetworkSampler(h, act, "sgld")
    mini = S.NetworkSampler(h, act, "sgld", a.batch)
    inits = lambda n: jax.vmap(lambda k: N.init_params(k, L, V, h))(jax.random.split(key, n))

    print("\n| chains | exact stats path (chain-steps/s) | compile (s) | minibatch b=%d (chain-steps/s) | compile (s) |" % a.batch)
    print("|---:|---:|---:|---:|---:|")
    rates = {}
    for n in a.chains:
        c1, r1 = chain_rate(exact, inits(n), a.steps, data)
        c2, r2 = chain_rate(mini, inits(n), a.steps, data_mb)
        rates[n] = r1
        print(f"| {n} | {r1:,.0f} | {c1:.1f} | {r2:,.0f} | {c2:.1f} |", flush=True)

    print("\n| P | stats path (chain-steps/s) | per-sequence full batch (chain-steps/s) | ratio |")
    print("|---:|---:|---:|---:|")
    for Pq in a.seq_Ps:
        toks = cj.streamed_tokens(jax.random.key(Pq), Pq, L, V)
        st = cj.sufficient_stats(toks, V).astype(jnp.float32)
        init = inits(a.seq_chains)
        _, r_stats = chain_rate(exact, init, a.steps, {"stats": st, "step_size": jnp.float32(1e-4)})
        # per-sequence path: the same SGLD kernel, gradient by autodiff of the naive loss
        grad = jax.grad(lambda p: cj.log_posterior(p.W, p.G, toks, h, act))
        alg = S.sgld_from_grad(lambda k, p: grad(p), 1e-4)
        _, r_seq = chain_rate(alg, init, max(2, a.steps // 10))
        print(f"| {Pq} | {r_stats:,.0f} | {r_seq:,.1f} | {r_stats / r_seq:,.0f} |", flush=True)

    n = a.vmap_chains
    _, r_one = chain_rate(exact, inits(1), a.steps, data)
    r_vm = rates.get(n) or chain_rate(exact, inits(n), a.steps, data)[1]
    print(f"\nvmapped {n} chains: {r_vm:,.0f} chain-steps/s; one chain at a time: {r_one:,.0f} "
          f"chain-steps/s; speed-up {r_vm / r_one:,.0f}x")

    # FLOP/s of the batched chain contraction (the O(L^2 V^2) hot spot) vs plain matmul
    pair = jax.random.normal(key, (n * 2, L * L), jnp.float32)
    Cm = stats.reshape(L * L, V * V)
    contract = jax.jit(lambda p, C: jnp.einsum("km,mv->kv", p, C))
    plain = jax.jit(lambda x, y: jnp.matmul(x, y))
    x = jax.random.normal(key, (n * 2, L * L), jnp.float32)
    y = jax.random.normal(key, (L * L, V * V), jnp.float32)
    flops = 2 * (n * 2) * (L * L) * (V * V)
    _, t_c = best_time(contract, pair, Cm)
    _, t_m = best_time(plain, x, y)
    print(f"batched contraction ({n} chains): {flops / t_c / 1e9:.1f} GFLOP/s; plain jnp.matmul "
          f"same shape: {flops / t_m / 1e9:.1f} GFLOP/s; ratio {t_m / t_c:.0%}")


if __name__ == "__main__":
    main()
