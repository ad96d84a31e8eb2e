"""copyjax against devinterp: the same SGLD posterior, chain-steps per second, and a
stationary agreement check.

    pip install -e '.[bench]'     # torch (CPU) and devinterp 2.0.1
    python benchmarks/vs_devinterp.py [--chains 8 64] [--batch 256] [--no-stationary]

Throughput (L = 64, V = 32, P = 5095, softmax, float32, torch and XLA on the same cores):
devinterp's per-chain inner loop (``SGMCMC.sgld``, one optimizer per chain, zero_grad /
loss / backward / step: what its ``sample()`` runs per chain), with the model's two priors as
two parameter groups (``sample()`` has one weight decay for all parameters) and the step
converted (devinterp's update is ``-(lr/2) (nbeta grad L + lambda theta) + sqrt(lr) N(0, 1)``,
blackjax's ``eps grad log p + sqrt(2 eps) N(0, 1)``: ``lr = 2 eps``), against copyjax's
vmapped chains; full batch and minibatches of ``--batch`` sequences (independent per chain
in both; copyjax also with one shared minibatch per step); the two tools alternate, twice,
and the better of the two rounds is kept.

Stationary check (``--no-stationary`` skips it; L = 4, V = 3, P = 20, full batch): mean and
sd of a_G from devinterp's chains and from copyjax's SGLD chains against the exact marginal
posterior of G (MALA on exp(-S_P(G)), W integrated out), within their standard errors.
"""
import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import copyjax as cj  # noqa: E402
from _timing import chain_rate  # noqa: E402
from copyjax import chains, network, samplers  # noqa: E402

# torch's OpenMP workers spin after each parallel region by default and would take the
# cores from XLA's threads while copyjax runs; let them sleep instead
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
try:
    import torch
    from devinterp.optim.prior import GaussianPrior
    from devinterp.optim.sgmcmc import SGMCMC
except ImportError as e:  # the optional `bench` extra
    torch = None
    _MISSING = e


class TorchCopyHead:
    """The network of ``copyjax.model`` in torch: ``f = W (softmax(G) x)``, per-sequence loss
    ``(1/2L) sum_l ||y_l - f_l||^2`` (batch mean, so devinterp's ``nbeta = P beta``)."""

    def __init__(self, W, G):
        self.W = torch.nn.Parameter(torch.tensor(np.array(W)))
        self.G = torch.nn.Parameter(torch.tensor(np.array(G)))

    def loss(self, x, y):
        A = torch.softmax(self.G, dim=-1)
        f = torch.einsum("lm,bmv->blv", A, x) @ self.W.T
        return ((y - f) ** 2).sum(dim=(1, 2)).mean() / (2 * self.G.shape[0])


def devinterp_chains(inits, x, y, hyper, eps, steps, batch, thin=None, seed=0):
    """devinterp's inner loop, one chain after another. ``x, y``: one-hot (P, L, V) tensors.
    Returns (seconds, G draws every ``thin`` steps or None)."""
    P, V = x.shape[0], x.shape[-1]
    gen = torch.Generator().manual_seed(seed)
    draws = []
    t0 = time.perf_counter()
    for W0, G0 in zip(*inits):
        m = TorchCopyHead(W0, G0)
        opt = SGMCMC.sgld(
            [{"params": [m.W], "prior": GaussianPrior(V / hyper.sigma_w2, center=None)},
             {"params": [m.G], "prior": GaussianPrior(1 / hyper.sigma_g2, center=None)}],
            lr=2 * eps, nbeta=P * hyper.beta)
        chain = []
        for t in range(steps):
            if batch is None:
                xb, yb = x, y
            else:
                idx = torch.randint(0, P, (batch,), generator=gen)
                xb, yb = x[idx], y[idx]
            opt.zero_grad()
            m.loss(xb, yb).backward()
            opt.step(noise_generator=gen)
            if thin and (t + 1) % thin == 0:
                chain.append(m.G.detach().numpy().copy())
        draws.append(chain)
    return time.perf_counter() - t0, (np.asarray(draws) if thin else None)


def one_hots(tokens, V, dtype):
    x = torch.nn.functional.one_hot(torch.as_tensor(np.array(tokens), dtype=torch.long), V).to(dtype)
    return x, torch.roll(x, 1, dims=1)


def throughput(a):
    L, V, P, act = 64, 32, a.P, "softmax"
    h = cj.default_hyper(act, L)
    key = jax.random.key(0)
    tokens = cj.streamed_tokens(key, P, L, V)
    stats = cj.sufficient_stats(tokens, V).astype(jnp.float32)
    eps = 1e-5
    x, y = one_hots(tokens, V, torch.float32)
    base = {"stats": stats, "step_size": jnp.float32(eps)}
    cases = [  # (name, minibatch of devinterp, copyjax sampler, copyjax data, devinterp steps)
        (f"minibatch {a.batch}, independent", a.batch,
         samplers.NetworkSampler(h, act, "sgld", a.batch), base | {"tokens": tokens}, 4),
        (f"minibatch {a.batch}, copyjax shared", a.batch,
         samplers.NetworkSampler(h, act, "sgld", a.batch, layout="shared"),
         base | {"tokens": tokens, "batch_key": jax.random.key(7)}, 4),
        ("full batch (copyjax: statistics)", None, samplers.NetworkSampler(h, act, "sgld"), base, 2),
    ]
    print(f"\n## Chain-steps per second, L = {L}, V = {V}, P = {P}, softmax, float32, "
          f"torch threads {torch.get_num_threads()}\n")
    print("| gradient | chains | devinterp | copyjax | copyjax / devinterp |")
    print("|---|---:|---:|---:|---:|")
    dv_cache = {}
    for name, batch, alg, data, dv_steps in cases:
        for n in a.chains:
            init = jax.vmap(lambda k: network.init_params(k, L, V, h))(jax.random.split(key, n))
            inits = (np.asarray(init.W), np.asarray(init.G))
            dv, cx = 0.0, 0.0
            for _ in range(2):  # alternate the tools, keep each one's better round
                if (batch, n) not in dv_cache:
                    dt, _ = devinterp_chains(inits, x, y, h, eps, dv_steps, batch)
                    dv = max(dv, n * dv_steps / dt)
                cx = max(cx, chain_rate(alg, init, a.steps, data)[1])
            dv = dv_cache.setdefault((batch, n), dv)  # the shared-layout row reuses devinterp's
            print(f"| {name} | {n} | {dv:,.1f} | {cx:,.0f} | {cx / dv:,.1f} |", flush=True)


def stationary(a):
    L, V, P, act = 4, 3, 20, "softmax"
    h = cj.default_hyper(act, L)
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(3), P, L, V), V).astype(jnp.float32)
    n, steps, burn, thin, eps = a.stationary_chains, 3000, 1000, 20, 2e-3
    init = jax.vmap(lambda k: network.init_params(k, L, V, h))(jax.random.split(jax.random.key(4), n))
    aG = lambda G: cj.order_parameters(cj.attention(G, act))[1]
    schedule = chains.Schedule(steps, burn, thin)
    ex = chains.run_algorithm(jax.random.key(7), samplers.mala_marginal(st, h, act, 0.05), init.G,
                              lambda G: {"aG": aG(G)}, schedule=schedule)
    cx = chains.run_algorithm(jax.random.key(6), samplers.sgld(st, h, act, eps), init,
                              lambda p: {"aG": aG(p.G)}, schedule=schedule)
    tokens = cj.sample_tokens(jax.random.key(3), P, L, V)
    x, y = one_hots(tokens, V, torch.float32)
    t0 = time.perf_counter()
    _, G = devinterp_chains((np.asarray(init.W), np.asarray(init.G)), x, y, h, eps, steps, None, thin)
    dv = jax.vmap(jax.vmap(aG))(jnp.asarray(G[:, burn // thin:]))
    print(f"\n## Stationary check: L = {L}, V = {V}, P = {P}, softmax, {n} chains x {steps} steps "
          f"(burn-in {burn}, thin {thin}), SGLD step {eps} (devinterp lr {2 * eps}); "
          f"devinterp {time.perf_counter() - t0:.0f} s\n")
    ref = chains.summarize(ex.draws["aG"])
    print("| a_G | mean | mcse | sd | (mean - exact) / combined se | sd / exact sd |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, d in (("exact marginal (MALA)", ex.draws["aG"]), ("copyjax SGLD", cx.draws["aG"]),
                    ("devinterp SGLD", dv)):
        s = chains.summarize(d)
        z = (s.mean - ref.mean) / np.hypot(s.mcse, ref.mcse) if d is not ex.draws["aG"] else 0.0
        print(f"| {name} | {s.mean:.4f} | {s.mcse:.4f} | {s.sd:.4f} | {z:+.2f} | "
              f"{s.sd / ref.sd:.3f} |", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chains", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--P", type=int, default=5095)
    ap.add_argument("--steps", type=int, default=20, help="copyjax steps per timed run")
    ap.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    ap.add_argument("--stationary-chains", type=int, default=16)
    ap.add_argument("--no-throughput", action="store_true")
    ap.add_argument("--no-stationary", action="store_true")
    a = ap.parse_args(argv)
    if torch is None:
        print(f"vs_devinterp: skipped, torch / devinterp not installed ({_MISSING}); "
              "install them with  pip install -e '.[bench]'")
        return
    torch.set_num_threads(a.threads)
    import devinterp
    print(f"# torch {torch.__version__}, devinterp {getattr(devinterp, '__version__', '2.x')}, "
          f"jax {jax.__version__}, {jax.devices()[0].platform}")
    if not a.no_throughput:
        throughput(a)
    if not a.no_stationary:
        stationary(a)


if __name__ == "__main__":
    main()
