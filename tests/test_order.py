import jax
import jax.numpy as jnp
import numpy as np

import copyjax as cj


def off_span(L, key):
    """A random matrix with its projection onto span{U, S} removed."""
    R = jax.random.normal(key, (L, L), jnp.float64)
    U, S = cj.uniform_matrix(L, jnp.float64), cj.shift_matrix(L, jnp.float64)
    basis = jnp.stack([U.ravel(), S.ravel()], 1)
    coef = jnp.linalg.lstsq(basis, R.ravel())[0]
    return R - (basis @ coef).reshape(L, L)


def test_order_parameters_of_U_S_and_mixtures():
    L = 7
    U, S = cj.uniform_matrix(L, jnp.float64), cj.shift_matrix(L, jnp.float64)
    np.testing.assert_allclose(cj.order_parameters(U), (1.0, 0.0), atol=1e-14)
    np.testing.assert_allclose(cj.order_parameters(S), (0.0, 1.0), atol=1e-14)
    R = off_span(L, jax.random.key(0))
    np.testing.assert_allclose([jnp.sum(R * U), jnp.sum(R * S)], 0.0, atol=1e-12)
    A = 0.3 * U - 1.2 * S + R
    np.testing.assert_allclose(cj.order_parameters(A), (0.3, -1.2), atol=1e-12)
    # batched
    batch = jnp.stack([U, S, A])
    c1, cG = cj.order_parameters(batch)
    np.testing.assert_allclose(c1, [1.0, 0.0, 0.3], atol=1e-12)
    np.testing.assert_allclose(cG, [0.0, 1.0, -1.2], atol=1e-12)


def test_softmax_patterns_have_a1_plus_aG_one_only_on_span():
    L = 6
    A = cj.attention(jax.random.normal(jax.random.key(1), (L, L), jnp.float64), "softmax")
    a1, aG = cj.order_parameters(A)
    # rows sum to one: <A, U> = 1, so a_1 + a_G = 1 for every softmax pattern
    np.testing.assert_allclose(a1 + aG, 1.0, atol=1e-12)


def test_coverage():
    L = 6
    U, S = cj.uniform_matrix(L, jnp.float64), cj.shift_matrix(L, jnp.float64)
    for A in [U, S, 0.4 * U + 2.0 * S, -U + 0.1 * S]:
        np.testing.assert_allclose(cj.coverage(A), 1.0, atol=1e-12)
    R = off_span(L, jax.random.key(2))
    A = 0.5 * U + 0.5 * S + R
    cov = float(cj.coverage(A))
    expected = float(jnp.sum((0.5 * U + 0.5 * S) ** 2) / jnp.sum(A**2))
    assert cov < 1.0
    np.testing.assert_allclose(cov, expected, rtol=1e-12)
    np.testing.assert_allclose(cj.coverage(jnp.zeros((L, L))), 1.0)


def test_reported_linear_order_parameters_are_mirror_invariant():
    A = jax.random.normal(jax.random.key(3), (5, 5), jnp.float64)
    a, b = cj.reported_order_parameters(A, "linear"), cj.reported_order_parameters(-A, "linear")
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-13)
    old_a, old_b = cj.sign_invariant(A), cj.sign_invariant(-A)
    for k in old_a:
        np.testing.assert_allclose(old_a[k], old_b[k], rtol=1e-13)


def test_reported_linear_equals_plain_values_in_the_same_sign_family():
    L = 8
    U, S = cj.uniform_matrix(L, jnp.float64), cj.shift_matrix(L, jnp.float64)
    R = off_span(L, jax.random.key(4))
    for c1, cG in [(0.3, 0.5), (1.0, 0.0), (0.0, 1.0), (0.9, 0.05)]:
        A = c1 * U + cG * S + 0.1 * R
        g, s = float(jnp.sum(A * S)), float(jnp.sum(A))
        assert g >= 0 and s >= 0
        rep = cj.reported_order_parameters(A, "linear")
        np.testing.assert_allclose([rep["c1"], rep["cG"], rep["abs_rho"]], [c1, cG, c1 + cG], atol=1e-12)
        assert float(rep["family"]) == (1.0 if g * s > 0 else 0.0)


def test_opposite_sign_family_is_labelled_and_keeps_abs_cG():
    # the state seen in exact chains at L = 64, P = 8973: c_1 = -1.02, c_G = +0.63
    L = 64
    U, S = cj.uniform_matrix(L, jnp.float64), cj.shift_matrix(L, jnp.float64)
    rep = cj.reported_order_parameters(-1.02 * U + 0.63 * S, "linear")
    np.testing.assert_allclose([rep["cG"], rep["abs_rho"], rep["c1"]], [0.63, 0.39, 1.02], atol=1e-12)
    assert float(rep["family"]) == -1.0
    # softmax: plain values, family +1
    A = cj.attention(jax.random.normal(jax.random.key(5), (L, L), jnp.float64), "softmax")
    rep = cj.reported_order_parameters(A, "softmax")
    np.testing.assert_allclose([rep["c1"], rep["cG"]], cj.order_parameters(A), rtol=1e-14)
    assert float(rep["family"]) == 1.0


def test_reduced_action_is_even_in_g_and_in_s_separately():
    from copyjax import reduced

    h = cj.default_hyper("linear", 16)
    a, r, g, s = 3.0, 20.0, 1.7, 9.0
    ref = reduced.sector_action(a, r, g, s, 500.0, 16, 8, h)
    for gg, ss in [(-g, s), (g, -s), (-g, -s)]:
        np.testing.assert_allclose(reduced.sector_action(a, r, gg, ss, 500.0, 16, 8, h), ref, rtol=1e-14)
    # and it does depend on g and s (the test could fail)
    assert abs(float(reduced.sector_action(a, r, 2 * g, s, 500.0, 16, 8, h) - ref)) > 1e-3
