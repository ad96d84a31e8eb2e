"""The typed results of copyjax: what a summary of chains, an exact-posterior run, a sample of
the theory's posterior form, and one point of the phase diagram hold.

Frozen dataclasses, read by attribute (``point.exact.cG.mean``). ``to_json()`` gives the
nested dict the result files hold (the layout of ``points/*.json`` and ``results.json``,
documented in docs/phase_diagram.md) and ``from_json`` reads it back, so files written by
earlier versions load unchanged. A phase-diagram point is ``copyjax.point.Point``: a result
of each method of its registry.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


class _Record:
    """JSON for the result dataclasses. Fields that are None and listed in ``_optional`` are
    left out of the JSON (a method that did not run, a quantity that does not apply)."""

    _optional: tuple = ()

    @classmethod
    def _names(cls) -> tuple:
        return tuple(f.name for f in dataclasses.fields(cls))

    def to_json(self) -> dict:
        return {f.name: _json(getattr(self, f.name)) for f in dataclasses.fields(self)
                if not (f.name in self._optional and getattr(self, f.name) is None)}


def _json(v):
    if isinstance(v, _Record):
        return v.to_json()
    if isinstance(v, dict):
        return {k: _json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json(x) for x in v]
    return v


def _maybe(cls, d):
    return None if d is None else cls.from_json(d)


# ----------------------------------------------------------------------------- chains


@dataclass(frozen=True)
class Summary(_Record):
    """One observable over chains (``chains.summarize``): ``n_chains`` used, ``n_excluded``
    (non-finite chains left out), mean, sd, ``mcse = sd / sqrt(ess)``, ``rhat``
    (``blackjax.rhat``: rank-normalised split R-hat, blackjax >= 1.7), ``split_rhat``
    (numpyro's split Gelman-Rubin), ``ess`` (numpyro's effective sample size)."""

    n_chains: int
    n_excluded: int
    mean: float
    sd: float
    mcse: float
    rhat: float
    split_rhat: float
    ess: float

    @classmethod
    def from_json(cls, d: dict) -> "Summary":
        return cls(**{k: d[k] for k in cls._names()})


@dataclass(frozen=True)
class OPStat(Summary):
    """A ``Summary`` of the theory's posterior form with its variance ``var = sd**2`` (the
    susceptibility)."""

    var: float


# ----------------------------------------------------------------------------- exact posterior


@dataclass(frozen=True)
class ExactStat(Summary):
    """One observable of an exact-posterior run: the pooled ``Summary`` fields, each start
    family alone (``prior``, ``copy``), nested R-hat with the families as superchains, and
    ``gap`` = copy mean - prior mean with its standard error ``gap_se``."""

    prior: Summary
    copy: Summary
    nested_rhat: float
    gap: float
    gap_se: float

    @classmethod
    def from_json(cls, d: dict) -> "ExactStat":
        return cls(**{k: d[k] for k in Summary._names()}, prior=Summary.from_json(d["prior"]),
                   copy=Summary.from_json(d["copy"]), nested_rhat=d["nested_rhat"], gap=d["gap"],
                   gap_se=d["gap_se"])


@dataclass(frozen=True)
class FamilyMeans(_Record):
    """Chains of one sign family of linear attention and their means (None without chains)."""

    n: int
    cG: float | None
    abs_rho: float | None
    c1: float | None
    logdensity: float | None

    @classmethod
    def from_json(cls, d: dict) -> "FamilyMeans":
        return cls(**{k: d[k] for k in cls._names()})


@dataclass(frozen=True)
class SignFamilies(_Record):
    """Linear attention's sign families g s > 0 (``same``) and g s < 0 (``opposite``);
    ``split``: distinct metastable states; ``abs_rho``: the value reported (the same-sign
    family's where split, else pooled)."""

    same: FamilyMeans
    opposite: FamilyMeans
    split: bool
    abs_rho: float

    @classmethod
    def from_json(cls, d: dict) -> "SignFamilies":
        return cls(FamilyMeans.from_json(d["same"]), FamilyMeans.from_json(d["opposite"]), d["split"],
                   d["abs_rho"])


# the observables the exact posterior and the theory's sampled posterior form can report
EXACT_OBSERVABLES = ("c1", "cG", "abs_rho", "loss")
OP_OBSERVABLES = EXACT_OBSERVABLES + ("family",)


@dataclass(frozen=True)
class ExactSummary(_Record):
    """Summary of an exact-posterior run (``exact_posterior.summarize_exact``). The
    observables summarised (``c1``, ``cG``, ``loss``, and ``abs_rho`` for linear attention)
    are ``ExactStat`` fields; ``branches_disagree``: the start families disagree on ``cG``
    (inside a coexistence window: the pooled mean is then not the posterior mean)."""

    n_chains: int
    n_stuck: int
    n_nonfinite: int
    acceptance: list
    step_size: list
    acceptance_mean: float
    branches_disagree: bool
    sign_families: SignFamilies
    n_used: int
    c1: ExactStat | None = None
    cG: ExactStat | None = None
    abs_rho: ExactStat | None = None
    loss: ExactStat | None = None
    layers: dict | None = None  # two layers: each layer's order parameter (Mask.layer_order) -> ExactStat

    _optional = EXACT_OBSERVABLES + ("layers",)

    @classmethod
    def from_json(cls, d: dict) -> "ExactSummary":
        stats = {k: ExactStat.from_json(d[k]) for k in EXACT_OBSERVABLES if k in d}
        layers = {k: ExactStat.from_json(v) for k, v in d["layers"].items()} if d.get("layers") else None
        return cls(d["n_chains"], d["n_stuck"], d["n_nonfinite"], d["acceptance"], d["step_size"],
                   d["acceptance_mean"], d["branches_disagree"], SignFamilies.from_json(d["sign_families"]),
                   d["n_used"], **stats, layers=layers)


# ----------------------------------------------------------------------------- theory


@dataclass(frozen=True)
class TheoryOP(_Record):
    """Order parameters of a theory minimum in the reported convention, with its loss (the
    global minimum) or its action (every minimum)."""

    c1: float
    cG: float
    abs_rho: float
    loss: float | None = None
    action: float | None = None

    _optional = ("loss", "action")

    @classmethod
    def from_json(cls, d: dict) -> "TheoryOP":
        return cls(d["c1"], d["cG"], d["abs_rho"], d.get("loss"), d.get("action"))


@dataclass(frozen=True)
class TheoryForm(_Record):
    """One form of the theory at P: its global minimum, every local minimum, and whether
    there are two (``in_window``: inside the coexistence window). JSON key of ``best``:
    ``"global"``."""

    best: TheoryOP
    minima: list
    in_window: bool

    def to_json(self) -> dict:
        return {"global": self.best.to_json(), "minima": [m.to_json() for m in self.minima],
                "in_window": self.in_window}

    @classmethod
    def from_json(cls, d: dict) -> "TheoryForm":
        return cls(TheoryOP.from_json(d["global"]), [TheoryOP.from_json(m) for m in d["minima"]],
                   d["in_window"])


@dataclass(frozen=True)
class OPSummary(_Record):
    """The theory's posterior form sampled by NUTS in order-parameter space
    (``op_posterior.op_summary``): an ``OPStat`` per observable drawn, the modes' weights,
    the count of NUTS divergent transitions, the mean acceptance."""

    weights: list
    n_divergent_transitions: int
    acceptance: float | None = None
    c1: OPStat | None = None
    cG: OPStat | None = None
    abs_rho: OPStat | None = None
    loss: OPStat | None = None
    family: OPStat | None = None

    _optional = ("acceptance",) + OP_OBSERVABLES

    @classmethod
    def from_json(cls, d: dict) -> "OPSummary":
        stats = {k: OPStat(**d[k]) for k in OP_OBSERVABLES if k in d}
        # points written before the typed schema: "mode_weights"
        return cls(d["weights"] if "weights" in d else d["mode_weights"], d["n_divergent_transitions"],
                   d.get("acceptance"), **stats)


# ----------------------------------------------------------------------------- phase-diagram point


@dataclass(frozen=True)
class Estimate(_Record):
    mean: float
    mcse: float
    sd: float

    @classmethod
    def from_json(cls, d: dict) -> "Estimate":
        return cls(d["mean"], d["mcse"], d["sd"])


@dataclass(frozen=True)
class PhaseWeights(_Record):
    """Umbrella sampling + MBAR inside a softmax coexistence window: a_G's posterior mean
    (``cG``), the copy phase's mass, log(copy / pooling mass), the barrier between the
    phases (None without one) and the minima of the free energy along a_G."""

    cG: Estimate
    copy_weight: float
    copy_weight_sd: float
    log_ratio: float
    log_ratio_sd: float
    barrier: float | None
    minima_cG: list
    acceptance_min: float

    @classmethod
    def from_json(cls, d: dict) -> "PhaseWeights":
        return cls(Estimate.from_json(d["cG"]), d["copy_weight"], d["copy_weight_sd"], d["log_ratio"],
                   d["log_ratio_sd"], d["barrier"], d["minima_cG"], d["acceptance_min"])


@dataclass(frozen=True)
class SGLDSummary(_Record):
    """SGLD chains on (W, G) from one start: a ``Summary`` per observable and the mean test
    loss of the final networks (None when every chain turned non-finite)."""

    c1: Summary
    cG: Summary
    abs_rho: Summary
    loss: Summary
    coverage: Summary
    test_loss: float | None

    @classmethod
    def from_json(cls, d: dict) -> "SGLDSummary":
        return cls(*(Summary.from_json(d[k]) for k in ("c1", "cG", "abs_rho", "loss", "coverage")),
                   d["test_loss"])


@dataclass(frozen=True)
class AdamSummary(_Record):
    """The Adam runs that reached the global maximum (``n`` of ``of``) and their means."""

    n: int
    of: int
    c1: float
    cG: float
    abs_rho: float
    loss: float
    coverage: float
    test_loss: float

    @classmethod
    def from_json(cls, d: dict) -> "AdamSummary":
        return cls(**{k: d[k] for k in cls._names()})


@dataclass(frozen=True)
class TheoryForms(_Record):
    """The reduced theory at a point's P: the MAP and posterior forms (each a ``TheoryForm``)
    and the joint MAP of (W, G), what Adam converges to. JSON: ``theory_map``,
    ``theory_posterior``, ``theory_joint_map`` at the point's top level."""

    map: TheoryForm
    posterior: TheoryForm
    joint_map: TheoryOP


# where SGLD chains start (their index keys the starts' random streams)
SGLD_STARTS = ("prior", "copy", "exact")


@dataclass(frozen=True)
class SGLDRuns(_Record):
    """SGLD at a point: the step size and a ``SGLDSummary`` per start that ran (none with no
    chains). JSON: ``step_size`` and ``sgld_<start>`` at the point's top level."""

    step_size: float
    starts: dict = field(default_factory=dict)


__all__ = ["AdamSummary", "Estimate", "EXACT_OBSERVABLES", "ExactStat", "ExactSummary", "FamilyMeans",
           "OP_OBSERVABLES", "OPStat", "OPSummary", "PhaseWeights", "SGLDRuns", "SGLDSummary", "SGLD_STARTS",
           "SignFamilies", "Summary", "TheoryForm", "TheoryForms", "TheoryOP"]
