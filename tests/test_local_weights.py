"""Phase weights from local quantities (copyjax.local_weights): Laplace's log mass of a basin of
the G-marginal against an importance-sampling estimate of the same integral, and the SLT
formula's arithmetic."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax.local_weights import laplace_log_mass, slt_log_odds

jax.config.update("jax_enable_x64", True)


def test_laplace_log_mass_equals_the_integral_where_the_basin_is_gaussian():
    """At L = 4, V = 3, P = 1000 (expected statistics) with a narrow G prior (sigma_g2 = 0.02) the
    softmax posterior of G is one nearly Gaussian basin: log Z = log E_q[exp(-S) / q] with q =
    N(G_m, H^-1) the Laplace Gaussian itself, 20000 draws in 16 dimensions, error sd(w) /
    (sqrt(N) mean(w)) (delta method; measured 0.0007). Measured: Laplace -215.847, the integral
    -215.821 (the anharmonic remainder, 0.026 nats). Planted: the log det's 1/2 dropped moves
    log Z by 34 nats; the data's Hessian dropped (prior curvature only) by 2.6 nats; both fail
    the 0.06-nat tolerance. (Without the narrow prior the copy basin is not Gaussian: the
    softmax logits' direction is skewed, 0.75 nats at sigma_g2 = 1; linear attention's scale
    direction (G, W) -> (c G, W / c) likewise, 2.4 nats, at any P.)"""
    L, V, P = 4, 3, 1000.0
    E = cj.expected_stats(P, L, V, jnp.float64)
    h = cj.Hyper(1.0, 1.0, 0.02)
    G0 = 0.1 * cj.shift_matrix(L, jnp.float64)
    lap = laplace_log_mass(G0, E, h, "softmax")
    assert lap.grad_max < 1e-6 and lap.min_eig > 0
    assert lap.logdet > 16 * math.log(1 / 0.02) + 4  # the data's curvature adds to the prior's
    H = jax.jacrev(jax.grad(lambda G: cj.exact_action(G.reshape(L, L), E, h, "softmax")))(jnp.asarray(lap.G).reshape(-1))
    chol = jnp.linalg.cholesky(jnp.linalg.inv(H))
    z = jax.random.normal(jax.random.key(0), (20000, L * L), jnp.float64)
    x = jnp.asarray(lap.G).reshape(-1) + z @ chol.T
    S = jax.vmap(lambda g: cj.exact_action(g.reshape(L, L), E, h, "softmax"))(x)
    # the proposal's density from this test's own Hessian (jacrev, not the code's lax.map of
    # vjps): importance sampling is unbiased for any proposal, so log Z shares nothing with the
    # log det under test (with lap.logdet here an error in it cancelled)
    log_q = -0.5 * jnp.sum(z**2, 1) - 0.5 * L * L * math.log(2 * math.pi) + 0.5 * jnp.linalg.slogdet(H)[1]
    log_w = np.asarray(-S - log_q)
    w = np.exp(log_w - log_w.max())
    log_Z = log_w.max() + math.log(w.mean())
    se = w.std() / (math.sqrt(w.size) * w.mean())
    assert se < 0.005
    assert abs(lap.log_mass - log_Z) < 0.06 + 4 * se, (lap.log_mass, log_Z, se)


def test_slt_log_odds_and_bad_input():
    # -n dL - d lambda log n, e.g. n = e^2: -e^2 (0.1 - 0.3) - (5 - 2) 2
    assert slt_log_odds(math.e**2, 0.1, 0.3, 5.0, 2.0) == pytest.approx(0.2 * math.e**2 - 6.0)
    with pytest.raises(ValueError, match="n must be > 1"):
        slt_log_odds(1.0, 0.1, 0.3, 5.0, 2.0)
    E = cj.expected_stats(100.0, 4, 3, jnp.float64)
    h = cj.default_hyper("softmax", 4)
    with pytest.raises(ValueError, match="batch"):
        laplace_log_mass(jnp.zeros((4, 4)), E, h, "softmax", batch=0)
    with pytest.raises(ValueError, match="tol"):
        laplace_log_mass(jnp.zeros((4, 4)), E, h, "softmax", tol=-1.0)
