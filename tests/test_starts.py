"""The two start families (``copyjax.starts``): prior draws of G and the mask's copy pattern."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import masks
from copyjax.starts import copy_G, prior_G


def test_prior_draws_have_the_prior_scale():
    # 12800 entries: the sd's relative sampling error is 1 / sqrt(2 N) = 0.6 %; 3 % is 5 of them
    h = cj.Hyper(1.0, 1.0, 0.3)
    G = np.asarray(prior_G(jax.random.key(0), (200, 8, 8), h, jnp.float64))
    assert G.shape == (200, 8, 8)
    assert abs(G.std() / np.sqrt(0.3) - 1) < 0.03 and abs(G.mean()) < 5 * np.sqrt(0.3 / G.size)


@pytest.mark.parametrize("mask", ["full", "causal", "window:2"])
def test_the_copy_start_copies_on_every_loss_row(mask):
    """Softmax: each loss row of the pattern puts its largest weight on the mask's copy key
    (the previous token), by ``logit`` more than any other allowed key; linear: A = the pattern."""
    m, L = masks.get(mask), 6
    S = np.asarray(m.copy_pattern(L, jnp.float64))
    A = np.asarray(m.attention(copy_G(L, "softmax", 3.0, mask, jnp.float64), "softmax"))
    for row in np.flatnonzero(m.loss_rows(L)):
        ok = m.allowed(L)[row]
        assert A[row].argmax() == S[row].argmax()
        logits = np.log(A[row][ok])
        assert np.isclose(logits.max() - np.sort(logits)[-2], 3.0) if ok.sum() > 1 else True
    np.testing.assert_array_equal(np.asarray(copy_G(L, "linear", 3.0, mask, jnp.float64)), S)
