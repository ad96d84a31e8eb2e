"""The prepared accelerator check runs as it is: gpu.sh says so and exits 0 where JAX sees no
GPU, and gpu_check.py (what gpu.sh runs there) completes at a tiny size on the CPU; every
benchmark imports and answers --help."""
import os
import subprocess
import sys
from pathlib import Path

import pytest


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


@pytest.mark.slow
def test_roofline_runs_at_a_tiny_size_and_its_fractions_follow_from_its_counts(tmp_path):
    """benchmarks/roofline.py at L = 4, V = 3 (what gpu.sh runs on a GPU): every kernel at 4
    chains, the JSON's fractions recomputed from its own counts, rates and limits
    (FLOP/s = FLOP per chain-step x chain-steps/s; the bound from the intensity against the
    balance), and the figure written."""
    import json

    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    r = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "roofline.py"), "--L", "4", "--V", "3",
                        "--P", "32", "--chains", "4", "--matmul-n", "128", "--stream-mib", "4", "--repeat", "1",
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "roofline.json").read_text())
    assert {row["kernel"] for row in res["rows"]} == {"action", "mala", "umbrella", "sgld", "sgld_mb"}
    lim = res["limits"]
    for row in res["rows"]:
        assert row["flops_per_chain_step"] > 0 and row["bytes_per_chain_step"] > 0, row
        fs = row["flops_per_chain_step"] * row["chain_steps_per_s"]
        assert fs == pytest.approx(row["flops_per_s"], rel=1e-9)
        assert row["frac_matmul"] == pytest.approx(fs / lim["matmul_flops"], rel=1e-9)
        assert row["bound"] == ("compute" if row["intensity"] >= res["balance"] else "memory")
    assert (tmp_path / "roofline.png").stat().st_size > 0


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


def test_mutation_skips_exactly_the_mutants_inside_annotations():
    """benchmarks/mutation.py records a mutant inside a type annotation as equivalent without
    running it (never evaluated under ``from __future__ import annotations``): the spans found
    cover the annotations of a hand-written snippet, and no operator of its code."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from mutation import _inside, annotation_spans

    src = ("from __future__ import annotations\n"
           "def f(a: int | None = 1 + 2, *, b: float | None = None) -> dict | None:\n"
           "    c: int | None = a - 1\n"
           "    return {'x': c * 2}\n")
    spans = annotation_spans(src)
    rows = src.splitlines()

    def at(row, text, nth=0):  # the (start, end) of the nth occurrence of text on a row
        col = -1
        for _ in range(nth + 1):
            col = rows[row - 1].index(text, col + 1)
        return (row, col), (row, col + len(text))

    for row, text, nth in [(2, "|", 0), (2, "|", 1), (2, "|", 2), (3, "|", 0)]:
        assert _inside(*at(row, text, nth), spans), (row, text, nth)
    for row, text in [(2, "+"), (3, "-"), (4, "*"), (2, "1")]:
        assert not _inside(*at(row, text), spans), (row, text)
    assert annotation_spans(src.replace("from __future__ import annotations\n", "")) == []
