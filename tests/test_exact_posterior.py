"""The exact-posterior sampler of G: adaptive MALA (per-chain steps), start families,
nested R-hat, sign families, bad input."""
import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import chains as C
from copyjax import exact_posterior as X
from copyjax.sgmcmc import adaptive_mala as AM
from copyjax import samplers as S


def _gauss(mean, sd):
    return lambda x: -0.5 * jnp.sum(((x - mean) / sd) ** 2)


def test_adaptive_mala_samples_a_badly_scaled_gaussian():
    # asymmetric mean (catches sign errors), scales 1 and 0.1; 64 chains from far away
    mean, sd = jnp.array([1.0, -2.0]), jnp.array([1.0, 0.1])
    alg = AM.as_top_level_api(_gauss(mean, sd), 1e-3, n_adapt=500)
    init = jnp.tile(jnp.array([10.0, 10.0]), (64, 1))
    s = C.run_algorithm(jax.random.key(0), alg, init, lambda st: {"a": st[0], "b": st[1]},
                        schedule=C.Schedule(2500, 500, 2))
    for k, m, d in (("a", 1.0, 1.0), ("b", -2.0, 0.1)):
        summ = C.summarize(s.draws[k])
        assert summ.ess > 400, summ
        # 4 Monte Carlo standard errors of the mean; the sd within 4 of its own (~ sd / sqrt(2 ESS))
        assert abs(summ.mean - m) < 4 * d / np.sqrt(summ.ess), (k, summ)
        assert abs(summ.sd - d) < 4 * d / np.sqrt(2 * summ.ess), (k, summ)
    acc = s.info["acceptance_rate"]
    assert np.all((acc > 0.4) & (acc < 0.8)), acc  # dual averaging targets 0.57


def test_step_size_adapts_per_chain_then_freezes():
    # two chains on targets of scale 1 and 0.01 (the scale is part of the position's
    # law through a per-chain factor): their adapted steps differ ~ by the squared ratio
    lp = lambda x: -0.5 * jnp.sum((x[1:] / x[0]) ** 2)  # x[0] is a frozen scale (zero gradient)
    kernel = AM.build_kernel(n_adapt=300)
    def run(scale, key):
        lpi = lambda y: lp(jnp.concatenate([jnp.array([scale]), y]))
        st = AM.init(jnp.zeros(20), lpi, 1e-2)
        def body(st, k):
            st, info = kernel(k, st, lpi)
            return st, (info.step_size, info.acceptance_rate)
        st, (eps, acc) = jax.lax.scan(body, st, jax.random.split(key, 600))
        return st, eps, acc
    (s1, e1, a1), (s2, e2, a2) = run(1.0, jax.random.key(1)), run(0.01, jax.random.key(2))
    # frozen after the burn-in
    assert np.all(np.asarray(e1[300:]) == float(s1.step_size))
    assert np.all(np.asarray(e2[300:]) == float(s2.step_size))
    ratio = float(s1.step_size / s2.step_size)
    assert 3e3 < ratio < 3e4, ratio  # variance ratio 1e4
    for a in (a1, a2):
        assert 0.4 < float(np.mean(a[300:])) < 0.8


def test_window_starts():
    assert AM.window_starts(1000) == (150, 300, 500, 750)
    assert AM.window_starts(2) == (1,)


def test_nested_rhat():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 200))
    sc = np.repeat([0, 1], 8)
    assert abs(C.nested_rhat(x, sc) - 1.0) < 0.02
    y = x + 3.0 * sc[:, None]  # the two superchains in different modes
    assert C.nested_rhat(y, sc) > 2.0
    # by hand: B = var of superchain means, W = mean of (var of chain means + within var)
    cm = y.mean(1)
    B = np.var([cm[:8].mean(), cm[8:].mean()], ddof=1)
    W = np.mean([cm[:8].var(ddof=1) + y[:8].var(1, ddof=1).mean(),
                 cm[8:].var(ddof=1) + y[8:].var(1, ddof=1).mean()])
    np.testing.assert_allclose(C.nested_rhat(y, sc), np.sqrt(1 + B / W), rtol=1e-12)
    assert np.isnan(C.nested_rhat(x, np.zeros(16)))


@pytest.mark.parametrize("act", ["softmax", "linear"])
@pytest.mark.slow
def test_exact_sampler_matches_fixed_step_mala(act, one_device):
    # small problem where plain MALA mixes: the adaptive sampler (Adam warm-up, per-chain
    # steps, two start families) must give the same a_G / |c_G| mean within 4 combined MCSE,
    # and the same sd
    L, V, P = 5, 3, 80
    h = cj.default_hyper(act, L)
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(3), P, L, V), V).astype(jnp.float64)
    run = X.sample_exact_posterior(jax.random.key(4), st, h, act, n_chains=32, num_steps=1500, thin=5,
                                   devices=one_device)
    summ = X.summarize_exact(run)
    assert summ.n_stuck == 0 and not summ.branches_disagree
    assert summ.cG.rhat < 1.05 and summ.cG.nested_rhat < 1.05
    eps = 0.2 * float(np.median(run.step_size))
    G0 = jnp.sqrt(h.sigma_g2) * jax.random.normal(jax.random.key(5), (64, L, L))
    obs = lambda G: cj.reported_order_parameters(cj.attention(G, act), act)
    ref = C.run_algorithm(jax.random.key(6), S.mala_marginal(st, h, act, 5 * eps), G0, obs,
                          schedule=C.Schedule(3000, 1000, 10), layout=C.Layout(devices=one_device))
    b = C.summarize(ref.draws["cG"])
    a = summ.cG
    assert abs(a.mean - b.mean) < 4 * np.hypot(a.mcse, b.mcse), (a, b)
    # and the same spread: an sd estimate's relative error is about 1 / sqrt(2 ESS) (ESS in the
    # hundreds to thousands here: 2-5 %); 4 of those, combined, allowed
    rel = np.hypot(1 / np.sqrt(2 * a.ess), 1 / np.sqrt(2 * b.ess))
    assert abs(a.sd / b.sd - 1) < 4 * rel, (a, b, rel)
    assert summ.acceptance_mean > 0.4
    chex.assert_shape(run.samples.draws["cG"], (32, 200))  # (chain, draw): (1500 - 500) / 5


def test_two_phases_are_reported_as_two_branches():
    # softmax inside its coexistence window (L = 32, V = 8, P = 850: the theory's two minima)
    L, V, P = 32, 8, 850
    h = cj.default_hyper("softmax", L)
    st = cj.sampled_stats(jax.random.key(0), P, L, V)
    run = X.sample_exact_posterior(jax.random.key(1), st, h, "softmax", n_chains=8, num_steps=240,
                                   thin=4, warmup_steps=150)
    summ = X.summarize_exact(run)
    c = summ.cG
    assert summ.branches_disagree, c
    # one phase would give a family gap ~ N(0, gap_se); two phases put it 7-10 gap_se apart
    # here (4 chains per family, the between-chain spread inside each phase sets gap_se)
    assert c.copy.mean - c.prior.mean > 5 * c.gap_se and c.nested_rhat > 1.05
    assert c.prior.mean < 0.03 < c.copy.mean


def test_sign_families():
    # four chains, two per family, constant labels and different |rho|: split
    fam = np.repeat([[1.0], [1.0], [-1.0], [-1.0]], 50, axis=1)
    rng = np.random.default_rng(1)
    rho = np.where(fam > 0, 0.9, 0.4) + 0.01 * rng.normal(size=fam.shape)
    draws = {"family": fam, "abs_rho": rho, "cG": 0.6 + 0 * rho, "c1": rho, "logdensity": rho}
    keep = np.ones(4, bool)
    out = X.sign_families(draws, keep)
    assert out.split and out.same.n == 2 and out.opposite.n == 2
    np.testing.assert_allclose(out.abs_rho, 0.9, atol=0.01)
    # chains that switch family: pooled
    fam2 = fam.copy()
    fam2[0, :10] = -1.0
    out = X.sign_families(dict(draws, family=fam2), keep)
    assert not out.split
    np.testing.assert_allclose(out.abs_rho, rho.mean())


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_chains=1, num_steps=10), "n_chains"),
    (dict(n_chains=4, num_steps=10, burn_in=10), "burn_in"),
    (dict(n_chains=4, num_steps=10, warmup_steps=-1), "warmup_steps"),
    (dict(n_chains=4, num_steps=1), "num_steps"),
])
def test_bad_input(kwargs, name):
    st = cj.sampled_stats(jax.random.key(0), 10, 4, 3)
    with pytest.raises(ValueError, match=name):
        X.sample_exact_posterior(jax.random.key(0), st, cj.default_hyper("softmax", 4), "softmax", **kwargs)
