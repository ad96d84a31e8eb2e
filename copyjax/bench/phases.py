"""Two phases of one posterior: the softmax coexistence window's pooling and copy phases.

Inside the window the exact chains' start families disagree (the barrier keeps each chain in
its phase), so their pooled draws are not the posterior: the phase weights come from the free
energy (umbrella sampling + MBAR, ``free_energy.softmax_phase_weights``), each phase's
statistics from the exact draws on its side of the divide (a_G of the pattern at
xi = log(L) / 2), and the posterior is their mixture. A sampler is scored against the mixture
and, phase by phase, against each phase's statistics.
"""
from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np

from copyjax import chains
from copyjax.schema import Summary

PHASES = ("pooling", "copy")


class Phases(NamedTuple):
    """The phases of a task's posterior. ``divide``: a_G between the phases (a draw with
    a_G >= divide is in the copy phase); ``weights``, ``weights_sd``: (pooling, copy) masses
    and their MBAR errors; ``log_ratio`` +- ``log_ratio_sd``: log(copy / pooling); ``cG``,
    ``loss``: (pooling, copy) ``Summary`` of the exact draws in each phase (``phase_summary``)."""

    divide: float
    weights: tuple
    weights_sd: tuple
    log_ratio: float
    log_ratio_sd: float
    cG: tuple
    loss: tuple

    def to_json(self) -> dict:
        return {"divide": self.divide, "weights": list(self.weights), "weights_sd": list(self.weights_sd),
                "log_ratio": self.log_ratio, "log_ratio_sd": self.log_ratio_sd,
                "cG": [s.to_json() for s in self.cG], "loss": [s.to_json() for s in self.loss]}

    @classmethod
    def from_json(cls, d: dict) -> "Phases":
        return cls(d["divide"], tuple(d["weights"]), tuple(d["weights_sd"]), d["log_ratio"], d["log_ratio_sd"],
                   tuple(Summary.from_json(s) for s in d["cG"]), tuple(Summary.from_json(s) for s in d["loss"]))


def phase_summary(x: np.ndarray, in_phase: np.ndarray) -> Summary:
    """``Summary`` of the draws of ``x: (chain, draw)`` where ``in_phase: (chain, draw)``: their
    mean m and sd; its error by the ratio estimator's linearisation: m - m_true ~ mean(y) / p
    with y = (x - m) 1[in phase] and p the phase's fraction, so mcse = mcse(y) / p with
    mcse(y) from y's ESS over the chains (chains that stay out of the phase enter as zeros);
    ``ess`` = (sd / mcse)^2, ``rhat`` and ``split_rhat`` y's (the rank-normalised ``rhat`` counts
    the zeros of chains outside the phase as a disagreement; ``split_rhat`` does not). ``n_chains``: chains with a draw in the phase;
    no draw in the phase: NaNs."""
    x, inside = np.asarray(x, float), np.asarray(in_phase, bool)
    nan = float("nan")
    n = int(inside.any(axis=1).sum())
    if not inside.any():
        return Summary(n_chains=0, n_excluded=0, mean=nan, sd=nan, mcse=nan, rhat=nan, split_rhat=nan, ess=nan)
    xs = x[inside]
    m = float(xs.mean())
    sd = float(xs.std(ddof=1)) if xs.size > 1 else 0.0
    with warnings.catch_warnings():
        # chains outside the phase are constant (zeros): numpyro's autocorrelation divides 0 by 0 for them
        warnings.simplefilter("ignore", RuntimeWarning)
        s = chains.summarize(np.where(inside, x - m, 0.0))
    mcse = s.mcse / float(inside.mean())
    ess = (sd / mcse) ** 2 if mcse > 0 else nan
    return Summary(n_chains=n, n_excluded=0, mean=m, sd=sd, mcse=mcse, rhat=s.rhat, split_rhat=s.split_rhat, ess=ess)


def mixture_summary(weights, weights_sd, parts) -> Summary:
    """The ``Summary`` of the mixture sum_k w_k p_k from each phase's ``parts`` (Summaries):
    mean sum w_k m_k, variance sum w_k (sd_k^2 + m_k^2) - mean^2 (the law of total variance),
    mcse^2 = sum w_k^2 mcse_k^2 + (m_copy - m_pooling)^2 sd(w_copy)^2 (the weights' error moves
    the mean along the gap), ``ess`` = (sd / mcse)^2; R-hat is not defined (NaN)."""
    w = np.asarray(weights, float)
    m = np.array([p.mean for p in parts])
    sd = np.array([p.sd for p in parts])
    mc = np.array([p.mcse for p in parts])
    # a phase without exact draws can only be left out where its weight is negligible
    use = np.isfinite(m) & np.isfinite(sd) & np.isfinite(mc)
    if np.any(~use & (w > 1e-3)):
        raise ValueError(f"a phase of weight {w[~use].max():.3g} has no exact draws: run the reference longer")
    mean = float(np.sum(w[use] * m[use]))
    var = float(np.sum(w[use] * (sd[use] ** 2 + m[use] ** 2)) - mean ** 2)
    gap = (m[1] - m[0]) if use.all() else 0.0
    mcse = float(math.sqrt(np.sum(w[use] ** 2 * mc[use] ** 2) + gap ** 2 * float(weights_sd[1]) ** 2))
    sd_mix = math.sqrt(max(var, 0.0))
    nan = float("nan")
    return Summary(n_chains=int(sum(p.n_chains for p in parts)), n_excluded=0, mean=mean, sd=sd_mix, mcse=mcse,
                   rhat=nan, split_rhat=nan, ess=(sd_mix / mcse) ** 2 if mcse > 0 else nan)


def allocate(n: int, w_copy: float) -> np.ndarray:
    """``(n,)`` bool, True for a copy-phase chain: round(k w_copy) of every first k chains (so
    any leading block of chains, e.g. a run with fewer chains, has the phase weights)."""
    k = np.arange(n + 1)
    return np.diff(np.floor(k * float(w_copy) + 0.5)).astype(bool)


def mixture_draws(x: np.ndarray, in_copy: np.ndarray, w_copy: float, n: int, seed: int = 0) -> np.ndarray:
    """``(n,)`` indices into ``x`` (flat draws, ``in_copy`` their phase) that resample it to the
    copy weight ``w_copy``: round(n w_copy) from the copy draws, the rest from the pooling
    ones, with replacement (a fixed ``seed``)."""
    rng = np.random.default_rng(seed)
    n_copy = int(round(n * float(w_copy)))
    pick = []
    for side, k in ((~in_copy, n - n_copy), (in_copy, n_copy)):
        idx = np.flatnonzero(side)
        if k and not idx.size:
            raise ValueError("a phase of nonzero weight has no exact draws: run the reference longer")
        pick.append(rng.choice(idx, size=k, replace=True) if k else np.zeros(0, int))
    return np.concatenate(pick)


__all__ = ["allocate", "mixture_draws", "mixture_summary", "PHASES", "phase_summary", "Phases"]
