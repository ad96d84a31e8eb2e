"""The runtime path needs only the runtime dependencies: every module of copyjax
imports with the optional packages hidden (tests/_no_extras.py), and the main job's end-to-end
test (tests/test_phase_diagram.py) runs with them hidden too; .ci/run also runs the README's
first command in a venv with ``pip install -e .`` alone. Bug this guards: the main job
importing chex to record its version (a crash after the whole run, on a fresh machine only)."""
import os
import subprocess

from _no_extras import ROOT, code_argv, script_argv


def _run(argv, timeout=300):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def test_the_blocker_hides_optional_packages():
    r = _run(code_argv("import chex"))
    assert r.returncode != 0 and "hidden: optional" in r.stderr
    code = ("import importlib.util, importlib.metadata\n"
            "print(importlib.util.find_spec('arviz'), importlib.util.find_spec('jax') is not None)\n"
            "from copyjax.results import package_versions\n"
            "print(package_versions(['chex', 'numpy'])['chex'])")
    r = _run(code_argv(code))
    assert r.stdout.split() == ["None", "True", "None"], r.stderr[-2000:]


def test_every_module_imports_without_extras():
    code = ("import importlib, pkgutil, copyjax\n"
            "names = sorted(m.name for m in pkgutil.walk_packages(copyjax.__path__, 'copyjax.'))\n"
            "[importlib.import_module(n) for n in names]\n"
            "print(len(names))")
    r = _run(code_argv(code))
    assert r.returncode == 0, r.stderr[-3000:]
    assert int(r.stdout.strip()) >= 20


def test_phase_diagram_help_without_extras():
    r = _run(script_argv("phase_diagram.py", ["--help"]))
    assert r.returncode == 0 and "--quick" in r.stdout, r.stderr[-2000:]
