"""The four-scalar sector action: with i.i.d. token statistics the exact action depends on A
only through a = ||A||_F^2, r = ||A 1||^2, g = <A, S>, s = 1^T A 1 (docs/theory.md section 5)."""
from __future__ import annotations


import jax.numpy as jnp
import numpy as np

from copyjax.tokens import UNIFORM, marginal, token_law


def _consts(P, L, V, hyper):
    kappa = hyper.beta * hyper.sigma_w2 * P / (L * V**2)
    lam = hyper.beta * P / (2 * L * V)
    return kappa, lam


def sector_action(a, r, g, s, P, L: int, V: int, hyper, occam: bool = True, tokens=None):
    """Data part of the action at the expected statistics, from the four scalars.

    ``occam=False`` drops ``(V/2) log det M``, the Occam factor of integrating W out: what
    is left is ``-max_W log p(W, G | data)`` minus the G prior, the energy that joint MAP
    training (Adam on (W, G)) minimises. ``tokens``: the token law (``copyjax.tokens``;
    default uniform): an i.i.d. law goes to ``iid_sector_action``; a Markov law keeps the two
    commuting sectors (its marginal is uniform, ``E C_mn / P = R_mn I / V + (1 - R_mn) J / V^2``
    with ``R_mn = Q^|m-n|``), so this same form holds with a and g the R-weighted scalars
    ``tr(A^T A R)`` and ``tr(A^T S R)`` of ``pattern_scalars(A, tokens)``."""
    law = token_law(tokens)
    if law.iid and law != UNIFORM:
        return iid_sector_action(a, r, g, s, P, L, V, hyper, occam, law)
    kappa, lam = _consts(P, L, V, hyper)

    def f(x, y):
        occ = 0.5 * V * jnp.log1p(kappa * x) if occam else 0.0
        return occ - lam * kappa * y**2 / (1 + kappa * x)

    return (V - 1) * f(a, g) + f(r, s) + 0.5 * hyper.beta * P


def _require_iid(tokens, where: str):
    law = token_law(tokens)
    if not law.iid:
        raise ValueError(f"tokens={law.spec!r}: {where} needs i.i.d. tokens (under a Markov law a pattern's scalars "
                         "are R-weighted, tr(A^T A R), which depend on where in each row the weight sits); "
                         "the MAP form along the copy ansatz (softmax_energy) and the exact action on "
                         "data.expected_stats(..., tokens=...) take any law")
    return law


def _iid_law(law, V, dtype):
    """The marginal p of an i.i.d. law (``_require_iid``'s error for a Markov one)."""
    return marginal(_require_iid(law, "the i.i.d. four-scalar action"), V, dtype)


def iid_sector_action(a, r, g, s, P, L: int, V: int, hyper, occam: bool = True, tokens=None):
    """``sector_action`` for i.i.d. tokens of marginal p (``tokens``: zipf or uniform).

    ``E C_mn = P [delta_mn D + (1 - delta_mn) p p^T]``, D = diag(p), so
    ``K = P [a D + (r - a) p p^T]`` and ``B = P [g D + (s - g) p p^T]``: M is diagonal plus
    rank one, ``M = Lam + k p p^T`` with ``Lam = 1 + c P a p``, ``k = c P (r - a)``,
    ``c = beta sigma_w2 / (L V)``. The determinant lemma and Sherman-Morrison give log det M
    and tr(B^T M^-1 B) from four sums over tokens (O(V), differentiable); for uniform p this
    is ``sector_action``'s two-sector form."""
    law = token_law(tokens)
    a, r, g, s = (jnp.asarray(v) for v in (a, r, g, s))
    dtype = jnp.result_type(a, r, g, s, P, float)  # weak float: the inputs decide (float64 under x64)
    p = _iid_law(law, V, dtype)
    c = hyper.beta * hyper.sigma_w2 / (L * V)
    Lam = 1 + c * P * a[..., None] * p  # (..., V)
    k = c * P * (r - a)
    h = s - g
    m2 = jnp.sum(p**2 / Lam, axis=-1)
    m3 = jnp.sum(p**3 / Lam, axis=-1)
    n4 = jnp.sum(p**4 / Lam**2, axis=-1)
    U2 = jnp.sum(p**2)
    den = 1 + k * m2
    T = P**2 * (g**2 * m2 + 2 * g * h * m3 + h**2 * U2 * m2
                - k / den * (g**2 * n4 + 2 * g * h * m2 * m3 + h**2 * m2**2 * U2))
    occ = 0.5 * V * (jnp.sum(jnp.log(Lam), axis=-1) + jnp.log(den)) if occam else 0.0
    return occ - hyper.beta**2 * hyper.sigma_w2 / (2 * L**2 * V) * T + 0.5 * hyper.beta * P


def pattern_scalars(A, tokens=None):
    """``(a, r, g, s)`` of a pattern ``A: (..., L, L)``. For a Markov law ``tokens`` (stay
    probability Q), a and g are weighted by ``R_mn = Q^|m-n|``: ``tr(A^T A R)``, ``tr(A^T S R)``
    (what ``sector_action`` takes for that law)."""
    law = token_law(tokens)
    rows = jnp.sum(A, axis=-1)
    r = jnp.sum(rows**2, axis=-1)
    s = jnp.sum(rows, axis=-1)
    if law.kind == "markov":
        L = A.shape[-1]
        d = np.abs(np.arange(L)[:, None] - np.arange(L)[None, :])
        R = jnp.asarray(float(law.param) ** d, A.dtype)
        AR = A @ R
        a = jnp.sum(AR * A, axis=(-2, -1))  # sum_l A_l R A_l^T = tr(A^T A R)
        g = jnp.sum(jnp.diagonal(jnp.roll(AR, 1, axis=-1), axis1=-2, axis2=-1), axis=-1)  # sum_l (A R)_{l, l-1}
        return a, r, g, s
    a = jnp.sum(A**2, axis=(-2, -1))
    g = jnp.sum(jnp.diagonal(jnp.roll(A, 1, axis=-1), axis1=-2, axis2=-1), axis=-1)
    return a, r, g, s




def sector_loss(a, r, g, s, P, L: int, V: int, hyper, average_w: bool = True, tokens=None):
    """Per-sequence squared loss ``(1/2L) sum_l ||y - W h||^2`` at the expected statistics
    for a pattern with scalars (a, r, g, s), W at its posterior mean given the pattern
    (``average_w=False``) or averaged over its Gaussian posterior (``True``, adds
    ``sigma_w2 tr(K M^-1)``). At the expected statistics train and test loss coincide.

    Per sector (multiplicity m, scalars x, y): ``m/(2 L V) [L - 2 w y + w^2 x + v]`` with
    ``w = kappa y / (1 + kappa x)`` and ``v = sigma_w2 x / (1 + kappa x)``. For an i.i.d.
    law ``tokens``, the same from the V x V matrices ``K / P = a D + (r - a) p p^T``,
    ``B / P = g D + (s - g) p p^T``: ``W = c B^T M^-1``, loss
    ``(1/2L) [L - 2 tr(W B / P) + tr(W K W^T / P) + sigma_w2 tr(M^-1 K / P)]``. A Markov law:
    the sector form with the R-weighted scalars (``pattern_scalars(A, tokens)``).
    """
    law = token_law(tokens)
    if law.iid and law != UNIFORM:
        p = _iid_law(law, V, jnp.result_type(a, g, P, float))
        D, pp = jnp.diag(p), jnp.outer(p, p)
        Kb, Bb = a * D + (r - a) * pp, g * D + (s - g) * pp
        c = hyper.beta * hyper.sigma_w2 / (L * V)
        M = jnp.eye(V, dtype=Kb.dtype) + c * P * Kb
        W = c * P * jnp.linalg.solve(M, Bb).T  # M, B symmetric: B^T M^-1 = (M^-1 B)^T
        v = hyper.sigma_w2 * jnp.trace(jnp.linalg.solve(M, Kb)) if average_w else 0.0
        return (L - 2 * jnp.trace(W @ Bb) + jnp.trace(W @ Kb @ W.T) + v) / (2 * L)
    kappa, _ = _consts(P, L, V, hyper)

    def part(x, y):
        w = kappa * y / (1 + kappa * x)
        v = hyper.sigma_w2 * x / (1 + kappa * x) if average_w else 0.0
        return (L - 2 * w * y + w**2 * x + v) / (2 * L * V)

    return (V - 1) * part(a, g) + part(r, s)


__all__ = ["iid_sector_action", "pattern_scalars", "sector_action", "sector_loss"]
