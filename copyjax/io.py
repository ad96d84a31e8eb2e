"""Chains to ArviZ: ``run_chains`` output as ArviZ data with ``(chain, draw)`` dimensions,
written to and read from netCDF.

ArviZ is optional (``pip install copyjax[arviz]``). ArviZ 1.x (Python >= 3.12) returns an
``xarray.DataTree`` from ``from_dict(dict_of_groups)``; ArviZ 0.x (the last for Python 3.11)
an ``InferenceData`` from ``from_dict(posterior=..., ...)``. Both have the same groups and
variables here, ``to_netcdf(path)``, and ``arviz.from_netcdf`` reads them back.

Groups: ``posterior``, the recorded observables (``Samples.draws``, each ``(chain, draw)``);
``sample_stats``, per-chain quantities repeated over the draws so that they carry the same
dimensions: ``nonfinite`` (the chain was left out of summaries) and each kernel info's mean
over the recorded steps (``Samples.info``, e.g. ``acceptance_rate``).
"""
from __future__ import annotations

import numpy as np


def _arviz():
    try:
        import arviz
    except ImportError as e:
        raise ImportError("copyjax.io needs ArviZ: pip install 'copyjax[arviz]'") from e
    return arviz


def _major(arviz) -> int:
    return int(arviz.__version__.split(".")[0])


def to_inference_data(samples, *, attrs: dict | None = None):
    """``samples``: ``chains.Samples`` (or a dict ``name -> (chain, draw)`` of draws).
    ``attrs``: metadata kept on the posterior group (e.g. ``{"P": 5095, "L": 64}``)."""
    az = _arviz()
    draws = samples if isinstance(samples, dict) else samples.draws
    post = {k: np.asarray(v) for k, v in draws.items()}
    shapes = {v.shape[:2] for v in post.values()}
    if len(shapes) != 1 or any(v.ndim < 2 for v in post.values()):
        raise ValueError(f"samples: every draw array must be (chain, draw, ...) with the same (chain, draw), "
                         f"got {[v.shape for v in post.values()]}")
    n_chain, n_draw = shapes.pop()
    stats = {}
    if not isinstance(samples, dict):
        per_chain = {"nonfinite": np.asarray(samples.nonfinite)} | {k: np.asarray(v) for k, v in samples.info.items()}
        stats = {k: np.repeat(v[:, None], n_draw, axis=1) for k, v in per_chain.items() if v.shape == (n_chain,)}
    attrs = {"created_by": "copyjax"} | dict(attrs or {})
    if _major(az) >= 1:
        data = az.from_dict({"posterior": post} | ({"sample_stats": stats} if stats else {}))
    else:
        data = az.from_dict(posterior=post, sample_stats=stats or None)
    data["posterior"].attrs.update(attrs)
    return data


def write_netcdf(data, path) -> str:
    """Write ``to_inference_data``'s result to ``path`` (netCDF); returns the path."""
    data.to_netcdf(str(path))
    return str(path)


def read_netcdf(path):
    """Read it back (``arviz.from_netcdf``)."""
    return _arviz().from_netcdf(str(path))


__all__ = ["read_netcdf", "to_inference_data", "write_netcdf"]
