import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import network as N
from copyjax import training as T


@pytest.mark.slow
def test_adam_ensemble_reaches_a_maximum_and_filter_works():
    L, V, P, act = 6, 3, 200, "softmax"
    h = cj.default_hyper(act, L)
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(0), P, L, V), V).astype(jnp.float32)
    init = T.init_ensemble(jax.random.key(1), 6, L, V, h, act)
    ens = T.train_ensemble(jax.random.key(2), init, st, h, act, steps=600, learning_rate=2e-2,
                           record_every=50)
    chex.assert_shape(ens.curves["loss"], (6, 12))
    assert ens.steps[-1] == 600
    # training improves the log posterior and ends at a stationary point
    assert np.all(ens.curves["logpost"][:, -1] > ens.curves["logpost"][:, 0])
    g = jax.vmap(jax.grad(N.logdensity_from_stats), (0, None, None, None))(ens.final, st, h, act)
    assert float(jnp.max(jnp.abs(g.G))) < 0.05 * P / L
    lp = ens.final_obs["logpost"]
    # the filter on values whose answer is known: within rtol (relative) of the best, finite
    # only; a bug such as an absolute tolerance, a sign flip or NaN passing changes the mask
    vals = np.array([-100.0, -100.05, -100.2, -120.0, np.nan])
    assert T.reached_global(vals, rtol=1e-3).tolist() == [True, True, False, False, False]
    assert T.reached_global(vals, rtol=1e-3, reference=-99.0).tolist() == [False] * 5
    # a reference better than every run filters them all out
    assert not T.reached_global(lp, rtol=1e-6, reference=lp.max() + 10).any()


def test_minibatch_adam_runs_and_bad_input():
    L, V, P, act = 5, 3, 50, "linear"
    h = cj.default_hyper(act, L)
    toks = cj.sample_tokens(jax.random.key(0), P, L, V)
    st = cj.sufficient_stats(toks, V).astype(jnp.float32)
    init = T.init_ensemble(jax.random.key(1), 3, L, V, h, act, start="copy")
    ens = T.train_ensemble(jax.random.key(2), init, st, h, act, steps=100, tokens=toks, batch_size=10)
    assert np.all(np.isfinite(ens.final_obs["loss"]))
    with pytest.raises(ValueError, match="batch_size"):
        T.train_ensemble(jax.random.key(2), init, st, h, act, steps=10, tokens=toks, batch_size=51)
    with pytest.raises(ValueError, match="steps"):
        T.train_ensemble(jax.random.key(2), init, st, h, act, steps=0)
    for lr in (float("inf"), 0.0):
        with pytest.raises(ValueError, match="learning_rate"):
            T.train_ensemble(jax.random.key(2), init, st, h, act, steps=10, learning_rate=lr)
    with pytest.raises(ValueError, match="start"):
        T.init_ensemble(jax.random.key(1), 3, L, V, h, act, start="zero")
    with pytest.raises(ValueError, match="n_seeds"):
        T.init_ensemble(jax.random.key(1), 0, L, V, h, act)
