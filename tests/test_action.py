import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from _gaussian import gaussian_integral_over_W
from copyjax.action import marginal_logdensity


def setup(P=40, L=5, V=3, seed=0, dtype=jnp.float64):
    k1, k2 = jax.random.split(jax.random.key(seed))
    tokens = cj.sample_tokens(k1, P, L, V)
    G = 0.7 * jax.random.normal(k2, (L, L), dtype)
    return tokens, cj.sufficient_stats(tokens, V), G


HYPERS = [cj.Hyper(1.0, 1.0, 1.0), cj.Hyper(2.5, 0.6, 0.3)]


@pytest.mark.parametrize("activation", ["linear", "softmax"])
@pytest.mark.parametrize("hyper", HYPERS)
def test_action_equals_pooled_feature_build(activation, hyper):
    tokens, C, G = setup()
    V, P = 3, tokens.shape[0]
    h = cj.pooled_features(cj.attention(G, activation), tokens, V)
    y = jax.nn.one_hot(cj.copy_targets(tokens), V, dtype=h.dtype)
    naive = cj.action_from_features(h, y, P, hyper) + 0.5 * jnp.sum(G**2) / hyper.sigma_g2
    exact = cj.exact_action(G, C, hyper, activation)
    np.testing.assert_allclose(exact, naive, rtol=1e-12)
    g_exact = jax.grad(cj.exact_action)(G, C, hyper, activation)

    def naive_fn(G):
        h = cj.pooled_features(cj.attention(G, activation), tokens, V)
        return cj.action_from_features(h, y, P, hyper) + 0.5 * jnp.sum(G**2) / hyper.sigma_g2

    np.testing.assert_allclose(g_exact, jax.grad(naive_fn)(G), rtol=1e-10, atol=1e-12)


def gaussian_integral_action(G, tokens, V, hyper, activation):
    """-log int dW N(W; 0, sw2/V) exp(-beta/(2L) sum ||y - W h||^2) + ||G||^2/(2 sg2),
    as one V^2-dimensional Gaussian integral over vec(W) with an explicit design matrix
    (no K, B or M anywhere)."""
    A = np.asarray(cj.attention(G, activation))
    t = np.asarray(tokens)
    P, L = t.shape
    X = np.eye(V)[t]
    h = np.einsum("lm,pmv->plv", A, X).reshape(P * L, V)
    y = np.eye(V)[np.roll(t, 1, axis=1)].reshape(P * L, V)
    val = gaussian_integral_over_W(h, y, L, hyper)
    return val + 0.5 * np.sum(np.asarray(G) ** 2) / hyper.sigma_g2


@pytest.mark.parametrize("activation", ["linear", "softmax"])
@pytest.mark.parametrize("hyper", HYPERS)
def test_action_equals_exact_gaussian_integration(activation, hyper):
    tokens, C, G = setup(P=7, L=3, V=2, seed=4)
    ref = gaussian_integral_action(G, tokens, 2, hyper, activation)
    got = float(cj.exact_action(G, C, hyper, activation))
    assert abs(got - ref) <= 1e-8 * abs(ref)


def test_action_agrees_with_monte_carlo_over_W_prior():
    # S_P = -log E_W[exp(-beta/(2L) sum||y - W h||^2)] + ||G||^2/(2 sg2) with W from the
    # prior. N prior draws; the standard error of log(mean w) is sd(w) / (mean(w) sqrt(N))
    # (delta method). The test asserts agreement within 4 standard errors and checks
    # that the Monte Carlo is informative (se < 0.02).
    hyper = cj.Hyper(1.0, 1.0, 1.0)
    tokens, C, G = setup(P=3, L=2, V=2, seed=5)
    L, V = 2, 2
    A = cj.attention(G, "softmax")
    h = cj.pooled_features(A, tokens, V)
    y = jax.nn.one_hot(cj.copy_targets(tokens), V, dtype=h.dtype)
    N = 400_000
    W = jax.random.normal(jax.random.key(11), (N, V, V), jnp.float64) * jnp.sqrt(hyper.sigma_w2 / V)
    f = jnp.einsum("nij,plj->npli", W, h)
    logw = -hyper.beta / (2 * L) * jnp.sum((y - f) ** 2, axis=(1, 2, 3))
    w = np.exp(np.asarray(logw) - np.max(logw))
    est = -(np.log(w.mean()) + float(np.max(logw))) + 0.5 * float(jnp.sum(G**2))
    se = w.std() / (w.mean() * np.sqrt(N))
    got = float(cj.exact_action(G, C, hyper, "softmax"))
    assert se < 0.02
    assert abs(got - est) < 4 * se, (got, est, se)


@pytest.mark.parametrize("activation", ["linear", "softmax"])
def test_grad_matches_finite_differences(activation):
    tokens, C, G = setup(P=30, L=4, V=3, seed=2)
    hyper = cj.default_hyper(activation, 4)
    f = lambda G: cj.exact_action(G, C, hyper, activation)
    g = np.asarray(jax.grad(f)(G))
    eps = 1e-6
    fd = np.zeros_like(g)
    for i in range(4):
        for j in range(4):
            d = jnp.zeros((4, 4)).at[i, j].set(eps)
            fd[i, j] = (f(G + d) - f(G - d)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


def test_linear_action_is_even():
    tokens, C, G = setup(seed=3)
    h = cj.default_hyper("linear", 5)
    np.testing.assert_allclose(cj.exact_action(G, C, h, "linear"),
                               cj.exact_action(-G, C, h, "linear"), rtol=1e-13)
    # softmax is not even: the check can fail
    hs = cj.default_hyper("softmax", 5)
    assert abs(cj.exact_action(G, C, hs, "softmax") - cj.exact_action(-G, C, hs, "softmax")) > 1e-6


@pytest.mark.parametrize("activation", ["linear", "softmax"])
def test_vocabulary_permutation_invariance(activation):
    tokens, C, G = setup(seed=6)
    perm = jnp.array([2, 0, 1])
    C2 = cj.sufficient_stats(perm[tokens], 3)
    assert not np.array_equal(np.asarray(C), np.asarray(C2))
    h = cj.default_hyper(activation, 5)
    np.testing.assert_allclose(cj.exact_action(G, C, h, activation),
                               cj.exact_action(G, C2, h, activation), rtol=1e-12)


@pytest.mark.parametrize("activation", ["linear", "softmax"])
def test_cyclic_shift_invariance(activation):
    tokens, C, G = setup(seed=8)
    h = cj.default_hyper(activation, 5)
    k = 2
    Gs = jnp.roll(G, (k, k), axis=(0, 1))
    Cs = cj.sufficient_stats(jnp.roll(tokens, k, axis=1), 3)
    np.testing.assert_allclose(cj.exact_action(G, C, h, activation),
                               cj.exact_action(Gs, Cs, h, activation), rtol=1e-12)
    # with the expected statistics the shift alone is a symmetry
    E = cj.expected_stats(100.0, 5, 3, jnp.float64)
    np.testing.assert_allclose(cj.exact_action(G, E, h, activation),
                               cj.exact_action(Gs, E, h, activation), rtol=1e-12)
    # a non-cyclic permutation of positions is not
    perm = jnp.array([1, 0, 2, 3, 4])
    assert abs(cj.exact_action(G[perm][:, perm], E, h, activation)
               - cj.exact_action(G, E, h, activation)) > 1e-6


@pytest.mark.parametrize("activation", ["linear", "softmax"])
def test_float32_matches_float64(activation):
    tokens, C, G = setup(P=1000, L=8, V=4, seed=9)
    h = cj.default_hyper(activation, 8)
    v64 = cj.exact_action(G, C, h, activation)
    v32 = cj.exact_action(G.astype(jnp.float32), C, h, activation)
    assert v32.dtype == jnp.float32 and v64.dtype == jnp.float64
    # float32 rounding of terms of size ~ beta P / 2 = 500
    assert abs(float(v32) - float(v64)) < 1e-5 * 0.5 * 1000
    g32 = jax.grad(cj.exact_action)(G.astype(jnp.float32), C, h, activation)
    g64 = jax.grad(cj.exact_action)(G, C, h, activation)
    np.testing.assert_allclose(g32, g64, rtol=2e-3, atol=2e-3 * float(jnp.abs(g64).max()))


def test_not_positive_definite_is_reported():
    E = -cj.expected_stats(1000.0, 4, 3, jnp.float64)
    G = jnp.eye(4)
    h = cj.Hyper()
    with pytest.raises(ValueError, match="positive definite"):
        cj.exact_action(G, E, h, "linear")
    assert jnp.isinf(jax.jit(cj.exact_action, static_argnames="activation")(G, E, h, "linear"))


def test_log_likelihood_from_stats_equals_per_sequence():
    tokens, C, G = setup(seed=12)
    W = jax.random.normal(jax.random.key(1), (3, 3), jnp.float64)
    for act in ["linear", "softmax"]:
        A = cj.attention(G, act)
        h = cj.Hyper(1.7, 1.0, 1.0)
        np.testing.assert_allclose(cj.log_likelihood_from_stats(W, A, C, h.beta),
                                   cj.log_likelihood(W, G, tokens, h, act), rtol=1e-12)


@pytest.mark.parametrize("activation", ["linear", "softmax"])
def test_marginal_logdensity_is_minus_the_action(activation):
    """The samplers' log density is -S_P(G), value and gradient, on integer counts as on float
    ones (cast where they enter, never G to an integer type); -inf, never NaN, where S is not
    finite (a NaN in G), so that a Metropolis step rejects the proposal."""
    tokens, C, G = setup(seed=21)
    h = cj.default_hyper(activation, 5)
    S, dS = jax.value_and_grad(cj.exact_action)(G, C.astype(jnp.float64), h, activation)
    for counts in (C, C.astype(jnp.float64)):
        v, g = jax.value_and_grad(marginal_logdensity)(G, counts, h, activation)
        np.testing.assert_allclose(v, -S, rtol=1e-12)
        np.testing.assert_allclose(g, -dS, rtol=1e-10, atol=1e-12)
    assert marginal_logdensity(G.at[0, 0].set(jnp.nan), C, h, activation) == -jnp.inf


def test_the_action_under_a_mask_puts_the_prior_on_the_allowed_entries_only():
    """``exact_action`` under the causal mask carries the G prior over the allowed entries (the
    parameters) only: it is the samplers' -log density less the masked entries' Gaussian term
    (which ``marginal_logdensity`` keeps, as proper coordinates that A never sees)."""
    from copyjax import masks

    tokens, C, G = setup(seed=22)
    h = cj.Hyper(1.0, 1.0, 0.5)
    hidden = 0.5 * float(jnp.sum(jnp.where(masks.get("causal").allowed(5), 0.0, G) ** 2)) / h.sigma_g2
    assert hidden > 1
    np.testing.assert_allclose(cj.exact_action(G, C, h, "softmax", "causal"),
                               -marginal_logdensity(G, C, h, "softmax", "causal") - hidden, rtol=1e-12)


class ActionVariantsTest(chex.TestCase):
    @chex.all_variants(with_pmap=False)
    def test_jit_and_eager_agree(self):
        tokens, C, G = setup(seed=13)
        h = cj.default_hyper("softmax", 5)
        f = self.variant(lambda G, C: cj.exact_action(G, C, h, "softmax"))
        ref = cj.exact_action(G, C, h, "softmax")
        np.testing.assert_allclose(f(G, C), ref, rtol=1e-12)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda G, C: cj.exact_action(G[:4], C, cj.Hyper(), "linear"), "G"),
        (lambda G, C: cj.exact_action(G[None], C, cj.Hyper(), "linear"), "G"),
        (lambda G, C: cj.exact_action(G, C[:4, :4], cj.Hyper(), "linear"), "stats"),
        (lambda G, C: cj.exact_action(G, C[0], cj.Hyper(), "linear"), "stats"),
        (lambda G, C: cj.exact_action(G, C, cj.Hyper(), "relu"), "activation"),
        (lambda G, C: cj.exact_action(G, C, cj.Hyper(), "softmax", "full+layers=2"), r"G must have shape \(2, 5, 5\)"),
        (lambda G, C: cj.exact_action(jnp.stack([G] * 3), C, cj.Hyper(), "softmax", "full+layers=2"),
         r"G must have shape \(2, 5, 5\)"),
        (lambda G, C: cj.attention(G, "tanh"), "activation"),
        (lambda G, C: cj.Hyper(beta=0.0), "beta"),
        (lambda G, C: cj.Hyper(sigma_w2=-1.0), "sigma_w2"),
        (lambda G, C: cj.Hyper(sigma_g2=float("inf")), "sigma_g2"),
        (lambda G, C: cj.Hyper(beta=float("nan")), "beta"),
        (lambda G, C: cj.default_hyper("relu", 4), "activation"),
        (lambda G, C: cj.default_hyper("linear", 1), "L"),
        (lambda G, C: cj.order_parameters(jnp.ones((3, 4))), "A"),
    ],
)
def test_bad_input_raises(call, name):
    tokens, C, G = setup()
    with pytest.raises(ValueError, match=name):
        call(G, C)


def test_default_hyper():
    assert cj.default_hyper("softmax", 16) == cj.Hyper(1.0, 1.0, 1.0)
    assert cj.default_hyper("linear", 16) == cj.Hyper(1.0, 1.0, 1 / 16)
    # Hyper is a pytree that survives jit
    out = jax.jit(lambda h: h.beta * 2)(cj.Hyper(1.5, 1.0, 1.0))
    assert float(out) == 3.0


def test_expected_loss_matches_reduced_sector_loss_at_expected_stats():
    # The W-averaged loss through the statistics equals the reduced (a, r, g, s) formula of
    # docs/theory.md section 5 at the expected statistics, for a generic pattern.
    from copyjax import reduced as R
    from copyjax.action import expected_loss, expected_test_loss

    L, V, P = 8, 5, 300.0
    h = cj.Hyper(1.3, 0.7, 1.0)
    A = (0.3 * cj.uniform_matrix(L, jnp.float64) + 0.5 * cj.shift_matrix(L, jnp.float64)
         + 0.05 * jax.random.normal(jax.random.key(0), (L, L)))
    E = cj.expected_stats(P, L, V)
    np.testing.assert_allclose(expected_loss(A, E, h), R.sector_loss(*R.pattern_scalars(A), P, L, V, h),
                               rtol=1e-10)
    np.testing.assert_allclose(expected_test_loss(A, E, E, h), expected_loss(A, E, h), rtol=1e-12)
    # Fresh data cost more than the data W was fitted to (on average, and here by far).
    tr = cj.sufficient_stats(cj.sample_tokens(jax.random.key(1), 60, L, V), V).astype(jnp.float64)
    te = cj.sufficient_stats(cj.sample_tokens(jax.random.key(2), 60, L, V), V).astype(jnp.float64)
    assert expected_test_loss(A, tr, te, h) > expected_loss(A, tr, h)


def test_stats_contraction_vjp_matches_einsum():
    """The hand-written VJP of the (L^2, V^2) contraction equals autodiff of the einsum,
    for both arguments (float64, so equality to 1e-12 relative)."""
    import copyjax.model as model

    jax.config.update("jax_enable_x64", True)
    kp, ks = jax.random.split(jax.random.key(3))
    pair = jax.random.normal(kp, (3, 2, 5, 5), jnp.float64)
    stats = jax.random.normal(ks, (5, 5, 4, 4), jnp.float64)
    d = jax.random.normal(jax.random.key(4), (3, 2, 4, 4), jnp.float64)
    ref = lambda p, c: jnp.sum(d * jnp.einsum("xkmn,mnab->xkab", p, c))
    new = lambda p, c: jnp.sum(d * model._contract(p, c))
    for a, b in zip(jax.grad(ref, (0, 1))(pair, stats), jax.grad(new, (0, 1))(pair, stats)):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
