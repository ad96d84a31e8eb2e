"""Run a sampler on a task and score it against the exact reference.

Two runs per (sampler, step size), each ``n_chains`` chains of ``num_steps`` steps, every
``thin``-th state observed (the copy order parameter and the training loss):

* **stationary**: chains start at exact joint draws of (W, G); after a third of the steps as
  burn-in, any drift of the mean is the sampler's stationary bias.
* **relaxation**: chains start at prior draws; ``steps_to_equilibrium`` is the first step
  after which the cross-chain mean stays within 3 standard errors (reference sd / sqrt(chains))
  of the exact mean; the last two thirds are scored as above.

Scores (each with its standard error where it has one): the bias of the mean (absolute and in
combined MCSEs of sampler and reference, ``bias_z``), ``sd_ratio`` (sampled sd / exact sd; its
error ``sd_ratio_se`` is that of log sd_ratio under the null, sqrt(1/(2 ESS) + 1/(2 ESS_ref)),
so it does not grow with the sampler's own overdispersion), Wasserstein-1 and
Kolmogorov-Smirnov distances between the sampled and the exact draws, the loss's bias, R-hat,
ESS (numpyro's, and the rank-normalised bulk and tail ESS of c_G and of the loss), ESS per
second and per step, the chains that moved.

The verdict (``judge``, a function of the row and the reference's gate alone, so a saved row
can be judged again) is three-valued, with its reason:

* ``inconclusive`` when the run cannot tell: the reference fails its gate
  (``task.reference_gate``: R-hat < 1.01, bulk and tail ESS >= 400), or a run's bulk or tail
  ESS of c_G or of the loss is below ``ESS_MIN`` (400, Vehtari et al. 2021) and no clear
  failure was seen;
* ``disagrees`` on a clear failure whatever the ESS (non-finite draws, moments that overflow,
  no chain moving), or
  with enough ESS a failed clause of ``CLAUSES``: |bias_z| <= 4, |log sd_ratio| <= 4
  ``sd_ratio_se`` and |loss_bias_z| <= 4 in both runs (the loss is where a biased W shows:
  SGLD's O(eps) excess variance in the stiff W directions), R-hat < 1.1 in the stationary run,
  the relaxation run reaching equilibrium (the cross-chain mean within 3 combined errors of the
  reference's: its sd / sqrt(chains) and its MCSE) before its end;
* ``agrees`` otherwise. ``agrees_with_exact`` is ``verdict == "agrees"``.

Against a two-phase reference (inside a softmax coexistence window, ``bench.phases``) the
stationary run starts in both phases in proportion to their weights, the scores above are
against the mixture, and each run adds the copy phase's weight (``phase_weight_z`` against the
free energy's), the phase changes it made, and each phase's own bias of c_G and of the loss.
The weight clause judges the relaxation run only: the stationary run's starts are allocated to
the phases in the reference's proportions, so a sampler that never crosses would match the
weight there by construction. ``agrees_within_phases`` (``within_phases``) says whether the
sampler is right inside each phase, crossing or not.
"""
from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import asdict, dataclass
from typing import NamedTuple

import jax
import numpy as np
from blackjax.base import SamplingAlgorithm
from scipy import stats as sps

from copyjax import chains
from copyjax._checks import check_size
from copyjax.samplers.registry import grads_per_step
from copyjax.bench.task import Reference
from copyjax.network import Observer, init_params
from copyjax.samplers import NetworkSampler

Z_MAX = 4.0  # bias and sd tolerances, in standard errors
RHAT_MAX = 1.1
ESS_MIN = 400.0  # bulk and tail ESS of c_G and of the loss, per run, before a clause may fail
VERDICTS = ("agrees", "disagrees", "inconclusive")
SCORES_VERSION = 2  # bump when a score's computation changes: saved rows are then recomputed


@dataclass(frozen=True)
class RunScores:
    """Scores of one run (``start``: exact or prior) against the reference."""

    start: str
    mean: float
    mcse: float
    bias: float
    bias_z: float
    sd: float
    sd_ratio: float
    sd_ratio_se: float
    w1: float
    ks: float
    loss_bias: float
    loss_bias_z: float
    rhat: float
    ess: float
    ess_per_s: float
    ess_per_step: float
    wall_s: float
    nonfinite: int
    steps_to_equilibrium: int | None = None
    ess_per_grad: float = float("nan")  # ESS per full-data gradient (a step may take several: SGHMC)
    # two-phase references (inside a coexistence window), else NaN: the copy phase's weight in
    # the scored draws, its error under the exact weight, its z against the free energy's; phase
    # changes over the whole run; each phase's bias of c_G and of the loss in its errors
    phase_weight: float = float("nan")
    phase_weight_se: float = float("nan")
    phase_weight_z: float = float("nan")
    phase_crossings: int = 0
    bias_z_pooling: float = float("nan")
    bias_z_copy: float = float("nan")
    loss_bias_z_pooling: float = float("nan")
    loss_bias_z_copy: float = float("nan")
    rhat_pooling: float = float("nan")  # split R-hat of c_G within each phase (phases.phase_summary's)
    rhat_copy: float = float("nan")
    # rank-normalised bulk / tail ESS (chains.ess_bulk_tail) of c_G and of the loss; chains whose c_G moved
    ess_bulk: float = float("nan")
    ess_tail: float = float("nan")
    loss_ess_bulk: float = float("nan")
    loss_ess_tail: float = float("nan")
    moved: int = -1
    # full-data gradients until the normalised squared bias of E[c_G] and E[c_G^2] stays below 0.01
    # (grads_to_low_bias: BlackJAX's sampler-benchmarks' cost); None: never within the run
    grads_to_low_bias: float | None = None


def _positions(ref: Reference, start: str, n: int, key):
    # positions in the default float type (float64 under x64): blackjax's noise follows it
    t, dtype = ref.task, jax.dtypes.canonicalize_dtype(np.float64)
    if start == "exact":
        i = np.arange(n) % len(ref.G)
        return {"W": jax.numpy.asarray(ref.W[i], dtype), "G": jax.numpy.asarray(ref.G[i], dtype)}
    p = jax.vmap(lambda k: init_params(k, t.L, t.V, t.hyper, dtype))(jax.random.split(key, n))
    return {"W": p.W, "G": p.G}


class _Resumed(NamedTuple):
    """``spec``'s sampler with an ``init`` that keeps a chain's state as it is (the budget's
    pilots go on from a tuned state)."""

    spec: NetworkSampler

    def build(self, data) -> SamplingAlgorithm:
        return SamplingAlgorithm(lambda state: state, self.spec.build(data).step)


def _algorithm(ref: Reference, build, step_size: float, batch_size: int | None = None):
    """``(spec, observe, data)`` of ``build`` on ``ref``'s task for ``chains.run_chains``: the
    sampler on the exact log posterior (a minibatch sampler also gets ``grad_estimator(rng_key,
    position)`` on ``batch_size`` sequences), the observed scalars (c_G and the loss), and the
    task's arrays they take."""
    t = ref.task
    spec = NetworkSampler(t.hyper, t.activation, build, batch_size, step_size=float(step_size)).checked(t.P)
    data = {"stats": t.stats()} if batch_size is None else {"stats": t.stats(), "tokens": t.tokens()}
    return spec, Observer(t.hyper, t.activation, ("cG", "loss")), data


def run(ref: Reference, build, step_size: float, *, start: str, n_chains: int, num_steps: int, thin: int,
        key, progress: bool = False, batch_size: int | None = None):
    """``(chains.Samples, wall seconds)``: ``build(logdensity_fn, step_size)`` (a minibatch
    sampler: ``build(logdensity_fn, grad_estimator, step_size)`` on ``batch_size`` sequences) run
    from ``start`` ("exact" or "prior"), observing c_G and the loss every ``thin`` steps from step 0."""
    spec, observe, data = _algorithm(ref, build, step_size, batch_size)
    init = _positions(ref, start, n_chains, jax.random.fold_in(key, 1))
    t0 = time.perf_counter()
    s = chains.run_chains(jax.random.fold_in(key, 2), spec, init, observe, data,
                          schedule=chains.Schedule(num_steps, 0, thin), progress=progress, desc=f"{start} starts")
    jax.block_until_ready(s.draws)
    return s, time.perf_counter() - t0


def _score(start, x, loss, ref: Reference, wall_s, n_steps, nonfinite, steps_to_eq=None, grads: float = 1,
           crossings: int = 0) -> RunScores:
    """``x, loss: (chain, draw)`` after the burn-in; ``crossings``: phase changes over the run."""
    s = chains.summarize(x)
    sl = chains.summarize(loss)
    r, rl = ref.summary_cG, ref.summary_loss
    se = float(np.hypot(s.mcse, r.mcse))
    sd_ratio = s.sd / r.sd if r.sd > 0 else float("nan")
    # the error of log(sd_ratio) were the ratio 1: fixed by the ESSs, not scaled by the ratio itself
    sd_se = float(np.sqrt(1 / (2 * max(s.ess, 1)) + 1 / (2 * max(r.ess, 1))))
    xa = np.asarray(x, float)
    moved = int(np.sum(np.ptp(np.where(np.isfinite(xa), xa, 0.0), axis=1) > 0)) if xa.size else 0
    ess = chains.ess_bulk_tail(x) + chains.ess_bulk_tail(loss)
    flat = np.asarray(x).ravel()
    flat = flat[np.isfinite(flat)]
    w1 = float(sps.wasserstein_distance(flat, ref.cG)) if flat.size else float("nan")
    ks = float(sps.ks_2samp(flat, ref.cG).statistic) if flat.size else float("nan")
    out = RunScores(start, s.mean, s.mcse, s.mean - r.mean, (s.mean - r.mean) / se if se > 0 else float("inf"),
                    s.sd, sd_ratio, sd_se, w1, ks, sl.mean - rl.mean,
                    (sl.mean - rl.mean) / float(np.hypot(sl.mcse, rl.mcse)), s.rhat, s.ess,
                    s.ess / wall_s, s.ess / n_steps, wall_s, int(nonfinite), steps_to_eq, s.ess / (n_steps * grads),
                    ess_bulk=ess[0], ess_tail=ess[1], loss_ess_bulk=ess[2], loss_ess_tail=ess[3], moved=moved)
    return out if ref.phases is None else dataclasses.replace(out, **phase_scores(x, loss, ref.phases),
                                                              phase_crossings=int(crossings))


def phase_scores(x: np.ndarray, loss: np.ndarray, ph) -> dict:
    """Two-phase scores of ``x, loss: (chain, draw)`` against ``ph`` (``bench.phases.Phases``).

    ``phase_weight``: the fraction of draws with a_G >= divide; ``phase_weight_se``: its error
    were the exact weight w true, sqrt(w (1 - w) / n_eff), n_eff the phase indicator's ESS
    (the number of chains where no chain changes phase: each is then one independent draw of
    its phase, where numpyro's ESS of constant chains says about half that);
    ``phase_weight_z`` against the free energy's weight, the two errors combined. Per phase (``phases.phase_summary``): the bias of c_G's and the loss's
    mean in combined errors (NaN where the sampler has no draw in the phase) and the split R-hat
    of c_G within it."""
    from copyjax.bench.phases import PHASES, phase_summary

    ind = np.asarray(x) >= ph.divide
    p, w, w_sd = float(ind.mean()), float(ph.weights[1]), float(ph.weights_sd[1])
    if not np.diff(ind, axis=1).any():
        n_eff = float(ind.shape[0])  # no chain changes phase: each is one draw of its phase
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # chains that stay in one phase are constant
            n_eff = chains.summarize(ind.astype(float)).ess
        n_eff = float(np.clip(n_eff, 1, ind.size)) if np.isfinite(n_eff) else float(ind.shape[0])
    se = float(np.sqrt(w * (1 - w) / n_eff))
    d = {"phase_weight": p, "phase_weight_se": se,
         "phase_weight_z": (p - w) / float(np.hypot(se, w_sd)) if np.hypot(se, w_sd) > 0 else float("nan")}
    for k, side in enumerate(PHASES):
        mask = ~ind if k == 0 else ind
        for name, v, ref in (("bias_z", x, ph.cG[k]), ("loss_bias_z", loss, ph.loss[k])):
            s = phase_summary(v, mask)
            d[f"{name}_{side}"] = (s.mean - ref.mean) / float(np.hypot(s.mcse, ref.mcse))
            if name == "bias_z":
                # split Gelman-Rubin, not the rank-normalised R-hat: the chains outside the phase
                # are ties at 0 that the ranks would count as a disagreement
                d[f"rhat_{side}"] = s.split_rhat
    return d


BIAS2_MAX = 0.01  # the normalised squared bias a run must stay below (BlackJAX's sampler-benchmarks)


def steps_to_low_bias(x: np.ndarray, ref: Reference, thin: int) -> int | None:
    """Steps until the normalised squared bias of the running estimates of E[c_G] and E[c_G^2]
    stays below ``BIAS2_MAX`` for good, from ``x: (chain, draw)`` observed every ``thin`` steps
    from step 0 (no burn-in): after n draws, with m_k(n) the mean of x^k over the chains' first
    n draws, b^2(n) = max_k (m_k(n) - E_ref[x^k])^2 / Var_ref[x^k] (the metric of BlackJAX's
    sampler-benchmarks, Robnik et al.; both the start's bias and the estimate's variance count).
    None if it is still above at the end (or the run is not finite)."""
    x = np.asarray(x, float)
    if not np.isfinite(x).all():
        return None
    n = np.arange(1, x.shape[1] + 1)
    b2 = np.zeros(x.shape[1])
    for k in (1, 2):
        r = np.asarray(ref.cG, float) ** k
        var = float(np.var(r))
        if not var > 0:
            return None
        m = np.cumsum(x ** k, axis=1).mean(axis=0) / n
        b2 = np.maximum(b2, (m - float(np.mean(r))) ** 2 / var)
    high = np.flatnonzero(b2 >= BIAS2_MAX)
    if high.size and high[-1] == x.shape[1] - 1:
        return None
    return int((high[-1] + 2) * thin) if high.size else thin


def steps_to_equilibrium(x: np.ndarray, ref: Reference, thin: int) -> int | None:
    """First step after which the cross-chain mean of ``x: (chain, draw)`` stays within 3
    standard errors of the exact mean (the cross-chain mean's, reference sd / sqrt(chains),
    combined with the reference mean's own MCSE); None if it never does."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # every chain non-finite: the mean is NaN
        m = np.nanmean(x, axis=0)
    # a NaN mean (every chain diverged) is never "near"
    r = ref.summary_cG
    far = ~(np.abs(m - r.mean) <= 3 * float(np.hypot(r.sd / np.sqrt(x.shape[0]), r.mcse)))
    if far[-1]:
        return None
    last = np.flatnonzero(far)
    return int((last[-1] + 1) * thin) if last.size else 0


@dataclass(frozen=True)
class Scores:
    """One (sampler, step size) on one task: both runs and the verdict."""

    sampler: str
    step_size: float
    n_chains: int
    num_steps: int
    stationary: RunScores
    relaxation: RunScores
    agrees_with_exact: bool  # verdict == "agrees"
    batch_size: int | None = None  # minibatch samplers: sequences per gradient estimate
    two_phase: bool = False  # scored against a two-phase (mixture) reference
    agrees_within_phases: bool | None = None  # two-phase: each phase right where the sampler visits it
    verdict: str = "inconclusive"  # judge's: agrees, disagrees or inconclusive
    verdict_reason: str = ""

    def row(self) -> dict:
        """The flat row of ``report.json``: the stationary scores at the top level (``bias_z``,
        ``sd_ratio``, ...), the relaxation run's under ``prior_``."""
        d = {"sampler": self.sampler, "step_size": self.step_size, "n_chains": self.n_chains,
             "num_steps": self.num_steps, "batch_size": self.batch_size, "verdict": self.verdict,
             "verdict_reason": self.verdict_reason, "agrees_with_exact": self.agrees_with_exact,
             "two_phase": self.two_phase, "agrees_within_phases": self.agrees_within_phases}
        d |= {k: v for k, v in asdict(self.stationary).items() if k not in ("start", "steps_to_equilibrium")}
        d |= {f"prior_{k}": v for k, v in asdict(self.relaxation).items() if k != "start"}
        eq = self.relaxation.steps_to_equilibrium
        # the relaxation run's wall time (compilation included) per step, times its steps
        d["prior_seconds_to_equilibrium"] = None if eq is None else eq * self.relaxation.wall_s / self.num_steps
        return d


def steps_for_budget(ref: Reference, build, step_size: float, budget_seconds: float, *, n_chains: int,
                     thin: int = 10, seed: int = 0, batch_size: int | None = None) -> int:
    """Steps of ``build`` at ``step_size`` (``n_chains`` chains) that fill ``budget_seconds`` of
    sampling: a multiple of ``thin``, at least 9 x ``thin``. Pilots from exact starts on one
    compiled program (the same chunks of ``thin`` steps): after a first run that compiles, a
    run of 2 x ``thin`` steps and runs of n = 6, 12, 24, 48 x ``thin`` steps are timed (each the
    faster of two) until the difference reaches a quarter second; it is the cost of n - 2 x
    ``thin`` steps, so compilation and a sampler's tuning in ``init`` (MCLMC) are not charged
    to the budget (``wall_s`` in the scores includes them). ``init`` runs once: the timed
    pilots continue from the compiling run's final states (MCLMC's tuned step, L and mass
    matrix), so no pilot repeats the tuning and its time does not enter the difference."""
    if not (np.isfinite(budget_seconds) and budget_seconds > 0):
        raise ValueError(f"budget_seconds must be a finite number > 0, got {budget_seconds}")
    thin = check_size("thin", thin, 1)
    spec, observe, data = _algorithm(ref, build, float(step_size), batch_size)
    key = jax.random.fold_in(jax.random.key(seed), 7)
    schedule = lambda n: chains.Schedule(n * thin, 0, thin)
    tuned = chains.run_chains(key, spec, _positions(ref, "exact", n_chains, key), observe, data,
                              schedule=schedule(2)).final
    resume = _Resumed(spec)  # a chain's state as its own start
    pilot = lambda n: chains.run_chains(key, resume, tuned, observe, data, schedule=schedule(n))

    def wall(n):
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            jax.block_until_ready(pilot(n).draws)
            best = min(best, time.perf_counter() - t0)
        return best

    pilot(2)  # compiles
    w2 = wall(2)
    for n in (6, 12, 24, 48):
        dw = wall(n) - w2
        if dw >= 0.25:
            break
    per_step = max(dw, 1e-3) / ((n - 2) * thin)
    return int(max(9, budget_seconds / per_step // thin) * thin)


def score_sampler(ref: Reference, name: str, build, step_size: float, *, n_chains: int = 256,
                  num_steps: int | None = 6000, thin: int = 10, seed: int = 0, progress: bool = False,
                  budget_seconds: float | None = None, batch_size: int | None = None) -> Scores:
    """Both runs of ``build`` at ``step_size`` and their scores against ``ref``; with
    ``budget_seconds`` (and ``num_steps=None``) each run takes the steps that fill that much
    sampling time (``steps_for_budget``): an equal wall budget for every sampler. A minibatch
    sampler (``samplers.is_minibatch``) needs ``batch_size`` (in [1, P]); its gradients count
    B / P of a full-data gradient in ESS per gradient."""
    if ref.branches_disagree and ref.phases is None:
        raise ValueError("the reference's start families disagree (a coexistence window): its pooled draws are "
                         "not the posterior; build it with phases (bench.reference(..., phases=True)) or pick a "
                         "P outside the window")
    if not (np.isfinite(step_size) and step_size > 0):
        raise ValueError(f"step_size must be a finite number > 0, got {step_size}")
    n_chains = check_size("n_chains", n_chains, 4)
    thin = check_size("thin", thin, 1)
    NetworkSampler(ref.task.hyper, ref.task.activation, build, batch_size).checked(ref.task.P)  # refused before any run
    if (num_steps is None) == (budget_seconds is None):
        raise ValueError(f"give one of num_steps and budget_seconds, got {num_steps} and {budget_seconds}")
    if budget_seconds is not None:
        num_steps = steps_for_budget(ref, build, step_size, budget_seconds, n_chains=n_chains, thin=thin, seed=seed,
                                     batch_size=batch_size)
    num_steps = check_size("num_steps", num_steps, 30)
    if num_steps // thin < 9:
        raise ValueError(f"num_steps / thin must be >= 9 (three thirds of three draws), got {num_steps} / {thin}")
    key = jax.random.key(seed)
    out = {}
    for i, start in enumerate(("exact", "prior")):
        s, wall = run(ref, build, float(step_size), start=start, n_chains=n_chains, num_steps=num_steps, thin=thin,
                      key=jax.random.fold_in(key, i), progress=progress, batch_size=batch_size)
        x, loss = np.asarray(s.draws["cG"], float), np.asarray(s.draws["loss"], float)
        burn = x.shape[1] // 3
        crossings = 0 if ref.phases is None else int(np.abs(np.diff(x >= ref.phases.divide, axis=1)).sum())
        grads = grads_per_step(build, s.info) * (1.0 if batch_size is None else batch_size / ref.task.P)
        # a diverged run (SGHMC at a large step) overflows in the moments: it is reported as
        # non-finite chains, so NumPy's warnings about it would only be noise
        with np.errstate(over="ignore", invalid="ignore"):
            eq = steps_to_equilibrium(x, ref, thin) if start == "prior" else None
            low = steps_to_low_bias(x, ref, thin)
            out[start] = dataclasses.replace(
                _score(start, x[:, burn:], loss[:, burn:], ref, wall, num_steps, int(np.asarray(s.nonfinite).sum()),
                       eq, grads, crossings),
                grads_to_low_bias=None if low is None else float(low * grads))
    sc = Scores(name, float(step_size), n_chains, num_steps, out["exact"], out["prior"], False, batch_size,
                ref.phases is not None)
    return dataclasses.replace(sc, **judged(sc.row(), ref.gate))


def judged(row: dict, gate: dict | None = None) -> dict:
    """The verdict fields of a row judged against a reference's ``gate`` (``judge``):
    ``verdict``, ``verdict_reason``, ``agrees_with_exact`` and ``agrees_within_phases``; a new
    run's and a saved row judged again get them from here alike."""
    v, why = judge(row, gate)
    return {"verdict": v, "verdict_reason": why, "agrees_with_exact": v == "agrees",
            "agrees_within_phases": within_phases(row)}


RUNS = (("", "exact starts"), ("prior_", "prior starts"))


def _z_clause(key: str, label: str, runs=RUNS):
    def clause(row):
        return [f"{run}: {label} {row[p + key]:+.1f} errors" for p, run in runs
                if not abs(row[p + key]) <= Z_MAX]
    return clause


def _sd_clause(row):
    out = []
    for p, run in RUNS:
        r, se = row[p + "sd_ratio"], row[p + "sd_ratio_se"]
        if not (r > 0 and abs(np.log(r)) <= Z_MAX * se):
            out.append(f"{run}: sd ratio {r:.3f} (log {np.log(r) if r > 0 else float('nan'):+.3f}, "
                       f"{Z_MAX:g} errors = {Z_MAX * se:.3f})")
    return out


def _two_phase(clause):
    return lambda row: clause(row) if row.get("two_phase") else []


def _within_clause(row):
    out = []
    for side in ("pooling", "copy"):
        for k, label in (("bias_z", "c_G"), ("loss_bias_z", "loss")):
            v = row[f"{k}_{side}"]
            if not abs(v) <= Z_MAX:
                out.append(f"{side} phase: {label} bias {v:+.1f} errors")
        if not row[f"rhat_{side}"] < RHAT_MAX:
            out.append(f"{side} phase: R-hat {row[f'rhat_{side}']:.3f}")
    return out


# The clauses of the verdict, each a function of a row returning what fails (empty: it holds).
# Named so that a test can remove one and watch a row that breaks only it stop failing.
CLAUSES = {
    "bias": _z_clause("bias_z", "bias of c_G"),
    "sd": _sd_clause,
    "loss": _z_clause("loss_bias_z", "bias of the loss"),
    "rhat": lambda row: [] if row["rhat"] < RHAT_MAX else [f"exact starts: R-hat {row['rhat']:.3f} >= {RHAT_MAX}"],
    "equilibrium": lambda row: ([] if row["prior_steps_to_equilibrium"] is not None
                                else ["prior starts: never reached the exact mean"]),
    "phase_weight": _two_phase(lambda row: [] if abs(row["prior_phase_weight_z"]) <= Z_MAX else
                               [f"prior starts: copy weight {row['prior_phase_weight']:.2f} "
                                f"({row['prior_phase_weight_z']:+.1f} errors from the free energy's)"]),
    "within_phases": _two_phase(_within_clause),
}


def _clear_failures(row: dict) -> list[str]:
    """Failures no ESS can excuse: non-finite chains, moments that overflow (chains diverging
    to values still finite in float64: their error, and so their z, is not finite), no chain
    moving."""
    out = []
    for p, run in RUNS:
        if row[p + "nonfinite"]:
            out.append(f"{run}: {row[p + 'nonfinite']} non-finite chains")
        elif not (np.isfinite(row[p + "bias_z"]) and np.isfinite(row[p + "loss_bias_z"])):
            out.append(f"{run}: diverging chains (the moments overflow: bias of c_G {row[p + 'bias']:.3g}, "
                       f"of the loss {row[p + 'loss_bias']:.3g})")
        elif row.get(p + "moved", -1) == 0:
            out.append(f"{run}: no chain moved")
    return out


def _low_ess(row: dict) -> list[str]:
    out = []
    for p, run in RUNS:
        for k, label in (("ess_bulk", "bulk ESS of c_G"), ("ess_tail", "tail ESS of c_G"),
                         ("loss_ess_bulk", "bulk ESS of the loss"), ("loss_ess_tail", "tail ESS of the loss")):
            v = row.get(p + k, float("nan"))
            if not v >= ESS_MIN:
                out.append(f"{run}: {label} {v:.0f}")
    return out


def judge(row: dict, gate: dict | None = None) -> tuple[str, str]:
    """``(verdict, reason)`` of a ``Scores.row()`` against a reference with ``gate``
    (``task.reference_gate``'s record; None: not checked), the module docstring's rules:
    a reference that fails its gate, or a run with a bulk or tail ESS below ``ESS_MIN``, makes
    ``inconclusive`` unless a clear failure (non-finite draws, no chain moving) makes
    ``disagrees``; with enough ESS any failed clause of ``CLAUSES`` makes ``disagrees``."""
    clear = _clear_failures(row)  # the sampler's own failures: no reference is needed to see them
    if clear:
        return "disagrees", "; ".join(clear)
    if gate is not None and not gate.get("ok", False):
        return "inconclusive", f"the reference fails its gate: {gate.get('reason', 'no gate recorded')}"
    failed = [msg for clause in CLAUSES.values() for msg in clause(row)]
    low = _low_ess(row)
    if low:
        return "inconclusive", (f"too few effective draws (< {ESS_MIN:.0f}): " + "; ".join(low)
                                + (f" (failing so far: {'; '.join(failed)})" if failed else ""))
    if failed:
        return "disagrees", "; ".join(failed)
    return "agrees", "every clause holds with enough effective draws"


def verdict(row: dict, gate: dict | None = None) -> str:
    """``judge``'s verdict alone: ``"agrees"``, ``"disagrees"`` or ``"inconclusive"``."""
    return judge(row, gate)[0]


def within_phases(row: dict) -> bool | None:
    """Two-phase rows: the stationary run (from exact starts in both phases) keeps both phases
    (each holds draws), in each the bias of c_G and of the loss are within ``Z_MAX`` errors and
    R-hat is below ``RHAT_MAX`` (a chain that never moves fails here): the sampler is right
    inside each phase, whether or not it crosses between them. None for a one-phase reference."""
    if not row.get("two_phase"):
        return None
    return bool(not _within_clause(row) and row["nonfinite"] == 0)


__all__ = ["BIAS2_MAX", "CLAUSES", "ESS_MIN", "judge", "judged", "phase_scores", "run", "RunScores", "score_sampler",
           "Scores", "SCORES_VERSION", "steps_for_budget", "steps_to_equilibrium", "steps_to_low_bias", "RHAT_MAX", "verdict",
           "VERDICTS", "within_phases", "Z_MAX"]
