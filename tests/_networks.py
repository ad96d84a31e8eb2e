"""A small network problem shared by the driver and sampler tests."""
import jax
import jax.numpy as jnp

import copyjax as cj
from copyjax import network as N


def small(act="linear", L=6, V=3, P=40, dtype=jnp.float32):
    """(hyper, tokens (P, L), statistics (L, L, V, V), 16 prior draws of the network)."""
    h = cj.default_hyper(act, L)
    toks = cj.sample_tokens(jax.random.key(0), P, L, V)
    st = cj.sufficient_stats(toks, V).astype(dtype)
    init = jax.vmap(lambda k: N.init_params(k, L, V, h, dtype))(jax.random.split(jax.random.key(1), 16))
    return h, toks, st, init
