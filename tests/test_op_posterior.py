"""Sampling the reduced posterior in order-parameter space (copyjax.op_posterior)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import copyjax as cj
from copyjax import chains as C
from copyjax import op_posterior as O
from copyjax import reduced as R
from copyjax import samplers as S


def _sign_fixed(G):
    c1, cG = cj.order_parameters(G)
    s = jnp.where(c1 + cG < 0, -1.0, 1.0)
    return {"c1": s * c1, "cG": s * cG}


@pytest.mark.slow
def test_linear_op_sampler_matches_mala_on_G_at_expected_stats():
    # The 4-d linear density is exact at the expected statistics for any L, so NUTS in
    # (c_1, c_G, log t_row, log t_bulk) must reproduce MALA on all L^2 entries of G with
    # S_P(G; E C). P = 60 at L = 4, V = 3 lies past the onset (posterior form: P_1 = 19).
    L, V, P = 4, 3, 60.0
    h = cj.default_hyper("linear", L)
    op = O.sample_op_posterior(jax.random.key(0), P, L, V, "linear", h, n_chains=128,
                               n_draws=200, n_warmup=100)
    init = 0.3 * jax.random.normal(jax.random.key(1), (256, L, L))
    g = C.run_algorithm(jax.random.key(2), S.mala_marginal(cj.expected_stats(P, L, V), h, "linear", 0.05),
                        init, _sign_fixed, schedule=C.Schedule(4000, 1000, 10))
    for k in ("c1", "cG"):
        a, b = C.summarize(op.draws[k]), C.summarize(g.draws[k])
        assert a.rhat < 1.05 and b.rhat < 1.05, (k, a, b)
        # Means agree within 4 combined Monte Carlo standard errors; sds within 10 %.
        assert abs(a.mean - b.mean) < 4 * np.hypot(a.mcse, b.mcse), (k, a, b)
        assert abs(a.sd - b.sd) < 0.1 * b.sd, (k, a, b)
    assert op.weights.tolist() == [1.0] and op.divergent.sum() == 0


@pytest.mark.slow
def test_softmax_op_sampler_matches_quadrature_of_its_density():
    # In 2-d the density exp(-softmax_posterior_action(m)) can be integrated on a grid:
    # the NUTS mean and variance of a_G must match the quadrature within Monte Carlo error.
    L, V, P = 8, 4, 60.0
    h = cj.default_hyper("softmax", L)
    law = O.sampling_law(L, h, P, n_bulk=32, n_z=128)
    op = O.sample_op_posterior(jax.random.key(3), P, L, V, "softmax", h, n_chains=64,
                               n_draws=150, n_warmup=50, law=law)
    modes, _, covs, _ = O.posterior_modes(P, L, V, "softmax", h, law)
    sd = np.sqrt(np.diag(covs[0]))
    grids = [np.linspace(modes[0][i] - 8 * sd[i], modes[0][i] + 8 * sd[i], 161) for i in range(2)]
    mm = jnp.asarray(np.stack(np.meshgrid(*grids, indexing="ij"), -1).reshape(-1, 2))
    act = jax.vmap(lambda m: R.softmax_posterior_action(m, P, L, V, h, law))(mm)
    aG = jax.vmap(lambda m: R.aG_from_y(R.row_moments(m, law)[2], L))(mm)
    w = np.exp(-(np.asarray(act) - np.min(act)))
    w /= w.sum()
    mean = float(np.sum(w * aG))
    sd_q = float(np.sqrt(np.sum(w * (np.asarray(aG) - mean) ** 2)))
    s = C.summarize(op.draws["cG"])
    assert s.rhat < 1.05
    assert abs(s.mean - mean) < 4 * s.mcse, (s, mean)
    assert abs(s.sd - sd_q) < 0.1 * sd_q, (s, sd_q)
    np.testing.assert_allclose(op.draws["c1"] + op.draws["cG"], 1.0, atol=1e-12)


def test_row_moments_match_autodiff_of_the_cumulant():
    law = O.sampling_law(8, cj.Hyper(), 100.0, n_bulk=16, n_z=64)
    m = jnp.array([-1.3, 2.1])
    Lam, x, y, cnn, cnp, cpp = R.row_moments(m, law)
    f = lambda v: R.row_cumulant(v[0], v[1], law)
    np.testing.assert_allclose(Lam, f(m), rtol=1e-12)
    np.testing.assert_allclose([x, y], jax.grad(f)(m), rtol=1e-10)
    np.testing.assert_allclose([[cnn, cnp], [cnp, cpp]], jax.hessian(f)(m), rtol=1e-8)


@pytest.mark.parametrize("kwargs, name", [
    (dict(P=0.0), "P"), (dict(L=1), "L"), (dict(activation="relu"), "activation"),
    (dict(n_chains=0), "n_chains"), (dict(n_draws=2.5), "n_draws"), (dict(n_warmup=-1), "n_warmup"),
])
def test_op_sampler_rejects_bad_input(kwargs, name):
    args = dict(P=50.0, L=4, V=3, activation="linear") | kwargs
    with pytest.raises(ValueError, match=name):
        O.sample_op_posterior(jax.random.key(0), args.pop("P"), args.pop("L"), args.pop("V"),
                              args.pop("activation"), **args)


def test_softmax_aG_profile_matches_the_laplace_masses_of_its_modes():
    # Two ways to weigh the phases of the same 2-d density: the profile integrates
    # exp(-action) over the multipliers by quadrature and bins the mass by a_G; posterior_modes
    # weighs each mode by its Laplace mass exp(-S_k) det(H_k)^(-1/2). Inside the window at
    # L = 32 (barrier ~20 nats, modes ~10 grid steps wide) they must agree to well under the
    # Laplace approximation's own error, O(1/L) ~ 0.1 nats (measured difference: 0.02), and
    # the profile's minima must sit in the bins of the modes' a_G.
    L, V, P = 32, 32, 2461.0
    h = cj.default_hyper("softmax", L)
    law = O.sampling_law(L, h, P, n_bulk=32, n_z=128)
    modes, _, _, w = O.posterior_modes(P, L, V, "softmax", h, law)
    assert len(modes) == 2
    aG = [float(R.aG_from_y(R.row_moments(jnp.asarray(m), law)[2], L)) for m in modes]
    edges = np.linspace(-0.02, 0.8, 83)
    tp = O.softmax_aG_profile(P, L, V, edges, 0.2, h, law=law)
    assert abs(tp.log_ratio - np.log(w[1] / w[0])) < 0.1, (tp.log_ratio, w)
    assert tp.boundary_gap > 5.0
    assert np.nanmin(tp.F) == 0.0
    from copyjax.free_energy import local_minima
    centres = 0.5 * (edges[1:] + edges[:-1])
    found = centres[list(local_minima(tp.F))]
    assert len(found) == 2
    np.testing.assert_allclose(np.sort(found), np.sort(aG), atol=0.015)


def test_softmax_aG_profile_rejects_bad_edges():
    with pytest.raises(ValueError, match="edges"):
        O.softmax_aG_profile(100.0, 8, 4, [0.3, 0.1], 0.2)
