"""Two attention layers and the shift-k target (``copyjax.masks.stack``): the exact action
against the likelihood built sequence by sequence from the layers (NumPy, no contraction, no
``Stack`` code), against the V^2-dimensional Gaussian integral over W, and, at one layer with
k = 1, the base mask's model bit for bit."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from _gaussian import gaussian_integral_over_W
from copyjax import masks, network
from copyjax.action import action_from_features, marginal_logdensity

jax.config.update("jax_enable_x64", True)

HYPER = cj.Hyper(1.7, 0.8, 0.6)


def _softmax_rows(G, ok):
    z = np.where(ok, G, -np.inf)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def reference_features(G, tokens, V, activation, base_ok, layers, residual, shift):
    """Per sequence: x one-hot (L, V); layer i's pattern A_i from G_i under the base mask's
    support ``base_ok``; one layer h = A x, two h = A_2 (x + A_1 x) (residual) or A_2 A_1 x;
    targets x_{l - shift}. Also the loss rows: those whose target is reachable from them."""
    t = np.asarray(tokens)
    P, L = t.shape
    Gs = np.asarray(G).reshape((layers, L, L))
    As = [(_softmax_rows(g, base_ok) if activation == "softmax" else np.where(base_ok, g, 0.0)) for g in Gs]
    X = np.eye(V)[t]  # (P, L, V)
    if layers == 1:
        h = np.einsum("lm,pmv->plv", As[0], X)
    else:
        z = np.einsum("lm,pmv->plv", As[0], X) + (X if residual else 0.0)
        h = np.einsum("lm,pmv->plv", As[1], z)
    y = np.eye(V)[np.roll(t, shift, axis=1)]
    ok = base_ok.astype(int)
    reach = ok if layers == 1 else ok @ ((np.eye(L, dtype=int) if residual else 0) + ok)
    rows = np.flatnonzero(reach[np.arange(L), (np.arange(L) - shift) % L] > 0)
    return h, y, rows


CASES = [("full", "softmax", 2, True, 2), ("full", "linear", 2, True, 2), ("full", "softmax", 2, False, 2),
         ("full", "softmax", 2, True, 1), ("full", "linear", 1, True, 2), ("causal", "softmax", 2, True, 2),
         ("causal", "softmax", 2, False, 3), ("causal", "softmax", 1, True, 2), ("window:2", "linear", 2, True, 3)]


@pytest.mark.parametrize("base, activation, layers, residual, shift", CASES)
def test_the_stack_action_is_the_brute_force_likelihood(base, activation, layers, residual, shift):
    L, V, P = 6, 3, 40
    k1, k2 = jax.random.split(jax.random.key(3))
    tokens = cj.sample_tokens(k1, P, L, V)
    C = cj.sufficient_stats(tokens, V).astype(jnp.float64)
    mask = masks.get(f"{base}+layers={layers}+shift={shift}" + ("" if residual else "+residual=no"))
    G = 0.9 * jax.random.normal(k2, mask.param_shape(L), jnp.float64)
    ok = masks.get(base).allowed(L)
    h, y, rows = reference_features(G, tokens, V, activation, ok, layers, residual, shift)
    np.testing.assert_array_equal(np.flatnonzero(mask.loss_rows(L)), rows)
    prior = 0.5 * np.sum(np.where(ok, np.asarray(G), 0.0) ** 2) / HYPER.sigma_g2
    ref = float(action_from_features(jnp.asarray(h[:, rows]), jnp.asarray(y[:, rows]), P, HYPER)) + prior
    got = float(cj.exact_action(G, C, HYPER, activation, mask))
    assert abs(got - ref) <= 1e-12 * abs(ref), (got, ref)
    # the sampler's log density: the same action, the prior over every entry of G
    full_prior = 0.5 * float(jnp.sum(G**2)) / HYPER.sigma_g2
    np.testing.assert_allclose(-float(marginal_logdensity(G, C, HYPER, activation, mask)), ref - prior + full_prior,
                               rtol=1e-12)

    # its gradient is the brute force's, through autodiff of a path with no contraction
    def brute(G):
        As = mask.layer_patterns(G, activation)
        X = jax.nn.one_hot(tokens, V, dtype=G.dtype)
        if layers == 1:
            hh = jnp.einsum("lm,pmv->plv", As, X)
        else:
            z = jnp.einsum("lm,pmv->plv", As[0], X) + (X if residual else 0.0)
            hh = jnp.einsum("lm,pmv->plv", As[1], z)
        return action_from_features(hh[:, rows], jnp.asarray(y[:, rows]), P, HYPER)

    g_ref = jax.grad(brute)(G) + jnp.where(jnp.asarray(ok), G, 0.0) / HYPER.sigma_g2
    np.testing.assert_allclose(jax.grad(cj.exact_action)(G, C, HYPER, activation, mask), g_ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("base, activation, shift", [("full", "softmax", 1), ("causal", "softmax", 2),
                                                  ("full", "linear", 2)])
def test_layer_one_frozen_at_uniform_is_the_brute_force_likelihood(base, activation, shift):
    """``+first=uniform``: G is layer 2's ``(L, L)`` alone and layer 1 pools uniformly over each
    row's keys. The action against the brute force of the two-layer features with layer 1's
    logits those of uniform pooling (zeros for softmax; for linear, G_1 the pooling pattern
    itself), the prior over layer 2 alone, value to 1e-12 and gradient through the brute
    force's autodiff; its G and umbrella coordinate are layer 2's."""
    L, V, P = 6, 3, 40
    k1, k2 = jax.random.split(jax.random.key(13))
    tokens = cj.sample_tokens(k1, P, L, V)
    C = cj.sufficient_stats(tokens, V).astype(jnp.float64)
    mask = masks.get(f"{base}+layers=2+shift={shift}+first=uniform")
    assert mask.param_shape(L) == (L, L) and masks.get(mask.spec) == mask
    ok = masks.get(base).allowed(L)
    pool = ok / ok.sum(axis=1, keepdims=True)
    G1 = np.zeros((L, L)) if activation == "softmax" else pool

    def brute(G2):
        h, y, rows = reference_features(np.stack([G1, np.asarray(G2)]), tokens, V, activation, ok, 2, True, shift)
        return h, y, rows

    G = 0.9 * jax.random.normal(k2, (L, L), jnp.float64)
    h, y, rows = brute(G)
    np.testing.assert_array_equal(np.flatnonzero(mask.loss_rows(L)), rows)
    prior = 0.5 * np.sum(np.where(ok, np.asarray(G), 0.0) ** 2) / HYPER.sigma_g2
    ref = float(action_from_features(jnp.asarray(h[:, rows]), jnp.asarray(y[:, rows]), P, HYPER)) + prior
    got = float(cj.exact_action(G, C, HYPER, activation, mask))
    assert abs(got - ref) <= 1e-12 * abs(ref), (got, ref)

    def brute_action(G2):  # the same features in JAX, for the gradient
        X = jax.nn.one_hot(tokens, V, dtype=G2.dtype)
        A2 = masks.get(base).attention(G2, activation)
        hh = jnp.einsum("lm,pmv->plv", A2, jnp.einsum("lm,pmv->plv", jnp.asarray(pool), X) + X)
        return action_from_features(hh[:, rows], jnp.asarray(y[:, rows]), P, HYPER)

    g_ref = jax.grad(brute_action)(G) + jnp.where(jnp.asarray(ok), G, 0.0) / HYPER.sigma_g2
    np.testing.assert_allclose(jax.grad(cj.exact_action)(G, C, HYPER, activation, mask), g_ref, rtol=1e-9, atol=1e-12)
    two = masks.get(f"{base}+layers=2+shift={shift}")
    np.testing.assert_allclose(mask.copy_direction(L, jnp.float64), two.copy_direction(L, jnp.float64)[1])
    assert mask.copy_starts(L, activation, 3.0, jnp.float64).shape[-2:] == (L, L)
    for bad in ("full+layers=1+first=uniform", "full+layers=2+residual=no+first=uniform", "full+layers=2+first=half"):
        with pytest.raises(ValueError, match="first"):
            masks.get(bad)


def gaussian_integral(A_eff, tokens, V, shift, rows, hyper):
    """The Gaussian integral over W of the loss rows' features A_eff x and targets x_{l-k}."""
    t = np.asarray(tokens)
    X = np.eye(V)[t]
    h = np.einsum("lm,pmv->plv", A_eff, X)[:, rows].reshape(-1, V)
    y = np.eye(V)[np.roll(t, shift, axis=1)][:, rows].reshape(-1, V)
    return gaussian_integral_over_W(h, y, len(rows), hyper)


@pytest.mark.parametrize("activation, residual", [("softmax", True), ("linear", False)])
def test_the_two_layer_action_is_the_gaussian_integral_over_W(activation, residual):
    L, V, P, shift = 3, 2, 7, 2
    k1, k2 = jax.random.split(jax.random.key(8))
    tokens = cj.sample_tokens(k1, P, L, V)
    C = cj.sufficient_stats(tokens, V)
    mask = masks.get(f"full+layers=2+shift={shift}" + ("" if residual else "+residual=no"))
    G = 0.8 * jax.random.normal(k2, (2, L, L), jnp.float64)
    h, _, rows = reference_features(G, tokens, V, activation, np.ones((L, L), bool), 2, residual, shift)
    # A_eff from the features of the L one-hot basis sequences would be circular: rebuild it
    As = [(_softmax_rows(g, True) if activation == "softmax" else g) for g in np.asarray(G)]
    A_eff = As[1] @ (np.eye(L) + As[0]) if residual else As[1] @ As[0]
    ref = gaussian_integral(A_eff, tokens, V, shift, rows, HYPER) + 0.5 * np.sum(np.asarray(G) ** 2) / HYPER.sigma_g2
    got = float(cj.exact_action(G, C, HYPER, activation, mask))
    assert abs(got - ref) <= 1e-9 * abs(ref), (got, ref)


@pytest.mark.parametrize("base, activation", [("full", "softmax"), ("full", "linear"), ("causal", "softmax")])
def test_one_layer_at_shift_one_is_the_base_model_bit_for_bit(base, activation):
    L, V, P = 8, 4, 60
    k1, k2, k3 = jax.random.split(jax.random.key(5), 3)
    tokens = cj.sample_tokens(k1, P, L, V)
    C = cj.sufficient_stats(tokens, V).astype(jnp.float32)
    plain, stack = masks.get(base), masks.get(f"{base}+layers=1+shift=1")
    assert stack != plain and stack.param_shape(L) == (L, L)
    G = jax.random.normal(k2, (L, L), jnp.float32)
    for f in (cj.exact_action, marginal_logdensity, jax.grad(marginal_logdensity)):
        np.testing.assert_array_equal(f(G, C, HYPER, activation, stack), f(G, C, HYPER, activation, plain))
    p = network.init_params(k3, L, V, HYPER)
    for f in (network.logdensity_from_stats, jax.grad(network.logdensity_from_stats)):
        for x, y in zip(jax.tree.leaves(f(p, C, HYPER, activation, stack)),
                        jax.tree.leaves(f(p, C, HYPER, activation, plain)), strict=True):
            np.testing.assert_array_equal(x, y)
    a, b = (network.observables(p, C, HYPER, activation, m) for m in (stack, plain))
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize("spec", ["full+layers=2+shift=2", "causal+layers=2+shift=1+residual=no"])
def test_the_network_of_two_layers_has_the_action_s_likelihood(spec):
    """The network's per-sequence and minibatch likelihoods (the SGLD and Adam paths) sum to
    the likelihood through the statistics: the targets and the loss rows agree."""
    from copyjax.minibatch import batch_loglik

    L, V, P = 6, 3, 25
    k1, k2 = jax.random.split(jax.random.key(9))
    tokens = cj.sample_tokens(k1, P, L, V)
    C = cj.sufficient_stats(tokens, V).astype(jnp.float64)
    mask = masks.get(spec)
    p = network.init_params(k2, L, V, HYPER, jnp.float64, mask)
    assert p.G.shape == (2, L, L)
    A = mask.attention(p.G, "softmax")
    via_stats = float(mask.log_likelihood(p.W, A, C, HYPER.beta))
    per_seq = float(jnp.sum(jax.vmap(lambda t: network.sequence_loglik(p, t, HYPER, "softmax", mask))(tokens)))
    np.testing.assert_allclose(per_seq, via_stats, rtol=1e-12)
    np.testing.assert_allclose(float(batch_loglik(p, tokens, HYPER, "softmax", mask)), via_stats, rtol=1e-12)


def test_specs_round_trip_and_bad_ones_name_the_option():
    m = masks.get("window:3+shift=2+layers=2+residual=no")
    assert masks.get(m.spec) == m and m.spec == "window:3+layers=2+residual=no+shift=2"
    assert (m.layers, m.residual, m.shift) == (2, False, 2)
    for bad in ("full+layers=3", "full+shift=0", "full+depth=2", "full+layers=2+layers=2", "nope+layers=2",
                "full+residual=maybe"):
        with pytest.raises(ValueError, match="mask"):
            masks.get(bad)
    L = 5
    with pytest.raises(ValueError, match=r"G must have shape \(2, 5, 5\)"):
        cj.exact_action(jnp.zeros((L, L)), jnp.zeros((L, L, 2, 2)), HYPER, "softmax", m)


def test_one_rule_decides_which_stacks_exist_for_the_spec_the_class_and_the_options():
    """Every (layers, residual, shift, first) is accepted alike by the spec's parser,
    ``masks.stack.Stack`` and the scripts' options (``stack_mask``), and refused alike with the
    option named; the model table below is written out here, not read from the code."""
    import argparse
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
    from _cli import add_stack_options, stack_mask
    from copyjax.masks.stack import Stack

    def is_a_model(layers, residual, shift, first):
        return layers in (1, 2) and shift >= 1 and (residual or layers == 2) and (
            first == "free" or (layers == 2 and residual))

    base = masks.get("full")
    for layers in (1, 2, 3):
        for residual in (True, False):
            for shift in (0, 1, 2):
                for first in ("free", "uniform"):
                    spec = f"full+layers={layers}+shift={shift}+residual={'yes' if residual else 'no'}+first={first}"
                    expect = is_a_model(layers, residual, shift, first)
                    ap = argparse.ArgumentParser()
                    ap.add_argument("--mask", default="full")
                    add_stack_options(ap, first_layer=True)
                    argv = ["--layers", str(layers), "--shift", str(shift), "--first-layer", first] + (
                        [] if residual else ["--no-residual"])
                    tries = {"spec": lambda: masks.get(spec),
                             "class": lambda: Stack(base, layers, residual, shift, first)}
                    if layers in (1, 2):  # --layers's choices refuse 3 before the rule is asked
                        tries["options"] = lambda: stack_mask(ap, ap.parse_args(argv))
                    for where, make in tries.items():
                        try:
                            make()
                            got = True
                        except (ValueError, SystemExit):
                            got = False
                        assert got == expect, (where, spec)
    with pytest.raises(ValueError, match="residual=no needs layers=2"):
        masks.get("full+layers=1+residual=no")
    with pytest.raises(ValueError, match="shift must be an integer"):
        Stack(base, 2, True, 1.5)


def test_the_plain_cyclic_stack_cannot_tell_how_the_shift_is_split_and_the_residual_can():
    """Softmax patterns alpha P + (1 - alpha) U of circulant permutations P compose as
    alpha^2 S^(a+b) + (1 - alpha^2) U: without the residual stream, (I, S^2), (S, S) and
    (S^2, I) at one logit give the same A_eff and so the same action (the posterior is
    degenerate in which layer copies what); with it, A_eff = A_2 + A_2 A_1 adds A_2's own
    target, and the one-layer split (I, S^2) is far likelier than the composed (S, S)."""
    L, V, P = 8, 4, 300
    C = cj.sufficient_stats(cj.sample_tokens(jax.random.key(4), P, L, V), V).astype(jnp.float64)
    h = cj.default_hyper("softmax", L)
    S = lambda k: jnp.roll(jnp.eye(L), -k, axis=1)
    splits = [jnp.stack([S(a), S(2 - a)]) * 4.0 for a in (0, 1, 2)]
    plain = [float(cj.exact_action(G, C, h, "softmax", "full+layers=2+shift=2+residual=no")) for G in splits]
    np.testing.assert_allclose(plain, plain[0], rtol=1e-12)
    res = [float(cj.exact_action(G, C, h, "softmax", "full+layers=2+shift=2")) for G in splits]
    assert res[0] < res[1] - 50, res  # S_P(one layer) far below S_P(composed)


def test_the_stack_s_starts_directions_and_layer_orders():
    L = 6
    m = masks.get("full+layers=2+shift=2")
    D = np.asarray(m.order_directions(L, jnp.float64)).reshape(4, -1)
    np.testing.assert_allclose(D @ D.T, np.eye(4), atol=1e-12)  # orthonormal, one pair per layer
    starts = m.copy_starts(L, "softmax", 20.0, jnp.float64)
    assert starts.shape == (2, 2, L, L) and m.PHASES == ("one_layer", "composed")
    one, comp = (m.layer_order(G, "softmax") for G in starts)
    assert one["A1_I"] > 0.99 and one["A2_S2"] > 0.99 and comp["A1_S"] > 0.99 and comp["A2_S"] > 0.99
    assert one["A1_S"] < 0.01 and comp["A2_S2"] < 0.01
    # both perfect circuits copy x_{l-2}: c_G of A_eff (halved with the residual) near 1
    plain = masks.get("full+layers=2+shift=2+residual=no")
    for G in starts:
        assert float(plain.order(plain.attention(G, "softmax"), "softmax")["cG"]) > 0.99
    assert float(m.order(m.attention(starts[0], "softmax"), "softmax")["cG"]) > 0.99
    # composed with the residual: A_eff / 2 = (S + S^2) / 2, c_G = (1/2 - 1/L) / (1 - 1/L)
    assert abs(float(m.order(m.attention(starts[1], "softmax"), "softmax")["cG"]) - (0.5 - 1 / L) / (1 - 1 / L)) < 0.01


@pytest.mark.slow
def test_the_two_layer_posterior_sampler_matches_nuts_on_the_same_density():
    """``sample_exact_posterior`` on a two-layer stack (adaptive MALA on (G_1, G_2), chains
    from the prior and both phases' patterns) against blackjax NUTS (window adaptation) on the
    same log density at L = 3, V = 3, P = 60: the means of the composition order parameter and
    of layer 2's weight on x_{l-2} within 4 combined MCSE, the sd within 4 combined relative
    errors 1/sqrt(2 ESS). Planted: MALA run on the plain stack's density (no residual) gives
    c_G 0.076 against NUTS's 0.285 (26 errors): fails."""
    import blackjax

    from copyjax.chains import summarize
    from copyjax.exact_posterior import sample_exact_posterior

    L, V, P = 3, 3, 60
    m = masks.get("full+layers=2+shift=2")
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(6), P, L, V), V).astype(jnp.float64)
    h = cj.default_hyper("softmax", L)
    run = sample_exact_posterior(jax.random.key(0), st, h, "softmax", n_chains=8, num_steps=3000,
                                 devices=jax.devices()[:1], mask=m)
    assert run.samples.draws["A2_S2"].shape == (8, 2000)
    lp = lambda x: marginal_logdensity(x.reshape(2, L, L), st, h, "softmax", m)
    (state, params), _ = blackjax.window_adaptation(blackjax.nuts, lp).run(jax.random.key(1), jnp.zeros(2 * L * L),
                                                                           num_steps=500)
    nuts = blackjax.nuts(lp, **params)

    def chain(key, x0):
        def one(s, k):
            s, _ = nuts.step(k, s)
            G = s.position.reshape(2, L, L)
            return s, jnp.stack([m.order(m.attention(G, "softmax"), "softmax")["cG"],
                                 m.layer_order(G, "softmax")["A2_S2"]])
        return jax.lax.scan(one, nuts.init(x0), jax.random.split(key, 1500))[1]

    draws = np.asarray(jax.vmap(chain)(jax.random.split(jax.random.key(2), 4), jnp.tile(state.position, (4, 1))))
    for i, key in enumerate(("cG", "A2_S2")):
        rs, ref = summarize(run.samples.draws[key]), summarize(draws[:, 250:, i])
        assert abs(rs.mean - ref.mean) < 4 * np.hypot(rs.mcse, ref.mcse), (key, rs.mean, ref.mean)
        rel = 4 * np.sqrt(1 / (2 * rs.ess) + 1 / (2 * ref.ess))
        assert abs(rs.sd / ref.sd - 1) < rel, (key, rs.sd, ref.sd, rel)


@pytest.mark.slow
def test_the_umbrella_on_layer_two_s_copy_logit_gives_the_plain_chains_moments():
    """Two layers with the residual stream, shift 2, L = 5, V = 3, P = 300 (plain chains mix):
    umbrella windows on layer 2's copy logit of x_{l-2} (layer 1 free), recombined by MBAR,
    give the posterior mean and variance of the composition order parameter c_G of 16 plain
    chains of ``sample_exact_posterior`` on the stack within 4 combined standard errors (as
    tests/test_masks.py's causal umbrella test). Measured: 0.4709 +- 0.0018 against
    0.4690 +- 0.0014 (z = +0.8; variance z = -1.7). Planted: the windows sampling the stack
    without its residual stream on the same statistics: z = -5.4 on the mean, +16.7 on the
    variance."""
    from copyjax import free_energy as FE
    from copyjax.chains import summarize
    from copyjax.exact_posterior import sample_exact_posterior

    L, V, P = 5, 3, 300
    m = masks.get("full+layers=2+shift=2")
    h = cj.default_hyper("softmax", L)
    stats = cj.sampled_stats(jax.random.key(5), P, L, V).astype(jnp.float32)
    dev = jax.devices()[:1]
    run = FE.sample_umbrella(jax.random.key(6), stats, h, "softmax", np.linspace(-0.6, 3.4, 12), kappa=12.0,
                             num_steps=1500, chains_per_window=2, devices=dev, mask=m)
    rec = FE.recombine(run)
    pr = FE.profile(rec, run, 0, np.linspace(-0.3, 1.0, 40), 0.3, coordinate="op")
    plain = sample_exact_posterior(jax.random.key(7), stats, h, "softmax", n_chains=16, num_steps=1500,
                                   devices=dev, mask=m)
    s = summarize(plain.samples.draws["cG"])
    assert s.rhat < 1.05
    z_mean = (pr.mean - s.mean) / np.hypot(pr.mean_sd, s.mcse)
    z_var = (pr.var - s.sd**2) / np.hypot(pr.var_sd, s.sd**2 * np.sqrt(2.0 / s.ess))
    assert abs(z_mean) < 4 and abs(z_var) < 4, (pr.mean, pr.mean_sd, s.mean, s.mcse, pr.var, pr.var_sd, s.sd)
