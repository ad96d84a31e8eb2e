"""The prepared accelerator check runs as it is: gpu.sh says so and exits 0 where JAX sees no
GPU, and gpu_check.py (what gpu.sh runs there) completes at a tiny size on the CPU; every
benchmark imports and answers --help."""
import os
import subprocess
import sys
from pathlib import Path


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


BENCHMARKS = sorted(p.name for p in Path(ROOT, "benchmarks").glob("*.py") if not p.name.startswith("_"))

# one interpreter for all of them (JAX imported once): each script's __main__ with --help must
# exit 0 after printing its usage
_HELP_ALL = """
import contextlib, io, runpy, sys
sys.path.insert(0, {bench!r})
failed = []
for name in {names!r}:
    sys.argv = [name, "--help"]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path({bench!r} + "/" + name, run_name="__main__")
        failed.append((name, "ran without exiting on --help"))
    except SystemExit as e:
        if e.code not in (0, None) or "usage" not in out.getvalue().lower():
            failed.append((name, f"exit {{e.code}}"))
    except Exception as e:
        failed.append((name, repr(e)))
print(failed)
"""


def test_every_benchmark_imports_and_parses_its_options():
    # a benchmark that imports a moved or removed name fails at once, not when someone runs it
    # (copyjax.experiments, copyjax.plotting and the dict-style summaries were removed once)
    code = _HELP_ALL.format(bench=os.path.join(ROOT, "benchmarks"), names=BENCHMARKS)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == "[]", (r.stdout[-3000:], r.stderr[-3000:])
    assert len(BENCHMARKS) >= 15
