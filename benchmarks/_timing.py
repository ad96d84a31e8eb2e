"""Shared timing helper for the benchmarks: best of n after a warm-up (compile) call."""
import time

import jax


def best_time(fn, *args, repeat: int = 5) -> tuple[float, float]:
    """(compile + first call seconds, best steady-state seconds) of ``fn(*args)``."""
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - t0)
    return first, best


def chain_rate(alg, init, steps: int, data=None, chain_block=None) -> tuple[float, float]:
    """(compile s, chain-steps per second) of ``steps`` steps of every chain of
    ``chains.run_chains``: a first run compiles, a second is timed. The observer is one
    function object for both runs (run_chains caches its compiled code on it)."""
    from copyjax import chains

    if not hasattr(alg, "build"):  # a plain SamplingAlgorithm
        alg = chains.Fixed(alg)
    obs = lambda p, d: {"x": jax.tree.leaves(p)[0].reshape(-1)[0]}  # any position pytree
    kw = dict(schedule=chains.Schedule(steps, thin=steps), layout=chains.Layout(chain_block=chain_block))
    t0 = time.perf_counter()
    jax.block_until_ready(chains.run_chains(jax.random.key(0), alg, init, obs, data, **kw).draws)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(chains.run_chains(jax.random.key(1), alg, init, obs, data, **kw).draws)
    dt = time.perf_counter() - t0
    return first - dt, jax.tree.leaves(init)[0].shape[0] * steps / dt
