"""The typed results (copyjax.schema, copyjax.point.Point): JSON round trips in the file layout,
files written before the schema."""
import json
import math

import numpy as np
import pytest

from copyjax import chains as C
from copyjax import schema as SC


def _summary(seed=0):
    x = np.random.default_rng(seed).normal(size=(4, 50))
    return C.summarize(x)


def test_summarize_returns_a_typed_summary():
    s = _summary()
    assert isinstance(s, SC.Summary)
    with pytest.raises(TypeError):  # dict-era name access was removed (CHANGELOG 0.2.0)
        s["mean"]
    # |mean| of 200 standard normal draws: within 5 standard errors (0.35) of 0
    assert abs(s.mean) < 5 / math.sqrt(200) and s.n_chains == 4 and s.n_excluded == 0
    assert SC.Summary.from_json(json.loads(json.dumps(s.to_json()))) == s


def test_point_summary_round_trip_and_sgld_keys():
    s = _summary()
    op = SC.OPStat(**s.to_json(), var=s.sd**2)
    ex = SC.ExactStat(**s.to_json(), prior=s, copy=_summary(1), nested_rhat=1.01, gap=0.1, gap_se=0.05)
    fam = SC.FamilyMeans(4, 0.2, 0.5, 0.3, -10.0)
    none = SC.FamilyMeans(0, None, None, None, None)
    exact = SC.ExactSummary(4, 0, 0, [0.5] * 4, [1e-3] * 4, 0.5, False, SC.SignFamilies(fam, none, False, 0.5), 4,
                            c1=ex, cG=ex, loss=ex)
    th = SC.TheoryForm(SC.TheoryOP(0.4, 0.6, 1.0, loss=0.2), [SC.TheoryOP(0.4, 0.6, 1.0, action=-3.0)], False)
    from copyjax.point import Point

    p = Point("softmax", 100, {
        "theory": SC.TheoryForms(th, th, SC.TheoryOP(0.3, 0.7, 1.0, loss=0.1)),
        "op_nuts": SC.OPSummary([1.0], 0, 0.9, c1=op, cG=op, loss=op), "exact": exact, "free_energy": None,
        "sgld": SC.SGLDRuns(1e-3, {"prior": SC.SGLDSummary(s, s, s, s, s, test_loss=None)}),
        "adam": SC.AdamSummary(2, 4, 0.3, 0.7, 1.0, 0.1, 0.9, 0.12)})
    d = json.loads(json.dumps(p.to_json()))
    # the file layout: SGLD starts as sgld_<start>, the theory minimum under "global", methods
    # that did not run and quantities that do not apply left out
    assert "sgld_prior" in d and "sgld" not in d and "exact_free_energy" not in d and d["step_size"] == 1e-3
    assert d["theory_map"]["global"] == {"c1": 0.4, "cG": 0.6, "abs_rho": 1.0, "loss": 0.2}
    assert "abs_rho" not in d["exact"] and d["exact"]["cG"]["prior"]["n_chains"] == 4
    assert list(d) == ["activation", "P", "theory_map", "theory_posterior", "theory_joint_map",
                       "theory_posterior_sampled", "exact", "step_size", "sgld_prior", "adam_global"]
    back = Point.from_json(d)
    assert back == p
    assert back.exact.cG.copy.mean == p.exact.cG.copy.mean and back.sgld.starts["prior"].test_loss is None
    assert back.free_energy is None and back.theory.joint_map.cG == 0.7
    with pytest.raises(AttributeError, match="methods"):
        back.exact_free_energy  # a JSON key, not a method's name


def test_points_saved_before_the_schema_load():
    # theory_posterior_sampled was written with "mode_weights" and without "acceptance"
    s = _summary().to_json() | {"var": 1.0}
    old = {"c1": s, "cG": s, "loss": s, "mode_weights": [0.3, 0.7], "n_divergent_transitions": 2}
    op = SC.OPSummary.from_json(old)
    assert op.weights == [0.3, 0.7] and op.acceptance is None and op.cG.var == 1.0
