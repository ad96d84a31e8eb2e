import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import chains as C
from copyjax import network as N
from copyjax import samplers as S

from _networks import small


def test_stats_gradient_equals_per_sequence_autodiff():
    for act in ["linear", "softmax"]:
        h, toks, st, init = small(act, dtype=jnp.float64)
        p = jax.tree.map(lambda x: x[0].astype(jnp.float64), init)
        g1 = jax.grad(N.logdensity_from_stats)(p, st, h, act)
        g2 = jax.grad(lambda p: cj.log_posterior(p.W, p.G, toks, h, act))(p)
        for a, b in zip(jax.tree.leaves(g1), jax.tree.leaves(g2)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


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
        s = C.run_algorithm(jax.random.key(0), S.sgld_from_grad(grad, eps), init,
                            lambda x: {"x0": x[0], "x1": x[1]}, schedule=C.Schedule(2200, 200, 5))
        x = np.stack([s.draws["x0"], s.draws["x1"]], -1).reshape(-1, 2)
        np.testing.assert_allclose(x.mean(0), m, atol=0.01)
        v = x.var(0).mean()
        np.testing.assert_allclose(v, 1 / (1 - eps / 2), rtol=0.01)
        bias.append(v - 1)
    order = np.polyfit(np.log(eps_list), np.log(bias), 1)[0]
    assert 0.85 < order < 1.15, order


@pytest.mark.slow
def test_sgld_on_network_matches_exact_marginal(one_device):
    # SGLD on (W, G) must reproduce the posterior of the copy order parameter that MALA gives on
    # exp(-S_P(G)) (W integrated out exactly). P = 200 at L = 4, V = 3: the data dominate (exact
    # mean c_G 0.661, sd 0.067; prior draws have mean -0.004), so a wrong likelihood weight
    # moves the answer by far more than the tolerance: likelihood^0.5 has mean 0.551, checked
    # below with MALA itself. Tolerance: 4 combined Monte Carlo standard errors (ESS-based,
    # about 0.001 each) plus 0.005 for SGLD's O(eps) bias, measured -0.0009 +- 0.0009 at
    # eps = 2e-3 (7e-4: -0.00002 +- 0.0012). Planted bugs at these settings (measured, z in
    # combined standard errors): SGLD on likelihood^0.5, z = -79; the prior's gradient dropped
    # (sigma^2 -> 1e6), z = +51; a frozen chain keeps its prior draws (mean -0.004), z = -123.
    jax.config.update("jax_enable_x64", True)
    L, V, P, act = 4, 3, 200, "softmax"
    h = cj.default_hyper(act, L)
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(3), P, L, V), V).astype(jnp.float64)
    n = 512
    ks = jax.random.split(jax.random.key(4), n)
    init = jax.vmap(lambda k: N.init_params(k, L, V, h, jnp.float64))(ks)
    s1 = C.run_algorithm(jax.random.key(6), S.sgld(st, h, act, 2e-3), init,
                         lambda p: N.observables(p, st, h, act), schedule=C.Schedule(6000, 2000, 20),
                         layout=C.Layout(devices=one_device))
    exact = lambda stats: C.summarize(C.run_algorithm(
        jax.random.key(7), S.mala_marginal(stats, h, act, 0.05), init.G,
        lambda G: {"cG": cj.order_parameters(cj.attention(G, act))[1]}, schedule=C.Schedule(3000, 1000, 20),
        layout=C.Layout(devices=one_device)).draws["cG"])
    a, b = C.summarize(s1.draws["cG"]), exact(st)
    # SGLD's 200 draws per chain give R-hat 1.06 over 512 chains (slow drift between chains,
    # within the ESS-based error); 1.1 flags chains that have not left their starts
    assert a.n_excluded == 0 and b.rhat < 1.05 and a.rhat < 1.1
    tol = 4 * np.hypot(a.mcse, b.mcse) + 0.005
    assert abs(a.mean - b.mean) < tol, (a, b)
    # sd: relative error of an sd estimate ~ 1 / sqrt(2 ESS) < 2 % here; 5 % allowed
    assert abs(a.sd - b.sd) < 0.05 * b.sd, (a, b)
    # the tolerance resolves a tempered likelihood: the exact posterior of likelihood^0.5 lies
    # more than 5 tolerances away
    assert abs(exact(0.5 * st).mean - b.mean) > 5 * tol


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
    run = C.run_algorithm(jax.random.key(1), S.psgld_from_grad(grad, 0.002, adapt_steps=1000), init,
                          lambda st: {"a": st[0], "b": st[1]}, schedule=C.Schedule(8000, 6000, 20))
    v = np.array([run.draws["a"].var(), run.draws["b"].var()]) / np.asarray(s) ** 2
    np.testing.assert_allclose(v, 1.0, rtol=0.05)
    # plain SGLD at the same step is unstable on the narrow direction (eps / s^2 = 0.8 is
    # fine, so use a step that suits the wide one: 0.01 / 0.0025 = 4 > 2 diverges)
    bad = C.run_algorithm(jax.random.key(1), S.sgld_from_grad(grad, 0.01), init,
                          lambda st: {"a": st[0]}, schedule=C.Schedule(50))
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
    s = C.run_algorithm(jax.random.key(4), alg, init, lambda q: {"w": q.W[0, 0]}, schedule=C.Schedule(1))
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



def test_network_sampler_runs_the_registrys_samplers():
    """``NetworkSampler`` builds from the one registry (``samplers.registry.SAMPLERS``): its
    SGLD, full batch and on independent minibatches, steps exactly as the network SGLD built
    directly on the statistics and the tokens (``samplers.sgld``: blackjax's kernel on
    ``network_grad_estimator``, another construction); a registry entry without its own network
    form (NUTS, Barker) runs too and moves; a kind with no minibatch form is refused with one."""
    from copyjax.samplers import registry

    L, V, P = 4, 3, 40
    h = cj.default_hyper("softmax", L)
    tok = cj.sample_tokens(jax.random.key(0), P, L, V)
    st = cj.sufficient_stats(tok, V).astype(jnp.float64)
    p = N.init_params(jax.random.key(1), L, V, h, jnp.float64)
    for batch, ref in ((None, S.sgld(st, h, "softmax", 1e-3)),
                       (8, S.sgld(st, h, "softmax", 1e-3, tokens=tok, batch_size=8))):
        alg = S.NetworkSampler(h, "softmax", "sgld", batch).build({"stats": st, "step_size": 1e-3, "tokens": tok})
        sa, _ = alg.step(jax.random.key(2), alg.init(p))
        sb, _ = ref.step(jax.random.key(2), ref.init(p))
        np.testing.assert_array_equal(sa.position.G, sb.position.G)
        np.testing.assert_array_equal(sa.position.W, sb.position.W)
    for kind in ("nuts", "barker"):
        assert kind in registry.FULL_BATCH
        alg = S.NetworkSampler(h, "softmax", kind).build({"stats": st, "step_size": 1e-4})
        s, _ = jax.jit(alg.step)(jax.random.key(3), alg.init(p))
        assert np.all(np.isfinite(s.position.G)) and not np.array_equal(s.position.G, p.G)
    with pytest.raises(ValueError, match="no minibatch form"):
        S.NetworkSampler(h, "softmax", "mala", 8).build({"stats": st, "step_size": 1e-3, "tokens": tok})
    with pytest.raises(ValueError, match="kind must be one of"):
        S.NetworkSampler(h, "softmax", "sgld_mb").build({"stats": st, "step_size": 1e-3})


def test_network_sampler_takes_a_build_function_on_mapping_positions():
    """The bench's user samplers run through the same spec: a build function as ``kind`` (here
    the registry's own MALA and minibatch SGLD, passed as functions) with a fixed ``step_size``
    steps exactly as the registry's name does with the step from ``data`` (same keys, same
    draws), on ``{"W", "G"}`` positions, whose log density and gradient are the Params' (the
    gradient comes back as a mapping). A minibatch build without ``batch_size``, and a full-batch
    one with it, are refused."""
    from copyjax.samplers import registry

    L, V, P = 4, 3, 40
    h = cj.default_hyper("softmax", L)
    tok = cj.sample_tokens(jax.random.key(0), P, L, V)
    st = cj.sufficient_stats(tok, V).astype(jnp.float64)
    p = N.init_params(jax.random.key(1), L, V, h, jnp.float64)
    data = {"stats": st, "step_size": 1e-3, "tokens": tok}
    for name, batch in (("mala", None), ("sgld", 8)):
        by_name = S.NetworkSampler(h, "softmax", name, batch).build(data)
        build = registry.SAMPLERS[name if batch is None else f"{name}_mb"]
        by_fn = S.NetworkSampler(h, "softmax", build, batch, step_size=1e-3).build({"stats": st, "tokens": tok})
        sa, _ = by_name.step(jax.random.key(2), by_name.init({"W": p.W, "G": p.G}))
        sb, _ = by_fn.step(jax.random.key(2), by_fn.init({"W": p.W, "G": p.G}))
        assert isinstance(sb.position, dict) and not np.array_equal(sb.position["G"], p.G)
        np.testing.assert_array_equal(sa.position["G"], sb.position["G"])
        np.testing.assert_array_equal(sa.position["W"], sb.position["W"])
    value, grad = jax.value_and_grad(N.logdensity_from_stats)({"W": p.W, "G": p.G}, st, h, "softmax")
    ref_value, ref_grad = jax.value_and_grad(N.logdensity_from_stats)(p, st, h, "softmax")
    assert value == ref_value and set(grad) == {"W", "G"}
    np.testing.assert_array_equal(grad["G"], ref_grad.G)
    np.testing.assert_array_equal(grad["W"], ref_grad.W)
    with pytest.raises(ValueError, match="batch_size"):
        S.NetworkSampler(h, "softmax", registry.SAMPLERS["sgld_mb"], step_size=1e-3).build(data)
    with pytest.raises(ValueError, match="batch_size is for minibatch builds"):
        S.NetworkSampler(h, "softmax", registry.SAMPLERS["mala"], 8, step_size=1e-3).build(data)
