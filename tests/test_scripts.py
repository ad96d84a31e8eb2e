"""The other scripts reject bad arguments with exit status 2 and a message naming the option
(argparse's convention), before any computation."""
import os
from pathlib import Path
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(script, args):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("script, args, word", [
    ("theory_figures.py", ["--L", "1"], "--L"),
    ("theory_figures.py", ["--chains", "0"], "--chains"),
    ("theory_figures.py", ["--seed", "-1"], "--seed"),
    ("theory_figures.py", ["--replot", "--out", "/nonexistent/dir"], "--out"),
    ("validate_theory.py", ["--LV", "16"], "--LV"),
    ("validate_theory.py", ["--LV", "1,8"], "--LV"),
    ("validate_theory.py", ["--steps", "10", "--thin", "10"], "--steps"),
    ("validate_theory.py", ["--n-P", "0"], "--n-P"),
    ("scaling.py", ["--Ls", "1", "8"], "--Ls"),
    ("scaling.py", ["--g-prior", "huge"], "--g-prior"),
    ("free_energy.py", ["--no-theory"], "--no-theory"),
    ("free_energy.py", ["--steps", "10"], "--steps"),
])
def test_bad_arguments_exit_2(script, args, word, tmp_path):
    r = run(script, args if "--out" in args else args + ["--out", str(tmp_path)])
    assert r.returncode == 2, (r.returncode, r.stderr[-500:])
    assert word in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("act, keys", [
    ("softmax", {"P_star", "P_star_err", "theory_P_star", "barrier_at_P_star", "per_seed", "points"}),
    ("linear", {"theory_P_onset", "theory_P_cross", "per_seed", "points"}),
])
def test_free_energy_script_end_to_end_and_resume(act, keys, tmp_path):
    """scripts/free_energy.py at L = 4, V = 3: summary.json with the documented keys, the
    figure, and a second run that reuses every saved point (no new sampling)."""
    import json

    args = ["--L", "4", "--V", "3", "--activation", act, "--P", "30", "60", "--steps", "60",
            "--spacing", "0.3", "--no-theory", "--no-progress", "--out", str(tmp_path)]
    r = run("free_energy.py", args)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads(Path(tmp_path / "summary.json").read_text())
    assert keys <= set(s) and [p["P"] for p in s["points"]] == [30, 60]
    w = s["points"][0]["family_weights" if act == "linear" else "weights"]
    assert sum(w) == pytest.approx(1.0, abs=1e-6)
    assert (tmp_path / "free_energy.png").stat().st_size > 0
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "points").iterdir()}
    r2 = run("free_energy.py", args)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "points").iterdir()} == before


def test_free_energy_vs_L_reads_summaries(tmp_path):
    """scripts/free_energy_vs_L.py: the table (mean and sd over seeds) and the figure from
    summary.json files; a missing folder is an argument error."""
    import json

    for L, th, ps in ((16, None, [(1460.0, 6.0, float("nan"))]), (32, 2461.0, [(2467.0, 5.0, 20.8), (2480.0, 7.0, 22.0)])):
        d = tmp_path / f"fe{L}"
        d.mkdir()
        (d / "summary.json").write_text(json.dumps({"config": {"L": L, "V": 32, "activation": "softmax"}, "theory_P_star": th,
                   "per_seed": {str(i): {"P_star": p, "P_star_err": e, "barrier_at_P_star": b}
                                for i, (p, e, b) in enumerate(ps)}}))
    r = run("free_energy_vs_L.py", [str(tmp_path / "fe32"), str(tmp_path / "fe16"), "--out", str(tmp_path / "fig")])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "2474 sd 9" in r.stdout and (tmp_path / "fig.png").stat().st_size > 0
    r = run("free_energy_vs_L.py", [str(tmp_path / "nothing"), "--out", str(tmp_path / "fig")])
    assert r.returncode == 2 and "summary.json" in r.stderr


def test_compile_cache_second_run_compiles_nothing_new(tmp_path):
    """The scripts enable JAX's persistent compilation cache: a first run fills it, a second
    run of the same shapes (into a fresh --out) adds no entry, i.e. loads every compiled
    function instead of compiling, and gives the same numbers."""
    import json

    cache = tmp_path / "cache"
    args = ["--L", "4", "--V", "3", "--P", "30", "--steps", "60", "--spacing", "0.3", "--no-theory",
            "--no-progress", "--compile-cache", str(cache)]
    r = run("free_energy.py", args + ["--out", str(tmp_path / "a")])
    assert r.returncode == 0, r.stderr[-2000:]
    first = {p.name for p in cache.iterdir()}
    assert len(first) > 0
    r = run("free_energy.py", args + ["--out", str(tmp_path / "b")])
    assert r.returncode == 0, r.stderr[-2000:]
    assert {p.name for p in cache.iterdir()} == first
    pts = [json.loads(Path(tmp_path / d / "summary.json").read_text())["points"] for d in "ab"]
    assert pts[0][0]["log_ratio"] == pts[1][0]["log_ratio"]
