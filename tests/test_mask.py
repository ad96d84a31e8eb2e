"""The causal mask (issue 25): the exact action on the causal support against the brute-force
per-sequence likelihood, the support itself, the per-row order parameter, the MAP search."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import mask as M
from copyjax.action import action_from_features


@pytest.mark.parametrize("activation", ["softmax", "linear"])
def test_causal_action_is_the_brute_force_likelihood(activation):
    # h_l = sum_{m <= l} A_lm x_m and y_l = x_{l-1} for l >= 1 only, W integrated out from the
    # features themselves (action_from_features: its L is the number of loss positions)
    P, L, V = 60, 7, 4
    hyper = cj.Hyper(1.0, 1.3, 0.7)
    tok = cj.sample_tokens(jax.random.key(0), P, L, V)
    C = cj.sufficient_stats(tok, V).astype(jnp.float64)
    A = M.causal_attention(jax.random.normal(jax.random.key(1), (L, L)), activation)
    x = jax.nn.one_hot(tok, V, dtype=jnp.float64)
    h = jnp.einsum("lm,pmv->plv", A, x)
    y = jnp.roll(x, 1, axis=1)
    np.testing.assert_allclose(M.causal_data_action(A, C, hyper), action_from_features(h[:, 1:], y[:, 1:], P, hyper),
                               rtol=1e-12)
    # the full-mask action on the same pattern is another number (row 0's wrapped target counts there)
    assert abs(float(cj.data_action(A, C, hyper) - M.causal_data_action(A, C, hyper))) > 1e-3


def test_causal_support():
    L = 6
    G = jax.random.normal(jax.random.key(2), (L, L))
    A = M.causal_attention(G, "softmax")
    assert np.all(np.asarray(jnp.triu(A, 1)) == 0) and np.allclose(A.sum(1), 1.0)
    np.testing.assert_array_equal(A[0], jnp.eye(L)[0])
    # masked entries of G are not parameters: neither A nor the action sees them
    G2 = G + 5.0 * jnp.triu(jnp.ones((L, L)), 1)
    C = cj.expected_stats(100.0, L, 3, jnp.float64)
    h = cj.default_hyper("softmax", L)
    for act in ("softmax", "linear"):
        np.testing.assert_allclose(M.causal_exact_action(G2, C, h, act), M.causal_exact_action(G, C, h, act), rtol=1e-13)
    with pytest.raises(ValueError, match="mask"):
        M.check_mask("sliding")


def test_row_copy_order():
    L = 9
    assert np.allclose(M.row_copy_order(M.causal_attention(M.copy_start(L, 40.0, jnp.float64), "softmax")), 1.0)
    assert np.allclose(M.row_copy_order(M.causal_attention(jnp.zeros((L, L)), "softmax")), 0.0)
    assert M.row_copy_order(jnp.zeros((L, L))).shape == (L - 1,)


def test_row_orders_of_a_linear_pattern():
    """Linear causal rows fitted by c_1 u + c_G e_{l-1}: a pattern built as c_1 U + c_G S_c
    (U uniform over each row's keys) gives back c_1 and c_G in every row; softmax rows give
    a_G and 1 - a_G."""
    L = 7
    U = jnp.tril(jnp.ones((L, L))) / jnp.arange(1, L + 1)[:, None]
    A = 0.3 * U + -0.8 * M.copy_start(L, 1.0, jnp.float64)
    np.testing.assert_allclose(M.row_copy_order(A), -0.8, atol=1e-14)
    np.testing.assert_allclose(M.row_pool_order(A), 0.3, atol=1e-14)
    As = M.causal_attention(jax.random.normal(jax.random.key(1), (L, L), jnp.float64), "softmax")
    np.testing.assert_allclose(M.row_pool_order(As), 1 - M.row_copy_order(As), atol=1e-14)


def test_linear_causal_onset_is_where_zero_turns_unstable():
    """``causal_linear_onset`` at L = 6, V = 4: along its unstable mode v the exact causal action
    at the expected statistics rises from G = 0 at 0.97 P_1 and falls at 1.03 P_1 (steps 1e-2
    and 3e-2: the quadratic term dominates; measured +-4.5e-5 at L = 8), and along random
    allowed directions it rises at 0.97 P_1 (G = 0 is a minimum below the onset). Bisecting
    the wrong eigenvalue, or dropping the P^2 term, moves P_1 and fails the sign checks."""
    L, V = 6, 4
    h = cj.default_hyper("linear", L)
    o = M.causal_linear_onset(L, V, h)
    assert 0 < o.P_onset < 1e4 and abs(np.hypot(o.c1, o.cG) - 1) < 1e-12
    rows, cols = np.tril_indices(L)
    H = np.eye(rows.size) / h.sigma_g2 + o.P_onset * o.H1 - o.P_onset**2 * o.H2
    v = np.linalg.eigh(H)[1][:, 0]
    G = jnp.zeros((L, L), jnp.float64).at[rows, cols].set(v)
    S = lambda G, P: float(M.causal_exact_action(G, cj.expected_stats(P, L, V, jnp.float64), h, "linear"))
    for eps in (1e-2, 3e-2):
        assert S(eps * G, 0.97 * o.P_onset) > S(0 * G, 0.97 * o.P_onset)
        assert S(eps * G, 1.03 * o.P_onset) < S(0 * G, 1.03 * o.P_onset)
    for k in range(5):
        r = jax.random.normal(jax.random.key(k), (rows.size,), jnp.float64)
        Gr = jnp.zeros((L, L), jnp.float64).at[rows, cols].set(1e-2 * r / jnp.linalg.norm(r))
        assert S(Gr, 0.97 * o.P_onset) > S(0 * Gr, 0.97 * o.P_onset)


def test_causal_map_reaches_a_stationary_point():
    L, V = 8, 4
    h = cj.default_hyper("softmax", L)
    C = cj.expected_stats(300.0, L, V, jnp.float64)
    G0 = M.copy_start(L, 4.0, jnp.float64)
    G = M.causal_map(G0, C, h, "softmax", steps=300)
    f = lambda G: M.causal_exact_action(G, C, h, "softmax")
    assert f(G) < f(G0) - 1.0
    g = jnp.where(M.allowed(L), jax.grad(f)(G), 0.0)
    assert float(jnp.max(jnp.abs(g))) < 1e-5


def test_causal_posterior_sampler_matches_nuts_on_the_same_density():
    """``sample_causal_posterior`` (the exact posterior's adaptive MALA on ``causal_logdensity``,
    chains from pooling and copy starts) against blackjax NUTS (window adaptation) on the same
    log density at L = 4, V = 3, P = 150 (sampled data): the posterior mean of the row-averaged
    a_G within 4 combined MCSE, its sd within 4 combined relative errors 1/sqrt(2 ESS) (about 5 %).
    Measured: 0.6870 +- 0.0012 (sd 0.0849) against NUTS 0.6874 +- 0.0008 (sd 0.0848). Planted:
    the sampler wired to the full mask's density (``action.marginal_logdensity``) gives sd 0.0915,
    8 % wide: fails. (The masked entries' own prior changes nothing A sees: it only keeps those
    coordinates proper.)"""
    import blackjax

    from copyjax.chains import summarize

    L, V, P = 4, 3, 150
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(5), P, L, V), V).astype(jnp.float64)
    h = cj.default_hyper("softmax", L)
    r = M.sample_causal_posterior(jax.random.key(0), st, h, "softmax", n_chains=8, num_steps=3000,
                                  devices=jax.devices()[:1])
    assert r.summary.rhat < 1.05 and r.aG_rows.shape == (8, 2000, L - 1)
    lp = lambda x: M.causal_logdensity(x.reshape(L, L), st, h, "softmax")
    (state, params), _ = blackjax.window_adaptation(blackjax.nuts, lp).run(jax.random.key(1), jnp.zeros(L * L),
                                                                           num_steps=500)
    nuts = blackjax.nuts(lp, **params)

    def chain(key, x0):
        def one(s, k):
            s, _ = nuts.step(k, s)
            return s, M.row_copy_order(M.causal_attention(s.position.reshape(L, L), "softmax")).mean()
        return jax.lax.scan(one, nuts.init(x0), jax.random.split(key, 1500))[1]

    draws = np.asarray(jax.vmap(chain)(jax.random.split(jax.random.key(2), 4), jnp.tile(state.position, (4, 1))))
    ref = summarize(draws[:, 250:])
    assert abs(r.summary.mean - ref.mean) < 4 * np.hypot(r.summary.mcse, ref.mcse), (r.summary.mean, ref.mean)
    rel = 4 * np.sqrt(1 / (2 * r.summary.ess) + 1 / (2 * ref.ess))  # sd's relative error, 4 of them
    assert abs(r.summary.sd / ref.sd - 1) < rel, (r.summary.sd, ref.sd, rel)


def test_causal_copy_coordinate_and_starts():
    """The causal copy logit: xi_c(gamma S_c) = gamma, blind to the masked entries and to a
    constant added to a row's allowed logits (softmax's invariance); umbrella starts sit at
    their centres; the causal free energy refuses what it is not built for."""
    from copyjax import free_energy as FE

    L = 7
    S = M.copy_start(L, 1.0, jnp.float64)
    assert float(M.causal_copy_coordinate(2.5 * S)) == pytest.approx(2.5, rel=1e-12)
    G = jax.random.normal(jax.random.key(0), (L, L), jnp.float64)
    shifted = G + jnp.triu(jnp.ones((L, L)), 1) * 9.0 + M.allowed(L, jnp.float64) * jnp.arange(L)[:, None]
    assert float(M.causal_copy_coordinate(shifted)) == pytest.approx(float(M.causal_copy_coordinate(G)), abs=1e-12)
    h = cj.default_hyper("softmax", L)
    centers = jnp.array([-0.3, 0.0, 1.7])
    starts = FE.start_positions(jax.random.key(1), centers, L, h, mask="causal")
    np.testing.assert_allclose(M.causal_copy_coordinate(starts), centers, atol=1e-12)
    # the divide between the phases: a_G of the causal pattern at half the copy logit log L
    assert 0.0 < FE.softmax_windows(L, mask="causal").divide < 1.0
    stats = cj.sampled_stats(jax.random.key(0), 20, L, 3).astype(jnp.float32)
    with pytest.raises(ValueError, match="causal"):
        FE.sample_umbrella(jax.random.key(1), stats, cj.default_hyper("linear", L), "linear", [0.0],
                           kappa=10.0, num_steps=50, mask="causal")
    with pytest.raises(ValueError, match="mask"):
        FE.sample_umbrella(jax.random.key(1), stats, h, "softmax", [0.0], kappa=10.0, num_steps=50, mask="upper")


def test_causal_umbrella_gives_the_plain_causal_chains_moments(one_device):
    """Causal mask, L = 6, V = 4, P = 200 (one minimum, a_G ~ 0.65; plain chains mix): umbrella
    windows on the causal copy logit, recombined by MBAR, give the posterior mean and variance
    of the row-mean a_G of 16 plain chains of ``sample_causal_posterior`` within 4 combined
    standard errors (MBAR's asymptotic error; the chains' MCSE from their ESS, the variance's
    from sd^2 sqrt(2 / ESS), a Gaussian approximation). Measured: mean 0.6489 +- 0.0029 vs
    0.6524 +- 0.0011 (z = -1.1), variance z = +1.1. Planted: the windows sampling the full
    mask's density on the same statistics: z = +6.9 on the mean (and two minima)."""
    from copyjax import free_energy as FE

    L, V, P = 6, 4, 200
    h = cj.default_hyper("softmax", L)
    stats = cj.sampled_stats(jax.random.key(5), P, L, V).astype(jnp.float32)
    edges = np.linspace(-0.2, 1.0, 40)

    run = FE.sample_umbrella(jax.random.key(6), stats, h, "softmax", np.linspace(-0.6, 3.4, 12), kappa=12.0,
                             num_steps=1500, chains_per_window=2, devices=one_device, mask="causal")
    rec = FE.recombine(run)
    assert float(rec.result.grad_norm) < 1e-8
    pr = FE.profile(rec, run, 0, edges, 0.3, coordinate="op")
    plain = M.sample_causal_posterior(jax.random.key(7), stats, h, "softmax", n_chains=16, num_steps=1500,
                                      devices=one_device)
    s = plain.summary
    assert s.rhat < 1.05
    z_mean = (pr.mean - s.mean) / np.hypot(pr.mean_sd, s.mcse)
    z_var = (pr.var - s.sd**2) / np.hypot(pr.var_sd, s.sd**2 * np.sqrt(2.0 / s.ess))
    assert abs(z_mean) < 4 and abs(z_var) < 4, (pr.mean, pr.mean_sd, s.mean, s.mcse, pr.var, pr.var_sd, s.sd)
