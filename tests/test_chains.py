"""The chain driver (copyjax.chains): keys, devices, blocks, schedules, non-finite chains,
compilation counts, the deprecated flat form."""
import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import chains as C
from copyjax import network as N
from copyjax import samplers as S

from _networks import small


def test_a_sweep_over_P_compiles_once():
    # the claim of run_chains(..., data=...) and NetworkSampler: statistics and step size are
    # arguments of the compiled code, so three values of P (same shapes) trace the sampler's
    # kernel and the observer once: chex.assert_max_traces fails on a second trace
    L, V, act = 4, 3, "softmax"
    h = cj.default_hyper(act, L)
    chex.clear_trace_counter()

    @chex.assert_max_traces(n=1)
    def observe(p, data):
        return {"w": p.W[0, 0]}

    spec = S.NetworkSampler(h, act, "sgld")
    init = jax.vmap(lambda k: N.init_params(k, L, V, h))(jax.random.split(jax.random.key(0), 4))
    for P in (20, 40, 80):
        st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(P), P, L, V), V).astype(jnp.float32)
        data = {"stats": st, "step_size": jnp.float32(1e-3 / P)}
        s = C.run_chains(jax.random.key(1), spec, init, observe, data, schedule=C.Schedule(6, thin=2))
        chex.assert_shape(s.draws["w"], (4, 3))  # (chain, draw)


@pytest.mark.parametrize("act", ["linear", "softmax"])
def test_four_devices_match_one_device(act):
    assert len(jax.devices()) == 4
    h, toks, st, init = small(act)
    obs = lambda p: N.observables(p, st, h, act)
    run = lambda devs: C.run_algorithm(jax.random.key(2), S.sgld(st, h, act, 1e-3), init, obs,
                                       schedule=C.Schedule(60, thin=10), layout=C.Layout(devs, chain_block=4))
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
    one_device = jax.devices()[:1]
    full = C.run_algorithm(jax.random.key(5), alg, init, obs, schedule=C.Schedule(40),
                           layout=C.Layout(one_device, chain_block=1))
    alone = C.run_algorithm(jax.random.key(5), alg, jax.tree.map(lambda x: x[5:6], init), obs,
                            schedule=C.Schedule(40), layout=C.Layout(one_device, chain_ids=[5]))
    np.testing.assert_array_equal(full.draws["g"][5], alone.draws["g"][0])
    again = C.run_algorithm(jax.random.key(5), alg, init, obs, schedule=C.Schedule(40),
                            layout=C.Layout(one_device, chain_block=1))
    np.testing.assert_array_equal(full.draws["g"], again.draws["g"])
    # per-step keys differ: the noise increments of a chain are not repeated
    inc = np.diff(full.draws["g"][0])
    assert len(np.unique(np.round(inc, 7))) == len(inc)
    # and chains started at the same point diverge (different chain keys)
    same = jax.tree.map(lambda x: jnp.repeat(x[:1], 2, 0), init)
    two = C.run_algorithm(jax.random.key(5), alg, same, obs, schedule=C.Schedule(5))
    assert not np.array_equal(two.draws["g"][0], two.draws["g"][1])


def test_nonfinite_chain_is_flagged_and_excluded():
    grad = lambda key, x: jnp.where(x[0] > 5, jnp.nan, -x)
    init = jnp.array([[0.0, 0.0], [6.0, 0.0]])
    s = C.run_algorithm(jax.random.key(0), S.sgld_from_grad(grad, 0.01), init,
                        lambda x: {"x": x[1]}, schedule=C.Schedule(20))
    assert s.nonfinite.tolist() == [False, True]
    summ = C.summarize(s.draws["x"], s.nonfinite)
    assert summ.n_excluded == 1 and np.isfinite(summ.mean)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(schedule=C.Schedule(0)), "num_steps"),
        (dict(schedule=C.Schedule(10, burn_in=10)), "burn_in"),
        (dict(schedule=C.Schedule(10, burn_in=-1)), "burn_in"),
        (dict(schedule=C.Schedule(10, thin=0)), "thin"),
        (dict(schedule=C.Schedule(10, thin=20)), "thin"),
        (dict(schedule=C.Schedule(2.5)), "num_steps"),
        (dict(schedule=C.Schedule(10), layout=C.Layout(chain_block=0)), "chain_block"),
        (dict(schedule=C.Schedule(10), layout=C.Layout(chain_ids=[0, 1, 2])), "chain_ids"),
    ],
)
def test_bad_run_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        C.run_algorithm(jax.random.key(0), S.sgld_from_grad(lambda k, x: -x, 0.1), jnp.zeros((2, 1)),
                        lambda x: {"x": x[0]}, **kwargs)


def test_run_chains_takes_one_form():
    # the flat keywords and plain algorithms of earlier versions were removed (CHANGELOG, 0.2.0):
    # they are refused with the form to use, and run_algorithm is run_chains on Fixed
    h, toks, st, init = small()
    alg = S.sgld(st, h, "linear", 1e-3)
    obs = lambda p: {"g": p.G[0, 1]}
    new = C.run_algorithm(jax.random.key(3), alg, init, obs, schedule=C.Schedule(12, 4, 2),
                          layout=C.Layout(chain_block=2))
    same = C.run_chains(jax.random.key(3), C.Fixed(alg), init, C.PositionObserver(obs), schedule=C.Schedule(12, 4, 2),
                        layout=C.Layout(chain_block=2))
    np.testing.assert_array_equal(new.draws["g"], same.draws["g"])
    with pytest.raises(TypeError, match="run_algorithm"):
        C.run_chains(jax.random.key(3), alg, init, obs, schedule=C.Schedule(12, 4, 2))
    with pytest.raises(TypeError, match="schedule"):
        C.run_chains(jax.random.key(3), C.Fixed(alg), init, C.PositionObserver(obs))
    with pytest.raises(TypeError, match="num_steps"):
        C.run_chains(jax.random.key(3), C.Fixed(alg), init, C.PositionObserver(obs), num_steps=12)


def test_rerunning_a_plain_algorithm_compiles_once():
    # Fixed(alg) and PositionObserver(fn) compare equal when they wrap the same objects, so
    # the driver's compiled step is reused across calls
    h, toks, st, init = small()
    chex.clear_trace_counter()
    obs = chex.assert_max_traces(lambda p: {"g": p.G[0, 1]}, n=1)
    alg = S.sgld(st, h, "linear", 1e-3)
    for seed in range(3):
        C.run_algorithm(jax.random.key(seed), alg, init, obs, schedule=C.Schedule(4))


@pytest.mark.parametrize("shift", [0.0, 0.4])
def test_summarize_diagnostics_equal_arviz(shift):
    """``summarize``'s R-hat (blackjax's rank-normalised split R-hat, jitted) and ESS (numpyro's)
    against ArviZ's rank R-hat and its basic ESS on the same draws (other implementations of the
    same estimators): AR(1) chains, mixed (shift 0) and with one chain moved by 0.4 sd (R-hat well
    above 1). float64 draws; blackjax's R-hat runs in the precision JAX is configured for, so the
    tolerance is float32's (1e-5 relative) where x64 is off."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # arviz 0.x announces its 1.x refactor
        az = pytest.importorskip("arviz")
    rng = np.random.default_rng(3)
    x = np.zeros((4, 300))
    for t in range(1, 300):
        x[:, t] = 0.7 * x[:, t - 1] + rng.normal(size=4)
    x[0] += shift * x.std()
    s = C.summarize(x)
    rtol = 1e-10 if jax.config.jax_enable_x64 else 1e-5
    np.testing.assert_allclose(s.rhat, float(az.rhat(x, method="rank")), rtol=rtol)
    # numpyro's and ArviZ's ESS both truncate Geyer's initial-positive sequence, in different
    # ways: 219.9 against 217.5 on the mixed draws, so 3 %
    np.testing.assert_allclose(s.ess, float(az.ess(x, method="mean")), rtol=0.03)
    assert (s.rhat > 1.02) == (shift > 0), s.rhat
