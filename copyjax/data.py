"""Copy-task data: token sequences (i.i.d. uniform by default; other laws in
``copyjax.tokens``), cyclic copy targets, sufficient statistics.

The statistics ``C[m, n, a, b] = #{mu : t[mu, m] = a, t[mu, n] = b}`` (an L x L x V x V
count tensor) are all the exact posterior over G needs (see ``copyjax.action``). They are
built from pair codes by a scatter-add, never from the P x L x V one-hot tensor, and can
be streamed in chunks of sequences so memory does not grow with P.
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import tokens as token_laws
from copyjax._checks import check_P, check_size, check_tokens, is_concrete

# Sequences per chunk when streaming: a chunk's pair codes take 2 * chunk * L^2 bytes.
DEFAULT_CHUNK = 8192


def sample_tokens(key, P: int, L: int, V: int, tokens=None) -> jax.Array:
    """P token sequences, int32 ``(P, L)`` in ``[0, V)``: i.i.d. uniform, or of the law
    ``tokens`` (``"zipf:S"``, ``"markov:Q"`` or a ``copyjax.tokens.TokenLaw``)."""
    P, L, V = check_size("P", P, 1), check_size("L", L, 2), check_size("V", V, 2)
    return token_laws.sample(key, token_laws.token_law(tokens), P, L, V)


def copy_targets(tokens: jax.Array) -> jax.Array:
    """Cyclic previous-token targets ``y[mu, l] = t[mu, (l - 1) mod L]``. ``(P, L)``."""
    return jnp.roll(tokens, 1, axis=-1)


def one_hot(tokens: jax.Array, V: int, dtype=jnp.float32) -> jax.Array:
    """One-hot ``(P, L, V)``; only for small P (tests, per-sequence paths)."""
    return jax.nn.one_hot(tokens, V, dtype=dtype)


@partial(jax.jit, static_argnames=("V",))
def _chunk_counts(tokens: jax.Array, V: int) -> jax.Array:
    """Counts of one chunk for the position pairs m < n: ``(L(L-1)/2 * V * V,)`` int32.

    Codes are laid out pair-major so consecutive scatter-adds hit the same V*V block
    (cache friendly); C[n, m] = C[m, n]^T and the diagonal blocks come from unigram
    counts, so only the upper triangle is counted.
    """
    P, L = tokens.shape
    m, n = np.triu_indices(L, 1)
    base = (np.arange(len(m), dtype=np.int32) * (V * V))[:, None]
    tt = tokens.T
    code = base + tt[m] * V + tt[n]
    return jnp.zeros(len(m) * V * V, jnp.int32).at[code.reshape(-1)].add(1)


@partial(jax.jit, static_argnames=("V",))
def _unigram_counts(tokens: jax.Array, V: int) -> jax.Array:
    """``(L, V)`` int32 counts of token a at position m."""
    P, L = tokens.shape
    code = jnp.arange(L, dtype=jnp.int32)[None, :] * V + tokens
    return jnp.zeros(L * V, jnp.int32).at[code.reshape(-1)].add(1).reshape(L, V)


@partial(jax.jit, static_argnames=("L", "V"))
def _assemble(pair_counts: jax.Array, unigram: jax.Array, L: int, V: int) -> jax.Array:
    m, n = np.triu_indices(L, 1)
    upper = pair_counts.reshape(len(m), V, V)
    C = jnp.zeros((L, L, V, V), jnp.int32)
    C = C.at[m, n].set(upper).at[n, m].set(jnp.swapaxes(upper, -1, -2))
    diag = unigram[:, :, None] * jnp.eye(V, dtype=jnp.int32)
    return C.at[np.arange(L), np.arange(L)].set(diag)


def _count_chunks(chunks, L: int, V: int) -> jax.Array:
    pairs = jnp.zeros(L * (L - 1) // 2 * V * V, jnp.int32)
    uni = jnp.zeros((L, V), jnp.int32)
    for toks in chunks:
        pairs = pairs + _chunk_counts(toks, V)
        uni = uni + _unigram_counts(toks, V)
    return _assemble(pairs, uni, L, V)


def sufficient_stats(tokens, V: int, chunk: int = DEFAULT_CHUNK) -> jax.Array:
    """Pair counts ``C: (L, L, V, V)`` int32 of ``tokens: (P, L)``.

    Processed ``chunk`` sequences at a time (peak extra memory ~ 2 * chunk * L^2 bytes
    plus the 4 * L^2 * V^2 bytes of the result). Counts are exact while P < 2^31.
    """
    V = check_size("V", V, 2)
    chunk = check_size("chunk", chunk, 1)
    P, L = check_tokens(tokens, V)
    tokens = jnp.asarray(tokens, jnp.int32)
    return _count_chunks((tokens[s : s + chunk] for s in range(0, P, chunk)), L, V)


def sampled_stats(key, P: int, L: int, V: int, chunk: int = DEFAULT_CHUNK,
                  progress: bool = False, tokens=None) -> jax.Array:
    """Statistics of P fresh sequences (of the law ``tokens``, default uniform), generated
    and counted chunk by chunk.

    Chunk ``c`` holds ``sample_tokens(fold_in(key, c), n_c, L, V, tokens)``; the result equals
    ``sufficient_stats`` of those chunks concatenated (see ``streamed_tokens``). Memory is
    bounded by the chunk size, so P = 10^7 at L = 64, V = 32 fits in well under 1 GiB.
    """
    P, L, V = check_size("P", P, 1), check_size("L", L, 2), check_size("V", V, 2)
    chunk = check_size("chunk", chunk, 1)
    law = token_laws.token_law(tokens)
    n_full, rest = divmod(P, chunk)
    sizes = [chunk] * n_full + ([rest] if rest else [])
    it = range(len(sizes))
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc=f"stats P={P}", unit="chunk")
    chunks = (sample_tokens(jax.random.fold_in(key, c), sizes[c], L, V, law) for c in it)
    return _count_chunks(chunks, L, V)


def streamed_tokens(key, P: int, L: int, V: int, chunk: int = DEFAULT_CHUNK, tokens=None) -> jax.Array:
    """The tokens ``sampled_stats(key, P, L, V, chunk, tokens=tokens)`` counts, materialised
    (small P)."""
    P = check_size("P", P, 1)
    law = token_laws.token_law(tokens)
    chunk = check_size("chunk", chunk, 1)
    n_full, rest = divmod(P, chunk)
    sizes = [chunk] * n_full + ([rest] if rest else [])
    return jnp.concatenate(
        [sample_tokens(jax.random.fold_in(key, c), n, L, V, law) for c, n in enumerate(sizes)]
    )


def expected_stats(P, L: int, V: int, dtype=jnp.float32, tokens=None) -> jax.Array:
    """``E C = P [delta_mn I / V + (1 - delta_mn) 1 1^T / V^2]``: ``(L, L, V, V)``; for
    another law ``tokens``, ``P`` times ``copyjax.tokens.pair_law``.

    ``P`` may be a traced scalar (so a sweep over P does not recompile).
    """
    L, V = check_size("L", L, 2), check_size("V", V, 2)
    if is_concrete(P):
        check_P(P)
    law = token_laws.token_law(tokens)
    if law != token_laws.UNIFORM:
        return jnp.asarray(P, dtype) * token_laws.pair_law(law, L, V, dtype)
    eye_L = jnp.eye(L, dtype=dtype)[:, :, None, None]
    diag = jnp.eye(V, dtype=dtype) / V
    off = jnp.full((V, V), 1.0 / V**2, dtype=dtype)
    return jnp.asarray(P, dtype) * (eye_L * diag + (1 - eye_L) * off)


def float_stats(stats) -> jax.Array:
    """``stats`` as floating point: integer (or boolean) counts cast to JAX's default float
    (float64 under x64, else float32), floating statistics returned as they are. Every
    sampler, observer and loss forms the attention pattern in this dtype (``compute_dtype``),
    so integer counts give the same answer as the same counts in floats."""
    stats = jnp.asarray(stats)
    if jnp.issubdtype(stats.dtype, jnp.floating):
        return stats
    if jnp.issubdtype(stats.dtype, jnp.integer) or stats.dtype == jnp.bool_:
        return stats.astype(jax.dtypes.canonicalize_dtype(jnp.float64))
    raise TypeError(f"stats must hold real counts (integer or floating), got dtype {stats.dtype}")


def compute_dtype(stats):
    """The float dtype the O(L^2 V^2) contraction with ``stats`` runs in: the statistics' own
    if floating (float32 statistics: twice the speed of float64), else JAX's default float."""
    dtype = jnp.result_type(stats)
    return dtype if jnp.issubdtype(dtype, jnp.floating) else jax.dtypes.canonicalize_dtype(jnp.float64)


def stats_size(stats) -> jax.Array:
    """Number of sequences P behind ``stats`` (trace of ``C[0, 0]``)."""
    return jnp.trace(stats[0, 0])


def stats_peak_bytes(L: int, V: int, chunk: int = DEFAULT_CHUNK) -> int:
    """Upper estimate of the working memory of ``sampled_stats`` (bytes)."""
    return 4 * chunk * L * (L - 1) + 4 * chunk * L + 4 * L * L * V * V * 3


def point_key(seed: int, P: int) -> jax.Array:
    """The key of a sweep's point at P: ``fold_in(key(seed), P)``. Its fold 0 draws the point's
    training data and fold 1 its chains (the free energy, the LLC, the causal study and the
    benchmarks that share their data), so the same (seed, P) is the same data everywhere."""
    return jax.random.fold_in(jax.random.key(seed), P)


__all__ = ["compute_dtype", "copy_targets", "DEFAULT_CHUNK", "expected_stats", "float_stats", "one_hot", "point_key", "sample_tokens", "sampled_stats",
           "stats_peak_bytes", "stats_size", "streamed_tokens", "sufficient_stats"]
