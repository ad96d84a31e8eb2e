"""Test setup: 4 fake CPU devices (sharding tests) and float64 available.

Both must be set before JAX initialises its backend, hence at import of conftest.
Float32 tests cast their inputs explicitly.
"""
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
