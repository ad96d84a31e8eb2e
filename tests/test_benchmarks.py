"""The prepared accelerator check runs as it is: gpu.sh says so and exits 0 where JAX sees no
GPU, and gpu_check.py (what gpu.sh runs there) completes at a tiny size on the CPU."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_gpu_sh_exits_cleanly_without_a_gpu():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    r = subprocess.run(["bash", os.path.join(ROOT, "benchmarks", "gpu.sh")], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "no GPU found" in r.stdout


def test_gpu_check_runs_at_a_tiny_size():
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu_check.py"), "--chains", "4", "--steps",
                        "2", "--L", "4", "--V", "3"], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    row = [ln for ln in r.stdout.splitlines() if ln.startswith("| 4 |")]
    assert len(row) == 1 and "failed" not in row[0], r.stdout
