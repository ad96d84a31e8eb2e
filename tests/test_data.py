import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj


def brute_counts(tokens, V):
    X = np.eye(V)[np.asarray(tokens)]
    return np.einsum("pma,pnb->mnab", X, X)


@pytest.mark.parametrize("chunk", [1, 7, 1000])
def test_sufficient_stats_equals_one_hot(chunk):
    tokens = cj.sample_tokens(jax.random.key(0), 53, 6, 4)
    C = cj.sufficient_stats(tokens, 4, chunk=chunk)
    chex.assert_shape(C, (6, 6, 4, 4))
    chex.assert_type(C, jnp.int32)
    np.testing.assert_array_equal(np.asarray(C), brute_counts(tokens, 4))


def test_sampled_stats_is_stats_of_streamed_tokens():
    key = jax.random.key(3)
    C = cj.sampled_stats(key, 45, 5, 3, chunk=16)
    toks = cj.streamed_tokens(key, 45, 5, 3, chunk=16)
    chex.assert_shape(toks, (45, 5))
    np.testing.assert_array_equal(np.asarray(C), brute_counts(toks, 3))
    assert int(cj.stats_size(C)) == 45


def test_tokens_and_targets():
    t = cj.sample_tokens(jax.random.key(1), 1000, 8, 5)
    chex.assert_shape(t, (1000, 8))
    chex.assert_type(t, jnp.int32)
    assert int(t.min()) == 0 and int(t.max()) == 4
    y = cj.copy_targets(t)
    np.testing.assert_array_equal(np.asarray(y[:, 1:]), np.asarray(t[:, :-1]))
    np.testing.assert_array_equal(np.asarray(y[:, 0]), np.asarray(t[:, -1]))


def test_expected_stats_matches_sample_average():
    # C / P averages P i.i.d. indicator products; each entry of C is Binomial(P, p)
    # with p = 1/V (diagonal blocks, a = b) or 1/V^2 (off-diagonal blocks), so
    # z = (C - E C) / sqrt(P p (1 - p)) is ~N(0, 1). Fixed seed; |z| < 5 for all 600
    # entries fails with probability ~ 600 * 6e-7 under a correct E C.
    L, V, P = 5, 4, 20000
    C = np.asarray(cj.sampled_stats(jax.random.key(7), P, L, V), float)
    E = np.asarray(cj.expected_stats(P, L, V, jnp.float64))
    p = E / P
    mask = p > 0
    z = (C[mask] - E[mask]) / np.sqrt(P * p[mask] * (1 - p[mask]))
    assert np.max(np.abs(z)) < 5.0
    # the zero entries (a != b on the diagonal blocks) are exactly zero in both
    assert np.all(C[~mask] == 0)
    # a wrong normalisation (e.g. 1/V instead of 1/V^2 off the diagonal) is detected
    bad = E.copy()
    bad[0, 1] *= V
    assert np.max(np.abs(C[0, 1] - bad[0, 1]) / np.sqrt(P * p[0, 1])) > 5


def test_expected_stats_traced_P():
    f = jax.jit(lambda P: cj.expected_stats(P, 4, 3))
    np.testing.assert_allclose(np.asarray(f(10.0)), np.asarray(cj.expected_stats(10.0, 4, 3)))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: cj.sample_tokens(jax.random.key(0), 0, 4, 3), "P"),
        (lambda: cj.sample_tokens(jax.random.key(0), 5, 1, 3), "L"),
        (lambda: cj.sample_tokens(jax.random.key(0), 5, 4, 1), "V"),
        (lambda: cj.sample_tokens(jax.random.key(0), 5.0, 4, 3), "P"),
        (lambda: cj.sample_tokens(jax.random.key(0), 5, True, 3), "L"),
        (lambda: cj.sufficient_stats(jnp.array([[0, 3], [1, 1]]), 3), "tokens"),
        (lambda: cj.sufficient_stats(jnp.array([[0, -1], [1, 1]]), 3), "tokens"),
        (lambda: cj.sufficient_stats(jnp.array([0, 1]), 3), "tokens"),
        (lambda: cj.sufficient_stats(jnp.array([[0.0, 1.0]]), 3), "tokens"),
        (lambda: cj.sufficient_stats(jnp.array([[0, 1]]), 3, chunk=0), "chunk"),
        (lambda: cj.expected_stats(-1.0, 4, 3), "P"),
        (lambda: cj.expected_stats(float("nan"), 4, 3), "P"),
        (lambda: cj.expected_stats(5, 1, 3), "L"),
        (lambda: cj.sampled_stats(jax.random.key(0), 0, 4, 3), "P"),
    ],
)
def test_bad_input_raises(call, name):
    with pytest.raises(ValueError, match=name):
        call()
