"""Test setup: 4 fake CPU devices (sharding tests) and float64 available.

Both must be set before JAX initialises its backend, hence at import of conftest.
Float32 tests cast their inputs explicitly.
"""
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)


import pytest  # noqa: E402


@pytest.fixture
def one_device():
    """The first device only, for statistical tests that are not about sharding: the 4 fake
    devices share 2 cores and sharded chains synchronise every step (measured 2.6x slower at
    L = 20, 32 chains). Chains give the same draws on any layout (tests/test_chains.py)."""
    return jax.devices()[:1]
