"""Minibatch SGLD throughput and the exact-vs-minibatch cost model.

    python benchmarks/minibatch.py [--chains 8 64] [--batch 256] [--steps 20] [--no-cost-model]

Part 1 (L = 64, V = 32, P = 5095, softmax, float32, one run): chain-steps per second of SGLD
at 8 and 64 chains (all vmapped in one block unless said) for
  * the one-hot minibatch gradient (the earlier form: blackjax's ``grad_estimator``
    over ``network.sequence_loglik``, which builds (B, L, V) one-hot inputs),
  * ``batch_loglik`` with independent minibatches per chain (``layout="independent"``), all
    chains vmapped in one block and in ``run_chains``' default for it, blocks of 8 chains
    (``NetworkSampler.preferred_chain_block``: a block's working set stays in cache),
  * one minibatch per step shared by all chains (``layout="shared"``),
  * the exact full-batch gradient through the statistics (no minibatch).
Part 2, the cost model: seconds per chain-step of the vmapped gradient alone (64 chains)
for the exact statistics path and for ``batch_loglik`` at each batch size, over a grid of
(L, V); the batch size B* above which the exact gradient is the cheaper one.
"""
import argparse

import blackjax
import jax
import jax.numpy as jnp

import copyjax as cj  # noqa: E402
from copyjax import minibatch, network, samplers  # noqa: E402
from copyjax.model import log_prior  # noqa: E402
from _timing import best_time, chain_rate  # noqa: E402


def one_hot_sgld(tokens, batch, hyper, act, step_size):
    """The minibatch SGLD copyjax had before: blackjax's grad_estimator on the one-hot loss."""
    P = tokens.shape[0]
    est = blackjax.sgmcmc.gradients.grad_estimator(
        lambda p: log_prior(p.W, p.G, hyper),
        lambda p, t: network.sequence_loglik(p, t, hyper, act), P)
    return samplers.sgld_from_estimator(
        est, lambda k: tokens[minibatch.draw_batch(k, P, batch)], step_size)


def throughput(a):
    L, V, P, act, B = 64, 32, a.P, "softmax", a.batch
    h = cj.default_hyper(act, L)
    key = jax.random.key(0)
    tokens = cj.streamed_tokens(key, P, L, V)
    stats = cj.sufficient_stats(tokens, V).astype(jnp.float32)
    eps = 1e-4
    base = {"stats": stats, "step_size": jnp.float32(eps)}
    inits = lambda n: jax.vmap(lambda k: network.init_params(k, L, V, h))(jax.random.split(key, n))
    rows = [
        ("one-hot minibatch (before)", lambda: (one_hot_sgld(tokens, B, h, act, eps), None)),
        ("batch_loglik, independent, all chains in one block",
         lambda: (samplers.NetworkSampler(h, act, "sgld", B), base | {"tokens": tokens}, "all")),
        ("batch_loglik, independent (default: blocks of 8 chains)",
         lambda: (samplers.NetworkSampler(h, act, "sgld", B), base | {"tokens": tokens})),
        ("one shared minibatch per step",
         lambda: (samplers.NetworkSampler(h, act, "sgld", B, layout="shared"),
                  base | {"tokens": tokens, "batch_key": jax.random.key(7)})),
        ("exact full batch (statistics)", lambda: (samplers.NetworkSampler(h, act, "sgld"), base)),
    ]
    print(f"\n## SGLD throughput, L = {L}, V = {V}, P = {P}, softmax, minibatch {B}, "
          f"{a.steps} steps (chain-steps/s; compile s)\n")
    print("| gradient | " + " | ".join(f"{n} chains" for n in a.chains) + " | " +
          f"{a.chains[-1]} / {a.chains[0]} chains |")
    print("|---|" + "---:|" * (len(a.chains) + 1))
    out = {}
    for name, make in rows:
        alg, data, *block = make()
        rs = []
        for n in a.chains:
            c, r = chain_rate(alg, inits(n), a.steps, data, n if block else None)
            rs.append((r, c))
        out[name] = [r for r, _ in rs]
        cells = " | ".join(f"{r:,.0f} ({c:.1f})" for r, c in rs)
        print(f"| {name} | {cells} | {rs[-1][0] / rs[0][0]:.2f} |", flush=True)
    # the independent layout's floor: per chain-step its gradient needs three products of the
    # size of (L, L) @ (L, B V) (forward, and the two of the backward pass)
    n = 8
    x = jax.random.normal(key, (n, L, L), jnp.float32)
    y = jax.random.normal(key, (n, L, B * V), jnp.float32)
    _, t = best_time(jax.jit(jnp.matmul), x, y)
    flops = 2 * L * L * B * V
    print(f"\nplain batched matmul (L, L) @ (L, B V), {n} at once: {n * flops / t / 1e9:.1f} GFLOP/s; "
          f"three of them per chain-step: floor {n / (3 * t):,.0f} chain-steps/s for independent minibatches")
    return out


def cost_model(a):
    """Seconds per chain-step of the vmapped gradient alone, exact vs minibatch."""
    n = 64
    print(f"\n## Cost model: seconds per chain-step of the gradient ({n} chains vmapped, float32)\n")
    print("| L | V | exact (ms) | " + " | ".join(f"B = {b} (ms)" for b in a.cost_batches) +
          " | B* (exact cheaper above) |")
    print("|---:|---:|---:|" + "---:|" * len(a.cost_batches) + "---:|")
    for L in a.cost_L:
        for V in a.cost_V:
            h = cj.default_hyper("softmax", L)
            key = jax.random.key(L * 1000 + V)
            P = max(a.cost_batches) * 4
            tokens = cj.streamed_tokens(key, P, L, V)
            stats = cj.sufficient_stats(tokens, V).astype(jnp.float32)
            init = jax.vmap(lambda k: network.init_params(k, L, V, h))(jax.random.split(key, n))
            g_exact = jax.jit(jax.vmap(jax.grad(
                lambda p, s: network.logdensity_from_stats(p, s, h, "softmax")), (0, None)))
            _, t_exact = best_time(g_exact, init, stats, repeat=3)
            ts = []
            for b in a.cost_batches:
                batches = jnp.stack([tokens[minibatch.draw_batch(k, P, b)]
                                     for k in jax.random.split(key, n)])
                g_mb = jax.jit(jax.vmap(jax.grad(
                    lambda p, t: minibatch.batch_loglik(p, t, h, "softmax"))))
                _, t = best_time(g_mb, init, batches, repeat=3)
                ts.append(t)
            # B*: linear interpolation of the minibatch cost in B to the exact cost
            bstar = next((b0 + (t_exact - t0) * (b1 - b0) / (t1 - t0)
                          for b0, b1, t0, t1 in zip(a.cost_batches, a.cost_batches[1:], ts, ts[1:])
                          if t0 <= t_exact < t1), None)
            if bstar is None:
                bstar = f"< {a.cost_batches[0]}" if ts[0] > t_exact else f"> {a.cost_batches[-1]}"
            else:
                bstar = f"{bstar:.0f}"
            cells = " | ".join(f"{1e3 * t / n:.3f}" for t in ts)
            print(f"| {L} | {V} | {1e3 * t_exact / n:.3f} | {cells} | {bstar} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--P", type=int, default=5095)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--no-cost-model", action="store_true")
    ap.add_argument("--cost-L", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--cost-V", type=int, nargs="+", default=[16, 32, 64])
    ap.add_argument("--cost-batches", type=int, nargs="+", default=[8, 32, 128, 512])
    a = ap.parse_args(argv)
    dev = jax.devices()[0]
    print(f"# device: {dev.platform} ({dev.device_kind}), {len(jax.devices())} device(s)")
    if not a.no_throughput:
        throughput(a)
    if not a.no_cost_model:
        cost_model(a)


if __name__ == "__main__":
    main()
