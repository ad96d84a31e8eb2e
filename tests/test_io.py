"""ArviZ output (copyjax.io): chains -> InferenceData -> netCDF -> read back."""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)  # arviz 0.x announces its 1.x refactor
    az = pytest.importorskip("arviz")

import copyjax as cj  # noqa: E402
from copyjax import chains as C  # noqa: E402
from copyjax import io  # noqa: E402
from copyjax import network as N  # noqa: E402
from copyjax import samplers as S  # noqa: E402


def test_arviz_round_trip(tmp_path):
    L, V, act = 4, 3, "softmax"
    h = cj.default_hyper(act, L)
    st = cj.sufficient_stats(cj.sample_tokens(jax.random.key(0), 20, L, V), V)
    init = jax.vmap(lambda k: N.init_params(k, L, V, h, jnp.float64))(jax.random.split(jax.random.key(1), 4))
    s = C.run_algorithm(jax.random.key(2), S.mala(st, h, act, 1e-3), init,
                        lambda p: N.observables(p, st, h, act), schedule=C.Schedule(40, 10, 2))
    data = io.to_inference_data(s, attrs={"P": 20, "L": L, "V": V})
    post = data["posterior"]
    assert set(s.draws) <= set(post.data_vars)
    assert post["cG"].dims == ("chain", "draw") and post["cG"].shape == (4, 15)
    assert data["sample_stats"]["acceptance_rate"].shape == (4, 15)
    back = io.read_netcdf(io.write_netcdf(data, tmp_path / "chains.nc"))
    for k, v in s.draws.items():
        np.testing.assert_array_equal(back["posterior"][k].values, v)
    np.testing.assert_array_equal(back["sample_stats"]["nonfinite"].values[:, 0], s.nonfinite)
    assert back["posterior"].attrs["P"] == 20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        summ = az.summary(back, var_names=["cG", "c1"])
    assert list(summ.index) == ["cG", "c1"] and np.all(np.isfinite(summ["mean"]))
    np.testing.assert_allclose(summ.loc["cG", "mean"], s.draws["cG"].mean(), atol=1e-3)


def test_bad_draws_are_refused():
    with pytest.raises(ValueError, match="chain, draw"):
        io.to_inference_data({"a": np.zeros((2, 3)), "b": np.zeros((2, 4))})
