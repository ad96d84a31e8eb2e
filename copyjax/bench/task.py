"""A benchmark task and its exact reference: the posterior of the copy order parameter on one
data set, from the exact marginal of G (W integrated out), computed once and cached on disk.

A task is (L, V, activation, P, data seed). Its reference holds the exact posterior's pooled
draws of the copy order parameter (a_G for softmax, |c_G| for linear) and of the training
loss, their summaries, and exact joint draws of (W, G) (G from the exact chains' final states,
W from its Gaussian conditional) that start the stationary runs.

Inside a softmax coexistence window (or with ``phases=True``) the reference is the mixture of
the two phases (``bench.phases``): the weights from the free energy (umbrella + MBAR), each
phase's statistics from the exact draws on its side, the pooled draws resampled to the
weights, the joint starts allocated to the phases by the weights.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import chains, results
from copyjax._checks import check_activation, check_size
from copyjax.bench.phases import allocate, mixture_draws, mixture_summary, PHASES, phase_summary, Phases
from copyjax.data import sample_tokens, sufficient_stats
from copyjax.hyper import auto_step_size, default_hyper
from copyjax.schema import Summary

REFERENCE_VERSION = 5  # bump when the reference's computation changes: old cache files are ignored


class Task(NamedTuple):
    """``L``, ``V`` >= 2; ``activation`` softmax or linear; ``P`` >= 1 training sequences drawn
    with ``jax.random.key(data_seed)``; default hyperparameters (``default_hyper``)."""

    L: int
    V: int
    activation: str
    P: int
    data_seed: int = 0

    def checked(self) -> "Task":
        check_activation(self.activation)
        if int(self.data_seed) < 0:
            raise ValueError(f"data_seed must be >= 0, got {self.data_seed}")
        return Task(check_size("L", self.L, 2), check_size("V", self.V, 2), self.activation,
                    check_size("P", self.P, 1), int(self.data_seed))

    @property
    def hyper(self):
        return default_hyper(self.activation, self.L)

    @property
    def eps0(self) -> float:
        """The task's reference Langevin step (``hyper.auto_step_size``: 0.05 / lambda_W); the
        bench's step sizes are multiples of it."""
        return auto_step_size(self.P, self.V, self.hyper)

    def tokens(self) -> jax.Array:
        """``(P, L)`` int32 training sequences."""
        return sample_tokens(jax.random.key(self.data_seed), self.P, self.L, self.V)

    def stats(self) -> jax.Array:
        """``(L, L, V, V)`` pair counts, in the default float type (float64 under x64)."""
        return sufficient_stats(self.tokens(), self.V).astype(jax.dtypes.canonicalize_dtype(jnp.float64))


@dataclass(frozen=True)
class Reference:
    """The exact answer for a task. ``cG``, ``loss``: ``(n,)`` pooled exact draws;
    ``summary_cG``, ``summary_loss``: their ``Summary`` (mean, sd, ESS-based mcse, R-hat);
    ``W: (m, V, V)``, ``G: (m, L, L)`` exact joint draws; ``branches_disagree``: the exact
    chains' start families disagree (a softmax coexistence window: pooled draws are then not
    the posterior: scores against them need ``phases``); ``phases``: the two phases'
    weights and statistics (``bench.phases.Phases``) where the reference is their mixture
    (``cG``, ``loss``, the summaries, ``W``, ``G``), else None."""

    task: Task
    cG: np.ndarray
    loss: np.ndarray
    summary_cG: Summary
    summary_loss: Summary
    W: np.ndarray
    G: np.ndarray
    branches_disagree: bool
    phases: Phases | None = None
    gate: dict | None = None  # reference_gate's record: its R-hat, ESS and whether it may judge

    def quantiles(self, qs=(0.05, 0.25, 0.5, 0.75, 0.95)) -> dict:
        return {float(q): float(np.quantile(self.cG, q)) for q in qs}


REF_RHAT_MAX = 1.01  # posteriordb's reference definition
REF_ESS_MIN = 400  # bulk and tail ESS of c_G and of the loss (Vehtari et al. 2021)


def reference_gate(cG: np.ndarray, loss: np.ndarray, group: np.ndarray | None = None, families: str = "",
                   phases: bool = False) -> dict:
    """Whether exact draws ``cG, loss: (chain, draw)`` may serve as a reference, held to
    posteriordb's standard: rank-normalised R-hat below ``REF_RHAT_MAX`` and bulk and tail ESS at
    least ``REF_ESS_MIN``, for c_G and the loss, within each group of chains (``group: (chain,)``
    integer labels: for a two-phase reference the phase a chain stays in, -1 for a chain that
    crosses between the phases, whose draws lie on both sides and are left out of the gate;
    one group otherwise; the worst group counts). ``phases``: ``group`` labels the two phases
    (0 pooling, 1 copy), and each must hold at least two staying chains, else the gate fails
    (a phase whose draws no R-hat checks cannot serve). ``families``: what the exact chains'
    families say, named in the reason where the gate fails. Returns the record ``report.json``
    carries: ``n_draws``, ``rhat``, ``ess_bulk``, ``ess_tail``, the loss's ``loss_rhat``,
    ``loss_ess_bulk``, ``loss_ess_tail``, ``chains_left_out`` (the crossing chains), ``ok`` and
    ``reason``."""
    cG, loss = np.asarray(cG, float), np.asarray(loss, float)
    group = np.zeros(len(cG), int) if group is None else np.asarray(group, int)
    worst = {}
    for name, x in (("", cG), ("loss_", loss)):
        rh, eb, et = [], [], []
        for g in np.unique(group[group >= 0]):
            xg = x[group == g]
            if len(xg) < 2:
                continue  # one chain has no R-hat (with ``phases``, below, the gate then fails)
            rh.append(chains.summarize(xg).rhat)
            b, t = chains.ess_bulk_tail(xg)
            eb.append(b)
            et.append(t)
        bad = lambda v: not np.isfinite(v)
        worst[name + "rhat"] = float("inf") if not rh or any(map(bad, rh)) else float(max(rh))
        worst[name + "ess_bulk"] = float("nan") if not eb or any(map(bad, eb)) else float(min(eb))
        worst[name + "ess_tail"] = float("nan") if not et or any(map(bad, et)) else float(min(et))
    why = [f"{int((group == k).sum())} chain(s) stay in the {n} phase (at least 2 needed)"
           for k, n in enumerate(PHASES) if phases and (group == k).sum() < 2]
    for name, label in (("", "c_G"), ("loss_", "the loss")):
        if not worst[name + "rhat"] < REF_RHAT_MAX:
            why.append(f"R-hat of {label} {worst[name + 'rhat']:.3f} >= {REF_RHAT_MAX}")
        for kind in ("bulk", "tail"):
            v = worst[f"{name}ess_{kind}"]
            if not v >= REF_ESS_MIN:
                why.append(f"{kind} ESS of {label} {v:.0f} < {REF_ESS_MIN}")
    left_out = int((group < 0).sum())
    within = "" if not phases else ("; within each phase, over the chains that stay in it"
                                    + (f" ({left_out} crossing chains left out)" if left_out else ""))
    reason = f"meets R-hat < 1.01 and ESS >= 400 (c_G and the loss{within})" if not why else (
        "; ".join(why) + (f" ({families})" if families else "") + ": run the reference longer (--ref-steps, "
        "--ref-chains) or choose another P")
    return {"n_draws": int(cG.size), **worst, "chains_left_out": left_out, "ok": not why,
            "reason": reason}


def _two_phase_gate(cG: np.ndarray, loss: np.ndarray, side: np.ndarray, families: str) -> dict:
    """The gate of a two-phase reference (its weights from the free energy, each phase's
    statistics from the exact draws on its side; ``side: (chain, draw)`` bool, in the copy
    phase). Chains that mix across the phases pass as one group. Where none crosses (a high
    barrier) or too few to mix (a low one, as at L = 20), the gate is within each phase over
    the chains that stay in it; the crossing chains, on both sides, are left out of it (their
    draws still count in the phases' statistics). Where both fail, both reasons are given and
    the numbers are the phases' (all chains' R-hat and bulk ESS beside them). ``scope`` says
    which the numbers are."""
    stays = np.all(side == side[:, :1], axis=1)
    within = reference_gate(cG, loss, np.where(stays, side[:, 0].astype(int), -1), families, phases=True)
    within["scope"] = "within each phase"
    if stays.all():
        return within
    mixed = reference_gate(cG, loss, families=families) | {"scope": "over all chains"}
    if mixed["ok"] or within["ok"]:
        return mixed if mixed["ok"] else within
    return within | {"reason": f"over all chains: {mixed['reason']}; within each phase: {within['reason']}",
                     "all_chains_rhat": mixed["rhat"], "all_chains_ess_bulk": mixed["ess_bulk"]}


def _families(summ) -> str:
    """The exact chains' families in words: start families (prior / copy means of c_G, nested
    R-hat) and, for linear attention, the sign families (chains and mean c_G of each)."""
    g = summ.cG
    out = (f"start families: c_G {g.prior.mean:.4f} from the prior, {g.copy.mean:.4f} from the copy pattern, "
           f"nested R-hat {g.nested_rhat:.3f}")
    f = summ.sign_families
    if f.same.n and f.opposite.n:
        out += (f"; sign families: {f.same.n} chains g s > 0 (c_G {f.same.cG:.4f}), {f.opposite.n} chains "
                f"g s < 0 (c_G {f.opposite.cG:.4f})")
    return out


def _cache_key(task: Task, n_chains: int, num_steps: int, seed: int, phases, phase_steps: int,
               phase_chains: int) -> str:
    from copyjax import __version__

    return results.config_hash({"task": list(task), "n_chains": n_chains, "num_steps": num_steps, "seed": seed,
                                "phases": phases, "phase_steps": phase_steps, "phase_chains": phase_chains,
                                "reference_version": REFERENCE_VERSION, "copyjax": __version__,
                                "x64": bool(jax.config.jax_enable_x64)})


def reference(task: Task, *, n_chains: int = 32, num_steps: int = 1500, seed: int = 0,
              cache_dir: str | None = None, progress: bool = False, phases: bool | None = None,
              phase_steps: int = 900, phase_chains: int = 1) -> Reference:
    """The exact reference of ``task``: adaptive MALA on exp(-S_P(G))
    (``exact_posterior.sample_exact_posterior``, half the chains from the prior, half from the
    copy pattern), a third burn-in, every fifth draw kept.

    ``phases``: None (default) builds the two-phase reference where the start families
    disagree (softmax only: a coexistence window), True always (softmax; e.g. at the
    equal-mass P where the chains still cross), False never. The phase weights are
    ``free_energy.softmax_phase_weights`` (``phase_chains`` chains of ``phase_steps`` umbrella
    steps per window: the weights' error falls as 1 / sqrt(their product)) on the
    task's counts; each phase's statistics are ``phases.phase_summary`` of the exact draws on
    its side of the divide.

    Cached in ``cache_dir`` (default ``~/.cache/copyjax/bench``) under a hash of the task, the
    sizes, the seed, the phase settings, copyjax's version and the float width; a cached
    reference is read back instead of recomputed."""
    from copyjax import exact_posterior
    from copyjax.point.exact_chains import exact_joint_starts

    task = task.checked()
    n_chains = check_size("n_chains", n_chains, 4)
    num_steps = check_size("num_steps", num_steps, 30)
    phase_steps = check_size("phase_steps", phase_steps, 30)
    phase_chains = check_size("phase_chains", phase_chains, 1)
    if phases not in (None, True, False):
        raise ValueError(f"phases must be None, True or False, got {phases!r}")
    if phases and task.activation != "softmax":
        raise ValueError("phases=True is for softmax (its first-order coexistence window); linear attention's "
                         f"transition is continuous, got activation={task.activation!r}")
    cache_dir = cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "copyjax", "bench")
    base = os.path.join(cache_dir, f"reference_{_cache_key(task, n_chains, num_steps, seed, phases, phase_steps, phase_chains)}")
    if os.path.exists(base + ".json"):
        meta = results.read_json(base + ".json")
        with np.load(base + ".npz") as z:
            return Reference(task, z["cG"], z["loss"], Summary.from_json(meta["summary_cG"]),
                             Summary.from_json(meta["summary_loss"]), z["W"], z["G"], meta["branches_disagree"],
                             None if meta.get("phases") is None else Phases.from_json(meta["phases"]), meta["gate"])
    stats, h = task.stats(), task.hyper
    key = jax.random.key(seed)
    run = exact_posterior.sample_exact_posterior(key, stats, h, task.activation, n_chains=n_chains,
                                                 num_steps=num_steps, thin=5, progress=progress, desc="reference")
    summ = exact_posterior.summarize_exact(run, keys=("cG", "loss"))
    keep = ~run.stuck & ~np.asarray(run.samples.nonfinite)
    cG_cd = np.asarray(run.samples.draws["cG"], float)[keep]
    loss_cd = np.asarray(run.samples.draws["loss"], float)[keep]
    joint = exact_joint_starts(jax.random.fold_in(key, 1), run, n_chains, stats, h, task.activation)
    W, G = np.asarray(joint.W), np.asarray(joint.G)
    two = phases if phases is not None else (task.activation == "softmax" and bool(summ.branches_disagree))
    if two:
        ph = _phases(task, stats, jax.random.fold_in(key, 2), cG_cd, loss_cd, phase_steps, phase_chains, progress)
        in_copy = cG_cd.ravel() >= ph.divide
        pick = mixture_draws(cG_cd.ravel(), in_copy, ph.weights[1], cG_cd.size)
        cG, loss = cG_cd.ravel()[pick], loss_cd.ravel()[pick]
        sc, sl = (mixture_summary(ph.weights, ph.weights_sd, getattr(ph, k)) for k in ("cG", "loss"))
        W, G = _allocate_starts(W, G, ph)
        gate = _two_phase_gate(cG_cd, loss_cd, cG_cd >= ph.divide, _families(summ))
    else:
        ph, cG, loss, sc, sl = None, cG_cd.ravel(), loss_cd.ravel(), _plain(summ.cG), _plain(summ.loss)
        gate = reference_gate(cG_cd, loss_cd, families=_families(summ))
    ref = Reference(task, cG, loss, sc, sl, W, G, bool(summ.branches_disagree), ph, gate)
    os.makedirs(cache_dir, exist_ok=True)
    results.atomic_savez(base + ".npz", cG=ref.cG, loss=ref.loss, W=ref.W, G=ref.G)
    results.write_json(base + ".json", {"task": task._asdict(), "summary_cG": ref.summary_cG.to_json(),
                                        "summary_loss": ref.summary_loss.to_json(),
                                        "branches_disagree": ref.branches_disagree,
                                        "phases": None if ph is None else ph.to_json(), "gate": gate})
    return ref


def _phases(task: Task, stats, key, cG, loss, phase_steps: int, phase_chains: int, progress: bool) -> Phases:
    """The two phases of ``task``'s posterior: weights from the free energy on its counts
    ``stats`` (in float32, as ``scripts/free_energy.py`` runs it), statistics from the exact
    draws ``cG, loss: (chain, draw)`` on each side of the divide."""
    from copyjax import free_energy

    pr, _, _ = free_energy.softmax_phase_weights(key, stats.astype(np.float32), task.hyper,
                                                 num_steps=phase_steps, chains_per_window=phase_chains,
                                                 progress=progress, desc="phase weights")
    win = free_energy.softmax_windows(task.L)
    sides = (cG < win.divide, cG >= win.divide)
    return Phases(float(win.divide), tuple(map(float, pr.weights)), tuple(map(float, pr.weights_sd)),
                  float(pr.log_ratio), float(pr.log_ratio_sd), tuple(phase_summary(cG, s) for s in sides),
                  tuple(phase_summary(loss, s) for s in sides))


def _allocate_starts(W, G, ph: Phases):
    """The exact joint draws ``W: (m, V, V)``, ``G: (m, L, L)`` reordered (with repeats) so
    that every leading block of chains holds the phases in the proportion of their weights."""
    from copyjax.model import attention
    from copyjax.order import reported_order_parameters

    cG = np.asarray(jax.vmap(lambda g: reported_order_parameters(attention(g, "softmax"), "softmax")["cG"])(
        jax.numpy.asarray(G, jax.dtypes.canonicalize_dtype(np.float64))))  # float64 under x64, as the counts
    copy = allocate(len(G), ph.weights[1])
    idx = np.empty(len(G), int)
    for side, want in zip(PHASES, (~copy, copy)):
        pool = np.flatnonzero((cG >= ph.divide) == (side == "copy"))
        if want.any() and not pool.size:
            raise ValueError(f"no exact chain ended in the {side} phase: run the reference with more chains")
        idx[want] = pool[np.arange(want.sum()) % max(pool.size, 1)]
    return W[idx], G[idx]


def _plain(stat) -> Summary:
    """The pooled ``Summary`` part of an ``ExactStat``."""
    return Summary(**{k: getattr(stat, k) for k in Summary.__dataclass_fields__})


__all__ = ["Reference", "reference", "reference_gate", "REF_ESS_MIN", "REF_RHAT_MAX", "REFERENCE_VERSION", "Task"]
