"""The bench's three-valued verdict, clause by clause (``copyjax.bench.score.judge``).

Each clause gets a row that breaks that clause alone, with enough effective draws: the verdict
must be ``disagrees``, naming it; with the clause taken out of ``CLAUSES`` (the planted bug:
a deleted clause) the same row agrees, so each test fails when its clause is removed. Thin
evidence is ``inconclusive`` (an ESS below 400 in any run, a reference that fails its gate),
clear failures (non-finite draws, no chain moving) are ``disagrees`` whatever the ESS, and the
sd test's error does not grow with the sampler's own overdispersion."""
import dataclasses

import numpy as np
import pytest

from copyjax.bench import score
from copyjax.bench.task import reference_gate

GOOD_RUN = dict(mean=0.5, mcse=0.001, bias=0.0, bias_z=0.3, sd=0.05, sd_ratio=1.01, sd_ratio_se=0.01, w1=0.001,
                ks=0.01, loss_bias=0.0, loss_bias_z=-0.5, rhat=1.002, ess=2000.0, ess_per_s=100.0, ess_per_step=0.1,
                wall_s=10.0, nonfinite=0, ess_bulk=2000.0, ess_tail=1500.0, loss_ess_bulk=1800.0,
                loss_ess_tail=1200.0, moved=64)
PHASE_RUN = dict(phase_weight=0.4, phase_weight_se=0.05, phase_weight_z=0.2, phase_crossings=3, bias_z_pooling=0.5,
                 bias_z_copy=-0.4, loss_bias_z_pooling=0.1, loss_bias_z_copy=0.2, rhat_pooling=1.01, rhat_copy=1.02)
GATE_OK = {"ok": True, "reason": "meets R-hat < 1.01 and ESS >= 400"}


def row(two_phase=False, stationary=None, prior=None, eq=120):
    extra = PHASE_RUN if two_phase else {}
    st = score.RunScores("exact", **(GOOD_RUN | extra | (stationary or {})))
    pr = score.RunScores("prior", **(GOOD_RUN | extra | {"steps_to_equilibrium": eq} | (prior or {})))
    return score.Scores("s", 1e-3, 64, 600, st, pr, False, two_phase=two_phase).row()


def test_a_good_row_agrees_and_agrees_with_exact_is_the_verdict():
    for two in (False, True):
        v, why = score.judge(row(two), GATE_OK)
        assert v == "agrees", why
    assert score.verdict(row(), GATE_OK) in score.VERDICTS


# (clause, the row that breaks it alone, a word of the reason)
BROKEN = [
    ("bias", dict(stationary={"bias_z": 5.0}), "bias of c_G"),
    ("bias", dict(prior={"bias_z": -6.0}), "prior starts"),  # the prior-start run is judged too
    ("sd", dict(stationary={"sd_ratio": 1.06}), "sd ratio"),
    ("sd", dict(prior={"sd_ratio": 0.9}), "prior starts: sd ratio"),
    ("loss", dict(stationary={"loss_bias_z": 93.0}), "bias of the loss"),
    ("loss", dict(prior={"loss_bias_z": -4.5}), "prior starts: bias of the loss"),
    ("rhat", dict(stationary={"rhat": 1.3}), "R-hat"),
    ("equilibrium", dict(eq=None), "never reached"),
    ("phase_weight", dict(two_phase=True, prior={"phase_weight_z": -5.0}), "copy weight"),
    ("within_phases", dict(two_phase=True, stationary={"bias_z_copy": 4.5}), "copy phase: c_G"),
    ("within_phases", dict(two_phase=True, stationary={"loss_bias_z_pooling": -4.2}), "pooling phase: loss"),
    ("within_phases", dict(two_phase=True, stationary={"rhat_copy": 1.2}), "copy phase: R-hat"),
]


@pytest.mark.parametrize("clause,broken,word", BROKEN, ids=[f"{c}-{w}" for c, _, w in BROKEN])
def test_each_clause_fails_its_row_and_only_it(clause, broken, word, monkeypatch):
    r = row(**broken)
    v, why = score.judge(r, GATE_OK)
    assert v == "disagrees" and word in why, (v, why)
    monkeypatch.delitem(score.CLAUSES, clause)  # planted: the clause removed
    assert score.judge(r, GATE_OK)[0] == "agrees"


def test_the_stationary_weight_is_not_judged():
    # the stationary run's starts hold the reference's weights by construction: its weight z
    # says nothing about crossing, so only the relaxation run's weight is a clause
    assert score.judge(row(True, stationary={"phase_weight_z": 9.0}), GATE_OK)[0] == "agrees"


@pytest.mark.parametrize("field", ["ess_bulk", "ess_tail", "loss_ess_bulk", "loss_ess_tail"])
@pytest.mark.parametrize("run", ["stationary", "prior"])
def test_thin_evidence_is_inconclusive_even_where_a_clause_fails(field, run):
    r = row(**{run: {field: 120.0}})
    v, why = score.judge(r, GATE_OK)
    assert v == "inconclusive" and "120" in why, why
    # a failed clause on thin evidence is reported, not judged
    v, why = score.judge(row(**{run: {field: 120.0, "bias_z": 6.0}}), GATE_OK)
    assert v == "inconclusive" and "failing so far" in why
    # planted: the ESS floor removed (a floor of 0): the failing row disagrees on 120 draws
    with pytest.MonkeyPatch.context() as m:
        m.setattr(score, "ESS_MIN", 0.0)
        assert score.judge(r, GATE_OK)[0] == "agrees"


def test_clear_failures_disagree_whatever_the_ess():
    thin = {"ess_bulk": 5.0, "ess_tail": 3.0}
    v, why = score.judge(row(stationary=thin | {"nonfinite": 3}), GATE_OK)
    assert v == "disagrees" and "non-finite" in why
    v, why = score.judge(row(prior=thin | {"moved": 0}), GATE_OK)
    assert v == "disagrees" and "no chain moved" in why
    # SGHMC at 4 eps0 inside at L = 32: finite draws, the loss at 3.6e+166, its error and z NaN
    v, why = score.judge(row(stationary=thin | {"loss_bias": 3.6e166, "loss_bias_z": float("nan")}), GATE_OK)
    assert v == "disagrees" and "diverging" in why and "3.6e+166" in why


def test_a_reference_that_fails_its_gate_makes_every_verdict_inconclusive():
    bad = {"ok": False, "reason": "R-hat of c_G 1.025 >= 1.01 (sign families: ...)"}
    for r in (row(), row(stationary={"bias_z": 8.0})):
        v, why = score.judge(r, bad)
        assert v == "inconclusive" and "1.025" in why
    # but a sampler's own failure needs no reference: non-finite or frozen chains disagree (SGHMC
    # at 4 eps0 diverged inside at L = 20, where the reference fails its gate)
    for r, word in ((row(stationary={"nonfinite": 16}), "non-finite"), (row(prior={"moved": 0}), "no chain moved")):
        v, why = score.judge(r, bad)
        assert v == "disagrees" and word in why, (v, why)


def test_the_sd_error_does_not_grow_with_overdispersion():
    """Under the old error, sd_ratio x sqrt(1/(2 ESS) + 1/(2 ESS_ref)), an sd ratio r failed only
    if r - 1 > 4 r se, which no r can do once 4 se >= 1: at ESS 8 any overdispersion passed.
    Now the error is the ratio-free one of log r, so ESS 8 makes the row inconclusive and at
    the ESS floor a ratio of 1.2 fails (|log 1.2| = 0.18 > 4 x 0.035)."""
    se = float(np.sqrt(1 / (2 * 400) + 1 / (2 * 4000)))
    r = row(stationary={"sd_ratio": 1.2, "sd_ratio_se": se, "ess": 400.0, "ess_bulk": 400.0, "ess_tail": 400.0})
    v, why = score.judge(r, GATE_OK)
    assert v == "disagrees" and "sd ratio 1.200" in why


@pytest.mark.slow
def test_the_reference_gate_follows_posteriordb():
    rng = np.random.default_rng(0)
    iid = rng.normal(size=(16, 400))
    g = reference_gate(iid, iid ** 2)
    assert g["ok"] and g["rhat"] < 1.01 and g["ess_bulk"] > 4000 and g["n_draws"] == 6400, g
    # chains in two families that never mix: R-hat far above 1.01, the families named
    fam = iid * 0.01 + np.where(np.arange(16) < 3, 0.93, 0.85)[:, None]
    g = reference_gate(fam, iid ** 2, families="sign families: 13 near 0.85, 3 near 0.93")
    assert not g["ok"] and "R-hat of c_G" in g["reason"] and "sign families" in g["reason"], g
    # too few draws: the ESS floor
    g = reference_gate(iid[:4, :50], iid[:4, :50] ** 2)
    assert not g["ok"] and "bulk ESS of c_G" in g["reason"], g
    # two-phase references: R-hat within each phase's chains (the phases' means differ)
    two = iid + np.where(np.arange(16) < 6, 5.0, 0.0)[:, None]
    assert not reference_gate(two, iid ** 2)["ok"]
    assert reference_gate(two, iid ** 2, group=np.arange(16) < 6)["ok"]
    # chains that cross between the phases (low barrier, as at L = 20): left out of the gate, the
    # staying chains judged within their phase; over all chains the R-hat fails
    cross = two.copy()
    cross[[0, 1, 6, 7], 200:] = iid[[0, 1, 6, 7], 200:] + np.array([0.0, 0.0, 5.0, 5.0])[:, None]
    label = np.where(np.isin(np.arange(16), [0, 1, 6, 7]), -1, (np.arange(16) < 6).astype(int))
    g = reference_gate(cross, iid ** 2, group=label, phases=True)
    assert g["ok"] and g["chains_left_out"] == 4 and "4 crossing chains left out" in g["reason"], g
    assert not reference_gate(cross, iid ** 2, group=(np.arange(16) < 6).astype(int), phases=True)["ok"]
    # a phase that fewer than two chains stay in cannot be checked: the gate fails, naming it
    one = np.where(np.arange(16) < 5, -1, (np.arange(16) < 6).astype(int))
    g = reference_gate(cross, iid ** 2, group=one, phases=True)
    assert not g["ok"] and "1 chain(s) stay in the copy phase" in g["reason"], g


@pytest.mark.slow
def test_a_two_phase_reference_is_gated_over_mixing_chains_or_within_each_phase():
    """``bench.task._two_phase_gate`` (the gate ``bench.reference`` gives a two-phase
    reference): chains in two phases 10 sd apart (the divide at 5, which no draw of either
    phase's noise reaches). No chain crosses: judged
    within each phase. Every chain mixes across (a low barrier): judged as one group, passes.
    Four cross once, the rest stay (L = 20's barrier): one group fails, within each phase over
    the twelve staying chains passes, the four left out. Too short to pass either: both reasons."""
    from copyjax.bench.task import _two_phase_gate

    rng = np.random.default_rng(0)
    iid = rng.normal(size=(16, 400))
    off = np.where(np.arange(16) < 6, 10.0, 0.0)[:, None]
    side = lambda x: x >= 5.0
    two = iid + off
    g = _two_phase_gate(two, iid ** 2, side(two), "")
    assert g["ok"] and g["chains_left_out"] == 0, g
    mix = iid + 10.0 * (rng.random((16, 400)) < 0.4)  # every draw in either phase: chains mix
    g = _two_phase_gate(mix, iid ** 2, side(mix), "")
    assert g["ok"] and "within each phase" not in g["reason"] and g["scope"] == "over all chains", g
    cross = two.copy()
    cross[[0, 1, 6, 7], 200:] = iid[[0, 1, 6, 7], 200:] + np.array([0.0, 0.0, 10.0, 10.0])[:, None]
    g = _two_phase_gate(cross, iid ** 2, side(cross), "")
    assert g["ok"] and g["chains_left_out"] == 4, g
    short = cross[:, 180:230]  # the crossings at draw 20 of 50
    g = _two_phase_gate(short, iid[:, 180:230] ** 2, side(short), "")
    assert not g["ok"] and "over all chains: R-hat" in g["reason"] and "within each phase: " in g["reason"], g
    assert g["scope"] == "within each phase" and g["all_chains_rhat"] > g["rhat"], g


def test_a_row_round_trips_and_is_judged_again():
    r = row(stationary={"bias_z": 5.0})
    s = dataclasses.asdict(score.RunScores("exact", **GOOD_RUN))
    assert s["moved"] == 64 and "ess_tail" in r and "prior_loss_ess_tail" in r
    assert score.judge(dict(r), GATE_OK) == score.judge(r, GATE_OK)


def test_steps_to_low_bias_is_blackjax_benchmarks_metric():
    """The cost metric against a direct loop over n: b^2(n) = max over x, x^2 of the squared
    distance of the chains' running mean (first n draws, averaged over chains) from the exact
    moment, over its exact variance; the first step after which it stays below 0.01. A chain
    that starts 3 sd away and relaxes as 3 * 0.7^t needs more steps than one started in place;
    a run that ends above it (or a frozen one away from the mean) gives None."""
    from types import SimpleNamespace

    rng = np.random.default_rng(1)
    ref = SimpleNamespace(cG=rng.normal(0.5, 0.1, 20000))
    t = np.arange(300)
    x = 0.5 + 0.1 * (3 * 0.7 ** t + rng.normal(size=(64, 300)))
    want = None
    for n in range(1, 301):
        b2 = max((np.mean(x[:, :n] ** k) - np.mean(ref.cG ** k)) ** 2 / np.var(ref.cG ** k) for k in (1, 2))
        want = None if b2 < 0.01 and want is None else (want if b2 < 0.01 else n)
    got = score.steps_to_low_bias(x, ref, thin=10)
    assert got == (want + 1) * 10, (got, want)
    in_place = score.steps_to_low_bias(0.5 + 0.1 * rng.normal(size=(64, 300)), ref, thin=10)
    assert in_place < got
    assert score.steps_to_low_bias(np.full((64, 300), 0.8), ref, thin=10) is None


def test_the_sd_clause_at_its_boundary_and_its_reason():
    """The sd test's tolerance is 4 errors of log(ratio): at 3.5 errors a row agrees, at 4.5 it
    disagrees with the reason stating the log ratio and the tolerance; a collapsed sampler (sd
    ratio 0) disagrees without taking log(0) (a warning is an error here)."""
    se = 0.01
    inside = row(stationary={"sd_ratio": float(np.exp(3.5 * se)), "sd_ratio_se": se})
    assert score.judge(inside, GATE_OK)[0] == "agrees"
    outside = row(stationary={"sd_ratio": float(np.exp(-4.5 * se)), "sd_ratio_se": se})
    v, why = score.judge(outside, GATE_OK)
    assert v == "disagrees" and "exact starts: sd ratio 0.956 (log -0.045, 4 errors = 0.040)" in why, why
    v, why = score.judge(row(prior={"sd_ratio": 0.0}), GATE_OK)
    assert v == "disagrees" and "prior starts: sd ratio 0.000 (log +nan, 4 errors = 0.040)" in why, why


def test_judged_carries_the_verdict_and_agrees_with_exact_is_it():
    for r, want in ((row(), "agrees"), (row(stationary={"bias_z": 9.0}), "disagrees"),
                    (row(stationary={"ess_bulk": 50.0}), "inconclusive")):
        j = score.judged(r, GATE_OK)
        assert j["verdict"] == want and j["agrees_with_exact"] is (want == "agrees"), j
        assert j["verdict_reason"] == score.judge(r, GATE_OK)[1]


def test_within_phases_needs_every_phase_clause_and_finite_chains():
    assert score.within_phases(row(two_phase=True)) is True
    assert score.within_phases(row(two_phase=True, stationary={"bias_z_copy": 4.5})) is False
    assert score.within_phases(row(two_phase=True, stationary={"nonfinite": 2})) is False
    assert score.within_phases(row()) is None  # one phase: the question does not arise


def test_the_tolerances_hold_at_their_bounds():
    """Exactly 4 errors passes (bias, each phase's bias, the sd's log ratio), R-hat exactly at
    its maximum fails, and an sd ratio below 1 inside its tolerance passes: the comparisons'
    directions and strictness (mutants that turned them survived the tests above)."""
    assert score.judge(row(stationary={"bias_z": 4.0}, prior={"bias_z": -4.0}), GATE_OK)[0] == "agrees"
    assert score.judge(row(two_phase=True, stationary={"bias_z_copy": 4.0}), GATE_OK)[0] == "agrees"
    assert score.judge(row(two_phase=True, stationary={"rhat_copy": score.RHAT_MAX}), GATE_OK)[0] == "disagrees"
    assert score.judge(row(stationary={"sd_ratio": float(np.exp(-0.035)), "sd_ratio_se": 0.01}), GATE_OK)[0] == "agrees"
    r = float(np.exp(-1.0))
    assert np.log(r) == -1.0  # |log r| is exactly 4 errors of 0.25
    assert score.judge(row(stationary={"sd_ratio": r, "sd_ratio_se": 0.25}), GATE_OK)[0] == "agrees"
