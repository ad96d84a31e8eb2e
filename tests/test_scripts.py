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
])
def test_bad_arguments_exit_2(script, args, word, tmp_path):
    r = run(script, args if "--out" in args else args + ["--out", str(tmp_path)])
    assert r.returncode == 2, (r.returncode, r.stderr[-500:])
    assert word in r.stderr and "Traceback" not in r.stderr
