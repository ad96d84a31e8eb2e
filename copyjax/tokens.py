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
command lines and outputs name it by its ``spec`` string. ``zipf:0`` and ``markov:0`` parse
to ``uniform`` (they are that law), so every uniform number is reproduced bit for bit.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

KINDS = ("uniform", "zipf", "markov")


class TokenLaw(NamedTuple):
    """``kind`` in ``KINDS``; ``param``: the Zipf exponent S (>= 0) or the Markov stay
    probability Q (in [0, 1)); 0 for uniform."""

    kind: str = "uniform"
    param: float = 0.0

    @property
    def spec(self) -> str:
        """The law as written on the command line: ``uniform``, ``zipf:1``, ``markov:0.3``."""
        return "uniform" if self.kind == "uniform" else f"{self.kind}:{self.param:g}"

    @property
    def iid(self) -> bool:
        """Tokens independent across positions (the four-scalar reduction holds)."""
        return self.kind != "markov"


UNIFORM = TokenLaw()


def token_law(spec: "str | TokenLaw | None") -> TokenLaw:
    """Parse ``"uniform" | "zipf:S" | "markov:Q"`` (or pass a ``TokenLaw``, or anything with
    its ``kind`` and ``param``, through; None is uniform). Raises ``ValueError`` naming ``tokens`` and the allowed forms."""
    if spec is None:
        return UNIFORM
    if hasattr(spec, "kind") and hasattr(spec, "param"):  # a TokenLaw, or a script's parsed --tokens
        kind, param = spec.kind, float(spec.param)
    else:
        if not isinstance(spec, str):
            raise ValueError(f"tokens must be 'uniform', 'zipf:S' or 'markov:Q', got {spec!r}")
        kind, _, arg = spec.strip().partition(":")
        if kind == "uniform" and not arg:
            return UNIFORM
        if kind not in KINDS[1:] or not arg:
            raise ValueError(f"tokens must be 'uniform', 'zipf:S' (S >= 0) or 'markov:Q' (0 <= Q < 1), got {spec!r}")
        try:
            param = float(arg)
        except ValueError:
            raise ValueError(f"tokens: the parameter of {kind!r} must be a number, got {arg!r}") from None
    if kind not in KINDS:
        raise ValueError(f"tokens: kind must be one of {KINDS}, got {kind!r}")
    if kind == "zipf" and not (math.isfinite(param) and param >= 0):
        raise ValueError(f"tokens: the Zipf exponent S must be finite and >= 0, got {param}")
    if kind == "markov" and not 0 <= param < 1:
        raise ValueError(f"tokens: the Markov stay probability Q must be in [0, 1), got {param}")
    if kind == "uniform" or param == 0:
        return UNIFORM
    return TokenLaw(kind, param)


def marginal(law: TokenLaw, V: int, dtype=jnp.float32) -> jax.Array:
    """The law of one token, ``p: (V,)`` (uniform for ``uniform`` and ``markov``)."""
    if law.kind == "zipf":
        w = np.arange(1, V + 1, dtype=np.float64) ** -float(law.param)
        return jnp.asarray(w / w.sum(), dtype)
    return jnp.full((V,), 1.0 / V, dtype)


def sample(key, law: TokenLaw, P: int, L: int, V: int) -> jax.Array:
    """P sequences of the law, int32 ``(P, L)``. ``uniform`` is ``jax.random.randint``
    (the stream every uniform result was drawn from)."""
    if law.kind == "uniform":
        return jax.random.randint(key, (P, L), 0, V, dtype=jnp.int32)
    if law.kind == "zipf":
        logp = jnp.log(marginal(law, V, jnp.float32))
        return jax.random.categorical(key, logp, shape=(P, L)).astype(jnp.int32)
    k_fresh, k_stay = jax.random.split(key)
    fresh = jax.random.randint(k_fresh, (P, L), 0, V, dtype=jnp.int32)
    stay = jax.random.bernoulli(k_stay, law.param, (P, L)).at[:, 0].set(False)
    # each position copies the most recent fresh draw at or before it
    last = jax.lax.cummax(jnp.where(stay, 0, jnp.arange(L, dtype=jnp.int32)), axis=1)
    return jnp.take_along_axis(fresh, last, axis=1)


def pair_law(law: TokenLaw, L: int, V: int, dtype=jnp.float32) -> jax.Array:
    """``E C / P``: the joint law of (t_m, t_n) for every position pair, ``(L, L, V, V)``
    (on the diagonal m = n, ``diag`` of the marginal)."""
    eye_L = jnp.eye(L, dtype=dtype)[:, :, None, None]
    p = marginal(law, V, dtype)
    diag = jnp.diag(p)
    if law.kind == "markov":
        d = np.abs(np.arange(L)[:, None] - np.arange(L)[None, :])
        rho = jnp.asarray(float(law.param) ** d, dtype)[:, :, None, None]
        return rho * (jnp.eye(V, dtype=dtype) / V) + (1 - rho) * jnp.full((V, V), 1.0 / V**2, dtype)
    return eye_L * diag + (1 - eye_L) * jnp.outer(p, p)


__all__ = ["KINDS", "marginal", "pair_law", "sample", "token_law", "TokenLaw", "UNIFORM"]
