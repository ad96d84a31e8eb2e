import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import chains as C
from copyjax import network as N
from copyjax import samplers as S


def small(act="linear", L=6, V=3, P=40, dtype=jnp.float32):
    h = cj.default_hyper(act, L)
    toks = cj.sample_tokens(jax.random.key(0), P, L, V)
    st = cj.sufficient_stats(toks, V).astype(dtype)
    init = jax.vmap(lambda k: N.init_params(k, L, V, h, dtype))(jax.random.split(jax.random.key(1), 16))
    return h, toks, st, init


def test_stats_gradient_equals_per_sequence_autodiff():
    for act in ["linear", "softmax"]:
        h, toks, st, init = small(act, dtype=jnp.float64)
        p = jax.tree.map(lambda x: x[0].astype(jnp.float64), init)
        g1 = jax.grad(N.logdensity_from_stats)(p, st, h, act)
        g2 = jax.grad(lambda p: cj.log_posterior(p.W, p.G, toks, h, act))(p)
        for a, b in zip(jax.tree.leaves(g1), jax.tree.leaves(g2)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("act", ["linear", "softmax"])
def test_four_devices_match_one_device(act):
    assert len(jax.devices()) == 4
    h, toks, st, init = small(act)
    obs = lambda p: N.observables(p, st, h, act)
    run = lambda devs: C.run_chains(jax.random.key(2), S.sgld(st, h, act, 1e-3), init, obs,
                                    num_steps=60, thin=10, devices=devs, chain_block=4)
    one, four = run(jax.devices()[:1]), run(None)
    # bit for bit: same per-device program (shard_map), the same chain_block, and a softmax
    # whose row sums are matmuls (copyjax.model._row_softmax)
    for a, b in zip(jax.tree.leaves(one.final), jax.tree.leaves(four.final)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    np.testing.assert_array_equal(one.draws["cG"], four.draws["cG"])


def test_chain_alone_equals_chain_in_batch_and_keys_advance():
    h, toks, st, init = small()
    obs = lambda p: {"g": p.G[0, 1], "w": p.W[0, 0]}
    alg = S.sgld(st, h, "linear", 1e-3)
    full = C.run_chains(jax.random.key(5), alg, init, obs, num_steps=40, thin=1, chain_block=1,
                        devices=jax.devices()[:1])
    alone = C.run_chains(jax.random.key(5), alg, jax.tree.map(lambda x: x[5:6], init), obs,
                         num_steps=40, thin=1, chain_ids=[5], devices=jax.devices()[:1])
    np.testing.assert_array_equal(full.draws["g"][5], alone.draws["g"][0])
    again = C.run_chains(jax.random.key(5), alg, init, obs, num_steps=40, thin=1, chain_block=1,
                         devices=jax.devices()[:1])
    np.testing.assert_array_equal(full.draws["g"], again.draws["g"])
    # per-step keys differ: the noise increments of a chain are not repeated
    inc = np.diff(full.draws["g"][0])
    assert len(np.unique(np.round(inc, 7))) == len(inc)
    # and chains started at the same point diverge (different chain keys)
    same = jax.tree.map(lambda x: jnp.repeat(x[:1], 2, 0), init)
    two = C.run_chains(jax.random.key(5), alg, same, obs, num_steps=5, thin=1)
    assert not np.array_equal(two.draws["g"][0], two.draws["g"][1])


def test_sgld_bias_on_gaussian_is_first_order_in_step_size():
    # Target N(m, s^2) per coordinate (m = (1, -2): a sign error would show). Euler-
    # Maruyama SGLD with exact gradient has stationary variance s^2 / (1 - eps / (2 s^2)):
    # bias eps/2 + O(eps^2). 4096 chains x 400 draws (thin 5, well decorrelated at these
    # eps): the variance estimate has sd ~ s^2 sqrt(2 / N) ~ 1e-3 << the biases 0.025-0.1.
    m = jnp.array([1.0, -2.0])
    grad = lambda key, x: -(x - m)
    init = jnp.zeros((4096, 2))
    eps_list, bias = [0.05, 0.1, 0.2], []
    for eps in eps_list:
        s = C.run_chains(jax.random.key(0), S.sgld_from_grad(grad, eps), init,
                         lambda x: {"x0": x[0], "x1": x[1]}, num_steps=2200, burn_in=200, thin=5)
        x = np.stack([s.draws["x0"], s.draws["x1"]], -1).reshape(-1, 2)
        np.testing.assert_allclose(x.mean(0), m, atol=0.01)
        v = x.var(0).mean()
        np.testing.assert_allclose(v, 1 / (1 - eps / 2), rtol=0.01)
        bias.append(v - 1)
    order = np.polyfit(np.log(eps_list), np.log(bias), 1)[0]
    assert 0.85 < order < 1.15, order


def test_sgld_on_network_matches_exact_marginal():
    # Tiny problem: SGLD on (W, G) must reproduce the order-parameter moments of MALA on
    # exp(-S_P(G)) (W integrated out exactly). Tolerance: 4 combined Monte Carlo standard
    # errors (from blackjax's ESS) plus the O(eps) SGLD bias, measured < 0.01 at eps = 1e-3.
    jax.config.update("jax_enable_x64", True)
    L, V, P, act = 4, 3, 20, "softmax"
    h = cj.default_hyper(act, L)
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(3), P, L, V), V).astype(jnp.float64)
    n = 512
    ks = jax.random.split(jax.random.key(4), n)
    init = jax.vmap(lambda k: N.init_params(k, L, V, h, jnp.float64))(ks)
    s1 = C.run_chains(jax.random.key(6), S.sgld(st, h, act, 2e-3), init,
                      lambda p: N.observables(p, st, h, act), num_steps=3000, burn_in=1000, thin=20)
    s2 = C.run_chains(jax.random.key(7), S.mala_marginal(st, h, act, 0.05), init.G,
                      lambda G: {"cG": cj.order_parameters(cj.attention(G, act))[1]},
                      num_steps=3000, burn_in=1000, thin=20)
    a, b = C.summarize(s1.draws["cG"]), C.summarize(s2.draws["cG"])
    assert a["n_excluded"] == 0 and b["rhat"] < 1.05
    tol = 4 * np.hypot(a["mcse"], b["mcse"]) + 0.01
    assert abs(a["mean"] - b["mean"]) < tol, (a, b)
    assert abs(a["sd"] - b["sd"]) < 0.1 * b["sd"] + 0.01


def test_nonfinite_chain_is_flagged_and_excluded():
    grad = lambda key, x: jnp.where(x[0] > 5, jnp.nan, -x)
    init = jnp.array([[0.0, 0.0], [6.0, 0.0]])
    s = C.run_chains(jax.random.key(0), S.sgld_from_grad(grad, 0.01), init,
                     lambda x: {"x": x[1]}, num_steps=20, thin=1)
    assert s.nonfinite.tolist() == [False, True]
    summ = C.summarize(s.draws["x"], s.nonfinite)
    assert summ["n_excluded"] == 1 and np.isfinite(summ["mean"])
    with pytest.warns(DeprecationWarning, match="nonfinite"):  # the old name still works
        assert s.divergent.tolist() == [False, True]


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(num_steps=0), "num_steps"),
        (dict(num_steps=10, burn_in=10), "burn_in"),
        (dict(num_steps=10, burn_in=-1), "burn_in"),
        (dict(num_steps=10, thin=0), "thin"),
        (dict(num_steps=10, thin=20), "thin"),
        (dict(num_steps=2.5), "num_steps"),
        (dict(num_steps=10, chain_block=0), "chain_block"),
    ],
)
def test_bad_run_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        C.run_chains(jax.random.key(0), S.sgld_from_grad(lambda k, x: -x, 0.1), jnp.zeros((2, 1)),
                     lambda x: {"x": x[0]}, **kwargs)


def test_bad_sampler_arguments():
    h, toks, st, init = small()
    with pytest.raises(ValueError, match="step_size"):
        S.sgld(st, h, "linear", 0.0)
    with pytest.raises(ValueError, match="step_size"):
        S.sgld(st, h, "linear", -1e-3)
    with pytest.raises(ValueError, match="batch_size"):
        S.sgld(None, h, "linear", 1e-3, tokens=toks, batch_size=41)
    with pytest.raises(ValueError, match="batch_size"):
        S.sgld(None, h, "linear", 1e-3, tokens=toks, batch_size=0)
    with pytest.raises(ValueError, match="activation"):
        S.sgld(st, h, "relu", 1e-3)


def test_psgld_samples_a_badly_scaled_gaussian():
    # Target N(0, diag(s^2)), s = (0.05, 2): curvatures differ by 1600x, so a plain SGLD step
    # small enough for the narrow direction (eps << s_min^2) barely moves the wide one.
    # pSGLD's RMSprop preconditioner D ~ 1/sqrt(E g^2) = s shrinks that spread to s_max/s_min
    # (per-step relaxation eps / s). D adapts for 1000 steps, is then frozen (a fixed D needs
    # no Gamma term), and 5000 further burn-in steps (the variance of the wide direction
    # relaxes as exp(-2 eps t / s): 10 e-folds) precede the draws. Each variance must be within 5 % of s^2: Euler bias
    # eps / (2 s) <= 2 %, sd of a variance estimate with 2048 x 100 draws ~ 0.3-1 %.
    s = jnp.array([0.05, 2.0])
    grad = lambda k, x: -x / s**2
    init = s * jax.random.normal(jax.random.key(0), (2048, 2))
    run = C.run_chains(jax.random.key(1), S.psgld_from_grad(grad, 0.002, adapt_steps=1000), init,
                       lambda st: {"a": st[0], "b": st[1]}, num_steps=8000, burn_in=6000, thin=20)
    v = np.array([run.draws["a"].var(), run.draws["b"].var()]) / np.asarray(s) ** 2
    np.testing.assert_allclose(v, 1.0, rtol=0.05)
    # plain SGLD at the same step is unstable on the narrow direction (eps / s^2 = 0.8 is
    # fine, so use a step that suits the wide one: 0.01 / 0.0025 = 4 > 2 diverges)
    bad = C.run_chains(jax.random.key(1), S.sgld_from_grad(grad, 0.01), init,
                       lambda st: {"a": st[0]}, num_steps=50, thin=1)
    assert bad.nonfinite.all() or np.abs(bad.draws["a"]).max() > 1e3


def test_w_posterior_draws_have_the_exact_conditional_mean_and_covariance():
    # The log posterior is quadratic in W: its maximiser is the conditional mean and minus
    # its Hessian the precision. 20000 draws: the mean within 5 standard errors per entry,
    # the covariance within 5 % of the largest entry (sampling error ~ sqrt(2/n) ~ 1 %).
    h, toks, st, init = small("softmax", dtype=jnp.float64)
    G = init.G[0].astype(jnp.float64)
    A = cj.attention(G, "softmax")
    n = 20000
    W = jax.vmap(lambda k: N.sample_w_posterior(k, A, st, h))(jax.random.split(jax.random.key(9), n))
    V = W.shape[-1]
    lp = lambda w: N.logdensity_from_stats(N.Params(w.reshape(V, V), G), st, h, "softmax")
    prec = -jax.hessian(lp)(jnp.zeros(V * V))
    cov = np.linalg.inv(np.asarray(prec))
    mean = np.linalg.solve(np.asarray(prec), np.asarray(jax.grad(lp)(jnp.zeros(V * V))))
    flat = np.asarray(W).reshape(n, -1)
    se = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(flat.mean(0) - mean) < 5 * se)
    np.testing.assert_allclose(np.cov(flat.T), cov, atol=0.05 * np.abs(cov).max())


def test_psgld_init_draws_its_minibatch_from_the_chain_key():
    # pSGLD's init takes a key (blackjax's convention); run_chains gives each chain its own:
    # the squared-gradient average starts from a gradient on that chain's minibatch
    L, V, act = 4, 3, "softmax"
    h = cj.default_hyper(act, L)
    toks = cj.sample_tokens(jax.random.key(0), 40, L, V)
    alg = S.psgld(None, h, act, 1e-3, tokens=toks, batch_size=5)
    p = N.init_params(jax.random.key(1), L, V, h)
    a, b, c = (alg.init(p, jax.random.key(k)).sq_avg.W for k in (2, 2, 3))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    init = jax.tree.map(lambda x: jnp.stack([x, x]), p)
    s = C.run_chains(jax.random.key(4), alg, init, lambda q: {"w": q.W[0, 0]}, num_steps=1)
    assert not np.allclose(s.final.sq_avg.W[0], s.final.sq_avg.W[1])


def test_network_sampler_kinds():
    L, V = 4, 3
    h = cj.default_hyper("softmax", L)
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(0), 20, L, V), V)
    data = {"stats": st, "step_size": 1e-3}
    p = N.init_params(jax.random.key(1), L, V, h, jnp.float64)
    # one construction of MALA: the spec builds the same kernel as samplers.mala
    a = S.NetworkSampler(h, "softmax", "mala").build(data)
    b = S.mala(st, h, "softmax", 1e-3)
    sa, _ = a.step(jax.random.key(2), a.init(p))
    sb, _ = b.step(jax.random.key(2), b.init(p))
    np.testing.assert_array_equal(sa.position.G, sb.position.G)
    with pytest.raises(ValueError, match="kind"):
        S.NetworkSampler(h, "softmax", "hmc").build(data)
    with pytest.raises(ValueError, match="step_size"):
        S.mala(st, h, "softmax", -1.0)
