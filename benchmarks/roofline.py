"""Roofline of copyjax's hot kernels: each as a fraction of what the device can do.

    python benchmarks/roofline.py [--L 64 --V 32 --chains 16 64 256 1024 4096 --out runs/roofline]

The device's limits, measured here in the same process: the FLOP/s of a float32 matmul
(--matmul-n square, best of 5) and the memory bandwidth of a float32 streaming add over
--stream-mib MiB (bytes read + written per second). For each kernel, vmapped over N chains
and compiled once per N: XLA's own FLOP and byte counts per chain-step
(``jit(...).lower(...).compile().cost_analysis()``), the measured chain-steps/s (best of
--repeat after a warm-up call), and from them the achieved FLOP/s and bytes/s as fractions of
the two limits. A kernel whose arithmetic intensity (FLOP per byte) lies above the machine
balance (matmul FLOP/s over bandwidth) is compute-bound: its ceiling is the matmul's FLOP/s;
below it, memory-bound: its ceiling is intensity x bandwidth. The table says which, and how
far below its ceiling the kernel runs.

Kernels (softmax, float32 statistics of P = --P sequences):
  action      value and gradient of the exact action S_P(G) (W integrated out)
  mala        one blackjax MALA step on exp(-S_P(G)) (copyjax.samplers.mala_marginal)
  umbrella    one adaptive-MALA step of an umbrella window (tempered, biased S_P)
  sgld        one full-batch SGLD step of the network (W, G) through the statistics
  sgld_mb     one minibatch SGLD step (--batch sequences per chain)
Writes OUT/roofline.json, OUT/roofline.md and OUT/roofline.png.
"""
import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np

from _timing import best_time


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=64)
    ap.add_argument("--V", type=int, default=32)
    ap.add_argument("--P", type=int, default=4096)
    ap.add_argument("--chains", type=int, nargs="+", default=[16, 64, 256, 1024, 4096])
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=list(KERNELS))
    ap.add_argument("--batch", type=int, default=32, help="minibatch size of sgld_mb")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--matmul-n", type=int, default=2048)
    ap.add_argument("--stream-mib", type=int, default=256)
    ap.add_argument("--out", default="runs/roofline")
    return ap


def _compiled(fn, *args):
    """``fn`` compiled for ``args`` once, with XLA's (flops, bytes accessed) of it."""
    c = fn.lower(*args).compile()
    ca = c.cost_analysis()
    ca = ca[0] if isinstance(ca, (list, tuple)) else ca
    return c, float(ca.get("flops", float("nan"))), float(ca.get("bytes accessed", float("nan")))


def device_limits(n: int, stream_mib: int, repeat: int) -> dict:
    """Matmul FLOP/s (2 n^3 per product) and streaming bandwidth (x + 1: 8 bytes per element)."""
    a = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    mm = jax.jit(lambda a: a @ a)
    t = best_time(mm, a, repeat=repeat)[1]
    m = stream_mib * 2**20 // 4
    x = jnp.zeros(m, jnp.float32)
    add = jax.jit(lambda x: x + 1.0)
    ts = best_time(add, x, repeat=repeat)[1]
    return {"matmul_flops": 2 * n**3 / t, "bandwidth": 8 * m / ts, "matmul_n": n, "stream_mib": stream_mib}


def _kernels(L, V, P, batch):
    import copyjax as cj
    from copyjax import network as N
    from copyjax import samplers as S
    from copyjax.free_energy.umbrella import UmbrellaSampler

    h = cj.default_hyper("softmax", L)
    tokens = cj.streamed_tokens(jax.random.key(0), P, L, V)
    stats = cj.sufficient_stats(tokens, V).astype(jnp.float32)
    G = lambda n: 0.3 * jax.random.normal(jax.random.key(1), (n, L, L), jnp.float32)
    params = lambda n: jax.vmap(lambda k: N.init_params(k, L, V, h))(jax.random.split(jax.random.key(2), n))
    keys = lambda n: jax.random.split(jax.random.key(3), n)

    # the statistics enter every kernel as an argument, never closed over: a jitted, vmapped
    # step that closes over a concrete C embeds it as a constant, and XLA's constant folding
    # then held a copy per chain (MALA at L = 64, V = 32, 512 chains: 17 GB resident against
    # 0.49 GB with C as an argument; docs/benchmarks.md, "Roofline")
    data = {"stats": stats, "tokens": tokens, "step_size": jnp.float32(1e-4)}

    def batched(step):
        return jax.jit(jax.vmap(step, in_axes=(0, 0, None)))

    def action(n):
        vg = jax.vmap(jax.value_and_grad(lambda g, C: cj.exact_action(g, C, h, "softmax")), in_axes=(0, None))
        return jax.jit(vg), (G(n), stats)

    def mala(n):
        alg = lambda C: S.mala_marginal(C, h, "softmax", 1e-3)
        state = jax.jit(jax.vmap(lambda g, C: alg(C).init(g), in_axes=(0, None)))(G(n), stats)
        return batched(lambda k, s, C: alg(C).step(k, s)), (keys(n), state, stats)

    def umbrella(n):
        alg = lambda d: UmbrellaSampler(h, "softmax", 400.0, 100).build({**d, "step_size": jnp.float32(1e-3)})
        pos = (G(n), jnp.linspace(0.0, 3.0, n, dtype=jnp.float32), jnp.ones(n, jnp.float32))
        d = {"stats": stats}
        state = jax.jit(jax.vmap(lambda p, d: alg(d).init(p), in_axes=(0, None)))(pos, d)
        return batched(lambda k, s, d: alg(d).step(k, s)), (keys(n), state, d)

    def network(kind_batch):
        def make(n):
            alg = lambda d: S.NetworkSampler(h, "softmax", "sgld", *kind_batch).build(d)
            state = jax.jit(jax.vmap(lambda p, d: alg(d).init(p), in_axes=(0, None)))(params(n), data)
            return batched(lambda k, s, d: alg(d).step(k, s)), (keys(n), state, data)
        return make

    sgld, sgld_mb = network(()), network((batch,))

    return {"action": action, "mala": mala, "umbrella": umbrella, "sgld": sgld, "sgld_mb": sgld_mb}


KERNELS = ("action", "mala", "umbrella", "sgld", "sgld_mb")


def main(argv=None):
    a = parser().parse_args(argv)
    os.makedirs(a.out, exist_ok=True)
    dev = jax.devices()[0]
    lim = device_limits(a.matmul_n, a.stream_mib, a.repeat)
    balance = lim["matmul_flops"] / lim["bandwidth"]
    print(f"# device: {dev.platform} ({dev.device_kind}); L={a.L}, V={a.V}, P={a.P}, float32")
    print(f"# matmul {a.matmul_n}^2: {lim['matmul_flops'] / 1e9:.1f} GFLOP/s; stream add: "
          f"{lim['bandwidth'] / 1e9:.1f} GB/s; machine balance {balance:.1f} FLOP/byte\n")
    print("| kernel | chains | MFLOP / chain-step | KB / chain-step | FLOP/byte | bound | chain-steps/s | "
          "GFLOP/s | % of matmul | GB/s | % of bandwidth | % of its ceiling |")
    print("|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    kernels = _kernels(a.L, a.V, a.P, a.batch)
    rows = []
    for name in a.kernels:
        for n in a.chains:
            fn, args = kernels[name](n)
            compiled, flops, nbytes = _compiled(fn, *args)
            t = best_time(compiled, *args, repeat=a.repeat)[1]
            rate = n / t
            fs, bs = flops / t, nbytes / t
            intensity = flops / nbytes
            bound = "compute" if intensity >= balance else "memory"
            ceiling = lim["matmul_flops"] if bound == "compute" else intensity * lim["bandwidth"]
            row = {"kernel": name, "chains": n, "flops_per_chain_step": flops / n, "bytes_per_chain_step": nbytes / n,
                   "intensity": intensity, "bound": bound, "chain_steps_per_s": rate, "flops_per_s": fs,
                   "bytes_per_s": bs, "frac_matmul": fs / lim["matmul_flops"], "frac_bandwidth": bs / lim["bandwidth"],
                   "frac_ceiling": fs / ceiling}
            rows.append(row)
            print(f"| {name} | {n} | {flops / n / 1e6:.2f} | {nbytes / n / 1e3:.1f} | {intensity:.1f} | {bound} | "
                  f"{rate:,.0f} | {fs / 1e9:.1f} | {100 * row['frac_matmul']:.0f} | {bs / 1e9:.1f} | "
                  f"{100 * row['frac_bandwidth']:.0f} | {100 * row['frac_ceiling']:.0f} |", flush=True)
    res = {"device": f"{dev.platform} ({dev.device_kind})", "n_devices": len(jax.devices()),
           "L": a.L, "V": a.V, "P": a.P, "limits": lim, "balance": balance, "rows": rows}
    with open(os.path.join(a.out, "roofline.json"), "w") as f:
        json.dump(res, f, indent=1)
    _figure(res, os.path.join(a.out, "roofline.png"))
    print(f"\nwritten: {a.out}/roofline.json, {a.out}/roofline.png")
    return res


def _figure(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lim = res["limits"]
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    x = np.logspace(-1, 3, 200)
    ax.loglog(x, np.minimum(lim["matmul_flops"], x * lim["bandwidth"]) / 1e9, "k-", lw=1, label="roof (measured)")
    for name in dict.fromkeys(r["kernel"] for r in res["rows"]):
        rs = [r for r in res["rows"] if r["kernel"] == name]
        ax.loglog([r["intensity"] for r in rs], [r["flops_per_s"] / 1e9 for r in rs], "o-", label=name)
        ax.annotate(str(rs[-1]["chains"]), (rs[-1]["intensity"], rs[-1]["flops_per_s"] / 1e9), fontsize=7)
    ax.set_xlabel("arithmetic intensity (FLOP / byte, XLA's counts)")
    ax.set_ylabel("achieved GFLOP/s")
    ax.set_title(f"{res['device']}, L={res['L']}, V={res['V']}: chains grow along each line")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
