"""Many hosts: JAX's multi-controller runtime (``jax.distributed``), one process per host (or
per GPU), started by hand, by SLURM or by an MPI launcher.

Call ``initialize`` (or ``initialize_auto`` under a cluster manager JAX detects) in every
process before any other JAX call; ``jax.devices()`` then lists every device of every process
and ``chains.run_chains`` shards the chain axis over all of them, each process feeding its
own devices' chains, with one gather at the end (every process gets the same draws). On CPU
the collectives go through gloo. Only process 0 writes files (``is_writer``; the scripts and
``results``' writes follow it).
"""
from __future__ import annotations

import socket
import time

import jax


def _check(coordinator_address, num_processes, process_id, timeout_s) -> tuple[str, int, int, int]:
    host, sep, port = str(coordinator_address).rpartition(":")
    if not (sep and host and port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"coordinator_address must be HOST:PORT (PORT in 1..65535), got {coordinator_address!r}")
    if not (isinstance(num_processes, int) and num_processes >= 1):
        raise ValueError(f"num_processes must be an integer >= 1, got {num_processes!r}")
    if not (isinstance(process_id, int) and 0 <= process_id < num_processes):
        raise ValueError(f"process_id must be an integer in [0, num_processes) = [0, {num_processes}), "
                         f"got {process_id!r}")
    if not (isinstance(timeout_s, int) and timeout_s >= 1):
        raise ValueError(f"timeout_s must be an integer >= 1 (seconds), got {timeout_s!r}")
    return str(coordinator_address), num_processes, process_id, timeout_s


def _wait_for_coordinator(address: str, timeout_s: int) -> None:
    """Until process 0's coordinator accepts a connection at ``address``; ``TimeoutError``
    naming it after ``timeout_s`` seconds (JAX itself would abort the process with a stack
    trace)."""
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=1.0).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"coordinator_address {address!r}: no coordinator answered within {timeout_s} s "
                                   "(is process 0 running, and the address right?)") from None
            time.sleep(0.25)


def initialize(coordinator_address: str, num_processes: int, process_id: int, timeout_s: int = 300) -> None:
    """``jax.distributed.initialize`` with its arguments checked first (a ``ValueError``
    naming the argument, before anything waits on a coordinator), gloo collectives on CPU,
    and ``timeout_s`` seconds for every process to reach the coordinator (then a
    ``TimeoutError`` naming it, not a hang)."""
    address, n, i, timeout = _check(coordinator_address, num_processes, process_id, timeout_s)
    if i > 0:  # process 0 starts the coordinator; the others wait for it to answer
        _wait_for_coordinator(address, timeout)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=address, num_processes=n, process_id=i,
                               initialization_timeout=timeout)


def initialize_auto(timeout_s: int = 300) -> None:
    """``jax.distributed.initialize()`` with JAX's own cluster detection (SLURM, Open MPI, ...)."""
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(initialization_timeout=int(timeout_s))


def is_writer() -> bool:
    """Whether this process writes the run's files: process 0 (the only one without
    ``jax.distributed``)."""
    return jax.process_index() == 0


__all__ = ["initialize", "initialize_auto", "is_writer"]
