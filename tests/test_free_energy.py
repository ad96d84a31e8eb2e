"""Umbrella sampling + MBAR on the exact posterior of G (copyjax.free_energy)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import exact_posterior as X
from copyjax import free_energy as FE
from copyjax.action import data_action

jax.config.update("jax_enable_x64", True)


def test_copy_coordinate_is_the_copy_logit():
    L = 7
    S = cj.shift_matrix(L, jnp.float64)
    assert float(FE.copy_coordinate(2.5 * S)) == pytest.approx(2.5, rel=1e-12)
    assert float(FE.copy_coordinate(jnp.ones((L, L)))) == pytest.approx(0.0, abs=1e-12)
    G = jax.random.normal(jax.random.key(0), (3, L, L))
    starts = FE.start_positions(jax.random.key(1), jnp.array([-1.0, 0.5, 3.0]), L, cj.default_hyper("softmax", L))
    np.testing.assert_allclose(FE.copy_coordinate(starts), [-1.0, 0.5, 3.0], atol=1e-12)
    assert FE.copy_coordinate(G).shape == (3,)


def test_tempering_the_likelihood_is_the_posterior_on_scaled_counts():
    """beta -> t beta equals the counts C -> t C exactly: what lets MBAR over tempers give
    the free energy at the data size t P on the same sequences."""
    L, V, t = 5, 3, 1.7
    h = cj.default_hyper("softmax", L)
    stats = cj.sampled_stats(jax.random.key(2), 40, L, V).astype(jnp.float64)
    A = cj.attention(jax.random.normal(jax.random.key(3), (L, L), jnp.float64), "softmax")
    a = data_action(A, stats, h._replace(beta=t * h.beta))
    b = data_action(A, t * stats, h)
    assert float(a) == pytest.approx(float(b), rel=1e-12)


def test_landscape_helpers():
    F = np.array([5.0, 1.0, 3.0, 9.0, 4.0, 0.0, 2.0, np.nan, 7.0])
    m = FE.local_minima(F)
    assert m == (1, 5)
    assert FE.barrier_height(F, m) == pytest.approx(9.0 - 1.0)
    assert FE.local_minima(np.array([3.0, 2.9, 3.0, 1.0, 2.0])) == (3,)  # 0.1-nat dip: not a minimum
    assert np.isnan(FE.barrier_height(F, (5,)))
    # a 4-nat dip with 2.3-nat errors (the noisy shoulder of a barrier) is not a minimum
    G = np.array([0.0, 8.0, 320.0, 312.0, 316.0, 200.0, 50.0])
    assert FE.local_minima(G) == (0, 3, 6)
    assert FE.local_minima(G, F_sd=np.full(7, 2.3)) == (0, 6)
    P = np.array([100.0, 200.0, 400.0])
    Ps, err = FE.equal_weight_point(P, np.array([-2.0, -1.0, 1.0]), np.array([0.1, 0.1, 0.1]))
    assert Ps == pytest.approx(np.exp(0.5 * (np.log(200) + np.log(400))))
    assert err > 0
    assert np.isnan(FE.equal_weight_point(P, np.array([-3.0, -2.0, -1.0]), np.ones(3))[0])


def test_landscape_helpers_at_their_edges_and_the_error_of_the_crossing():
    """What the published P* and barriers are read with, at the cases the first test leaves out
    (found by a mutation run over ``free_energy/landscape.py``): minima at the profile's ends,
    a merge that keeps the lower of two minima, the bins' errors scaled by z (not raised to it),
    the barrier between the two lowest of three minima, bin centres, and the crossing's error
    against the delta method done by central differences (another computation of the same
    derivative), in the first and the last interval of unsorted points; an infinite log-odds is
    not a crossing."""
    assert FE.local_minima(np.array([1.0, 3.0, 5.0, 2.0, 0.0])) == (0, 4)  # both ends
    assert FE.local_minima(np.array([0.0, 0.5, 0.3])) == (0,)  # merged: the lower one stays
    assert FE.local_minima(np.array([0.0, 5.0, 4.5, 5.0, 10.0, 1.0])) == (0, 5)  # a merge, then a minimum
    dip = np.array([0.0, 20.0, 8.0, 20.0, 1.0])  # a 12-nat dip: kept with sd 3 (1 + 2 x 4.24 = 9.5 nats)
    assert FE.local_minima(dip, F_sd=np.full(5, 3.0)) == (0, 2, 4)
    assert FE.local_minima(dip, F_sd=np.full(5, 6.0)) == (0, 4)  # not with sd 6 (18 nats)
    F = np.array([3.0, 0.0, 4.0, 6.0, 1.0, 7.0, 2.0, 9.0, 0.5])
    assert FE.barrier_height(F, (1, 4, 8)) == pytest.approx(9.0 - 0.5)  # the two lowest: 1 and 8
    assert FE.barrier_height(F, (1, 4)) == pytest.approx(6.0 - 1.0)
    assert FE.bin_centres(np.array([0.0, 1.0, 3.0, 7.0]), [0, 1, 2]) == [0.5, 2.0, 5.0]

    def crossing(P, r):  # where the interpolated log-odds cross 0 (the first bracket)
        return FE.equal_weight_point(P, r, np.ones_like(r))[0]

    # the first and last interval of unsorted points, an odd interval, log P above twice its
    # neighbour's (the last two found by a second mutation run)
    for P, r, s in ((np.array([400.0, 100.0, 200.0]), np.array([2.5, -0.7, 1.1]), np.array([0.3, 0.2, 0.5])),
                    (np.array([100.0, 150.0, 300.0, 700.0]), np.array([-3.0, -2.0, -0.4, 1.7]),
                     np.array([0.1, 0.2, 0.35, 0.15])),
                    (np.array([100.0, 150.0, 300.0, 700.0]), np.array([-3.0, -0.4, 1.7, 2.0]),
                     np.array([0.1, 0.2, 0.35, 0.15])),
                    (np.array([2.0, 50.0, 80.0]), np.array([-1.2, 0.6, 1.5]), np.array([0.4, 0.3, 0.2]))):
        Ps, err = FE.equal_weight_point(P, r, s)
        grad = np.array([(crossing(P, r + 1e-6 * e) - crossing(P, r - 1e-6 * e)) / 2e-6 for e in np.eye(len(r))])
        assert Ps == pytest.approx(crossing(P, r)) and np.isfinite(Ps)
        assert err == pytest.approx(float(np.sqrt(np.sum((grad * s) ** 2))), rel=1e-6), (err, grad)
    # no crossing, or only at an infinite log-odds (also beyond an odd interval)
    assert np.isnan(FE.equal_weight_point(np.arange(1.0, 5.0), -np.ones(4), np.ones(4))[0])
    for r in (np.array([-1.0, np.inf, np.inf, 3.0]), np.array([-2.0, -1.0, np.inf, 3.0])):
        assert np.isnan(FE.equal_weight_point(np.arange(1.0, 5.0), r, np.ones(4))[0]), r
    # the crossing of 0, not of 1; a log-odds of exactly 0 at a point is the crossing
    one = np.full(3, 0.1)
    assert FE.equal_weight_point(np.array([100.0, 200.0, 400.0]), np.array([-1.0, 0.5, 3.0]), one)[0] == \
        pytest.approx(np.exp(np.log(100.0) + np.log(2.0) / 1.5))
    assert FE.equal_weight_point(np.array([100.0, 200.0, 400.0]), np.array([-1.0, 0.0, 1.0]), one)[0] == \
        pytest.approx(200.0)
    # the top between two candidates, not beyond them; the barrier's slice at an odd minimum
    assert FE.local_minima(np.array([0.0, 1.0, 0.5, 10.0])) == (0,)
    assert FE.barrier_height(np.array([3.0, 0.0, 4.0, 6.0, 9.0, 1.0]), (1, 5)) == pytest.approx(8.0)


def test_bad_arguments_are_value_errors():
    L, V = 4, 3
    h = cj.default_hyper("softmax", L)
    stats = cj.sampled_stats(jax.random.key(0), 20, L, V).astype(jnp.float32)
    k = jax.random.key(1)
    with pytest.raises(ValueError, match="kappa"):
        FE.sample_umbrella(k, stats, h, "softmax", [0.0, 1.0], kappa=0.0, num_steps=50)
    with pytest.raises(ValueError, match="burn_in"):
        FE.sample_umbrella(k, stats, h, "softmax", [0.0, 1.0], kappa=10.0, num_steps=50, burn_in=50)
    with pytest.raises(ValueError, match="t_grid"):
        FE.sample_umbrella(k, stats, h, "softmax", [0.0], kappa=10.0, num_steps=50, temps=(1.0, 1.1),
                           t_grid=(1.0,))
    with pytest.raises(ValueError, match="temps"):
        FE.sample_umbrella(k, stats, h, "softmax", [0.0], kappa=10.0, num_steps=50, temps=(-1.0,))


@pytest.mark.slow
def test_umbrella_mean_equals_plain_chains_where_they_mix(one_device):
    """At L = 6, V = 4, P = 120 (one minimum; plain exact chains mix), the posterior mean of a_G
    recombined from 12 biased windows equals the mean of 16 unbiased adaptive-MALA chains
    within 4 combined standard errors (MBAR's asymptotic error on subsampled draws; the plain
    chains' MCSE from their ESS), and so does the variance, which catches a kappa mismatch
    between sampling and recombination (a bug that once survived the whole suite)."""
    L, V, P = 6, 4, 120
    act = "softmax"
    h = cj.default_hyper(act, L)
    stats = cj.sampled_stats(jax.random.key(5), P, L, V).astype(jnp.float32)
    centers = np.linspace(-0.6, 3.0, 12)
    run = FE.sample_umbrella(jax.random.key(6), stats, h, act, centers, kappa=12.0, num_steps=1500,
                             chains_per_window=2, devices=one_device)
    rec = FE.recombine(run)
    assert float(rec.result.grad_norm) < 1e-8
    pr = FE.profile(rec, run, 0, np.linspace(-0.2, 1.0, 40), 0.3, coordinate="op")
    plain = X.sample_exact_posterior(jax.random.key(7), stats, h, act, n_chains=16, num_steps=1500, thin=5,
                                   devices=one_device)
    s = X.summarize_exact(plain, ("cG",)).cG
    assert s.rhat < 1.05
    se = np.hypot(pr.mean_sd, s.mcse)
    assert abs(pr.mean - s.mean) < 4 * se, (pr.mean, pr.mean_sd, s.mean, s.mcse)
    assert len(pr.minima) == 1

    # The width of the posterior is what a mismatch between the bias the chains sampled and
    # the energies MBAR unbiases with distorts (the mean barely moves: by 0.2-0.7 of its
    # tolerance with kappa doubled or halved). Variance of the plain chains: se = var
    # sqrt(2 / ESS) (Gaussian approximation); MBAR's from its own error propagation.
    def var_z(prof):
        return (prof.var - s.sd ** 2) / np.hypot(prof.var_sd, s.sd ** 2 * np.sqrt(2.0 / s.ess))

    assert abs(var_z(pr)) < 4, (pr.var, pr.var_sd, s.sd ** 2, s.ess)
    # power, measured on this run (seeds fixed): kappa mismatched by 2x either way gives
    # |z| = 11.5 and 11.3 (measured: var 0.0137 / 0.0038 against 0.0071)
    edges = np.linspace(-0.2, 1.0, 40)
    for wrong in (0.5, 2.0):
        bad = FE.profile(FE.recombine(run._replace(kappa=12.0 * wrong)), run, 0, edges, 0.3, coordinate="op")
        assert abs(var_z(bad)) > 4, (wrong, bad.var)


def test_mean_coordinate_and_its_starts():
    L = 6
    h = cj.default_hyper("linear", L)
    U, S = cj.uniform_matrix(L, jnp.float64), cj.shift_matrix(L, jnp.float64)
    G = jax.random.normal(jax.random.key(0), (L, L), jnp.float64)
    c1, cG = cj.order_parameters(G)
    assert float(FE.mean_coordinate(G)) == pytest.approx(float(c1 + cG), rel=1e-12)  # rho = c_1 + c_G
    assert float(FE.copy_coordinate(G)) == pytest.approx(float(cG), rel=1e-12)  # xi = c_G for A = G
    assert float(jnp.sum(U * (S - U))) == pytest.approx(0.0, abs=1e-12)  # the two coordinates are orthogonal
    centers = jnp.array([-0.5, 0.0, 0.7])
    starts = FE.start_positions(jax.random.key(1), centers, L, h, coordinate="mean", copy_start=0.4)
    np.testing.assert_allclose(FE.mean_coordinate(starts), centers, atol=1e-12)
    np.testing.assert_allclose(FE.copy_coordinate(starts), 0.4, atol=1e-12)
    stats = cj.sampled_stats(jax.random.key(0), 20, L, 3).astype(jnp.float32)
    with pytest.raises(ValueError, match="linear"):
        FE.sample_umbrella(jax.random.key(1), stats, cj.default_hyper("softmax", L), "softmax", [0.0],
                           kappa=10.0, num_steps=50, coordinate="mean")
    with pytest.raises(ValueError, match="coordinate"):
        FE.sample_umbrella(jax.random.key(1), stats, h, "linear", [0.0], kappa=10.0, num_steps=50,
                           coordinate="rho")


@pytest.mark.slow
def test_linear_umbrella_on_rho_gives_the_plain_chains_moments(one_device):
    """Linear attention, L = 6, V = 4, P = 150 (above the onset; plain chains mix): windows on
    rho = c_1 + c_G recombined by MBAR give the posterior mean and variance of |rho| of 16
    unbiased chains within 4 combined standard errors (the plain chains' variance error from
    sd^2 sqrt(2 / ESS), a Gaussian approximation)."""
    L, V, P = 6, 4, 150
    act = "linear"
    h = cj.default_hyper(act, L)
    stats = cj.sampled_stats(jax.random.key(8), P, L, V).astype(jnp.float32)
    run = FE.sample_umbrella(jax.random.key(9), stats, h, act, np.linspace(-1.5, 1.5, 11), kappa=8.0,
                             num_steps=1500, chains_per_window=2, coordinate="mean", devices=one_device)
    rec = FE.recombine(run)
    pr = FE.profile(rec, run, 0, np.linspace(0.0, 2.0, 21), 0.0, coordinate="abs_rho", phase="family",
                    mean_of="abs_rho")
    # at L = 6 the copy amplitude is too small to make g = c_1 + L c_G and s = L rho disagree
    # in sign: the opposite family has no draws and weight 0
    assert np.all(rec.family == 1) and pr.weights.tolist() == [0.0, 1.0] and pr.log_ratio == np.inf
    plain = X.sample_exact_posterior(jax.random.key(10), stats, h, act, n_chains=16, num_steps=1500, thin=5,
                                    devices=one_device)
    s = X.summarize_exact(plain, ("cG", "abs_rho")).abs_rho
    assert s.rhat < 1.05
    assert abs(pr.mean - s.mean) < 4 * np.hypot(pr.mean_sd, s.mcse), (pr.mean, pr.mean_sd, s)
    var_plain = s.sd ** 2
    var_se = var_plain * np.sqrt(2.0 / s.ess)
    assert pr.var_sd > 0
    assert abs(pr.var - var_plain) < 4 * np.hypot(pr.var_sd, var_se), (pr.var, pr.var_sd, var_plain, var_se)
    assert pr.weights.sum() == pytest.approx(1.0, abs=1e-9)


@pytest.mark.slow
def test_two_phase_window_at_L20_against_plain_chains_and_the_theory(one_device):
    """Inside a two-phase window at a size where plain chains still cross the barrier:
    softmax, L = 20, V = 32, P = 1742 (the theory's posterior-form equal-mass point), data
    seed 0. The exact posterior has two minima of F(a_G) (pooling near 0.03, copy near 0.39)
    and a barrier of about 4-5 nats; 32 plain adaptive-MALA chains cross it about 40 times in
    5000 steps, so they are an independent exact reference for the phase weights.

    Checks: (1) umbrella + MBAR finds both minima; (2) its log(copy / pooling) equals the
    plain chains' within 4 combined standard errors (MBAR's asymptotic error; the plain
    chains' from the ESS of the phase indicator, 19 here, so their error is itself
    rough to ~20 %); (3) F(a_G) equals the theory's quadrature profile
    (op_posterior.softmax_aG_profile) within 4 of the bin's MBAR error plus 0.5 nat, in every
    bin where the theory's F is below 8 nats. The 0.5 nat is the mean-field theory's own
    error, which at L = 64 is 3 % of the barrier (docs/free_energy.md) and is smaller here.

    Power, measured at these settings and seeds (`python benchmarks/two_phase_small.py --planted
    --chains 32 --steps 5000 --chains-per-window 1`): correct code z = +0.8, F excess -1.1
    nats (excess = max over bins of |F - F_theory| - 4 sd - 0.5; must be < 0); the MBAR
    energies with kappa x 0.5 / x 2 (a mismatch between the bias sampled and the one removed):
    excess +1.2 / +4.9; the posterior of P x 0.97 sequences (a transition shifted by 3 %, or a
    likelihood tempered by 0.97): z = -5.2, excess +4.2, and one minimum."""
    from copyjax import op_posterior as OP
    from copyjax.chains import summarize

    L, V, P = 20, 32, 1742
    h = cj.default_hyper("softmax", L)
    stats = cj.sampled_stats(jax.random.key(0), P, L, V).astype(jnp.float32)
    win = FE.softmax_windows(L)
    pr, _, run = FE.softmax_phase_weights(jax.random.key(2), stats, h, num_steps=900, devices=one_device)
    assert len(pr.minima) == 2, pr.minima_centres
    lo, hi = pr.minima_centres
    assert lo < win.divide < hi

    plain = X.sample_exact_posterior(jax.random.key(1), stats, h, "softmax", n_chains=32, num_steps=5000, thin=5,
                                   devices=one_device)
    phase = (np.asarray(plain.samples.draws["cG"]) >= win.divide).astype(float)
    assert np.abs(np.diff(phase, axis=1)).sum() >= 20  # the plain chains do cross (else no reference)
    s = summarize(phase)
    p, p_se = s.mean, s.mcse
    lr_plain, lr_plain_sd = np.log(p / (1 - p)), p_se / (p * (1 - p))  # delta method
    z = (pr.log_ratio - lr_plain) / np.hypot(pr.log_ratio_sd, lr_plain_sd)
    assert abs(z) < 4, (pr.log_ratio, pr.log_ratio_sd, lr_plain, lr_plain_sd)

    th = OP.softmax_aG_profile(P, L, V, win.edges, win.divide, h)
    Ft = np.asarray(th.F)
    ok = np.isfinite(pr.F) & (Ft < 8)
    assert ok.sum() >= 20
    excess = np.abs(pr.F - Ft)[ok] - 4 * pr.F_sd[ok] - 0.5
    assert excess.max() < 0, (excess.max(), pr.F[ok], Ft[ok])
    # The exact P* (equal mass) as a regression: at the theory's P* the log-odds equal the
    # theory's within 4 MBAR errors. The log-odds move 5.8 nats per 3 % of P here (the
    # planted shift), so this pins the exact P* at L = 20 to about 2 % (4 x 1.0 nats).
    assert abs(pr.log_ratio - th.log_ratio) < 4 * pr.log_ratio_sd, (pr.log_ratio, th.log_ratio)
    # the recombination must use the bias the chains sampled: kappa off by 2x either way fails
    for wrong in (0.5, 2.0):
        bad = FE.profile(FE.recombine(run._replace(kappa=run.kappa * wrong)), run, 0, win.edges, win.divide)
        assert (np.abs(bad.F - Ft)[ok] - 4 * bad.F_sd[ok] - 0.5).max() > 0, wrong


@pytest.mark.slow
def test_scan_reweights_across_P_to_the_plain_chains_on_scaled_counts(one_device):
    """softmax_scan on the data of P0 = 120 sequences (L = 6, V = 4: one minimum, plain chains
    mix) gives, at a P between its sampled tempers, the posterior mean of a_G that plain exact
    chains give on the counts t C (beta -> t beta), within 4 combined standard errors; its
    mean a_G rises with P (more data, more copy). Planted bug, measured on this run: MBAR's
    target energies taken at the neighbouring temper of t_grid (an off-by-one in the temper
    index) puts the reweighted mean at z = -5.4 (and breaks the rise at the first target); the
    correct energies give z = -0.14."""
    L, V, P0 = 6, 4, 120
    h = cj.default_hyper("softmax", L)
    stats = cj.sampled_stats(jax.random.key(5), P0, L, V).astype(jnp.float32)
    sc, rec, run = FE.softmax_scan(jax.random.key(6), stats, h, 60.0, 240.0, temper_spacing=0.35, spacing=0.3,
                                   kappa=40.0, num_steps=600, chains_per_window=2, n_boot=3, devices=one_device)
    assert float(rec.result.grad_norm) < 1e-8
    assert sc.temps.size == 5 and sc.P[0] == pytest.approx(60.0) and sc.P[-1] == pytest.approx(240.0)
    assert np.all(np.diff(sc.mean) > 0), sc.mean
    i = int(np.argmin(np.abs(sc.P - 202.0)))  # t = 2^0.75, between the tempers sqrt(2) and 2
    t = sc.P[i] / P0
    assert not np.any(np.isclose(t, sc.temps))  # a target between sampled tempers: reweighted
    plain = X.sample_exact_posterior(jax.random.key(7), stats * t, h, "softmax", n_chains=16, num_steps=1500,
                                     thin=5, devices=one_device)
    s = X.summarize_exact(plain, ("cG",)).cG
    assert s.rhat < 1.05
    z = (sc.mean[i] - s.mean) / np.hypot(sc.mean_sd[i], s.mcse)
    assert abs(z) < 4, (sc.mean[i], sc.mean_sd[i], s.mean, s.mcse)


@pytest.mark.slow
def test_scan_P_star_agrees_with_per_P_umbrella_runs(one_device):
    """P* of one tempered scan (``softmax_scan``) against an independent estimate on the same
    data: one umbrella run per P on the tempered counts t C (beta -> t beta is the posterior on
    t C), each its own MBAR, their log(copy / pooling) interpolated to 0
    (``equal_weight_point``). L = 16, V = 8, the data of P0 = 373 sequences (the theory's
    posterior-form P*), 300 steps a window. The two agree within 4 combined errors (MBAR's;
    the scan's bootstrap sd where it is larger), which resolves P* to 2.3 % (one combined sd).
    Measured: per-P 375.0 +- 7.6, scan 375.5 +- 4.4 (z = +0.05). Planted: the scan's P axis
    read 10 % high gives 413.0, z = +4.21 (killed); 5 % high, z = +2.16 (below this test's
    resolution)."""
    L, V = 16, 8
    h = cj.default_hyper("softmax", L)
    P0 = 373
    stats = cj.sampled_stats(jax.random.key(11), P0, L, V).astype(jnp.float32)
    grid = np.array([0.9, 1.0, 1.1])
    lr, lr_sd = [], []
    for i, t in enumerate(grid):
        pr, _, _ = FE.softmax_phase_weights(jax.random.key(20 + i), stats * t, h, num_steps=300, devices=one_device)
        lr.append(pr.log_ratio)
        lr_sd.append(pr.log_ratio_sd)
    P_p, err_p = FE.equal_weight_point(grid * P0, np.array(lr), np.array(lr_sd))
    sc, _, _ = FE.softmax_scan(jax.random.key(30), stats, h, grid[0] * P0, grid[-1] * P0, num_steps=300,
                               n_boot=5, devices=one_device)
    err_s = max(sc.P_star_err, sc.P_star_boot_sd if np.isfinite(sc.P_star_boot_sd) else 0.0)
    assert np.isfinite(P_p) and np.isfinite(sc.P_star) and 0 < err_p < 30 and 0 < err_s < 30, (P_p, err_p, sc.P_star, err_s)
    z = (sc.P_star - P_p) / np.hypot(err_s, err_p)
    print(f"per-P {P_p:.1f} +- {err_p:.1f}, scan {sc.P_star:.1f} +- {err_s:.1f}, z {z:+.2f}")
    assert abs(z) < 4, (P_p, err_p, sc.P_star, err_s)


def test_scan_profiles_equal_a_logsumexp_per_bin():
    """The scan's profiles and log-odds (``_scan_profiles``, one NumPy pass over the bins)
    against a logsumexp taken bin by bin with jax (the way they were computed before), on log
    weights spanning 800 nats, bins 1500 nats below the rest (a shift by the row's maximum
    instead of the bin's underflows there), zero-weight samples, empty bins and samples outside
    the edges: equal to 1e-12 in every bin, nan in the same (empty) bins."""
    from jax.scipy.special import logsumexp

    from copyjax.free_energy.scan import _scan_profiles

    rng = np.random.default_rng(0)
    N, n_t = 3000, 5
    edges = np.linspace(-0.02, 0.8, 42)
    op = np.concatenate([rng.uniform(-0.1, 0.5, N - 10), np.full(10, 0.9)])  # bins above 0.5 empty; 10 outside
    data = rng.normal(0, 200, (N, n_t))
    prior = rng.normal(0, 1, N)
    logden = rng.normal(0, 1, N)
    data[:7] = np.inf  # zero weight
    data[(op > 0.0) & (op < 0.06)] += 1500.0  # bins whose weights lie 1500 nats below the others'
    F, lr = _scan_profiles(logden, data, prior, op, edges, 0.158)
    a = -(data + prior[:, None]).T - logden[None, :]
    b = np.digitize(op, edges) - 1
    width = np.diff(edges)
    ref = np.full((n_t, len(width)), np.nan)
    for j in range(len(width)):
        if (b == j).any():
            ref[:, j] = -np.asarray(logsumexp(a[:, b == j], axis=1)) + np.log(width[j])
    ref -= np.nanmin(ref, axis=1, keepdims=True)
    assert np.array_equal(np.isnan(F), np.isnan(ref)) and np.isnan(F[:, -5:]).all()
    np.testing.assert_allclose(F, ref, rtol=1e-12, atol=1e-9)
    copy = op >= 0.158
    lr_ref = np.asarray(logsumexp(a[:, copy], axis=1) - logsumexp(a[:, ~copy], axis=1))
    np.testing.assert_allclose(lr, lr_ref, rtol=1e-12, atol=1e-9)
    _, lr_one = _scan_profiles(logden, data, prior, np.full(N, 0.5), edges, 0.158)
    assert np.isnan(lr_one).all()  # one phase only: no log-odds
