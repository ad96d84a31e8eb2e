"""Bring your own sampler: score any blackjax-shaped kernel against the exact posterior of the
copy order parameter (``scripts/bench_samplers.py``, docs/leaderboard.md).

``task.Task`` and ``task.reference`` (the exact answer, cached; inside a softmax coexistence
window the mixture of its two phases, ``phases``), ``samplers`` (the registry and import
paths), ``score.score_sampler`` (the runs, the scores and the verdict).
"""
from copyjax.samplers.registry import FULL_BATCH, is_minibatch, resolve, SAMPLERS
from copyjax.bench.phases import Phases
from copyjax.bench.score import judge, score_sampler, Scores, verdict, within_phases
from copyjax.bench.task import reference, Reference, Task

__all__ = ["FULL_BATCH", "is_minibatch", "judge", "Phases", "reference", "Reference", "resolve", "SAMPLERS", "score_sampler",
           "Scores", "Task", "verdict", "within_phases"]
