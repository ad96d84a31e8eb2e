"""Run a script or code as a user with ``pip install -e .`` alone would: the optional packages
(the ``test``, ``arviz`` and ``bench`` extras) hidden by a meta-path finder installed before
anything else runs, so importing one raises ModuleNotFoundError as in such a venv."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPTIONAL = ("chex", "arviz", "pymbar", "pytest", "torch", "devinterp", "xarray", "netCDF4", "h5netcdf")

BLOCKER = f"""
import importlib.abc, sys
class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in {OPTIONAL!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (hidden: optional)", name=name)
sys.meta_path.insert(0, _Hide())
import importlib.metadata, importlib.util
_find_spec, _version = importlib.util.find_spec, importlib.metadata.version
def _hidden_find_spec(name, package=None):
    return None if name.split('.')[0] in {OPTIONAL!r} else _find_spec(name, package)
def _hidden_version(name):
    if name in {OPTIONAL!r}:
        raise importlib.metadata.PackageNotFoundError(name)
    return _version(name)
importlib.util.find_spec, importlib.metadata.version = _hidden_find_spec, _hidden_version
"""


def code_argv(code: str) -> list:
    """``[python, -c, BLOCKER + code]``."""
    return [sys.executable, "-c", BLOCKER + code]


def script_argv(script: str, args) -> list:
    """``python scripts/<script> args...`` with the optional packages hidden."""
    path = os.path.join(ROOT, "scripts", script)
    code = ("import runpy, sys\n"
            f"sys.argv = {[path, *map(str, args)]!r}\n"
            f"sys.path.insert(0, {os.path.dirname(path)!r})\n"
            f"runpy.run_path({path!r}, run_name='__main__')\n")
    return code_argv(code)
