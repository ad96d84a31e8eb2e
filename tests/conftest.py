"""Test setup: 4 fake CPU devices (sharding tests) and float64 available.

Both must be set before JAX initialises its backend, hence at import of conftest.
Float32 tests cast their inputs explicitly.
"""
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

# One persistent compilation cache per test session (a fresh directory, not the user's
# ~/.cache): the end-to-end tests run the same scripts at the same tiny shapes many times (the
# main job at L = 4, V = 3 in a dozen tests), each run compiling everything again without it.
# JAX reads these variables at import: the scripts run as subprocesses and pytest-xdist's
# workers (which inherit the controller's environment, so all share the directory) use it;
# the controller imported JAX above and runs no test.
_OWN_CACHE = None  # the directory this process made (the controller's), removed at the end
if "COPYJAX_TEST_COMPILE_CACHE" not in os.environ:
    import tempfile

    os.environ["COPYJAX_TEST_COMPILE_CACHE"] = _OWN_CACHE = tempfile.mkdtemp(prefix="copyjax-test-jax-cache-")
os.environ["COPYJAX_COMPILE_CACHE"] = os.environ["JAX_COMPILATION_CACHE_DIR"] = os.environ["COPYJAX_TEST_COMPILE_CACHE"]
os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0.2"

# ArviZ 0.x writes a once-a-day stamp (~/.cache/arviz/daily_warning) through one fixed temporary
# file when first imported that day: two xdist workers importing it together at collection
# (tests/test_io.py) race on that file and one dies with FileNotFoundError (seen at midnight,
# and on any fresh machine). The controller imports it once before the workers start, so they
# find today's stamp and write nothing.
if "PYTEST_XDIST_WORKER" not in os.environ:  # the controller (or a run without workers)
    import importlib.util
    import warnings

    if importlib.util.find_spec("arviz") is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import arviz  # noqa: E402, F401

import pytest  # noqa: E402


@pytest.fixture
def one_device():
    """The first device only, for statistical tests that are not about sharding: the 4 fake
    devices share 2 cores and sharded chains synchronise every step (measured 2.6x slower at
    L = 20, 32 chains). Chains give the same draws on any layout (tests/test_chains.py)."""
    return jax.devices()[:1]


# The heaviest files first. pytest-xdist's loadfile hands whole files to the two workers in
# order; by default it orders them by their number of tests, which put test_free_energy.py (9
# tests, 263 s at 8b582d1, docs/testing.md) late, on one worker, alone. With
# --no-loadscope-reorder (pyproject's addopts) the order is this collection order, longest
# first (the classic fix). Stable: the tests keep their order within a file. The order is by
# the files' time in the default tier (the slow tier's heaviest, free energy, bench, scripts
# and the main job, lead as well; test times measured at ca84190, docs/testing.md).
_HEAVY_FIRST = ("test_scripts.py", "test_free_energy.py", "test_bench.py", "test_phase_diagram.py",
                "test_multihost.py", "test_tokens.py", "test_samplers.py", "test_llc.py", "test_theory.py",
                "test_published_numbers.py", "test_action.py", "test_exact_posterior.py", "test_chains.py",
                "test_masks.py", "test_minibatch.py", "test_op_posterior.py", "test_bench_phases.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(_HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_unconfigure(config):
    if _OWN_CACHE is not None:
        import shutil

        shutil.rmtree(_OWN_CACHE, ignore_errors=True)
