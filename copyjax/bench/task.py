"""A benchmark task and its exact reference: the posterior of the copy order parameter on one
data set, from the exact marginal of G (W integrated out), computed once and cached on disk.

A task is (L, V, activation, P, data seed). Its reference holds the exact posterior's pooled
draws of the copy order parameter (a_G for softmax, |c_G| for linear) and of the training
loss, their summaries, and exact joint draws of (W, G) (G from the exact chains' final states,
W from its Gaussian conditional) that start the stationary runs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import results
from copyjax._checks import check_activation, check_size
from copyjax.data import sample_tokens, sufficient_stats
from copyjax.hyper import default_hyper
from copyjax.schema import Summary

REFERENCE_VERSION = 1  # bump when the reference's computation changes: old cache files are ignored


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
    the posterior, and scores against them are refused)."""

    task: Task
    cG: np.ndarray
    loss: np.ndarray
    summary_cG: Summary
    summary_loss: Summary
    W: np.ndarray
    G: np.ndarray
    branches_disagree: bool

    def quantiles(self, qs=(0.05, 0.25, 0.5, 0.75, 0.95)) -> dict:
        return {float(q): float(np.quantile(self.cG, q)) for q in qs}


def _cache_key(task: Task, n_chains: int, num_steps: int, seed: int) -> str:
    from copyjax import __version__

    return results.config_hash({"task": list(task), "n_chains": n_chains, "num_steps": num_steps, "seed": seed,
                                "reference_version": REFERENCE_VERSION, "copyjax": __version__,
                                "x64": bool(jax.config.jax_enable_x64)})


def reference(task: Task, *, n_chains: int = 32, num_steps: int = 1500, seed: int = 0,
              cache_dir: str | None = None, progress: bool = False) -> Reference:
    """The exact reference of ``task``: adaptive MALA on exp(-S_P(G))
    (``exact_posterior.sample_exact_posterior``, half the chains from the prior, half from the
    copy pattern), a third burn-in, every fifth draw kept. Cached in ``cache_dir`` (default
    ``~/.cache/copyjax/bench``) under a hash of the task, the sizes, the seed, copyjax's version
    and the float width; a cached reference is read back instead of recomputed."""
    from copyjax import exact_posterior
    from copyjax.point.exact_chains import exact_joint_starts

    task = task.checked()
    n_chains = check_size("n_chains", n_chains, 4)
    num_steps = check_size("num_steps", num_steps, 30)
    cache_dir = cache_dir or os.path.join(os.path.expanduser("~"), ".cache", "copyjax", "bench")
    base = os.path.join(cache_dir, f"reference_{_cache_key(task, n_chains, num_steps, seed)}")
    if os.path.exists(base + ".json"):
        meta = results.read_json(base + ".json")
        with np.load(base + ".npz") as z:
            return Reference(task, z["cG"], z["loss"], Summary.from_json(meta["summary_cG"]),
                             Summary.from_json(meta["summary_loss"]), z["W"], z["G"], meta["branches_disagree"])
    stats, h = task.stats(), task.hyper
    key = jax.random.key(seed)
    run = exact_posterior.sample_exact_posterior(key, stats, h, task.activation, n_chains=n_chains,
                                                 num_steps=num_steps, thin=5, progress=progress, desc="reference")
    summ = exact_posterior.summarize_exact(run, keys=("cG", "loss"))
    keep = ~run.stuck & ~np.asarray(run.samples.nonfinite)
    cG = np.asarray(run.samples.draws["cG"])[keep].ravel()
    loss = np.asarray(run.samples.draws["loss"])[keep].ravel()
    joint = exact_joint_starts(jax.random.fold_in(key, 1), run, n_chains, stats, h, task.activation)
    ref = Reference(task, cG, loss, _plain(summ.cG), _plain(summ.loss), np.asarray(joint.W), np.asarray(joint.G),
                    bool(summ.branches_disagree))
    os.makedirs(cache_dir, exist_ok=True)
    results.atomic_savez(base + ".npz", cG=ref.cG, loss=ref.loss, W=ref.W, G=ref.G)
    results.write_json(base + ".json", {"task": task._asdict(), "summary_cG": ref.summary_cG.to_json(),
                                        "summary_loss": ref.summary_loss.to_json(),
                                        "branches_disagree": ref.branches_disagree})
    return ref


def _plain(stat) -> Summary:
    """The pooled ``Summary`` part of an ``ExactStat``."""
    return Summary(**{k: getattr(stat, k) for k in Summary.__dataclass_fields__})


__all__ = ["Reference", "reference", "REFERENCE_VERSION", "Task"]
