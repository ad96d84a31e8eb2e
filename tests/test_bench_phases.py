"""copyjax.bench inside a coexistence window: the two-phase reference (phase weights from the
free energy, each phase's statistics from the exact draws, their mixture) and the scores that
use it (the copy phase's weight against the free energy's, each phase's bias)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from copyjax.bench import phases as PH
from copyjax.bench.score import phase_scores, within_phases
from copyjax.schema import Summary

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _two_phase_draws(rng, n_chains, n_draws, w_copy, copy_mean=1.0, pool_mean=0.0, independent=False):
    """Chains that never cross, iid within their phase: allocated to the copy phase by
    ``allocate`` (exactly its share), or, ``independent``, each chain on its own with chance
    ``w_copy`` (what a correct sampler whose chains never cross does: its weight is binomial,
    not the reference's by construction)."""
    copy = rng.random(n_chains) < w_copy if independent else PH.allocate(n_chains, w_copy)
    x = np.where(copy[:, None], rng.normal(copy_mean, 0.1, (n_chains, n_draws)),
                 rng.normal(pool_mean, 0.1, (n_chains, n_draws)))
    return x, copy


def test_phase_summary_mixture_and_allocation():
    """``phase_summary`` of 64 non-crossing chains x 400 iid draws, 30 % in the copy phase
    (N(1, 0.1)) and 70 % in the pooling one (N(0, 0.1); the divide at 0.5 is 5 sd from both): the copy phase's mean is 1 within 4
    of its errors and its error is 0.1 / sqrt(its draws) within 15 % (the ESS of 7600 draws is
    good to a few %); dropping the division by the phase's fraction (the ratio estimator's
    linearisation) makes it 0.3x too small and fails. The mixture of two known parts has the
    law of total variance's sd, and a weight error moves its mean's error by gap x sd(w)."""
    rng = np.random.default_rng(0)
    x, copy = _two_phase_draws(rng, 64, 400, 0.3)
    assert copy.sum() == 19 and all(PH.allocate(64, 0.3)[:k].sum() == np.floor(k * 0.3 + 0.5) for k in range(1, 65))
    s = PH.phase_summary(x, x >= 0.5)
    n_in = int((x >= 0.5).sum())
    assert s.n_chains == 19 and abs(s.mean - 1.0) < 4 * s.mcse
    assert s.mcse == pytest.approx(0.1 / np.sqrt(n_in), rel=0.15)
    assert s.split_rhat < 1.05  # non-crossing chains: the zeros outside the phase do not inflate it
    none = PH.phase_summary(x, x > 5)
    assert none.n_chains == 0 and np.isnan(none.mean)

    parts = (Summary(32, 0, 0.0, 0.2, 1e-3, 1.0, 1.0, 1e4), Summary(32, 0, 1.0, 0.1, 1e-3, 1.0, 1.0, 1e4))
    m = PH.mixture_summary((0.7, 0.3), (0.0, 0.0), parts)
    assert m.mean == pytest.approx(0.3) and m.sd == pytest.approx(np.sqrt(0.7 * 0.04 + 0.3 * 1.01 - 0.09))
    assert m.mcse == pytest.approx(np.sqrt(0.49e-6 + 0.09e-6))
    assert PH.mixture_summary((0.7, 0.3), (0.05, 0.05), parts).mcse == pytest.approx(np.sqrt(0.58e-6 + 0.05**2))
    with pytest.raises(ValueError, match="no exact draws"):
        PH.mixture_summary((0.7, 0.3), (0.0, 0.0), (parts[0], PH.phase_summary(x, x > 5)))
    idx = PH.mixture_draws(x.ravel(), x.ravel() >= 0.5, 0.6, 1000)
    assert np.mean(x.ravel()[idx] >= 0.5) == pytest.approx(0.6)


def test_phase_scores_catch_a_sampler_that_never_finds_the_copy_phase():
    """Against an even two-phase reference (copy weight 0.5 +- 0.02): a sampler whose chains
    hold the phases in the right proportion and the right distribution in each passes the
    weight and the per-phase checks (each chain in the copy phase with chance 0.5 on its own,
    independently of the reference's allocation); one whose chains all sit in the pooling phase (prior
    starts and a barrier it never crosses) has weight z < -4 and no copy-phase draws; one
    biased by 0.05 in the copy phase (5 sd of 0.01) fails within the phases."""
    rng = np.random.default_rng(1)
    ref_parts = (Summary(32, 0, 0.0, 0.2, 2e-3, 1.0, 1.0, 1e4), Summary(32, 0, 1.0, 0.1, 1e-3, 1.0, 1.0, 1e4))
    ph = PH.Phases(0.5, (0.5, 0.5), (0.02, 0.02), 0.0, 0.08, ref_parts, ref_parts)
    row = lambda d: {f"{k}": v for k, v in d.items()} | {"two_phase": True, "nonfinite": 0}
    good, in_copy = _two_phase_draws(rng, 64, 300, 0.5, independent=True)
    assert in_copy.sum() != 32  # not the reference's share by construction (binomial: 28 here)
    d = phase_scores(good, good, ph)
    assert abs(d["phase_weight_z"]) < 4 and within_phases(row(d))
    # under the exact weight the chains are independent draws of their phase: se = sqrt(w (1 - w) / 64)
    assert d["phase_weight_se"] == pytest.approx(np.sqrt(0.25 / 64))
    stuck, _ = _two_phase_draws(rng, 64, 300, 0.0)
    d = phase_scores(stuck, stuck, ph)
    assert d["phase_weight"] == 0 and d["phase_weight_z"] < -4 and np.isnan(d["bias_z_copy"])
    assert not within_phases(row(d))
    biased, _ = _two_phase_draws(rng, 64, 300, 0.5, copy_mean=1.05, independent=True)
    d = phase_scores(biased, biased, ph)
    assert abs(d["phase_weight_z"]) < 4 and d["bias_z_copy"] > 4 and not within_phases(row(d))
    assert within_phases({"two_phase": False}) is None


@pytest.mark.slow
def test_two_phase_reference_and_scores_end_to_end(tmp_path):
    """``scripts/bench_samplers.py --phase-weights`` at L = 4, V = 3, softmax, P = 35, where the
    exact chains cross between the phases (copy mass about 0.35-0.4): the mixture reference (MBAR
    weights x each phase's exact statistics) has the plain exact chains' mean within 4 combined
    errors (swapping the two weights moves it by 0.3 x 0.26 = 0.08, 7 errors); blackjax's MALA by
    import path agrees with it and within each phase, a sampler that never moves does neither
    (its per-phase R-hat is infinite); linear attention has no two-phase reference."""
    from copyjax import bench

    (tmp_path / "usersamplers.py").write_text(
        "import blackjax\n\n\ndef mala(logdensity_fn, step_size):\n    return blackjax.mala(logdensity_fn, step_size)\n\n\n"
        "def frozen(logdensity_fn, step_size):\n    alg = blackjax.mala(logdensity_fn, step_size)\n"
        "    return blackjax.base.SamplingAlgorithm(alg.init, lambda key, state: (state, None))\n")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    base = [sys.executable, os.path.join(ROOT, "scripts", "bench_samplers.py"), "--L", "4", "--V", "3", "--P", "35",
            "--cache-dir", str(tmp_path / "cache"), "--no-progress", "--ref-chains", "16", "--ref-steps", "2400"]
    cmd = base + ["--samplers", "usersamplers:mala", "usersamplers:frozen", "--step-size", "2e-2", "--num-steps",
                  "3000", "--chains", "64", "--phase-weights", "--phase-steps", "1800", "--phase-chains", "4",
                  "--out", str(tmp_path / "out")]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    ph = rep["reference"]["phases"]
    assert ph is not None and 0.15 < ph["weights"][1] < 0.6
    rows = {w["sampler"]: w for w in rep["rows"]}
    m, f = rows["usersamplers:mala"], rows["usersamplers:frozen"]
    assert m["two_phase"] and m["agrees_with_exact"] and m["agrees_within_phases"], (m["verdict_reason"], rep["reference"]["gate"])
    assert m["phase_crossings"] > 100 and abs(m["phase_weight_z"]) < 4
    assert not f["agrees_with_exact"] and not f["agrees_within_phases"] and f["phase_crossings"] == 0
    assert "copy weight (z)" in (tmp_path / "out" / "report.md").read_text()
    assert (tmp_path / "out" / "bias_vs_step.png").stat().st_size > 0  # with its copy-weight panel

    # float64, as the script runs it (tests/conftest.py): the same cache key
    task = bench.Task(4, 3, "softmax", 35, 0)
    plain = bench.reference(task, n_chains=16, num_steps=2400, cache_dir=str(tmp_path / "cache"), phases=False)
    mix = bench.reference(task, n_chains=16, num_steps=2400, cache_dir=str(tmp_path / "cache"), phases=True,
                          phase_steps=1800, phase_chains=4)  # the run's, read back from the cache
    assert plain.phases is None and mix.phases is not None
    a, b = plain.summary_cG, mix.summary_cG
    assert abs(a.mean - b.mean) < 4 * np.hypot(a.mcse, b.mcse), (a, b)
    assert len(mix.G) == 16
    with pytest.raises(ValueError, match="softmax"):
        bench.reference(bench.Task(4, 3, "linear", 35, 0), phases=True, cache_dir=str(tmp_path / "cache"))
    r = subprocess.run(base + ["--activation", "linear", "--phase-weights", "--out", str(tmp_path / "lin")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 2 and "--phase-weights" in r.stderr.strip().splitlines()[-1]


def test_the_leaderboard_places_and_writes_inside_tasks():
    """``inside`` is the posterior form's equal-mass P* (softmax), none for linear attention;
    an inside task's summary
    row gives the copy weight and who is right within each phase, its block the phases."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import argparse

        import leaderboard

        # (the softmax P*, 1745 at L = 20, is the posterior form's: theory.transition_points, 40 s)
        assert leaderboard.regime_P(20, 32, "linear", "inside") is None
        phs = {"divide": 0.148, "weights": [0.4, 0.6], "weights_sd": [0.08, 0.08], "log_ratio": 0.4,
               "log_ratio_sd": 0.3, "cG": [{"mean": 0.03, "sd": 0.02}, {"mean": 0.39, "sd": 0.05}]}
        row = {"sampler": "mala", "step_size": 2e-3, "num_steps": 900, "wall_s": 9.0, "agrees_with_exact": False,
               "agrees_within_phases": True, "two_phase": True, "bias": 1e-3, "bias_z": 0.5, "sd_ratio": 1.0,
               "sd_ratio_se": 0.05, "w1": 2e-3, "loss_bias": 0.0, "loss_bias_z": 0.1, "rhat": 1.5, "ess_per_s": 1.0,
               "ess_per_grad": 0.1, "prior_bias": 0.0, "prior_bias_z": 0.2, "prior_steps_to_equilibrium": None,
               "prior_seconds_to_equilibrium": None, "phase_weight": 0.55, "phase_weight_z": -0.5,
               "prior_phase_weight": 0.0, "prior_phase_weight_z": -7.0, "phase_crossings": 3,
               "prior_phase_crossings": 0, "bias_z_pooling": 0.1, "bias_z_copy": -0.2, "loss_bias_z_pooling": 1.0,
               "loss_bias_z_copy": 0.3}
        rep = {"reference": {"cG": {"mean": 0.25, "sd": 0.18, "mcse": 0.03}, "phases": phs}, "rows": [row]}
        t = {"L": 20, "V": 32, "activation": "softmax", "regime": "inside", "P": 1745, "eps0": 1e-3, "report": rep,
             "done": True, "cmd": "run", "minutes": 1.0}
        a = argparse.Namespace(chains=16, budget_seconds=8.0, step_factors=[2.0])
        text = leaderboard.section([t], a, "run")
        assert ("| 20 | softmax | inside | 1745 | 0.2500 (0.1800); copy weight 0.60 +- 0.08 | none; right within "
                "each phase: mala @ 2 | - |") in text
        assert "copy weight 0.600 +- 0.080" in text and "| 0.55 (-0.5) | 0.00 (-7.0) | 3 / 0 | yes (1.0) |" in text
        assert list(leaderboard.read_section_text(text)) == [(20, 32, "softmax", "inside")]
        # a reference that fails its gate: every row inconclusive but a sampler's own failures
        gate = {"ok": False, "reason": "R-hat of c_G 1.020 >= 1.01"}
        rows = [row | {"verdict": "inconclusive"}, row | {"sampler": "sghmc", "verdict": "disagrees"}]
        for rs, want in ((rows[:1], "| all: the reference fails its gate |"),
                         (rows, "| all but 1 that fail on their own (non-finite or frozen chains): the reference "
                                "fails its gate |")):
            t2 = t | {"report": rep | {"reference": rep["reference"] | {"gate": gate}, "rows": rs}}
            assert want in leaderboard.section([t2], a, "run"), want
    finally:
        sys.path.pop(0)
