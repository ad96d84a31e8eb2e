"""Streamed sufficient statistics at large P: wall time and peak memory.

    /usr/bin/time -v python benchmarks/stats_memory.py --P 10000000 --L 64 --V 32

Prints the time and the count check; run under ``/usr/bin/time -v`` (Maximum resident set
size) for the peak memory of the whole process.
"""
import argparse
import resource
import time

import jax
import numpy as np

import copyjax as cj


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, default=10_000_000)
    ap.add_argument("--L", type=int, default=64)
    ap.add_argument("--V", type=int, default=32)
    ap.add_argument("--chunk", type=int, default=cj.data.DEFAULT_CHUNK)
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    C = cj.sampled_stats(jax.random.key(0), a.P, a.L, a.V, chunk=a.chunk, progress=True)
    C.block_until_ready()
    dt = time.perf_counter() - t0
    total = int(np.asarray(C).sum(dtype=np.int64))
    assert total == a.P * a.L * a.L, total
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"P={a.P} L={a.L} V={a.V} chunk={a.chunk}: {dt:.1f} s, "
          f"sum C = P L^2 checked, peak RSS {peak:.0f} MiB "
          f"(estimate of working memory {cj.data.stats_peak_bytes(a.L, a.V, a.chunk)/2**20:.0f} MiB)")


if __name__ == "__main__":
    main()
