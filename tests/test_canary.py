"""No hang with many chains (docs/lapack_hang.md): jaxlib 0.10.0-0.11.1 split
batched LAPACK calls over XLA's intra-op pool and deadlock on a 2-thread CPU from about 64
vmapped chains. pyproject.toml excludes those versions; these canaries fail (time out) if an
install resolves to one of them again, or if a sampler's block size stops mattering.

Each runs in a fresh process (one CPU device, the real thread pool: the test session's four
fake devices would split the chains and hide the hang) under a timeout far above the measured
time (repro: 3 s at 64 chains with jaxlib 0.9.2; samplers: about 35 s together on 2 cores) and
far below the 'never' of an affected jaxlib."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "lapack_hang.py")


def _run(args, timeout):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    try:
        r = subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                           timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"{' '.join(args)} did not finish in {timeout} s: the LAPACK deadlock "
                             f"(docs/lapack_hang.md); output so far: {e.stdout!r}") from None
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def test_lapack_repro_64_chains_finishes():
    out = _run(["64"], timeout=120)
    assert "repro: 64 chains" in out


@pytest.mark.slow
def test_samplers_64_chains_in_one_block_finish():
    out = _run(["64", "--samplers"], timeout=400)
    assert "sample_exact_posterior: 64 chains" in out and "sample_umbrella: 64 chains" in out
