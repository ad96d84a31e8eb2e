"""The chain driver (copyjax.chains.run_chains): compilation counts."""
import chex
import jax
import jax.numpy as jnp

import copyjax as cj
from copyjax import chains as C
from copyjax import network as N
from copyjax import samplers as S


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
        s = C.run_chains(jax.random.key(1), spec, init, observe, num_steps=6, thin=2, data=data)
        assert s.draws["w"].shape == (4, 3)
