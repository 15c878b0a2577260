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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphtier._choices import SCORE_METHODS
from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.format import Dataset
from graphtier.dataset.schema import RelationType
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
from graphtier.sampling.fanouts import Fanouts
from graphtier.sampling.neighbor import DEFAULT_FANOUTS
from graphtier.sampling.relation_fanouts import parse_relation_fanouts
from graphtier.tiering.replay import replay_reads
from graphtier.tiering.seeds import NODE_SEEDS, EpochSeeds

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
    fanouts: list[int] | None = None,
    batch_size: int = 1024,
    epochs: int = 1,
    seed: int = 0,
    seeds: EpochSeeds = NODE_SEEDS,
    relation_fanouts: str | Mapping[Any, Any] | None = None,
    progress: Progress = NO_PROGRESS,
    option: str = "method",
) -> ScoreResult:
    """Score every node of ``dataset`` with ``method`` (one of :data:`SCORE_METHODS`; errors name it as
    ``option``: ``method=`` by default, ``--score`` for the commands that call it ``score``).

    ``iterations`` defaults to 100 (the cap) for ``rpr`` and 5 for ``wrpr``. ``fanouts`` and
    ``batch_size`` are used by ``fwr``, ``fwr-sum`` and ``presample``; ``epochs`` and ``seed`` by
    ``presample`` only. ``seeds``: the training seeds ``wrpr``, ``fwr``, ``fwr-sum`` and ``presample`` start
    from (training nodes, or ``--task link``'s pairs with their negatives; batch size in pairs). Returns a
    :class:`ScoreResult` whose ``scores`` are float64 [N] on the CPU. ``relation_fanouts``: a typed dataset's
    per-relation overrides of ``fanouts`` (``--fanouts-per-relation``, :func:`typed_fanouts`). ``progress``
    reports the long passes (PageRank rounds, fwr hops, the presample replay).
    """
    if method not in SCORE_METHODS:
        raise OptionError(
            f"{{{option}}}: expected one of {', '.join(SCORE_METHODS)}, found {method!r}", options=(option,)
        )
    indptr, indices = np.asarray(dataset.indptr), dataset.indices
    if dataset.is_hetero:
        _check_typed(dataset, method, option)
    check_relation_fanouts(dataset, relation_fanouts)
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
        fanouts = list(fanouts or DEFAULT_FANOUTS)
        mode = "batch" if method == "fwr" else "sum"
        if dataset.is_hetero:
            per_relation = typed_fanouts(dataset, fanouts, relation_fanouts)
            scores = typed_fanout_weighted_reads(
                indptr, indices, dataset.schema, train, per_relation, batch_size=batch_size, mode=mode,
                progress=progress, seeds=seeds.weights(dataset, batch_size, method) if seeds.is_link else None,
            ).node_reads  # fmt: skip
        elif seeds.is_link:
            weights = seeds.weights(dataset, batch_size, method)
            scores = seeded_fanout_weighted_reads(indptr, indices, weights, fanouts, mode=mode, progress=progress)
        else:
            scores = fanout_weighted_reads(
                indptr, indices, train, fanouts, batch_size=batch_size, mode=mode, progress=progress
            )
        params = {
            "fanouts": fanouts,
            "batch_size": batch_size,
            "mode": mode,
            "num_train": int(train.size),
            **seeds.describe(),
        }
    else:
        train = seeds.seed_ids(dataset, method)
        fanouts = list(fanouts or DEFAULT_FANOUTS)
        scores = replay_reads(
            dataset, seeds, fanouts=fanouts, batch_size=batch_size, epochs=epochs, seed=seed, train=train,
            relation_fanouts=relation_fanouts, topology=False, progress=progress,
        ).features.astype(np.float64)  # fmt: skip
        params = {"fanouts": fanouts, "batch_size": batch_size, "epochs": epochs, "seed": seed, **seeds.describe()}
    if dataset.is_hetero and relation_fanouts and "fanouts" in params:
        per_relation = typed_fanouts(dataset, fanouts, relation_fanouts)
        params["fanouts_per_relation"] = {"___".join(rel): list(f) for rel, f in per_relation.items()}
    seconds = time.perf_counter() - started
    return ScoreResult(method, scores, params, seconds, rounds, change)


def typed_fanouts(
    dataset: Dataset, fanouts: Sequence[int] | None, relation_fanouts: str | Mapping[Any, Any] | None
) -> dict[RelationType, Fanouts]:
    """Fanouts of every relation of the typed ``dataset``: ``fanouts`` (default :data:`DEFAULT_FANOUTS`) with the
    overrides ``relation_fanouts`` (:func:`graphtier.sampling.relation_fanouts.parse_relation_fanouts`)."""
    return parse_relation_fanouts(relation_fanouts, dataset.schema, list(fanouts or DEFAULT_FANOUTS))


def check_relation_fanouts(dataset: Dataset, relation_fanouts: object) -> None:
    """One-line OptionError when per-relation fanouts are given for a homogeneous dataset (one relation)."""
    if relation_fanouts and not dataset.is_hetero:
        raise OptionError(
            f"{{fanouts_per_relation}}: {dataset.path} has one relation; use {{fanouts}} alone",
            options=("fanouts_per_relation", "fanouts"),
        )


def _check_typed(dataset: Dataset, method: str, option: str = "method") -> None:
    """One-line OptionError (naming the caller's ``option``) for a score a typed dataset does not define (see the
    module)."""
    if method not in TYPED_SCORE_METHODS:
        raise OptionError(
            f"{{{option}}}: {method!r} is not defined on the typed dataset {dataset.path} "
            f"(node types {', '.join(dataset.schema.type_names)}); expected one of {', '.join(TYPED_SCORE_METHODS)}",
            options=(option,),
        )


def list_reads(
    dataset: Dataset,
    fanouts: Sequence[int] | None = None,
    *,
    batch_size: int = 1024,
    seeds: EpochSeeds = NODE_SEEDS,
    relation_fanouts: str | Mapping[Any, Any] | None = None,
    progress: Progress = NO_PROGRESS,
) -> np.ndarray:
    """Expected reads of each CSC list's entries in one epoch, float64 [rows] (rows = N for a homogeneous dataset,
    the relation rows of a typed one): fwr's recurrence (:func:`typed_fanout_weighted_reads`, ``batch`` mode) with
    training ``seeds`` (nodes, or ``--task link``'s pairs and negatives), ``fanouts`` (seed hop first; default
    :data:`DEFAULT_FANOUTS`) and ``relation_fanouts`` as :func:`compute_scores`. A sampled edge reads its list entry
    and its edge-feature row, so these are also the edge table's reads per list (``reorder_dataset``'s
    ``edge_list_reads``)."""
    check_relation_fanouts(dataset, relation_fanouts)
    per_relation = typed_fanouts(dataset, fanouts, relation_fanouts)
    weights = seeds.weights(dataset, batch_size, "fwr") if seeds.is_link else None
    train = np.zeros(0, np.int64) if weights is not None else seeds.seed_ids(dataset, "fwr")
    reads = typed_fanout_weighted_reads(
        np.asarray(dataset.indptr), dataset.indices, dataset.schema, train, per_relation, batch_size=batch_size,
        progress=progress, seeds=weights,
    )  # fmt: skip
    return reads.list_entries
