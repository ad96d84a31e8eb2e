"""Statistics in any dtype give the same answer: integer pair counts (what
``sufficient_stats`` returns) and the same counts as float64 give the same draws, bit for bit,
from every sampler and summary of G, and the README's exact-posterior example prints the same
a_G for both. Planted: with the pattern formed in the counts' integer dtype (G truncated to
integers, the bug this guards) the README's a_G is 0.127 on int32 against 0.455."""
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import action, chains, exact_posterior, free_energy, llc, local_weights, network, samplers, training
from copyjax.data import compute_dtype, float_stats

ROOT = Path(__file__).resolve().parent.parent
L, V, P = 4, 3, 60


@pytest.fixture(scope="module")
def counts():
    C = cj.sufficient_stats(cj.sample_tokens(jax.random.key(0), P, L, V), V)
    assert C.dtype == jnp.int32
    return C, C.astype(jnp.float64)


def _same(a, b):
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_float_stats_casts_integers_to_the_default_float_and_refuses_other_types(counts):
    C, Cf = counts
    assert float_stats(C).dtype == jnp.float64 and compute_dtype(C) == jnp.float64  # x64 on in the tests
    assert float_stats(Cf.astype(jnp.float32)).dtype == jnp.float32  # floats keep their width
    with pytest.raises(TypeError, match="stats"):
        float_stats(Cf.astype(jnp.complex64))


@pytest.mark.parametrize("activation", ["softmax", "linear"])
def test_density_and_observer_are_the_same_on_integer_counts(counts, activation):
    C, Cf = counts
    h = cj.default_hyper(activation, L)
    G = 0.7 * jax.random.normal(jax.random.key(1), (L, L))  # non-integer entries: truncation would show
    for C_ in (C, Cf):
        assert np.isfinite(float(action.marginal_logdensity(G, C_, h, activation)))
    assert action.marginal_logdensity(G, C, h, activation) == action.marginal_logdensity(G, Cf, h, activation)
    obs = exact_posterior.ExactObserver(h, activation)
    _same(obs(G, {"stats": C}), obs(G, {"stats": Cf}))
    um = free_energy.UmbrellaObserver(h, activation, (1.0,))
    _same(um(G, {"stats": C}), um(G, {"stats": Cf}))


@pytest.mark.parametrize("activation,mask", [("softmax", "full"), ("softmax", "causal")])
@pytest.mark.slow
def test_exact_posterior_draws_are_the_same_on_integer_counts(counts, activation, mask, one_device):
    C, Cf = counts
    h = cj.default_hyper(activation, L)
    runs = [exact_posterior.sample_exact_posterior(jax.random.key(2), C_, h, activation, n_chains=4, num_steps=60,
                                                   warmup_steps=5, devices=one_device, mask=mask) for C_ in (C, Cf)]
    _same(runs[0].samples.draws, runs[1].samples.draws)
    a, b = (exact_posterior.summarize_exact(r, keys=("cG", "loss")) for r in runs)
    assert a.cG.mean == b.cG.mean and a.loss.mean == b.loss.mean


@pytest.mark.slow
def test_umbrella_llc_laplace_and_network_chains_are_the_same_on_integer_counts(counts, one_device):
    C, Cf = counts
    h = cj.default_hyper("softmax", L)
    um = [free_energy.sample_umbrella(jax.random.key(3), C_, h, "softmax", [1.0, 2.0], kappa=50.0, num_steps=40,
                                      devices=one_device) for C_ in (C, Cf)]
    _same((um[0].xi, um[0].op, um[0].data), (um[1].xi, um[1].op, um[1].data))
    W0, G0 = jnp.zeros((V, V)), 0.3 * jnp.ones((L, L))
    ll = [llc.estimate_llc(jax.random.key(4), C_, W0, G0, "softmax", n_chains=2, num_steps=30, devices=one_device)
          for C_ in (C, Cf)]
    assert ll[0].llc == ll[1].llc and ll[0].loss_star == ll[1].loss_star
    la = [local_weights.laplace_log_mass(G0, C_, h, "softmax", max_steps=50) for C_ in (C, Cf)]
    assert la[0].log_mass == la[1].log_mass
    init = training.init_ensemble(jax.random.key(5), 4, L, V, h, "softmax")
    net = [chains.run_chains(jax.random.key(6), samplers.NetworkSampler(h, "softmax"), init,
                             network.Observer(h, "softmax"), {"stats": C_, "step_size": 1e-3},
                             schedule=chains.Schedule(20, 10, 1), layout=chains.Layout(devices=one_device))
           for C_ in (C, Cf)]
    _same(net[0].draws, net[1].draws)


def _readme_blocks():
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)```", text, re.S)


@pytest.mark.slow
def test_readme_exact_posterior_example_prints_the_same_a_G_on_integer_and_float_counts(capsys):
    # the README's first block (it builds C with sufficient_stats: int32) and its exact-posterior
    # block, run as written, then again with C as float64; the printed a_G is the README's
    first, exact = _readme_blocks()[0], next(b for b in _readme_blocks() if "sample_exact_posterior" in b)
    printed = re.search(r"print\(.*\)\s*#\s*([0-9.]+)", exact)
    assert printed, "the README's exact-posterior example prints its a_G, with the value in a comment"
    out = {}
    for cast in ("", "C = C.astype('float64')\n"):
        ns = {}
        exec(first + cast + exact, ns)
        out[cast] = ns["s"].cG.mean
        assert ns["C"].dtype == (jnp.int32 if not cast else jnp.float64)
    capsys.readouterr()
    assert out[""] == out["C = C.astype('float64')\n"], out
    assert f"{out['']:.3f}" == printed.group(1), (out, printed.group(1))
