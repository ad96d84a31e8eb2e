"""Results on disk: atomic writes, JSON, npz and CSV, configuration hashes, and the one-file-
per-point layout that makes a sweep resumable.

Every write goes to a temporary file in the target folder, is flushed to disk, then renamed
over the target (``os.replace`` is atomic on POSIX): a killed run leaves either the old file
or the new one, never half of one.
"""
from __future__ import annotations

import csv
import hashlib
import importlib.metadata
import io
import json
import os
import tempfile

import numpy as np


def writes_here() -> bool:
    """Whether this process writes files: always, except the processes other than 0 of a
    ``jax.distributed`` run (their results are the same: ``chains.run_chains`` gathers them)."""
    import jax

    return not jax.distributed.is_initialized() or jax.process_index() == 0


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file + fsync + ``os.replace``); only on
    the process that ``writes_here``."""
    if not writes_here():
        return
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_savez(path: str, **arrays) -> None:
    """``np.savez(path, **arrays)``, atomically."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


def write_json(path: str, obj) -> None:
    """``obj`` as indented JSON, atomically; NumPy scalars are written as floats."""
    atomic_write_bytes(path, json.dumps(obj, indent=1, default=float).encode())


def read_json(path: str):
    with open(path) as f:
        return json.load(f)


def write_csv(path: str, header, rows) -> None:
    """A header row and ``rows`` as CSV, atomically."""
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    atomic_write_bytes(path, buf.getvalue().encode())


def config_hash(cfg: dict) -> str:
    """16 hex digits identifying a JSON-serialisable configuration (key order irrelevant)."""
    return hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]


def load_if_same(path: str, key: dict):
    """The JSON record at ``path`` if it was saved (``save_with_key``) under the same ``key``
    (everything that determines it: task, method, settings, versions), else None: absent, or
    written for something else, so the caller recomputes instead of reusing it."""
    if not os.path.exists(path):
        return None
    record = read_json(path)
    return record if record.get("key_hash") == config_hash(key) else None


def save_with_key(path: str, key: dict, record: dict) -> None:
    """``record`` with its ``key`` and the key's hash, atomically (``load_if_same`` reads it)."""
    write_json(path, record | {"key": key, "key_hash": config_hash(key)})


def file_digest(path: str) -> str:
    """16 hex digits of a file's contents (a user's sampler module, say: part of a result's key)."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


def point_path(out: str, activation: str, index: int) -> str:
    """``out/points/<activation>_<index>``: the base name of one point's ``.json`` and ``.npz``."""
    return os.path.join(out, "points", f"{activation}_{index:03d}")


def load_point(base: str, key: dict):
    """``(summary, arrays)`` of a finished point at ``base`` saved under ``key`` (``save_point``;
    matched by ``load_if_same``), or None (absent, unfinished, or saved for something else)."""
    if not os.path.exists(base + ".npz"):
        return None
    summary = load_if_same(base + ".json", key)
    if summary is None:
        return None
    with np.load(base + ".npz") as z:
        return summary, dict(z)


def save_point(base: str, key: dict, summary: dict, arrays: dict) -> None:
    """Arrays first, the summary (``save_with_key``) last: a point counts as done only once its
    summary exists."""
    atomic_savez(base + ".npz", **arrays)
    save_with_key(base + ".json", key, summary)


def package_versions(names) -> dict:
    """``{name: version or None}`` of installed distributions, read from their metadata:
    nothing is imported, so recording the version of an optional package that is absent (or
    slow to import) neither fails nor costs an import. ``None`` means not installed."""
    out = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


# what the scripts record in their outputs: the runtime dependencies, the optional ones
# (recorded as None where absent) and copyjax itself
RECORDED_PACKAGES = ("copyjax", "jax", "jaxlib", "blackjax", "optax", "numpyro", "numpy", "matplotlib",
                     "chex", "arviz")


__all__ = ["RECORDED_PACKAGES", "atomic_savez", "atomic_write_bytes", "config_hash", "file_digest", "load_if_same",
           "load_point", "package_versions", "point_path", "read_json", "save_point", "save_with_key", "write_csv",
           "write_json", "writes_here"]
