"""Canary for the CPU LAPACK deadlock of jaxlib 0.10.0-0.11.1 (docs/lapack_hang.md).

    python benchmarks/lapack_hang.py [N_CHAINS]              # the minimal repro (no copyjax)
    python benchmarks/lapack_hang.py 64 --samplers           # copyjax's samplers, one block

The repro: a vmapped value_and_grad of f(G) = part(G, 0.5) + part(G, 2.0), part = Cholesky of
I + c G G^T (32 x 32, float64) and a triangular solve, in a lax.scan of 300 steps. On an
affected jaxlib, 64 chains never finish on a 2-thread CPU; on 0.9.2 or 0.12 they take seconds.
``--samplers`` runs the two copyjax samplers that hit it, with all chains of the device in one
vmapped block at L = 64, V = 32: ``sample_exact_posterior`` and ``sample_umbrella``.
Prints one line per run with its wall time; tests/test_canary.py runs both under a timeout.
"""
import time

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402


def repro(n_chains: int, n: int = 32, steps: int = 300) -> float:
    def part(G, c):
        K = jnp.eye(n) + c * G @ G.T
        chol = jnp.linalg.cholesky(K)
        x = jax.scipy.linalg.solve_triangular(chol, jnp.ones(n), lower=True)
        return jnp.sum(x ** 2) + 2 * jnp.sum(jnp.log(jnp.diag(chol)))

    vg = jax.vmap(jax.value_and_grad(lambda G: part(G, 0.5) + part(G, 2.0)))

    @jax.jit
    def run(G0):
        def body(G, _):
            v, g = vg(G)
            return G - 1e-3 * g, v
        return jax.lax.scan(body, G0, None, length=steps)

    G0 = 0.1 * jax.random.normal(jax.random.key(0), (n_chains, n, n))
    t = time.perf_counter()
    jax.block_until_ready(run(G0))
    return time.perf_counter() - t


def samplers(n_chains: int, L: int = 64, V: int = 32, P: int = 4000) -> dict:
    import copyjax as cj
    from copyjax import exact_posterior, free_energy

    stats = cj.sufficient_stats(cj.sample_tokens(jax.random.key(0), P, L, V), V).astype(jnp.float64)
    h = cj.default_hyper("softmax", L)
    times = {}
    t = time.perf_counter()
    run = exact_posterior.sample_exact_posterior(jax.random.key(1), stats, h, "softmax", n_chains=n_chains,
                                                 num_steps=6, warmup_steps=2)
    jax.block_until_ready(run.samples.draws)
    times["sample_exact_posterior"] = time.perf_counter() - t
    t = time.perf_counter()
    free_energy.sample_umbrella(jax.random.key(2), stats, h, "softmax", jnp.linspace(0.0, 4.0, n_chains),
                                kappa=2.0, num_steps=9, thin=3, chain_block=n_chains)
    times["sample_umbrella"] = time.perf_counter() - t
    return times


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Canary for the CPU LAPACK deadlock (docs/lapack_hang.md)")
    ap.add_argument("n_chains", nargs="?", type=int, default=64)
    ap.add_argument("--samplers", action="store_true", help="copyjax's two samplers, all chains in one block")
    a = ap.parse_args()
    n = a.n_chains
    import jaxlib
    print(f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, {jax.device_count()} device(s)", flush=True)
    if a.samplers:
        for name, s in samplers(n).items():
            print(f"{name}: {n} chains in one block, L = 64, V = 32: {s:.1f} s", flush=True)
    else:
        print(f"repro: {n} chains, 300 steps: {repro(n):.2f} s", flush=True)
