"""Attention masks as plug-ins (``copyjax.masks``): for every mask of the registry (and a
window), the exact action against the brute-force per-sequence likelihood; the causal and
window supports, the per-row order parameter, the onset, the MAP search, the sampler against
NUTS and the umbrella against plain chains under the causal mask."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import masks
from copyjax.action import action_from_features, marginal_logdensity
from copyjax.local_weights import exact_mode
from copyjax.onset import linear_onset

M = masks.CAUSAL
EVERY_MASK = [*masks.MASKS, "window:1", "window:3"]


@pytest.mark.parametrize("spec", EVERY_MASK)
@pytest.mark.parametrize("activation", ["softmax", "linear"])
def test_every_mask_action_is_the_brute_force_likelihood(spec, activation):
    # h_l = sum_{m allowed} A_lm x_m and y_l = x_{l-1} on the mask's loss rows only, W integrated
    # out from the features themselves (action_from_features: its L is the number of loss rows)
    mask = masks.get(spec)
    P, L, V = 60, 7, 4
    hyper = cj.Hyper(1.0, 1.3, 0.7)
    tok = cj.sample_tokens(jax.random.key(0), P, L, V)
    C = cj.sufficient_stats(tok, V).astype(jnp.float64)
    G = jax.random.normal(jax.random.key(1), (L, L), jnp.float64)
    A = mask.attention(G, activation)
    assert np.all(np.asarray(A)[~mask.allowed(L)] == 0)
    x = jax.nn.one_hot(tok, V, dtype=jnp.float64)
    h = jnp.einsum("lm,pmv->plv", A, x)
    y = jnp.roll(x, 1, axis=1)
    rows = mask.loss_rows(L)
    np.testing.assert_allclose(cj.data_action(A, C, hyper, mask), action_from_features(h[:, rows], y[:, rows], P, hyper),
                               rtol=1e-12)
    # the action adds the prior of the allowed entries; the sampled density that of every entry
    ok = mask.allowed(L)
    prior = 0.5 * float(jnp.sum(jnp.where(ok, G, 0.0) ** 2)) / hyper.sigma_g2
    np.testing.assert_allclose(cj.exact_action(G, C, hyper, activation, spec),
                               float(cj.data_action(A, C, hyper, mask)) + prior, rtol=1e-12)
    np.testing.assert_allclose(-marginal_logdensity(G, C, hyper, activation, spec),
                               float(cj.data_action(A, C, hyper, mask)) + 0.5 * float(jnp.sum(G**2)) / hyper.sigma_g2,
                               rtol=1e-12)
    if spec != "full":  # the full-mask action on the same pattern is another number
        assert abs(float(cj.data_action(A, C, hyper) - cj.data_action(A, C, hyper, mask))) > 1e-3


def test_the_full_mask_is_the_unmasked_model_bit_for_bit_and_a_wide_window_is_causal():
    L, V = 6, 3
    C = cj.sufficient_stats(cj.sample_tokens(jax.random.key(0), 40, L, V), V).astype(jnp.float64)
    G = jax.random.normal(jax.random.key(2), (L, L), jnp.float64)
    for act in ("softmax", "linear"):
        h = cj.default_hyper(act, L)
        assert cj.exact_action(G, C, h, act) == cj.exact_action(G, C, h, act, masks.FULL)
        assert masks.FULL.attention(G, act) is not None and np.array_equal(masks.FULL.attention(G, act),
                                                                            cj.attention(G, act))
        wide = masks.get(f"window:{L - 1}")
        np.testing.assert_array_equal(wide.allowed(L), M.allowed(L))
        assert cj.exact_action(G, C, h, act, wide) == cj.exact_action(G, C, h, act, "causal")
    with pytest.raises(ValueError, match="mask"):
        masks.get("sliding")
    with pytest.raises(ValueError, match="window"):
        masks.get("window:0")
    assert masks.get("window:2") == masks.get("window:2") and hash(masks.get("window:2")) == hash(masks.get("window:2"))
    assert masks.get("window:2") != masks.get("window:3")


def test_window_support_and_copy_coordinate():
    L, w = 7, 2
    win = masks.get(f"window:{w}")
    ok = win.allowed(L)
    assert ok.sum(1).tolist() == [1, 2, 3, 3, 3, 3, 3] and not ok[5, 2] and ok[5, 3]
    assert win.loss_rows(L).tolist() == [False] + [True] * (L - 1)
    S = win.copy_pattern(L, jnp.float64)
    assert float(win.copy_coordinate(2.5 * S)) == pytest.approx(2.5, rel=1e-12)
    assert np.allclose(win.row_copy_order(win.attention(40.0 * S, "softmax")), 1.0)
    assert np.allclose(win.row_copy_order(win.attention(jnp.zeros((L, L)), "softmax")), 0.0)


def test_causal_support():
    L = 6
    G = jax.random.normal(jax.random.key(2), (L, L))
    A = M.attention(G, "softmax")
    assert np.all(np.asarray(jnp.triu(A, 1)) == 0) and np.allclose(A.sum(1), 1.0)
    np.testing.assert_array_equal(A[0], jnp.eye(L)[0])
    # masked entries of G are not parameters: neither A nor the action sees them
    G2 = G + 5.0 * jnp.triu(jnp.ones((L, L)), 1)
    C = cj.expected_stats(100.0, L, 3, jnp.float64)
    h = cj.default_hyper("softmax", L)
    for act in ("softmax", "linear"):
        np.testing.assert_allclose(cj.exact_action(G2, C, h, act, M), cj.exact_action(G, C, h, act, M), rtol=1e-13)


def test_row_copy_order():
    L = 9
    assert np.allclose(M.row_copy_order(M.attention(40.0 * M.copy_pattern(L, jnp.float64), "softmax")), 1.0)
    assert np.allclose(M.row_copy_order(M.attention(jnp.zeros((L, L)), "softmax")), 0.0)
    assert M.row_copy_order(jnp.zeros((L, L))).shape == (L - 1,)


def test_row_orders_of_a_linear_pattern():
    """Linear causal rows fitted by c_1 u + c_G e_{l-1}: a pattern built as c_1 U + c_G S_c
    (U uniform over each row's keys) gives back c_1 and c_G in every row; softmax rows give
    a_G and 1 - a_G."""
    L = 7
    U = jnp.tril(jnp.ones((L, L))) / jnp.arange(1, L + 1)[:, None]
    A = 0.3 * U + -0.8 * M.copy_pattern(L, jnp.float64)
    np.testing.assert_allclose(M.row_copy_order(A), -0.8, atol=1e-14)
    np.testing.assert_allclose(M.row_pool_order(A), 0.3, atol=1e-14)
    As = M.attention(jax.random.normal(jax.random.key(1), (L, L), jnp.float64), "softmax")
    np.testing.assert_allclose(M.row_pool_order(As), 1 - M.row_copy_order(As), atol=1e-14)


def test_linear_causal_onset_is_where_zero_turns_unstable():
    """``onset.linear_onset`` (causal mask) at L = 6, V = 4: along its unstable mode v the exact causal action
    at the expected statistics rises from G = 0 at 0.97 P_1 and falls at 1.03 P_1 (steps 1e-2
    and 3e-2: the quadratic term dominates; measured +-4.5e-5 at L = 8), and along random
    allowed directions it rises at 0.97 P_1 (G = 0 is a minimum below the onset). Bisecting
    the wrong eigenvalue, or dropping the P^2 term, moves P_1 and fails the sign checks."""
    L, V = 6, 4
    h = cj.default_hyper("linear", L)
    o = linear_onset(L, V, h, mask="causal")
    assert 0 < o.P_onset < 1e4 and abs(np.hypot(o.c1, o.cG) - 1) < 1e-12
    rows, cols = np.tril_indices(L)
    H = np.eye(rows.size) / h.sigma_g2 + o.P_onset * o.H1 - o.P_onset**2 * o.H2
    v = np.linalg.eigh(H)[1][:, 0]
    G = jnp.zeros((L, L), jnp.float64).at[rows, cols].set(v)
    S = lambda G, P: float(cj.exact_action(G, cj.expected_stats(P, L, V, jnp.float64), h, "linear", M))
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
    G0 = 4.0 * M.copy_pattern(L, jnp.float64)
    G = exact_mode(G0, C, h, "softmax", M, max_steps=300)
    f = lambda G: cj.exact_action(G, C, h, "softmax", M)
    assert f(G) < f(G0) - 1.0
    g = jnp.where(jnp.asarray(M.allowed(L)), jax.grad(f)(G), 0.0)
    assert float(jnp.max(jnp.abs(g))) < 1e-5


@pytest.mark.slow
def test_causal_posterior_sampler_matches_nuts_on_the_same_density():
    """``sample_exact_posterior(mask="causal")`` (adaptive MALA on the causal marginal, chains
    from prior and copy starts) against blackjax NUTS (window adaptation) on the same
    log density at L = 4, V = 3, P = 150 (sampled data): the posterior mean of the row-averaged
    a_G within 4 combined MCSE, its sd within 4 combined relative errors 1/sqrt(2 ESS) (about 5 %).
    Measured: 0.6870 +- 0.0012 (sd 0.0849) against NUTS 0.6874 +- 0.0008 (sd 0.0848). Planted:
    the sampler wired to the full mask's density (``action.marginal_logdensity``) gives sd 0.0915,
    8 % wide: fails. (The masked entries' own prior changes nothing A sees: it only keeps those
    coordinates proper.)"""
    import blackjax

    from copyjax.chains import summarize
    from copyjax.exact_posterior import sample_exact_posterior

    L, V, P = 4, 3, 150
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(5), P, L, V), V).astype(jnp.float64)
    h = cj.default_hyper("softmax", L)
    run = sample_exact_posterior(jax.random.key(0), st, h, "softmax", n_chains=8, num_steps=3000,
                                 devices=jax.devices()[:1], mask="causal")
    rs = summarize(run.samples.draws["cG"])
    assert rs.rhat < 1.05 and run.samples.draws["cG"].shape == (8, 2000)
    lp = lambda x: marginal_logdensity(x.reshape(L, L), st, h, "softmax", M)
    (state, params), _ = blackjax.window_adaptation(blackjax.nuts, lp).run(jax.random.key(1), jnp.zeros(L * L),
                                                                           num_steps=500)
    nuts = blackjax.nuts(lp, **params)

    def chain(key, x0):
        def one(s, k):
            s, _ = nuts.step(k, s)
            return s, M.row_copy_order(M.attention(s.position.reshape(L, L), "softmax")).mean()
        return jax.lax.scan(one, nuts.init(x0), jax.random.split(key, 1500))[1]

    draws = np.asarray(jax.vmap(chain)(jax.random.split(jax.random.key(2), 4), jnp.tile(state.position, (4, 1))))
    ref = summarize(draws[:, 250:])
    assert abs(rs.mean - ref.mean) < 4 * np.hypot(rs.mcse, ref.mcse), (rs.mean, ref.mean)
    rel = 4 * np.sqrt(1 / (2 * rs.ess) + 1 / (2 * ref.ess))  # sd's relative error, 4 of them
    assert abs(rs.sd / ref.sd - 1) < rel, (rs.sd, ref.sd, rel)


def test_causal_copy_coordinate_and_starts():
    """The causal copy logit: xi_c(gamma S_c) = gamma, blind to the masked entries and to a
    constant added to a row's allowed logits (softmax's invariance); umbrella starts sit at
    their centres; the causal free energy refuses what it is not built for."""
    from copyjax import free_energy as FE

    L = 7
    S = M.copy_pattern(L, jnp.float64)
    assert float(M.copy_coordinate(2.5 * S)) == pytest.approx(2.5, rel=1e-12)
    G = jax.random.normal(jax.random.key(0), (L, L), jnp.float64)
    shifted = G + jnp.triu(jnp.ones((L, L)), 1) * 9.0 + jnp.asarray(M.allowed(L), jnp.float64) * jnp.arange(L)[:, None]
    assert float(M.copy_coordinate(shifted)) == pytest.approx(float(M.copy_coordinate(G)), abs=1e-12)
    h = cj.default_hyper("softmax", L)
    centers = jnp.array([-0.3, 0.0, 1.7])
    starts = FE.start_positions(jax.random.key(1), centers, L, h, mask="causal")
    np.testing.assert_allclose(M.copy_coordinate(starts), centers, atol=1e-12)
    # the divide between the phases: a_G of the causal pattern at half the copy logit log L
    assert 0.0 < FE.softmax_windows(L, mask="causal").divide < 1.0
    stats = cj.sampled_stats(jax.random.key(0), 20, L, 3).astype(jnp.float32)
    with pytest.raises(ValueError, match="causal"):
        FE.sample_umbrella(jax.random.key(1), stats, cj.default_hyper("linear", L), "linear", [0.0],
                           kappa=10.0, num_steps=50, mask="causal", coordinate="mean")
    with pytest.raises(ValueError, match="mask"):
        FE.sample_umbrella(jax.random.key(1), stats, h, "softmax", [0.0], kappa=10.0, num_steps=50, mask="upper")


@pytest.mark.slow
def test_causal_umbrella_gives_the_plain_causal_chains_moments(one_device):
    """Causal mask, L = 6, V = 4, P = 200 (one minimum, a_G ~ 0.65; plain chains mix): umbrella
    windows on the causal copy logit, recombined by MBAR, give the posterior mean and variance
    of the row-mean a_G of 16 plain chains of ``sample_exact_posterior(mask="causal")`` within 4 combined
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
    from copyjax.chains import summarize
    from copyjax.exact_posterior import sample_exact_posterior

    plain = sample_exact_posterior(jax.random.key(7), stats, h, "softmax", n_chains=16, num_steps=1500,
                                   devices=one_device, mask="causal")
    s = summarize(plain.samples.draws["cG"])
    assert s.rhat < 1.05
    z_mean = (pr.mean - s.mean) / np.hypot(pr.mean_sd, s.mcse)
    z_var = (pr.var - s.sd**2) / np.hypot(pr.var_sd, s.sd**2 * np.sqrt(2.0 / s.ess))
    assert abs(z_mean) < 4 and abs(z_var) < 4, (pr.mean, pr.mean_sd, s.mean, s.mcse, pr.var, pr.var_sd, s.sd)


def test_the_scripts_mask_option_accepts_exactly_the_registry():
    """scripts/_cli.py checks --mask without importing JAX: every registered name and a window
    pass it and build a mask; what it refuses, the registry refuses too."""
    import argparse
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    from _cli import mask_arg

    for spec in [*masks.MASKS, "window:1", "window:12"]:
        assert masks.get(mask_arg(spec)).spec == spec
    for bad in ("upper", "window:0", "window:x", "window", "causal:2"):
        with pytest.raises(argparse.ArgumentTypeError):
            mask_arg(bad)
        with pytest.raises(ValueError):
            masks.get(bad)
