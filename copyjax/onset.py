"""The linear model's onset from the exact action, under any mask: where G = 0 stops being a
minimum of the MAP form at the expected statistics (the first of the linear transitions,
docs/theory.md section 6), found from the action's Hessian, for masks the reduced theory does
not cover (the causal and window masks, docs/beyond.md)."""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import masks
from copyjax.action import data_action
from copyjax.data import expected_stats


class Onset(NamedTuple):
    """The linear model's onset under a mask (``linear_onset``): ``P_onset`` where G = 0 stops
    being a minimum of the action at the expected statistics; ``c1``, ``cG``: the means over the
    mask's loss rows of ``Mask.row_pool_order`` / ``row_copy_order`` of the unstable mode (unit
    norm); ``cG_rows``: its ``row_copy_order`` per loss row; ``H1``, ``H2``: the Hessian
    of the action at G = 0 over the allowed entries is ``I / sigma_g2 + P H1 - P^2 H2``."""

    P_onset: float
    c1: float
    cG: float
    cG_rows: np.ndarray
    H1: np.ndarray
    H2: np.ndarray


def linear_onset(L: int, V: int, hyper, tokens=None, P_max: float = 1e7, mask="causal") -> Onset:
    """The onset of the linear model under ``mask`` in the MAP form: the smallest P at which
    the Hessian of the action at G = 0, on the expected statistics of the token law
    ``tokens``, loses positive definiteness. At A = 0, K = 0 and M = I, so the log-det term's
    Hessian is linear in P and the quadratic term's is quadratic: H(P) = I / sigma_g2 + P H1 -
    P^2 H2 exactly (H1, H2 from the data part's Hessians at P = 1 and 2, over the mask's
    allowed entries; checked at P = 3 to 1e-8 relative), and the onset is the root of its
    smallest eigenvalue (bisection). Where the theory of docs/theory.md has no form for the
    mask, this is the exact action itself, reduced to its quadratic part at the symmetric
    point; for the full mask it is the reduced theory's P_1 (a check of both)."""
    L, V = int(L), int(V)
    if L < 3 or V < 2:
        raise ValueError(f"L must be >= 3 and V >= 2, got L={L}, V={V}")
    mask = masks.get(mask)
    rows, cols = np.nonzero(mask.allowed(L))
    dtype = jax.dtypes.canonicalize_dtype(jnp.float64)

    def data_hessian(P):
        C = expected_stats(float(P), L, V, dtype, tokens)
        f = lambda g: data_action(jnp.zeros((L, L), dtype).at[rows, cols].set(g), C, hyper, mask)
        g0 = jnp.zeros(rows.size, dtype)
        # reverse over reverse: the statistics' contraction is a custom_vjp (no forward mode)
        hvp = lambda v: jax.grad(lambda g: jnp.vdot(jax.grad(f)(g), v))(g0)
        return np.asarray(jax.lax.map(hvp, jnp.eye(rows.size, dtype=dtype), batch_size=64))

    D1, D2, D3 = (data_hessian(P) for P in (1.0, 2.0, 3.0))
    H2 = (2 * D1 - D2) / 2
    H1 = D1 + H2
    scale = max(np.abs(D3).max(), 1e-300)
    if np.abs(3 * H1 - 9 * H2 - D3).max() > 1e-8 * scale:
        raise RuntimeError("the action's Hessian at G = 0 is not quadratic in P (a bug)")
    prior = np.eye(rows.size) / hyper.sigma_g2
    lam = lambda P: np.linalg.eigvalsh(prior + P * H1 - P**2 * H2)[0]
    if lam(P_max) > 0:
        raise ValueError(f"no onset below P_max = {P_max:g}")
    lo, hi = 0.0, P_max
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if lam(mid) > 0 else (lo, mid)
        if hi - lo < 1e-9 * hi:
            break
    P1 = 0.5 * (lo + hi)
    w, v = np.linalg.eigh(prior + P1 * H1 - P1**2 * H2)
    G = np.zeros((L, L))
    G[rows, cols] = v[:, 0]
    A = mask.attention(jnp.asarray(G), "linear")
    c1, cG = float(jnp.mean(mask.row_pool_order(A))), float(jnp.mean(mask.row_copy_order(A)))
    sign = 1.0 if cG + c1 >= 0 else -1.0
    norm = float(np.hypot(c1, cG)) or 1.0
    return Onset(float(P1), sign * c1 / norm, sign * cG / norm, sign * np.asarray(mask.row_copy_order(A)) / norm,
                 H1, H2)


__all__ = ["linear_onset", "Onset"]
