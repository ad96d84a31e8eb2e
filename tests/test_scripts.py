"""The other scripts reject bad arguments with exit status 2 and a message naming the option
(argparse's convention), before any computation."""
import os
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
    s = json.load(open(tmp_path / "summary.json"))
    assert keys <= set(s) and [p["P"] for p in s["points"]] == [30, 60]
    w = s["points"][0]["family_weights" if act == "linear" else "weights"]
    assert sum(w) == pytest.approx(1.0, abs=1e-6)
    assert (tmp_path / "free_energy.png").stat().st_size > 0
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "points").iterdir()}
    r2 = run("free_energy.py", args)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "points").iterdir()} == before
