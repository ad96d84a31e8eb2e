"""Bring your own sampler: score any blackjax-shaped kernel against the exact posterior of the
copy order parameter (``scripts/bench_samplers.py``, docs/leaderboard.md).

``task.Task`` and ``task.reference`` (the exact answer, cached), ``samplers`` (the registry
and import paths), ``score.score_sampler`` (the runs, the scores and the verdict).
"""
from copyjax.bench.samplers import FULL_BATCH, is_minibatch, resolve, SAMPLERS
from copyjax.bench.score import score_sampler, Scores, verdict
from copyjax.bench.task import reference, Reference, Task

__all__ = ["FULL_BATCH", "is_minibatch", "reference", "Reference", "resolve", "SAMPLERS", "score_sampler", "Scores", "Task",
           "verdict"]
