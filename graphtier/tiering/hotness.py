"""Hotness scores by name: one entry point over the graph scores and the measured ranking.

``compute_scores(dataset, method)`` dispatches to ``degree``, ``rpr``, ``wrpr``, ``fwr`` and
``fwr-sum`` (:mod:`graphtier.graph.scores`, topology plus the training split and, for ``fwr``, the
fanouts and batch size; the seeds are the training nodes or, with ``--task link``, the training pairs'
endpoints and negatives: :mod:`graphtier.tiering.seeds`) and to ``presample``, which runs the real training
sampler for some epochs and counts feature reads (:mod:`graphtier.tiering.reads`: the measured
ranking the others approximate). All scores are float64 [N] numpy arrays on the CPU; higher is hotter.

On a typed dataset the scores are over the global ids of every node type (:mod:`graphtier.dataset.schema`):
``degree`` counts the neighbour lists of every relation a node appears in, ``fwr`` / ``fwr-sum`` propagate the
target type's training seeds through every relation (:mod:`graphtier.graph.typed_scores`), ``presample``
replays the typed sampler (:mod:`graphtier.tiering.typed_reads`); ``rpr`` and
``wrpr`` (one damped walk over one node set) are refused there, as is ``--task link``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphtier._choices import SCORE_METHODS
from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError
from graphtier.graph.scores import (
    DEFAULT_DAMPING,
    DEFAULT_RPR_ITERATIONS,
    DEFAULT_RPR_TOL,
    DEFAULT_WRPR_ITERATIONS,
    check_iterations,
    degree_scores,
    fanout_weighted_reads,
    reverse_pagerank,
    seeded_fanout_weighted_reads,
    weighted_reverse_pagerank,
)
from graphtier.graph.typed_scores import typed_fanout_weighted_reads
from graphtier.tiering.replay import DEFAULT_REPLAY, Replay, replay_reads

TYPED_SCORE_METHODS = ("degree", "fwr", "fwr-sum", "presample")
"""The scores defined on a typed dataset (see the module)."""


@dataclass
class ScoreResult:
    """Scores of one method. ``scores``: float64 [N] (CPU numpy); ``params``: the options used;
    ``seconds``: wall time; ``iterations``: PageRank rounds run (0 for degree/presample)."""

    method: str
    scores: np.ndarray
    params: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    iterations: int = 0
    last_change: float | None = None

    def convergence_warning(self, tol: float) -> str | None:
        """One line when rpr stopped at its iteration cap with the last L1 change still above ``tol``.

        wrpr runs a fixed number of rounds by design (Data Tiering, Alg. 1), so it never warns."""
        if self.method != "rpr" or self.last_change is None or not self.last_change > tol:
            return None
        return (
            f"{self.method} stopped at its iteration cap ({self.iterations}) with the last L1 change "
            f"{self.last_change:.2e} above --tol {tol:.2e}: the scores have not converged (raise --iterations)"
        )


def compute_scores(
    dataset: Dataset,
    method: str,
    *,
    damping: float = DEFAULT_DAMPING,
    tol: float = DEFAULT_RPR_TOL,
    iterations: int | None = None,
    replay: Replay = DEFAULT_REPLAY,
    progress: Progress = NO_PROGRESS,
    option: str = "method",
) -> ScoreResult:
    """Score every node of ``dataset`` with ``method`` (one of :data:`SCORE_METHODS`; errors name it as
    ``option``: ``method=`` by default, ``--score`` for the commands that call it ``score``).

    ``iterations`` defaults to 100 (the cap) for ``rpr`` and 5 for ``wrpr``. ``replay``
    (:class:`~graphtier.tiering.replay.Replay`): its ``fanouts`` (a typed dataset's overridden per relation by
    ``relation_fanouts``) and ``batch_size`` are used by ``fwr``, ``fwr-sum`` and ``presample``, its ``epochs`` and
    ``seed`` by ``presample`` only; its ``seeds`` are the training seeds ``wrpr``, ``fwr``, ``fwr-sum`` and
    ``presample`` start from (training nodes, or ``--task link``'s pairs with their negatives; batch size in
    pairs). Returns a :class:`ScoreResult` whose ``scores`` are float64 [N] on the CPU. ``progress`` reports the
    long passes (PageRank rounds, fwr hops, the presample replay).
    """
    if method not in SCORE_METHODS:
        raise OptionError(
            f"{{{option}}}: expected one of {', '.join(SCORE_METHODS)}, found {method!r}", options=(option,)
        )
    indptr, indices = np.asarray(dataset.indptr), dataset.indices
    if dataset.is_hetero:
        _check_typed(dataset, method, option)
    replay.check_relations(dataset)
    seeds, batch_size = replay.seeds, replay.batch_size
    started = time.perf_counter()
    rounds, change = 0, None
    if method == "degree":
        scores = degree_scores(indptr, indices, num_nodes=dataset.num_nodes)
        params: dict[str, Any] = {}
    elif method == "rpr":
        cap = DEFAULT_RPR_ITERATIONS if iterations is None else iterations
        check_iterations(cap)  # named as this function's argument, not reverse_pagerank's max_iterations
        scores, rounds, change = reverse_pagerank(
            indptr, indices, damping=damping, tol=tol, max_iterations=cap, progress=progress
        )
        params = {"damping": damping, "tol": tol, "max_iterations": cap}
    elif method == "wrpr":
        train = seeds.seed_ids(dataset, method)
        rounds = DEFAULT_WRPR_ITERATIONS if iterations is None else iterations
        check_iterations(rounds)
        counts = seeds.weights(dataset, 1, method).epoch_count if seeds.is_link else None
        scores, change = weighted_reverse_pagerank(
            indptr, indices, train, damping=damping, iterations=rounds, with_change=True, seed_counts=counts,
            progress=progress,
        )  # fmt: skip
        params = {"damping": damping, "iterations": rounds, "num_train": int(train.size), **seeds.describe()}
    elif method in ("fwr", "fwr-sum"):
        train = seeds.seed_ids(dataset, method)
        fanouts = list(replay.fanouts)
        mode = "batch" if method == "fwr" else "sum"
        if dataset.is_hetero:
            scores = typed_fanout_weighted_reads(
                indptr, indices, dataset.schema, train, replay.relation_fanouts_of(dataset), batch_size=batch_size,
                mode=mode, progress=progress,
                seeds=seeds.weights(dataset, batch_size, method) if seeds.is_link else None,
            ).node_reads  # fmt: skip
        elif seeds.is_link:
            weights = seeds.weights(dataset, batch_size, method)
            scores = seeded_fanout_weighted_reads(indptr, indices, weights, fanouts, mode=mode, progress=progress)
        else:
            scores = fanout_weighted_reads(
                indptr, indices, train, fanouts, batch_size=batch_size, mode=mode, progress=progress
            )
        params = {**replay.describe(sampled=False), "mode": mode, "num_train": int(train.size)}
    else:
        train = seeds.seed_ids(dataset, method)
        scores = replay_reads(dataset, replay, train=train, topology=False, progress=progress).features
        scores = scores.astype(np.float64)
        params = replay.describe()
    if dataset.is_hetero and replay.relation_fanouts and "fanouts" in params:
        per_relation = replay.relation_fanouts_of(dataset)
        params["fanouts_per_relation"] = {"___".join(rel): list(f) for rel, f in per_relation.items()}
    seconds = time.perf_counter() - started
    return ScoreResult(method, scores, params, seconds, rounds, change)


def _check_typed(dataset: Dataset, method: str, option: str = "method") -> None:
    """One-line OptionError (naming the caller's ``option``) for a score a typed dataset does not define (see the
    module)."""
    if method not in TYPED_SCORE_METHODS:
        raise OptionError(
            f"{{{option}}}: {method!r} is not defined on the typed dataset {dataset.path} "
            f"(node types {', '.join(dataset.schema.type_names)}); expected one of {', '.join(TYPED_SCORE_METHODS)}",
            options=(option,),
        )


def list_reads(dataset: Dataset, *, replay: Replay = DEFAULT_REPLAY, progress: Progress = NO_PROGRESS) -> np.ndarray:
    """Expected reads of each CSC list's entries in one epoch, float64 [rows] (rows = N for a homogeneous dataset,
    the relation rows of a typed one): fwr's recurrence (:func:`typed_fanout_weighted_reads`, ``batch`` mode) with
    the training seeds of ``replay`` (nodes, or ``--task link``'s pairs and negatives), its ``fanouts`` (seed hop
    first), ``relation_fanouts`` and ``batch_size``, as :func:`compute_scores`. A sampled edge reads its list entry
    and its edge-feature row, so these are also the edge table's reads per list (``reorder_dataset``'s
    ``edge_list_reads``)."""
    replay.check_relations(dataset)
    seeds, batch_size = replay.seeds, replay.batch_size
    weights = seeds.weights(dataset, batch_size, "fwr") if seeds.is_link else None
    train = np.zeros(0, np.int64) if weights is not None else seeds.seed_ids(dataset, "fwr")
    reads = typed_fanout_weighted_reads(
        np.asarray(dataset.indptr), dataset.indices, dataset.schema, train, replay.relation_fanouts_of(dataset),
        batch_size=batch_size, progress=progress, seeds=weights,
    )  # fmt: skip
    return reads.list_entries
