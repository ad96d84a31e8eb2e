"""Linear attention in order-parameter space: the MAP energy in (c_1, c_G), the exact posterior
action with the residual norms integrated radially, and its profile (docs/theory.md section 6)."""
from __future__ import annotations


import jax
import jax.numpy as jnp

from copyjax.reduced.newton import newton_minimize
from copyjax.reduced.sector import _require_iid, sector_action


def span_scalars(c1, cG, L):
    """a, r, g, s of c_1 U + c_G S."""
    rho = c1 + cG
    q = c1**2 + 2 * c1 * cG + L * cG**2
    return q, L * rho**2, c1 + L * cG, L * rho


def linear_energy(c, P, L: int, V: int, hyper, occam: bool = True, tokens=None):
    """MAP-form reduced action of linear attention at ``c = (c_1, c_G)``.

    Equals ``exact_action(c_1 U + c_G S, expected_stats(P))``; the residual R only raises
    the action (d/da and d/dr of F are > 0), so every MAP lies in span{U, S}.
    """
    _require_iid(tokens, "linear_energy")
    c1, cG = c[..., 0], c[..., 1]
    q, r, g, s = span_scalars(c1, cG, L)
    return sector_action(q, r, g, s, P, L, V, hyper, occam, tokens) + q / (2 * hyper.sigma_g2)


def residual_dims(L: int) -> tuple[int, int]:
    """Dimensions of the row-sum residual (L - 1) and of the bulk residual (L^2 - L - 1)."""
    return L - 1, L * L - L - 1


def linear_posterior_action(z, P, L: int, V: int, hyper, tokens=None):
    """Exact negative log posterior density (expected statistics) of linear attention in
    ``z = (c_1, c_G, u_row, u_bulk)``, ``u = log ||R_part||_F^2``.

    ``G = c_1 U + c_G S + R_row + R_bulk`` is a fixed linear change of variables; the
    residual parts are integrated radially, a part of dimension d with squared norm t
    contributing ``t^(d/2) du``. Up to a constant, ``p(z) = exp(-linear_posterior_action)``.
    """
    _require_iid(tokens, "linear_posterior_action")
    c1, cG, u_r, u_b = z[..., 0], z[..., 1], z[..., 2], z[..., 3]
    d_r, d_b = residual_dims(L)
    t_r, t_b = jnp.exp(u_r), jnp.exp(u_b)
    q, r, g, s = span_scalars(c1, cG, L)
    a = q + t_r + t_b
    data = sector_action(a, r + L * t_r, g, s, P, L, V, hyper, tokens=tokens)
    return data + a / (2 * hyper.sigma_g2) - 0.5 * d_r * u_r - 0.5 * d_b * u_b




def linear_residual_saddle(c, P, L: int, V: int, hyper, tokens=None):
    """``(u_row, u_bulk)`` minimising the 4-d action at fixed c (the posterior form's saddle)."""
    d_r, d_b = residual_dims(L)
    u0 = jnp.log(jnp.array([d_r, d_b], dtype=c.dtype) * hyper.sigma_g2)
    fun = lambda u: linear_posterior_action(jnp.concatenate([c, u]), P, L, V, hyper, tokens)
    return newton_minimize(fun, u0)


def linear_profile(c, P, L: int, V: int, hyper, tokens=None):
    """Posterior-form reduced action of linear attention in ``c = (c_1, c_G)``: the 4-d
    exact action at the saddle of the two residual norms (exact as L -> infinity, where
    the norms of L - 1 and L^2 - L - 1 Gaussian directions concentrate). ``c: (2,)``."""
    u = jax.lax.stop_gradient(linear_residual_saddle(c, P, L, V, hyper, tokens))
    # At the saddle d/du = 0, so the gradient in c is the partial one (envelope theorem).
    return linear_posterior_action(jnp.concatenate([c, u]), P, L, V, hyper, tokens)


__all__ = ["linear_energy", "linear_posterior_action", "linear_profile", "linear_residual_saddle", "residual_dims", "span_scalars"]
