"""MBAR against known free energies: umbrella windows on a tilted 1-D double well, sampled
exactly (inverse CDF on a fine grid), so every error is MBAR's own."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from copyjax import mbar

jax.config.update("jax_enable_x64", True)

GRID = np.linspace(-2.5, 2.5, 20001)
U0 = 4.0 * (GRID**2 - 1.0) ** 2 + 0.7 * GRID  # barrier 4 nats, the left well deeper
CENTERS = np.linspace(-1.6, 1.6, 9)
KAPPA = 8.0


def _bias(x, c):
    return 0.5 * KAPPA * (x - c) ** 2


def _exact(u):
    """Free energy -log int exp(-u) and the mass on x > 0, by quadrature on GRID."""
    p = np.exp(-(u - u.min()))
    Z = np.trapezoid(p, GRID)
    return -np.log(Z) + u.min(), np.trapezoid(p * (GRID > 0), GRID) / Z


def _draw(rng, u, n):
    p = np.exp(-(u - u.min()))
    cdf = np.cumsum(p) / p.sum()
    return np.interp(rng.uniform(size=n), cdf, GRID)


def _umbrella(rng, n_per):
    x = np.concatenate([_draw(rng, U0 + _bias(GRID, c), n_per) for c in CENTERS])
    u_kn = np.stack([np.interp(x, GRID, U0) + _bias(x, c) for c in CENTERS])
    return x, u_kn, np.full(len(CENTERS), n_per)


def test_free_energies_of_the_windows_match_quadrature():
    x, u_kn, N_k = _umbrella(np.random.default_rng(0), 400)
    res = mbar.solve(jnp.asarray(u_kn), jnp.asarray(N_k))
    assert float(res.grad_norm) < 1e-8
    exact = np.array([_exact(U0 + _bias(GRID, c))[0] for c in CENTERS])
    f, theta = mbar.covariance(res, u_kn, np.zeros((0, x.size)))
    sd = np.asarray(mbar.difference_sd(theta, 0, jnp.arange(len(CENTERS))))
    err = np.asarray(f) - (exact - exact[0])
    # each f_k - f_0 within 4 of its stated standard deviations (9 states: a 4-sigma miss
    # has probability ~6e-4 under correct errors)
    assert np.all(np.abs(err[1:]) < 4 * sd[1:]), (err, sd)
    assert np.all(sd[1:] < 0.3)


def test_phase_weight_recovered_within_stated_errors_over_repeats():
    """p(x > 0) under the unbiased density from 40 independent umbrella runs: the z-scores
    (estimate - exact) / stated sd have mean ~0 and sd ~1 if the stated errors are right;
    with 40 repeats, |mean z| < 0.6 (1.9 standard errors of a mean of 40 unit normals... plus
    slack for MBAR's O(1/N) bias) and 0.6 < sd(z) < 1.5."""
    _, p_exact = _exact(U0)
    zs = []
    for seed in range(40):
        x, u_kn, N_k = _umbrella(np.random.default_rng(100 + seed), 150)
        res = mbar.solve(jnp.asarray(u_kn), jnp.asarray(N_k))
        u0 = np.interp(x, GRID, U0)
        u_states = np.stack([u0, np.where(x > 0, u0, np.inf)])
        f, theta = mbar.covariance(res, u_kn, u_states)
        K = len(CENTERS)
        logp = float(f[K] - f[K + 1])
        sd = float(mbar.difference_sd(theta, K + 1, K))
        zs.append((np.exp(logp) - p_exact) / (np.exp(logp) * sd))
    zs = np.array(zs)
    assert abs(zs.mean()) < 0.6, zs
    assert 0.6 < zs.std(ddof=1) < 1.5, zs


def test_bad_input_is_a_value_error():
    u = jnp.zeros((2, 5))
    with pytest.raises(ValueError, match="N_k"):
        mbar.solve(u, jnp.array([2, 2]))
    with pytest.raises(ValueError, match="float64"):
        mbar.solve(u.astype(jnp.float32), jnp.array([2, 3]))
    with pytest.raises(ValueError, match=r"N_k must be >= 1 per state"):  # a state with no draws
        mbar.solve(u, jnp.array([0, 5]))
    for bad_u, bad_n in ((u, jnp.array([2, 2, 1])), (u[..., None], jnp.array([2, 3])),  # N_k's or u's shape
                         (u[0], jnp.ones(5, int))):
        with pytest.raises(ValueError, match=r"u_kn must be \(K, N\) and N_k \(K,\)"):
            mbar.solve(bad_u, bad_n)
    assert float(mbar.solve(jnp.asarray(np.arange(10.0).reshape(2, 5)), jnp.array([1, 4])).grad_norm) < 1e-8


def test_subsample_keeps_every_gth_draw_of_a_correlated_series():
    rng = np.random.default_rng(1)
    x = np.zeros(4000)
    for t in range(1, x.size):  # AR(1), phi = 0.9: integrated autocorrelation time 19
        x[t] = 0.9 * x[t - 1] + rng.normal()
    idx = mbar.subsample(x)
    g = x.size / idx.size
    assert 10 < g < 35, g
    assert idx[-1] == x.size - 1 and np.all(np.diff(idx) > 0)


def test_subsample_keeps_a_short_or_constant_series_whole():
    """Under 4 draws, or a series that never moves (no ESS to estimate), every draw is kept."""
    np.testing.assert_array_equal(mbar.subsample(np.array([0.3, 1.2, -0.4])), np.arange(3))
    np.testing.assert_array_equal(mbar.subsample(np.full(100, 2.5)), np.arange(100))
    assert mbar.subsample(np.random.default_rng(6).normal(size=4))[-1] == 3


def test_subsample_reaches_back_to_the_first_draw():
    """White noise (ESS above T) is kept whole, down to its first draw; so is an anti-correlated
    series."""
    idx = mbar.subsample(np.random.default_rng(3).normal(size=1001))  # ESS 1016 >= T: g = 1
    np.testing.assert_array_equal(idx, np.arange(1001))
    # an anti-correlated series (numpyro's one-chain ESS comes out negative, -1038 here) is
    # worth more than independent draws: kept whole, not thinned to its last draw
    alt = (-1.0) ** np.arange(1001) + 0.1 * np.random.default_rng(7).normal(size=1001)
    np.testing.assert_array_equal(mbar.subsample(alt), np.arange(1001))


def test_the_solver_converges_in_few_steps_and_stops_at_once_from_its_solution():
    """The solver's own bookkeeping, which the free energies above cannot see (a slow but
    correct iteration reaches the same f): on the nine windows it converges in a few
    iterations (measured: 5) with its gradient norm under tol, and stopped after one its
    gradient norm is not; started at its solution shifted by a constant (which f0 may carry:
    only differences count) it stops at once with the same f; an f0 of the wrong shape is
    refused, naming the shape it needs; states hundreds of nats apart converge in one step
    (measured: 1; without the self-consistent step 200 iterations did not)."""
    x, u_kn, N_k = _umbrella(np.random.default_rng(0), 400)
    res = mbar.solve(jnp.asarray(u_kn), jnp.asarray(N_k))
    assert 1 <= int(res.iterations) <= 15 and float(res.grad_norm) < 1e-10, (res.iterations, res.grad_norm)
    warm = mbar.solve(jnp.asarray(u_kn), jnp.asarray(N_k), f0=np.asarray(res.f) + 3.0)
    assert int(warm.iterations) == 0
    np.testing.assert_allclose(warm.f, res.f, atol=1e-9)
    with pytest.raises(ValueError, match=r"f0 must be \(9,\), got \(8,\)"):
        mbar.solve(jnp.asarray(u_kn), jnp.asarray(N_k), f0=np.zeros(8))
    # stopped after one iteration it has not converged, and its gradient norm says so
    early = mbar.solve(jnp.asarray(u_kn), jnp.asarray(N_k), max_iter=1)
    assert int(early.iterations) == 1 and float(early.grad_norm) > 1e-6, early.grad_norm
    # twenty states of one shape 0 .. 400 nats apart: from f = 0 the Hessian is near singular
    # (all weight on the lowest state) and the self-consistent step gives the answer at once
    a = np.linspace(0.0, 400.0, 20)
    u = 0.5 * np.random.default_rng(4).normal(size=1000)[None, :] ** 2 + a[:, None]
    far = mbar.solve(jnp.asarray(u), jnp.full(20, 50))
    assert int(far.iterations) <= 2, far.iterations
    np.testing.assert_allclose(far.f, a - a[0], atol=1e-9)


def test_matches_pymbar_where_installed():
    pymbar = pytest.importorskip("pymbar")
    x, u_kn, N_k = _umbrella(np.random.default_rng(2), 200)
    res = mbar.solve(jnp.asarray(u_kn), jnp.asarray(N_k))
    ref = pymbar.MBAR(u_kn, N_k, solver_protocol="robust")
    out = ref.compute_free_energy_differences()
    np.testing.assert_allclose(np.asarray(res.f), out["Delta_f"][0], atol=1e-6)
    f, theta = mbar.covariance(res, u_kn, np.zeros((0, x.size)))
    sd = np.asarray(mbar.difference_sd(theta, 0, jnp.arange(len(CENTERS))))
    np.testing.assert_allclose(sd, out["dDelta_f"][0], rtol=1e-4, atol=1e-8)


def test_overlap_matches_pymbar_and_its_weakest_link_finds_a_gap():
    """The overlap matrix against pymbar's (another code); the weakest link against a brute
    force (thresholds tried in turn, connectivity by breadth-first search): high for the nine
    overlapping windows, below MIN_OVERLAP when the middle windows are dropped (two groups of
    windows that share no draws)."""
    pymbar = pytest.importorskip("pymbar")

    def brute(ov):
        S = np.minimum(ov, ov.T)
        K = len(S)
        for t in sorted(set(S[np.triu_indices(K, 1)].tolist()), reverse=True):
            seen, todo = {0}, [0]
            while todo:
                i = todo.pop()
                for j in np.flatnonzero(S[i] >= t):
                    if int(j) not in seen:
                        seen.add(int(j))
                        todo.append(int(j))
            if len(seen) == K:
                return t
        return 0.0

    rng = np.random.default_rng(5)
    x, u_kn, N_k = _umbrella(rng, 200)
    res = mbar.solve(jnp.asarray(u_kn), jnp.asarray(N_k))
    ov = np.asarray(mbar.overlap(res, u_kn))
    ref = pymbar.MBAR(u_kn, N_k, solver_protocol="robust").compute_overlap()["matrix"]
    np.testing.assert_allclose(ov, ref, atol=1e-10)
    np.testing.assert_allclose(ov.sum(axis=1), 1.0, atol=1e-10)
    w = mbar.weakest_overlap(ov)
    assert w == pytest.approx(brute(ov), abs=1e-15) and w > mbar.MIN_OVERLAP, w

    ends = [0, 1, 7, 8]  # windows at -1.6, -1.2 and 1.2, 1.6: the middle ones gone
    xs = np.concatenate([x[k * 200:(k + 1) * 200] for k in ends])
    u_gap = np.stack([np.interp(xs, GRID, U0) + _bias(xs, CENTERS[k]) for k in ends])
    res = mbar.solve(jnp.asarray(u_gap), jnp.asarray(np.full(4, 200)))
    ov = np.asarray(mbar.overlap(res, u_gap))
    w = mbar.weakest_overlap(ov)
    assert w == pytest.approx(brute(ov), abs=1e-15) and w < mbar.MIN_OVERLAP, w

    # random matrices of 2-7 states, diagonals as small as the rest (an overlap matrix need
    # not have its largest entries there): the same answer as the brute force
    for K in range(2, 8):
        for _ in range(20):
            ov = rng.uniform(size=(K, K))
            assert mbar.weakest_overlap(ov) == pytest.approx(brute(ov), abs=1e-15), ov
    assert mbar.weakest_overlap(np.ones((1, 1))) == 1.0


def test_difference_sd_of_a_covariance_rounding_left_indefinite_is_zero_not_nan():
    """theta[i, i] + theta[j, j] - 2 theta[i, j] a hair below 0 (two states that are one, up
    to rounding): the standard deviation is 0, never NaN."""
    theta = jnp.asarray([[1.0, 1.0 + 1e-12], [1.0 + 1e-12, 1.0]])
    assert float(mbar.difference_sd(theta, 0, 1)) == 0.0
    np.testing.assert_allclose(mbar.difference_sd(jnp.asarray([[4.0, 1.0], [1.0, 2.0]]), 0, 1), 2.0)
