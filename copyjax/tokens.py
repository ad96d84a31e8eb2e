"""Token laws: how the P training sequences are drawn (design doc section 1).

The exact action only needs the pair counts C (``copyjax.data``), so it holds for any law;
what a law changes is how the tokens are sampled and what ``E C`` is:

* ``uniform``: i.i.d. uniform tokens (the design doc's model, the default everywhere).
* ``zipf:S``: i.i.d. tokens with ``p_v ∝ (v + 1)^-S``, v = 0 .. V-1 (S = 0 is uniform).
  ``E C_mn = P [delta_mn diag(p) + (1 - delta_mn) p p^T]``: the data-averaged action still
  depends on A only through the four scalars ``(a, r, g, s)`` (``reduced.sector_action``).
* ``markov:Q``: a sticky first-order Markov chain, ``t_0`` uniform and ``t_l = t_{l-1}`` with
  probability Q, else a fresh uniform token (Q = 0 is uniform). Its marginal is uniform and
  ``P(t_m = a, t_n = b) = Q^|m-n| delta_ab / V + (1 - Q^|m-n|) / V^2``: the current token
  predicts the previous one (they agree with probability Q + (1 - Q) / V), the case a copy
  head competes with. The chain runs along the positions 0 .. L-1 (the cyclic target of
  position 0, t_{L-1}, is only weakly tied to it), so the statistics are not cyclic and the
  four-scalar reduction does not hold: the theory uses the exact action on ``E C``.

A law is a ``TokenLaw`` (hashable, so it can key caches and be a static argument); the
command lines and outputs name it by its ``spec`` string, parsed by ``copyjax.specs`` (without
JAX; the kinds and their parameter checks are listed there). ``zipf:0`` and ``markov:0`` parse
to ``uniform`` (they are that law), so every uniform number is reproduced bit for bit. Each
kind's sampler and moments are a plug-in of ``LAWS`` (one class per law).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from copyjax.specs import TOKEN_LAWS, UNIFORM, TokenLaw, token_law

KINDS = tuple(TOKEN_LAWS)


class Uniform:
    """i.i.d. uniform tokens (``jax.random.randint``: the stream every uniform result was drawn from)."""

    def marginal(self, param, V, dtype):
        return jnp.full((V,), 1.0 / V, dtype)

    def sample(self, key, param, P, L, V):
        return jax.random.randint(key, (P, L), 0, V, dtype=jnp.int32)

    def pair_law(self, param, L, V, dtype):
        eye_L = jnp.eye(L, dtype=dtype)[:, :, None, None]
        p = self.marginal(param, V, dtype)
        return eye_L * jnp.diag(p) + (1 - eye_L) * jnp.outer(p, p)


class Zipf(Uniform):
    """i.i.d. tokens with p_v ∝ (v + 1)^-S."""

    def marginal(self, param, V, dtype):
        w = np.arange(1, V + 1, dtype=np.float64) ** -float(param)
        return jnp.asarray(w / w.sum(), dtype)

    def sample(self, key, param, P, L, V):
        logp = jnp.log(self.marginal(param, V, jnp.float32))
        return jax.random.categorical(key, logp, shape=(P, L)).astype(jnp.int32)


class Markov(Uniform):
    """A sticky chain along the positions: t_0 uniform, t_l = t_{l-1} with probability Q,
    else a fresh uniform token; uniform marginal."""

    def sample(self, key, param, P, L, V):
        k_fresh, k_stay = jax.random.split(key)
        fresh = jax.random.randint(k_fresh, (P, L), 0, V, dtype=jnp.int32)
        stay = jax.random.bernoulli(k_stay, param, (P, L)).at[:, 0].set(False)
        # each position copies the most recent fresh draw at or before it
        last = jax.lax.cummax(jnp.where(stay, 0, jnp.arange(L, dtype=jnp.int32)), axis=1)
        return jnp.take_along_axis(fresh, last, axis=1)

    def pair_law(self, param, L, V, dtype):
        d = np.abs(np.arange(L)[:, None] - np.arange(L)[None, :])
        rho = jnp.asarray(float(param) ** d, dtype)[:, :, None, None]
        return rho * (jnp.eye(V, dtype=dtype) / V) + (1 - rho) * jnp.full((V, V), 1.0 / V**2, dtype)


# kind -> the law's plug-in; the kinds are copyjax.specs.TOKEN_LAWS'
LAWS = {"uniform": Uniform(), "zipf": Zipf(), "markov": Markov()}
if set(LAWS) != set(TOKEN_LAWS):
    raise ImportError(f"copyjax.tokens.LAWS {sorted(LAWS)} and copyjax.specs.TOKEN_LAWS {sorted(TOKEN_LAWS)} differ")


def marginal(law: TokenLaw, V: int, dtype=jnp.float32) -> jax.Array:
    """The law of one token, ``p: (V,)`` (uniform for ``uniform`` and ``markov``)."""
    return LAWS[law.kind].marginal(law.param, V, dtype)


def sample(key, law: TokenLaw, P: int, L: int, V: int) -> jax.Array:
    """P sequences of the law, int32 ``(P, L)``."""
    return LAWS[law.kind].sample(key, law.param, P, L, V)


def pair_law(law: TokenLaw, L: int, V: int, dtype=jnp.float32) -> jax.Array:
    """``E C / P``: the joint law of (t_m, t_n) for every position pair, ``(L, L, V, V)``
    (on the diagonal m = n, ``diag`` of the marginal)."""
    return LAWS[law.kind].pair_law(law.param, L, V, dtype)


__all__ = ["KINDS", "LAWS", "marginal", "pair_law", "sample", "token_law", "TokenLaw", "UNIFORM"]
