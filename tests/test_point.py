"""A phase-diagram point is its registry of methods (copyjax.point): a method added to the
registry gets its CSV columns, JSON keys, report text and figure layer with no other edit, and
the worked example of docs/phase_diagram.md (copyjax.point.exact_map) runs."""
import json
import os

import jax
import numpy as np
import pytest

from copyjax import point as PT
from copyjax.point.base import Method

OFF = {"L": 4, "V": 3, "chains": 0, "steps": 20, "step_size": None, "batch": 0, "adam_seeds": 0,
       "adam_steps": 20, "op_chains": 0, "op_draws": 10, "exact_chains": 0, "exact_steps": 60,
       "exact_warmup": 20, "sgld_starts": ["prior"], "adam_lr": 2e-2, "adam_rtol": 1e-3, "beta": 1.0,
       "sigma_w2": 1.0, "sigma_g2": {"softmax": 1.0, "linear": 0.25}, "seed": 0, "test_P": 50}


class Count(Method):
    """A toy method: the number of training sequences the statistics hold, read back from them."""

    name, prefix, config, csv_columns = "count", "count", {"count_on": False}, ("count_P",)

    def enabled(self, ctx):
        return ctx.cfg["count_on"]

    def run(self, ctx):
        from copyjax.data import stats_size

        n = float(stats_size(ctx.stats))
        return {"P": n}, {"P": np.array([n])}

    def to_json(self, r):
        return {"count": r}

    def from_json(self, d):
        return d.get("count")

    def csv_cells(self, p):
        return {"count_P": p.count["P"]}

    def report(self, p):
        return f"count {p.count['P']:.0f}"


@pytest.fixture(scope="module")
def point_with_both():
    jax.config.update("jax_enable_x64", True)
    mp = pytest.MonkeyPatch()
    mp.setattr(PT, "METHODS", PT.METHODS + (Count(),))
    p, arrays = PT.run_point(OFF | {"count_on": True, "exact_map_steps": 300}, "softmax", 120, 0)
    yield p, arrays
    mp.undo()


def test_a_registered_method_reaches_every_output(point_with_both):
    p, arrays = point_with_both
    assert p.count == {"P": 120.0} and arrays["count_P"].tolist() == [120.0]
    row = dict(zip(PT.csv_columns(), PT.csv_row(p)))
    assert row["count_P"] == 120.0 and PT.csv_columns()[-2:] == ("count_P", "wall_s")
    assert "count 120" in PT.point_line(p) and set(p.wall_s_by_part) == set(PT.method_names())
    back = PT.Point.from_json(json.loads(json.dumps(p.to_json())))
    assert back.count == p.count and back.exact_map == p.exact_map
    # methods that did not run: no JSON keys, empty cells, None attributes
    assert p.exact is None and "exact" not in p.to_json() and row["exact_cG"] == ""


def test_the_worked_example_finds_the_exact_map(point_with_both):
    """copyjax.point.exact_map (docs/phase_diagram.md): at L = 4 there is one basin, so both
    starts end at the same a_G, and Adam's end point is a maximum of log p(G | data): the
    gradient there is small against its size at the start."""
    from copyjax.action import marginal_logdensity
    import copyjax as cj

    p, arrays = point_with_both
    r = p.exact_map
    assert abs(r.cG[0] - r.cG[1]) < 1e-3 and r.logp[r.best] == max(r.logp)
    row = dict(zip(PT.csv_columns(), PT.csv_row(p)))
    assert row["exact_map_basins"] == 1 and row["exact_map_cG"] == r.cG[r.best]
    h = cj.default_hyper("softmax", 4)
    ctx = PT.Context(PT.defaults() | OFF, "softmax", 120, 0)
    grad = jax.grad(lambda g: marginal_logdensity(g, ctx.stats.astype(np.float64), h, "softmax"))
    at_map = float(np.abs(grad(arrays["exact_map_G"][r.best])).max())
    at_zero = float(np.abs(grad(np.zeros((4, 4)))).max())
    assert at_map < 1e-3 * at_zero, (at_map, at_zero)


def test_the_figures_draw_every_layer(point_with_both, tmp_path):
    import copyjax as cj
    from copyjax.point import figures as figs

    p, arrays = point_with_both
    h = cj.default_hyper("softmax", 4)
    fine = np.geomspace(60, 240, 5)
    th = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in cj.theory_curve(fine, 4, 3, "softmax", h).items()}
    res = {"activations": ["softmax"], "config": OFF, "theory": {"softmax": th}, "points": [p],
           "transitions": {"softmax": cj.transition_points(4, 3, "softmax", h).as_dict()}}
    paths = figs.figures(res, {("softmax", 120): arrays}, str(tmp_path))
    names = sorted(os.path.basename(x) for x in paths if x.endswith(".png"))
    assert names == ["loss.png", "order_parameters.png"]  # no SGLD, Adam or exact chains ran


def test_the_llc_column_at_each_phase_minimum():
    """copyjax.point.llc_column (``--llc-steps``): at L = 4 one phase; its lambda_hat at gamma =
    100 is mostly W block (docs/llc.md: within 1 % for softmax at L = 16-32; measured 5 % here,
    0.227 of 0.239), so the closed-form W block at the saved w* (``llc.regular_w_llc``, nbeta =
    P / log P) must match it within 10 %; a wrong nbeta (P instead of P / log P) moves the
    closed form by a factor ~log P and fails. The
    value reaches the CSV row and survives the JSON round trip."""
    import jax.numpy as jnp

    from copyjax import llc

    jax.config.update("jax_enable_x64", True)
    p, arrays = PT.run_point(OFF | {"llc_steps": 600}, "softmax", 120, 0)
    r = p.llc
    assert r.nbeta == pytest.approx(120 / np.log(120)) and r.gamma == 100.0
    (phase, v), = r.phases.items()
    assert phase in ("pooling", "copy") and v["rhat"] < 1.05 and v["left_phase"] == 0.0
    ctx = PT.Context(PT.defaults() | OFF, "softmax", 120, 0)
    st = ctx.stats.astype(jnp.float64)
    W, G = arrays[f"llc_W_{phase}"], arrays[f"llc_G_{phase}"]
    w_block = float(llc.regular_w_llc(G, st, W, r.nbeta, r.gamma, "softmax"))
    assert abs(w_block - v["llc"]) < 0.1 * v["llc"], (w_block, v)
    assert v["loss_star"] == pytest.approx(float(llc.mean_loss(W, G, st, "softmax")))
    row = dict(zip(PT.csv_columns(), PT.csv_row(p)))
    assert row[f"llc_{phase}"] == v["llc"] and row["llc_copy" if phase == "pooling" else "llc_pooling"] == ""
    assert PT.Point.from_json(json.loads(json.dumps(p.to_json()))).llc == r
    assert f"LLC (gamma 100, nbeta 25): {phase} " in PT.point_line(p)
