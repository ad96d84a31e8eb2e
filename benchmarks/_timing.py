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
