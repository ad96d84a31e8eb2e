"""Minibatch path without one-hot tensors (copyjax.minibatch) and the two minibatch layouts."""
import blackjax
import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import chains as C
from copyjax import minibatch as MB
from copyjax import network as N
from copyjax import samplers as S
from copyjax.model import log_prior, per_sequence_loss

L, V, P, B = 8, 5, 300, 16


def _setup(act, seed=0):
    h = cj.default_hyper(act, L)
    toks = cj.streamed_tokens(jax.random.key(seed), P, L, V)
    p = N.init_params(jax.random.key(seed + 1), L, V, h)
    return h, toks, p


@pytest.mark.parametrize("act", ["softmax", "linear"])
def test_batch_loglik_and_its_gradient_match_autodiff_of_the_per_sequence_loss(act):
    # float64 is on for the whole suite (conftest.py)
    h, toks, p = _setup(act)
    p = jax.tree.map(lambda x: x.astype(jnp.float64), p)
    tb = toks[:B]
    ref = lambda q: -h.beta * jnp.sum(per_sequence_loss(q.W, q.G, tb, act))  # one-hot forward pass
    np.testing.assert_allclose(MB.batch_loglik(p, tb, h, act), ref(p), rtol=1e-12)
    for a, b in zip(jax.grad(lambda q: MB.batch_loglik(q, tb, h, act))(p), jax.grad(ref)(p)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("act", ["softmax", "linear"])
def test_estimator_equals_blackjax_grad_estimator_on_the_same_minibatch(act):
    # blackjax's estimator vmaps the per-sequence log-likelihood and scales the batch mean by
    # P; ours takes the batch in one matrix product. Same minibatch, same gradient (float32).
    h, toks, p = _setup(act)
    est, draw = S.network_grad_estimator(None, h, act, toks, B)
    ref = blackjax.sgmcmc.gradients.grad_estimator(
        lambda q: log_prior(q.W, q.G, h), lambda q, t: N.sequence_loglik(q, t, h, act), P)
    batch = draw(jax.random.key(7))
    chex.assert_shape(batch, (B, L))
    for a, b in zip(est(p, batch), ref(p, batch)):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5 * float(jnp.max(jnp.abs(b))))


def test_minibatch_gradient_is_unbiased_for_the_exact_gradient():
    # Mean of n minibatch estimates vs the exact statistics-path gradient, per component:
    # z = (mean - exact) / (sd / sqrt(n)). Over the 89 components max |z| < 5 fails by chance
    # with probability ~ 89 * 6e-7.
    act, n = "softmax", 3000
    h, toks, p = _setup(act)
    est, draw = S.network_grad_estimator(None, h, act, toks, B)
    gs = jax.vmap(lambda k: est(p, draw(k)))(jax.random.split(jax.random.key(3), n))
    stats = cj.sufficient_stats(toks, V).astype(jnp.float32)
    exact = jax.grad(lambda q: N.logdensity_from_stats(q, stats, h, act))(p)
    for g, e in zip(gs, exact):
        g = np.asarray(g, float).reshape(n, -1)
        z = (g.mean(0) - np.asarray(e).reshape(-1)) / (g.std(0, ddof=1) / np.sqrt(n) + 1e-12)
        assert np.max(np.abs(z)) < 5, np.max(np.abs(z))


def test_shared_layout_is_the_statistics_path_on_the_steps_common_batch():
    # One SGLD step of chain 0 through run_chains with layout="shared" equals blackjax's SGLD
    # kernel by hand with the exact statistics gradient on the scaled counts of the batch
    # drawn from fold_in(batch_key, 0), with the key run_chains gives chain 0 at step 0.
    act = "softmax"
    h, toks, p = _setup(act)
    stats = cj.sufficient_stats(toks, V).astype(jnp.float32)
    bkey, key, eps = jax.random.key(11), jax.random.key(12), 1e-4
    data = {"stats": stats, "tokens": toks, "step_size": jnp.float32(eps), "batch_key": bkey}
    spec = S.NetworkSampler(h, act, "sgld", B, "shared")
    init = jax.tree.map(lambda x: jnp.stack([x, x]), p)
    out = C.run_chains(key, spec, init, lambda q, d: {"w": q.W[0, 0]}, data, schedule=C.Schedule(1))
    cb = MB.batch_stats(toks[MB.draw_batch(jax.random.fold_in(bkey, 0), P, B)], V, P)
    np.testing.assert_allclose(jnp.trace(cb[0, 0]), P, rtol=1e-6)  # scaled to P sequences
    g = jax.grad(lambda q: N.logdensity_from_stats(q, cb, h, act))
    _, kn = jax.random.split(jax.random.fold_in(jax.random.fold_in(key, 0), 0))
    want = blackjax.sgld.build_kernel()(kn, p, lambda q, _: g(q), None, eps)
    for a, b in zip(jax.tree.map(lambda x: x[0], out.final.position), want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    # both chains saw the same batch but their own noise
    assert not np.allclose(out.final.position.W[0], out.final.position.W[1])


def test_independent_minibatches_run_in_blocks_of_eight_by_default():
    # run_chains takes the spec's preferred_chain_block (8) for independent minibatches: the
    # default run equals, bit for bit, the same run with chain_block=8 stated, and differs
    # from one block of 16 only by XLA's batch-size-dependent rounding
    act = "softmax"
    h, toks, _ = _setup(act)
    stats = cj.sufficient_stats(toks, V).astype(jnp.float32)
    data = {"stats": stats, "tokens": toks, "step_size": jnp.float32(1e-4)}
    spec = S.NetworkSampler(h, act, "sgld", B)
    assert spec.preferred_chain_block == 8 and S.NetworkSampler(h, act, "sgld").preferred_chain_block is None
    init = jax.vmap(lambda k: N.init_params(k, L, V, h))(jax.random.split(jax.random.key(2), 16))
    run = lambda **kw: C.run_chains(jax.random.key(3), spec, init, lambda q, d: {"w": q.W[0, 0]}, data,
                                    schedule=C.Schedule(3),
                                    layout=C.Layout(devices=jax.devices()[:1], **kw)).final.position.W
    np.testing.assert_array_equal(run(), run(chain_block=8))
    np.testing.assert_allclose(run(), run(chain_block=16), rtol=1e-4, atol=1e-6)


def test_bad_layout_and_batch_size_are_rejected():
    h, toks, _ = _setup("linear")
    stats = cj.sufficient_stats(toks, V).astype(jnp.float32)
    data = {"stats": stats, "tokens": toks, "step_size": 1e-4, "batch_key": jax.random.key(0)}
    with pytest.raises(ValueError, match="layout"):
        S.NetworkSampler(h, "linear", "sgld", B, "bogus").build(data)
    with pytest.raises(ValueError, match="batch_size"):
        S.NetworkSampler(h, "linear", "sgld", P + 1).build(data)
