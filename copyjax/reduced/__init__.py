"""Large-P reduced actions in order-parameter space (docs/theory.md, sections 5-7).

With the expected statistics the exact action depends on A only through four scalars,
``a = ||A||_F^2``, ``r = ||A 1||^2``, ``g = <A, S>``, ``s = 1^T A 1``, split over two token
sectors (mean direction, multiplicity 1; its complement, multiplicity V - 1):

    F(a, r, g, s) = (V - 1) f(a, g) + f(r, s) + beta P / 2,
    f(x, y) = V/2 log(1 + kappa x) - lam kappa y^2 / (1 + kappa x),
    kappa = beta sigma_w2 P / (L V^2),   lam = beta P / (2 L V).

Linear attention (A = G = c_1 U + c_G S + R_row + R_bulk):
    ``linear_energy``          MAP form, residuals at zero, a function of (c_1, c_G);
    ``linear_posterior_action`` exact negative log density of (c_1, c_G, log t_row, log t_bulk)
                               (residual norms integrated radially, Jacobian included);
    ``linear_profile``         the posterior form in (c_1, c_G): saddle over the two norms.
Softmax attention (rows of A logistic-normal under the prior):
    ``softmax_energy``         MAP form along the symmetric copy ansatz, a function of the
                               copy logit gamma;
    ``row_law`` / ``softmax_free_energy`` / ``softmax_posterior_action``
                               mean field over rows with two multipliers (lam_a, mu_g).
All functions are pure jnp, differentiable and jit-able; P may be traced.

Modules: ``sector`` (the four-scalar action), ``linear``, ``softmax`` (the two activations' forms),
``newton`` (the solvers); their names are re-exported here.
"""
from __future__ import annotations

from copyjax.reduced.sector import iid_sector_action, pattern_scalars, sector_action, sector_loss
from copyjax.reduced.newton import newton_minimize, newton_root
from copyjax.reduced.linear import (
    linear_energy,
    linear_posterior_action,
    linear_profile,
    linear_residual_saddle,
    residual_dims,
    span_scalars,
)
from copyjax.reduced.softmax import (
    aG_from_y,
    copy_ansatz,
    law_for,
    row_cumulant,
    row_law,
    ROW_LAW_SEED,
    row_moments,
    row_table,
    RowLaw,
    softmax_aG,
    softmax_energy,
    softmax_free_energy,
    softmax_mf_hessian,
    softmax_mf_map,
    softmax_mf_newton,
    softmax_posterior_action,
)

__all__ = ["aG_from_y", "copy_ansatz", "iid_sector_action", "law_for", "linear_energy", "linear_posterior_action",
           "linear_profile", "linear_residual_saddle", "newton_minimize", "newton_root", "pattern_scalars",
           "residual_dims", "row_cumulant", "row_law", "ROW_LAW_SEED", "row_moments", "row_table", "RowLaw",
           "sector_action", "sector_loss", "softmax_aG", "softmax_energy", "softmax_free_energy",
           "softmax_mf_hessian", "softmax_mf_map", "softmax_mf_newton", "softmax_posterior_action", "span_scalars"]
