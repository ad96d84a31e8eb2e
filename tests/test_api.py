"""docs/api.md lists every module's __all__, and every name in __all__ exists."""
import importlib
import pkgutil
import re
from pathlib import Path

import copyjax

DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def test_docs_list_each_modules_public_api():
    # each "### `module`" section ends with the line of its names in backticks
    sections = DOC.read_text().split("## Public API")[1].split("### `")[1:]
    listed = {s.split("`")[0]: re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", s.strip().splitlines()[-1])
              for s in sections}
    names = ["copyjax"] + sorted(m.name for m in pkgutil.walk_packages(copyjax.__path__, "copyjax."))
    assert sorted(listed) == sorted(names)
    for name in names:
        mod = importlib.import_module(name)
        assert listed[name] == list(mod.__all__), name
        assert all(hasattr(mod, n) for n in mod.__all__), name


def test_importing_copyjax_leaves_the_samplers_unloaded():
    # `import copyjax` (every script's first step) loads the theory, not blackjax and the chain
    # driver (op_posterior is imported by whoever samples)
    import subprocess
    import sys

    code = "import sys, copyjax; print(sorted(m for m in ('blackjax', 'copyjax.chains', 'copyjax.op_posterior') if m in sys.modules))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.strip() == "[]", r.stderr[-2000:]
