"""The exact local learning coefficient (copyjax.llc): the W block in closed form against the
regular model's d / 2, and the whole estimand against brute-force NUTS on the joint (W, G)."""
import blackjax
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import llc
from copyjax.chains import summarize
from copyjax.model import stats_contractions

jax.config.update("jax_enable_x64", True)

L, V, P = 4, 3, 200


@pytest.fixture(scope="module")
def problem():
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(3), P, L, V), V).astype(jnp.float64)
    G = jnp.log(4.0 * L) * cj.shift_matrix(L, jnp.float64)  # a copy pattern
    K, B = stats_contractions(cj.attention(G, "softmax"), st)
    W = jnp.linalg.solve(0.5 * (K + K.T), B).T  # least squares given G: the loss's minimum in W
    return st, G, W


@pytest.fixture(scope="module")
def exact(problem):
    st, G, W = problem
    return llc.estimate_llc(jax.random.key(0), st, W, G, "softmax", gamma=1.0, n_chains=8, num_steps=3000,
                            devices=jax.devices()[:1])


def test_w_block_is_the_regular_models_d_over_2(problem):
    """At a frozen pattern and the least-squares W*, the W block is a regular model with
    d = V^2 parameters: lambda_hat = (V/2) tr(b K (b K + gamma)^-1) -> V^2 / 2 as nbeta grows
    (closed form: b = nbeta / (P L) against gamma)."""
    st, G, W = problem
    vals = [float(llc.regular_w_llc(G, st, W, nb, 1.0, "softmax")) for nb in (10.0, 1e3, 1e6)]
    assert vals[0] < vals[1] < vals[2]  # the localisation's share falls as nbeta grows
    assert vals[2] == pytest.approx(V * V / 2, rel=1e-5)
    assert vals[0] < 0.9 * V * V / 2  # at nbeta = 10 gamma = 1 is not negligible
    # a W* off the minimum: pi descends below L_n(w*), the estimate turns negative (the known
    # failure of lambda_hat at a point that is not a local minimum)
    assert float(llc.regular_w_llc(G, st, W + 0.1, 1e6, 1.0, "softmax")) < 0


@pytest.mark.slow
def test_exact_llc_equals_nuts_on_the_joint_posterior(problem, exact):
    """L = 4, V = 3, P = 200, softmax, w* = (least-squares W at a copy pattern, the pattern),
    nbeta = P / log P, gamma = 1: lambda_hat from copyjax.llc (G by adaptive MALA on the
    localised marginal, W in closed form) equals lambda_hat from blackjax NUTS on all 25
    coordinates of (W, G) within 4 combined Monte Carlo standard errors (ESS-based), and so does
    the G-marginal's mean copy order parameter. Measured: lambda_hat 4.818 +- 0.009 (exact) vs
    4.817 +- 0.034 (NUTS). Power (planted in `llc.localised_action`, fresh process): W's
    entropy dropped from the G-marginal (log det with 1/2 instead of V/2) moves the exact mean
    a_G from 0.7239 to 0.7456 (0.0226 against a combined error of 0.0016 here: z = 14) and lambda_hat by
    0.12 (3.3: the a_G check is the one that catches it)."""
    st, G, W = problem
    nb, gamma, ex = llc.default_nbeta(P), 1.0, exact
    assert ex.nbeta == nb and ex.gamma == gamma
    assert ex.rhat < 1.01 and np.all(ex.acceptance > 0.4)

    def logdensity(x):
        return -(nb * llc.mean_loss(x["W"], x["G"], st, "softmax") + 0.5 * gamma * jnp.sum((x["W"] - W) ** 2)
                 + 0.5 * gamma * jnp.sum((x["G"] - G) ** 2))

    x0 = {"W": W, "G": G}
    (state, params), _ = blackjax.window_adaptation(blackjax.nuts, logdensity).run(jax.random.key(1), x0, 1000)
    nuts = blackjax.nuts(logdensity, **params)

    def chain(key):
        def one(s, k):
            s, _ = nuts.step(k, s)
            A = cj.attention(s.position["G"], "softmax")
            return s, (llc.mean_loss(s.position["W"], s.position["G"], st, "softmax"),
                       cj.reported_order_parameters(A, "softmax")["cG"])
        return jax.lax.scan(one, state, jax.random.split(key, 2000))[1]

    loss, aG = (np.asarray(d) for d in jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(2), 4)))
    s = summarize(loss)
    lam_nuts, se_nuts = nb * (s.mean - ex.loss_star), nb * s.mcse
    assert s.rhat < 1.02
    assert abs(ex.llc - lam_nuts) < 4 * np.hypot(ex.llc_se, se_nuts), (ex.llc, ex.llc_se, lam_nuts, se_nuts)
    a, b = summarize(ex.cG), summarize(aG)
    assert abs(a.mean - b.mean) < 4 * np.hypot(a.mcse, b.mcse), (a, b)
    # the W block alone is V^2 / 2 = 4.5 here; G adds a few tenths. Dropping W's
    # entropy would change the G-marginal, and dropping the closed-form variance term
    # V tr(Lam^-1 K) / (2 P L) from E_{W|G} L_n would remove ~4.5.
    assert ex.llc - V * V / 2 > 4 * ex.llc_se and abs(ex.llc - V * V / 2) < 2


def test_sgld_step_size_bias_is_resolved_by_the_exact_value(problem, exact):
    """Full-batch SGLD on the same pi (L = 4): at step 0.03 its lambda_hat is 18 % high (5.69 +-
    0.02 against 4.818 +- 0.009: z ~ 38), at 0.003 3.5 % high (4.98 +- 0.06): the exact value
    resolves SGLD's step-size bias, which shrinks with the step. Tolerances: 4 combined MCSE."""
    st, G, W = problem
    big, small = (llc.sgld_llc(jax.random.key(1), st, W, G, "softmax", gamma=1.0, step_size=eps, n_chains=16,
                               num_steps=6000, devices=jax.devices()[:1]) for eps in (0.03, 0.003))
    assert big.nonfinite == 0 and small.nonfinite == 0
    assert max(big.llc_se, small.llc_se) < 0.05 * exact.llc, (big, small)  # measured 0.02 and 0.06
    assert big.llc - exact.llc > 4 * np.hypot(big.llc_se, exact.llc_se), (big.llc, exact.llc)
    assert abs(small.llc - exact.llc) < abs(big.llc - exact.llc) - 4 * np.hypot(big.llc_se, small.llc_se)


def test_minibatch_sgld_estimates_the_same_llc(problem, exact):
    """SGLD with minibatch gradients (B = 20 of the P = 200 sequences per chain and step, drawn
    with replacement, as devinterp does) targets the same pi: at step 0.003 its lambda_hat
    lies within 4 combined MCSE plus SGLD's own step-size bias at that step (3.5 %, the
    previous test) of the exact value: measured 4.96 +- 0.07 against 4.818 (full batch at that
    step: 4.98). Planted: the batch's loss scaled by nbeta / P instead of nbeta / B (the data
    term 10x too weak) gives 23.0: fails; the data term's sign flipped (nbeta / B - loglik, a
    mutant that lived while the tolerance was in MCSE units alone) gives 2e95 +- 7e94: fails
    the resolution check. Bad input is refused."""
    st, G, W = problem
    tokens = cj.sample_tokens(jax.random.key(3), P, L, V)
    np.testing.assert_array_equal(cj.sufficient_stats(tokens, V).astype(jnp.float64), st)
    mb = llc.sgld_llc(jax.random.key(2), st, W, G, "softmax", gamma=1.0, step_size=0.003, n_chains=16,
                      num_steps=6000, tokens=tokens, batch_size=20, devices=jax.devices()[:1])
    assert mb.nonfinite == 0
    # the comparison's resolution first: a run whose MCSE is large passes any tolerance in MCSE
    # units (measured 0.066, 1.4 % of the value; a sign-flipped minibatch gradient gives 7e94)
    assert mb.llc_se < 0.05 * exact.llc, (mb.llc, mb.llc_se)
    assert abs(mb.llc - exact.llc) < 0.035 * exact.llc + 4 * np.hypot(mb.llc_se, exact.llc_se), (mb.llc, exact.llc)
    with pytest.raises(ValueError, match="tokens"):
        llc.sgld_llc(jax.random.key(2), st, W, G, "softmax", step_size=0.003, num_steps=10, batch_size=20)
    with pytest.raises(ValueError, match="batch_size"):
        llc.sgld_llc(jax.random.key(2), st, W, G, "softmax", step_size=0.003, num_steps=10, tokens=tokens,
                     batch_size=P + 1)
    with pytest.raises(ValueError, match="tokens without batch_size"):
        llc.sgld_llc(jax.random.key(2), st, W, G, "softmax", step_size=0.003, num_steps=10, tokens=tokens)
    with pytest.raises(ValueError, match="tokens must have shape"):
        llc.sgld_llc(jax.random.key(2), st, W, G, "softmax", step_size=0.003, num_steps=10, tokens=tokens[:10],
                     batch_size=5)


def test_linear_copy_phase_is_regular_up_to_its_scale_symmetry():
    """Theory (docs/llc.md): linear attention realises the copy task exactly at A = G = S, W = I
    (L_n = 0), and the model is the Kronecker product f = G (x) W, whose only degeneracy at a
    full-rank point is the scale (G, W) -> (c G, W / c): so the learning coefficient there is
    (L^2 + V^2 - 1) / 2. At L = 3, V = 4 that is 12, against 12.5 without the symmetry; nbeta =
    1e5, gamma = 1e-2 make the localisation negligible. Measured 12.00 +- 0.03; the tolerance is
    4 MCSE, and 12.5 must lie outside it (the test tells the two apart)."""
    L_, V_ = 3, 4
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(3), 2000, L_, V_), V_).astype(jnp.float64)
    W, G = jnp.eye(V_), cj.shift_matrix(L_, jnp.float64)
    assert float(llc.mean_loss(W, G, st, "linear")) == pytest.approx(0.0, abs=1e-12)
    r = llc.estimate_llc(jax.random.key(0), st, W, G, "linear", nbeta=1e5, gamma=1e-2, n_chains=8, num_steps=3000,
                         devices=jax.devices()[:1])
    lam = (L_ ** 2 + V_ ** 2 - 1) / 2
    assert abs(r.llc - lam) < 4 * r.llc_se and abs(r.llc - (lam + 0.5)) > 4 * r.llc_se, (r.llc, r.llc_se)


def test_bad_input_is_a_value_error(problem):
    st, G, W = problem
    with pytest.raises(ValueError, match="gamma"):
        llc.estimate_llc(jax.random.key(0), st, W, G, "softmax", gamma=0.0, num_steps=10)
    with pytest.raises(ValueError, match="nbeta"):
        llc.estimate_llc(jax.random.key(0), st, W, G, "softmax", nbeta=-1.0, num_steps=10)
    with pytest.raises(ValueError, match="W_star"):
        llc.estimate_llc(jax.random.key(0), st, W[:2], G, "softmax", num_steps=10)
    with pytest.raises(ValueError, match="G_star"):
        llc.estimate_llc(jax.random.key(0), st, W, G[:3, :3], "softmax", num_steps=10)
    with pytest.raises(ValueError, match="P must be > 1"):
        llc.default_nbeta(1)
    # the floors: two chains (an R-hat), two steps (a draw after the default burn-in of a third)
    with pytest.raises(ValueError, match="num_steps must be an integer >= 2"):
        llc.estimate_llc(jax.random.key(0), st, W, G, "softmax", num_steps=1)
    with pytest.raises(ValueError, match="n_chains must be an integer >= 2"):
        llc.sgld_llc(jax.random.key(0), st, W, G, "softmax", step_size=1e-3, n_chains=1, num_steps=10)
    # the default nbeta is P / log P of the whole data (not floored, not devinterp's B / log B)
    assert llc.default_nbeta(200) == 200 / np.log(200) and llc.default_nbeta(2.5) == 2.5 / np.log(2.5)


@pytest.mark.parametrize("mask", ["causal", "window:2"])
def test_the_localised_action_under_a_mask_integrates_w_exactly(mask):
    """Under a mask the W-integrated action S_loc(G) and E_{W|G}[L_n] are the integrals over W of
    the per-sequence network loss on the mask's loss rows (``network.sequence_loglik``, one-hot
    forward pass: another code path than the statistics' contractions): W's Gaussian integral
    by its autodiff Hessian and mode (exact for a quadratic), compared between two patterns
    (S_loc is defined up to a G-independent constant) to 1e-8 relative. The loss of w* is the
    mean network loss there, and the phase split is the mask's divide."""
    from copyjax import masks
    from copyjax.network import Params, sequence_loglik

    m = masks.get(mask)
    tok = cj.sample_tokens(jax.random.key(5), 60, L, V)
    st = cj.sufficient_stats(tok, V).astype(jnp.float64)
    unit = cj.Hyper(1.0, 1.0, 1.0)
    nbeta, gamma = 30.0, 2.0
    W_star = jnp.eye(V, dtype=jnp.float64) + 0.1
    G_star = 1.5 * m.copy_pattern(L, jnp.float64)

    def mean_loss(W, G):  # the mean over sequences of the loss on the loss rows
        return -jnp.mean(jax.vmap(lambda t: sequence_loglik(Params(W, G), t, unit, "softmax", mask))(tok))

    def brute(G):  # -log of the integral over W of exp(-nbeta L_n - gamma/2 |W - W*|^2), and E_W[L_n]
        f = lambda w: nbeta * mean_loss(w.reshape(V, V), G) + 0.5 * gamma * jnp.sum((w.reshape(V, V) - W_star) ** 2)
        H = jax.hessian(f)(jnp.zeros(V * V))
        w_hat = -jnp.linalg.solve(H, jax.grad(f)(jnp.zeros(V * V)))
        cov = jnp.linalg.inv(H)
        # L_n is quadratic in W: E[L_n] = L_n(mean) + tr(Hess(L_n) cov) / 2
        HL = jax.hessian(lambda w: mean_loss(w.reshape(V, V), G))(w_hat)
        return f(w_hat) + 0.5 * jnp.linalg.slogdet(H)[1], mean_loss(w_hat.reshape(V, V), G) + 0.5 * jnp.trace(HL @ cov)

    G1 = G_star + 0.3 * jax.random.normal(jax.random.key(6), (L, L), jnp.float64)
    G2 = 0.2 * jax.random.normal(jax.random.key(7), (L, L), jnp.float64)
    S = lambda G: llc.localised_action(G, st, W_star, G_star, nbeta, gamma, "softmax", mask)
    (b1, e1), (b2, e2) = brute(G1), brute(G2)
    loc = lambda G: 0.5 * gamma * jnp.sum((G - G_star) ** 2)
    np.testing.assert_allclose(float(S(G1) - S(G2)), float(b1 + loc(G1) - b2 - loc(G2)), rtol=1e-8)
    for G, e in ((G1, e1), (G2, e2)):
        np.testing.assert_allclose(float(llc.expected_loss_given_G(G, st, W_star, nbeta, gamma, "softmax", mask)),
                                   float(e), rtol=1e-8)
    np.testing.assert_allclose(float(llc.mean_loss(W_star, G_star, st, "softmax", mask)),
                               float(mean_loss(W_star, G_star)), rtol=1e-10)
    cG_star = float(m.order(m.attention(G_star, "softmax"), "softmax")["cG"])
    assert llc.phase_of(cG_star, 0.0, "softmax", L, mask) == ("copy" if cG_star >= m.divide(L) else "pooling")


def test_phase_labels_at_their_edges():
    """``llc.phase_of``: softmax a_G against the mask's divide (``Mask.divide``, at it: copy),
    linear |rho| against 0.1 (at it: above the onset); arrays give arrays of labels."""
    from copyjax import masks

    d = masks.get("full").divide(L)
    got = llc.phase_of(np.array([d - 1e-9, d, d + 0.1]), None, "softmax", L)
    assert got.tolist() == ["pooling", "copy", "copy"]
    got = llc.phase_of(None, np.array([0.0, 0.0999, 0.1, 0.5]), "linear", L)
    assert got.tolist() == ["below_onset", "below_onset", "above_onset", "above_onset"]
    assert llc.phase_of(None, 0.3, "linear", L) == "above_onset"


def test_sgld_llc_reports_a_value_from_two_chains(problem):
    """Two finite chains are enough for lambda_hat and its MCSE (the split R-hat needs two):
    ``sgld_llc`` with ``n_chains=2`` gives finite numbers, not the nan of a run without them."""
    st, G, W = problem
    r = llc.sgld_llc(jax.random.key(4), st, W, G, "softmax", gamma=1.0, step_size=0.003, n_chains=2,
                     num_steps=90, devices=jax.devices()[:1])
    assert r.nonfinite == 0 and np.isfinite(r.llc) and np.isfinite(r.llc_se) and r.llc_se > 0, r


def test_left_phase_is_the_fraction_of_draws_off_w_stars_phase(problem, exact):
    """``LLCResult.left_phase``: the fraction of the draws whose a_G lies in another phase than
    w*'s (a copy pattern here: the draws below the full mask's divide), recomputed from the
    result's own c_G draws; 0 here (gamma = 1 keeps the chains in the copy basin), and between 0
    and 1 where a weak localisation lets them leave it (a phase compared by ``>=`` instead of
    ``==``, a mutant that lived, counts the pooling draws as home: 0)."""
    from copyjax import masks

    cG = np.asarray(exact.cG)
    assert cG.shape == exact.loss.shape
    want = float(np.mean(cG < masks.get("full").divide(L)))
    assert exact.left_phase == pytest.approx(want, abs=1e-12) and want < 0.05, (exact.left_phase, want)
    # a weak localisation (gamma 1e-3) and a hot posterior (nbeta 1) let the chains wander off
    # the copy basin: the fraction is then well inside (0, 1), still the draws' own
    st, G, W = problem
    loose = llc.estimate_llc(jax.random.key(5), st, W, G, "softmax", nbeta=1.0, gamma=1e-3, n_chains=4, num_steps=600,
                             devices=jax.devices()[:1])
    want = float(np.mean(np.asarray(loose.cG) < masks.get("full").divide(L)))
    assert loose.left_phase == pytest.approx(want, abs=1e-12) and 0.05 < want < 0.95, (loose.left_phase, want)
