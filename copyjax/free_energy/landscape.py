"""Reading a free-energy profile: its local minima (with their errors), the barrier between
them, bin centres, and where two phases carry equal mass."""
from __future__ import annotations


import numpy as np



def local_minima(F: np.ndarray, depth: float = 1.0, F_sd: np.ndarray | None = None, z: float = 2.0) -> tuple:
    """Indices of the local minima of ``F`` (nan bins skipped) that are at least ``depth``
    nats below the highest point between them and each neighbouring minimum; with ``F_sd``
    (the bins' standard errors), at least ``depth + z * hypot(sd at the minimum, sd at the
    top)``: a dip that the statistical noise of the profile could make is not a minimum."""
    ok = np.flatnonzero(np.isfinite(F))
    y = F[ok]
    e = np.zeros_like(y) if F_sd is None else np.nan_to_num(np.asarray(F_sd, float)[ok])
    cand = [i for i in range(len(y)) if (i == 0 or y[i] <= y[i - 1]) and (i == len(y) - 1 or y[i] <= y[i + 1])]
    keep = []
    for i in cand:
        if keep:
            j = keep[-1]
            t = j + int(np.argmax(y[j:i + 1]))
            hi = i if y[i] > y[j] else j  # the shallower of the two sets the separation
            if y[t] - y[hi] < depth + z * np.hypot(e[hi], e[t]):
                if y[i] < y[j]:
                    keep[-1] = i
                continue
        keep.append(i)
    return tuple(int(ok[i]) for i in keep)


def bin_centres(edges, bins) -> list:
    """The coordinate at the centre of each of ``bins`` (indices into ``edges``' bins)."""
    return [float(0.5 * (edges[i] + edges[i + 1])) for i in bins]


def barrier_height(F: np.ndarray, minima: tuple) -> float:
    """F at the top between the two lowest minima minus the higher of them (nan if < 2)."""
    if len(minima) < 2:
        return float("nan")
    a, b = sorted(sorted(minima, key=lambda i: F[i])[:2])
    return float(np.nanmax(F[a:b + 1]) - max(F[a], F[b]))


def equal_weight_point(P: np.ndarray, log_ratio: np.ndarray, log_ratio_sd: np.ndarray) -> tuple[float, float]:
    """Where log(copy / pooling) crosses 0, by linear interpolation in log P between the
    bracketing points, and its error from the bracketing points' errors (delta method,
    independent). ``(nan, nan)`` if there is no crossing."""
    P, r, s = (np.asarray(a, float) for a in (P, log_ratio, log_ratio_sd))
    o = np.argsort(P)
    P, r, s = P[o], r[o], s[o]
    for i in range(len(P) - 1):
        if np.isfinite(r[i]) and np.isfinite(r[i + 1]) and r[i] < 0 <= r[i + 1]:
            x0, x1 = np.log(P[i]), np.log(P[i + 1])
            w = -r[i] / (r[i + 1] - r[i])
            x = x0 + w * (x1 - x0)
            slope = (r[i + 1] - r[i]) / (x1 - x0)
            err_r = np.hypot((1 - w) * s[i], w * s[i + 1])
            return float(np.exp(x)), float(np.exp(x) * err_r / abs(slope))
    return float("nan"), float("nan")


__all__ = ["barrier_height", "bin_centres", "equal_weight_point", "local_minima"]
