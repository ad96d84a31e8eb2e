import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import reduced as R
from copyjax._optim import lbfgs_minimize
from copyjax import theory as T


@pytest.mark.parametrize("seed", [0, 1])
def test_sector_action_equals_exact_action_at_expected_stats(seed):
    L, V, P = 7, 5, 321.0
    h = cj.Hyper(1.3, 0.7, 0.4)
    A = jax.random.normal(jax.random.key(seed), (L, L), jnp.float64)
    E = cj.expected_stats(P, L, V, jnp.float64)
    np.testing.assert_allclose(R.sector_action(*R.pattern_scalars(A), P, L, V, h),
                               cj.data_action(A, E, h), rtol=1e-12)


def test_reduced_energies_equal_exact_action_on_their_ansatz():
    L, V, P = 9, 4, 250.0
    E = cj.expected_stats(P, L, V, jnp.float64)
    U, S = cj.uniform_matrix(L, jnp.float64), cj.shift_matrix(L, jnp.float64)
    hl = cj.default_hyper("linear", L)
    c = jnp.array([0.4, -0.3])
    np.testing.assert_allclose(R.linear_energy(c, P, L, V, hl),
                               cj.exact_action(c[0] * U + c[1] * S, E, hl, "linear"), rtol=1e-12)
    hs = cj.default_hyper("softmax", L)
    g = 2.3
    G = g * (S - 1.0 / L)
    np.testing.assert_allclose(R.softmax_energy(g, P, L, V, hs),
                               cj.exact_action(G, E, hs, "softmax"), rtol=1e-12)
    a1, aG = cj.order_parameters(cj.attention(G, "softmax"))
    np.testing.assert_allclose(aG, R.softmax_aG(g, L), rtol=1e-12)
    assert cj.coverage(cj.attention(G, "softmax")) > 1 - 1e-12


def full_map(L, V, P, activation, G0, steps=3000):
    """Minimise the exact action over all L^2 entries of G at the expected statistics."""
    h = cj.default_hyper(activation, L)
    E = cj.expected_stats(P, L, V, jnp.float64)
    f = lambda G: cj.exact_action(G, E, h, activation)
    G, _ = lbfgs_minimize(f, G0, max_steps=steps)
    return G, f(G)


@pytest.mark.parametrize("activation, P", [("linear", 900.0), ("softmax", 600.0), ("linear", 200.0)])
def test_reduced_minima_match_full_map(activation, P):
    # The full L^2-dimensional MAP from random starts must land on a minimum of the reduced
    # theory, and the best of them on its global minimum.
    L, V = 8, 4
    ms = T.minima(P, L, V, activation, form="map")
    best = min(ms, key=lambda m: m.action)
    found = []
    for seed in range(3):
        G0 = 0.3 * jax.random.normal(jax.random.key(seed), (L, L), jnp.float64)
        G, val = jax.jit(full_map, static_argnums=(0, 1, 3))(L, V, P, activation, G0)
        c1, cG = cj.order_parameters(cj.attention(G, activation))
        if activation == "linear" and c1 + cG < 0:
            c1, cG = -c1, -cG
        found.append((float(val), float(c1), float(cG)))
        assert min(abs(float(val) - m.action) for m in ms) < 1e-6 * abs(best.action)
    v, c1, cG = min(found)
    np.testing.assert_allclose([v, c1, cG], [best.action, best.c1, best.cG], rtol=1e-5, atol=1e-5)


def test_linear_residual_saddle_is_stationary():
    L, V, P = 12, 6, 700.0
    h = cj.default_hyper("linear", L)
    c = jnp.array([0.2, 0.1])
    u = R.linear_residual_saddle(c, P, L, V, h)
    g = jax.grad(lambda u: R.linear_posterior_action(jnp.concatenate([c, u]), P, L, V, h))(u)
    assert float(jnp.abs(g).max()) < 1e-8


def test_sector_loss_matches_direct_bayes_average():
    # Per-sequence loss with W averaged over its Gaussian posterior given A, computed from
    # K, B, M directly: (1/2LP)[PL - 2 tr(Wm B) + tr(Wm K Wm^T) + sw2 tr(K M^-1)].
    L, V, P = 6, 5, 400.0
    h = cj.Hyper(1.2, 0.8, 1.0)
    A = jax.random.normal(jax.random.key(4), (L, L), jnp.float64)
    E = cj.expected_stats(P, L, V, jnp.float64)
    K, B = cj.model.stats_contractions(A, E)
    c = h.beta * h.sigma_w2 / (L * V)
    M = jnp.eye(V) + c * K
    Wm = c * B.T @ jnp.linalg.inv(M)
    direct = (P * L - 2 * jnp.trace(Wm @ B) + jnp.trace(Wm @ K @ Wm.T)
              + h.sigma_w2 * jnp.trace(K @ jnp.linalg.inv(M))) / (2 * L * P)
    np.testing.assert_allclose(R.sector_loss(*R.pattern_scalars(A), P, L, V, h), direct, rtol=1e-12)
    np.testing.assert_allclose(R.sector_loss(0.0, 0.0, 0.0, 0.0, P, L, V, h), 0.5)


def test_softmax_first_order_transition_at_64_32():
    r = T.transition_points(64, 32, "softmax", form="map")
    assert r.first_order
    assert r.P_spinodal_low < r.P_star < r.P_spinodal_high
    ms = T.minima(r.P_star, 64, 32, "softmax")
    assert len(ms) == 2
    assert abs(ms[0].action - ms[1].action) < 1e-3 * abs(ms[0].action)
    assert ms[1].cG - ms[0].cG > 0.3  # a jump, not a gentle slope
    assert len(T.minima(r.P_spinodal_low * 0.98, 64, 32, "softmax")) == 1
    assert len(T.minima(r.P_spinodal_high * 1.02, 64, 32, "softmax")) == 1


@pytest.mark.parametrize("form", ["map", "posterior"])
def test_linear_onset_and_crossover(form):
    L, V = 32, 16
    r = T.transition_points(L, V, "linear", form=form)
    h = cj.default_hyper("linear", L)
    eig = lambda P: np.linalg.eigvalsh(np.asarray(T.linear_hessian_at_zero(P, L, V, h, form)))[0]
    assert eig(r.P_onset * 0.99) > 0 > eig(r.P_onset * 1.01)
    assert r.pooling_first
    assert r.P_cross > r.P_onset
    lo = min(T.minima(r.P_cross * 0.9, L, V, "linear", form=form), key=lambda m: m.action)
    hi = min(T.minima(r.P_cross * 1.1, L, V, "linear", form=form), key=lambda m: m.action)
    assert lo.c1 > lo.cG and hi.cG > hi.c1
    # continuous onset: the order parameter is small just above P_onset
    just = min(T.minima(r.P_onset * 1.01, L, V, "linear", form=form), key=lambda m: m.action)
    assert 0 < just.c1 + just.cG < 0.2


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: T.transition_points(16, 8, "softmax", form="mle"), "form"),
        (lambda: T.transition_points(16, 8, "relu"), "activation"),
        (lambda: T.transition_points(1, 8, "softmax"), "L"),
        (lambda: T.theory_curve([], 16, 8, "softmax"), "Ps"),
        (lambda: T.theory_curve([10, 5], 16, 8, "softmax"), "Ps"),
        (lambda: T.theory_curve([-1, 5], 16, 8, "softmax"), "Ps"),
        (lambda: T.minima(0, 16, 8, "softmax"), "P"),
        (lambda: T.transition_points(16, 8, "softmax", P_range=(10, 5)), "P_range"),
    ],
)
def test_bad_input(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_normalised_hyper_maps_normalisations_to_beta_sigma():
    assert cj.normalised_hyper("linear", 16, 8) == cj.default_hyper("linear", 16)
    assert cj.normalised_hyper("softmax", 16, 8) == cj.default_hyper("softmax", 16)
    h = cj.normalised_hyper("linear", 16, 8, loss="sum", w_prior="unit", g_prior="unit")
    assert (h.beta, h.sigma_w2, h.sigma_g2) == (16.0, 8.0, 1.0)
    for kw, name in ((dict(loss="avg"), "loss"), (dict(w_prior="x"), "w_prior"), (dict(g_prior=1), "g_prior")):
        with pytest.raises(ValueError, match=name):
            cj.normalised_hyper("linear", 16, 8, **kw)


def test_joint_map_energy_is_max_over_W_of_the_joint_posterior():
    # The joint-MAP energy (no Occam factor) must equal -max_W log p(W, G | E C) up to a
    # G-independent constant: compare two patterns, W maximised exactly (its posterior mean).
    from copyjax import network as N

    L, V, P = 8, 5, 400.0
    h = cj.Hyper(1.2, 0.8, 1.0 / L)
    E = cj.expected_stats(P, L, V, jnp.float64)

    def neg_joint(c):
        G = c[0] * cj.uniform_matrix(L, jnp.float64) + c[1] * cj.shift_matrix(L, jnp.float64)
        K, B = cj.model.stats_contractions(G, E)
        M = jnp.eye(V) + h.beta * h.sigma_w2 / (L * V) * K
        Wbar = h.beta * h.sigma_w2 / (L * V) * jnp.linalg.solve(M, B).T
        return -N.logdensity_from_stats(N.Params(Wbar, G), E, h, "linear")

    c_a, c_b = jnp.array([0.3, 0.2]), jnp.array([0.05, 0.6])
    red = lambda c: R.linear_energy(c, P, L, V, h, occam=False)
    np.testing.assert_allclose(neg_joint(c_a) - neg_joint(c_b), red(c_a) - red(c_b), rtol=1e-9)
    # and the Occam factor is what separates it from the marginal MAP energy
    occ = lambda c: R.linear_energy(c, P, L, V, h) - red(c)
    assert float(occ(c_b)) > float(occ(c_a)) > 0


def test_linear_opposite_sign_family_is_a_metastable_minimum():
    # the state exact chains fall into at L = 64, P = 8973 (|c_G| ~ 0.63, |rho| ~ 0.4): a
    # local minimum of the posterior form with g s < 0, ~107 nats above the same-sign one
    from copyjax.theory import linear_family_minima

    h = cj.default_hyper("linear", 64)
    r = linear_family_minima(8973.0, 64, 32, h)
    same, opp = r["same"], r["opposite"]
    assert opp is not None
    L = 64
    assert (opp.c1 + L * opp.cG) * (opp.c1 + opp.cG) < 0
    assert abs(abs(opp.cG) - abs(same.cG)) < 0.02 and 0.3 < abs(opp.c1 + opp.cG) < 0.5
    assert 50 < r["delta_action"] < 200
    # below the crossover there is no such state
    assert linear_family_minima(5095.0, 64, 32, h)["opposite"] is None


def test_transition_points_are_typed_with_every_field():
    # one type for both activations: fields of the other branch are None, not missing keys,
    # so `tp.P_star or tp.P_steepest` works on a crossover and as_dict() is JSON
    import json

    s = T.transition_points(8, 8, "softmax")  # a crossover: one minimum at every P
    lin = T.transition_points(8, 8, "linear")
    assert isinstance(s, T.TransitionPoints) and s._fields == lin._fields
    assert s.P_star is None and s.P_steepest > 0
    assert (s.P_star or s.P_steepest) == s.P_steepest
    assert s.P_onset is None and lin.P_star is None and lin.P_onset > 0
    assert lin.first_order is None and s.first_order is False
    assert json.loads(json.dumps(s.as_dict()))["P_steepest"] == s.P_steepest


def test_theory_front_checks_its_input():
    # the module functions are the theory's one front (copyjax.problem was removed, CHANGELOG
    # 0.2.0): P, form, L and activation are checked where they enter
    import jax

    jax.config.update("jax_enable_x64", True)
    with pytest.raises(ValueError, match="P"):
        T.minima(-1.0, 8, 4, "softmax")
    with pytest.raises(ValueError, match="form"):
        T.minima(100, 8, 4, "softmax", form="mean_field")
    with pytest.raises(ValueError, match="L"):
        T.transition_points(1, 8, "softmax")
    with pytest.raises(ValueError, match="activation"):
        T.transition_points(16, 8, "relu")



def test_mean_field_newton_jacobian_is_the_autodiff_jacobian():
    # softmax_mf_newton's closed-form Jacobian I + L Hess F Cov(n, p) must be d/dm of the
    # residual m - softmax_mf_map(m): one unclipped Newton step from it equals one step of
    # newton_root with autodiff's Jacobian (a wrong Jacobian gives another step, and over 30
    # steps other roots or none); 30 steps land on the same root.
    L, V, P = 16, 8, 300.0
    hyper = cj.default_hyper("softmax", L)
    law = R.law_for(L, hyper, P)
    resid = lambda m: m - R.softmax_mf_map(m, P, L, V, hyper, law)
    for m0 in (jnp.array([-3.0, 9.0]), jnp.array([-0.2, 1.0])):
        for steps in (1, 30):
            m_new = R.softmax_mf_newton(m0, P, L, V, hyper, law, steps=steps, max_step=1e6)[0]
            m_old = R.newton_root(resid, m0, steps=steps, max_step=1e6)
            np.testing.assert_allclose(m_new, m_old, rtol=1e-9, atol=1e-9)
        # the early stop (what theory's mean-field search uses) lands on the same root; one
        # that stopped on a wrong test (at once, or on the step instead of the residual) would not
        m_tol = R.softmax_mf_newton(m0, P, L, V, hyper, law, steps=30, max_step=1e6, tol=1e-12)
        np.testing.assert_allclose(m_tol[0], m_new, rtol=1e-10, atol=1e-10)
        assert float(m_tol[1]) < 1e-10 * (1 + float(jnp.max(jnp.abs(m_tol[0]))))
    with pytest.raises(ValueError, match="tol"):
        R.newton_root(lambda x: x**2 - 2.0, jnp.array([1.0]), levenberg=True, tol=1e-9)
