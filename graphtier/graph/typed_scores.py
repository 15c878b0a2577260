"""Fanout-weighted reads (``fwr``) of a typed graph: expected reads of every node of every type, and of every
relation's neighbour lists, in one training epoch from the target type's training nodes.

The recurrence of :func:`graphtier.graph.scores.seeded_fanout_weighted_reads`, on the typed CSC of
:mod:`graphtier.dataset.schema` (one row per (relation, destination), GLOBAL source ids): at hop ``k`` every
node ``v`` already in the batch is the destination of each relation into its type, and draws each of its
in-neighbours under that relation with ``p_k(r, v) = min(1, fanouts[r][k] / deg_r(v))``. So one hop is a
per-relation element-wise pass over that relation's rows (the weight of row ``r.row_offset + v`` is the weight
of node ``offset(dst) + v``), one scatter over ALL rows into the global ids, and one combine per node, with
the kernels of the homogeneous score. A homogeneous dataset (one relation, row == node) gives exactly
:func:`~graphtier.graph.scores.fanout_weighted_reads`.

Reads per type are slices of the global result (:func:`split_by_type`); the list reads (``indices`` entries
read per epoch per row: ``num_batches * sum_k q_k(v) * min(f, deg)``) feed the per-relation topology budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numba
import numpy as np

from graphtier._fanouts import Fanouts
from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.csc import edge_balanced_bounds
from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.graph import _reads_kernels as reads_kernels
from graphtier.graph import _score_kernels as kernels
from graphtier.graph.scores import FWR_MODES
from graphtier.graph.seed_weights import SeedWeights, node_seed_weights

RelationFanouts = Mapping[RelationType, Sequence[int]]


@dataclass(frozen=True)
class TypedReads:
    """Expected reads of one epoch.

    Attributes:
        node_reads: float64 [N], feature reads of every global node (``fwr`` score; ``mode="sum"``: draws).
        list_entries: float64 [num_rows], ``indices`` entries read from each CSC row (relation, destination).
    """

    node_reads: np.ndarray
    list_entries: np.ndarray


def relation_fanouts(schema: Schema, fanouts: Sequence[int] | RelationFanouts) -> dict[RelationType, Fanouts]:
    """Fanouts per relation: one list for every relation, or a mapping naming every relation (all of one
    length). Raises :class:`OptionError` naming ``fanouts`` otherwise."""
    if isinstance(fanouts, Mapping):
        out = {tuple(rel): Fanouts.parse(f) for rel, f in fanouts.items()}
        missing = [str(r) for r in schema.relations if r.type not in out]
        if missing:
            raise OptionError(
                f"{{fanouts}}: expected fanouts for every relation, missing {', '.join(missing)}", options=("fanouts",)
            )
        out = {r.type: out[r.type] for r in schema.relations}
    else:
        parsed = Fanouts.parse(fanouts)
        out = {r.type: parsed for r in schema.relations}
    hops = {len(f) for f in out.values()}
    if len(hops) != 1:
        raise OptionError(
            f"{{fanouts}}: expected the same number of hops for every relation, found {sorted(hops)}",
            options=("fanouts",),
        )
    return out  # type: ignore[return-value]


def _list_draws(indptr: np.ndarray, fanout: int) -> np.ndarray:
    """float64 [rows]: entries one visit of each list reads (``min(fanout, deg)``; every entry for -1)."""
    degree = np.diff(indptr).astype(np.float64)
    return degree if fanout < 0 else np.minimum(degree, float(fanout))


def typed_fanout_weighted_reads(
    indptr: np.ndarray,
    indices: np.ndarray,
    schema: Schema,
    train_idx: np.ndarray,
    fanouts: Sequence[int] | RelationFanouts,
    *,
    batch_size: int = 1024,
    mode: str = "batch",
    progress: Progress = NO_PROGRESS,
    seeds: SeedWeights | None = None,
) -> TypedReads:
    """Expected reads of node classification on a typed graph from ``train_idx`` (int64 [T], LOCAL ids of
    ``schema.target``) with ``fanouts`` (one list for every relation, or per relation; seed hop first); ``seeds``:
    the epoch's seed weights over GLOBAL node ids instead (link prediction: the pairs' endpoints and the negatives,
    :meth:`graphtier.tiering.seeds.EpochSeeds.weights`), ``train_idx`` then unused.

    ``indptr`` int64 [num_rows + 1], ``indices`` int32/int64 [E] (global ids), as in the dataset. ``mode``
    as in :func:`graphtier.graph.scores.seeded_fanout_weighted_reads` (``batch``: expected batches that read
    each node; ``sum``: expected draws without dedup). Returns a :class:`TypedReads` (CPU numpy). ``progress``
    reports the stage ``score: fanout-weighted hops`` (one pass over the edges per hop).
    """
    if mode not in FWR_MODES:
        raise OptionError(f"{{mode}}: expected one of {', '.join(FWR_MODES)}, found {mode!r}", options=("mode",))
    per_relation = relation_fanouts(schema, fanouts)
    hops = len(next(iter(per_relation.values())))
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    num_nodes, num_rows = schema.num_nodes, indptr.shape[0] - 1
    if seeds is None:
        train_idx = np.asarray(train_idx, dtype=np.int64)
        if train_idx.size == 0:
            raise OptionError("fwr: expected a non-empty training split, found 0 training nodes")
        seeds = node_seed_weights(num_nodes, train_idx + schema.target_type.offset, batch_size)
    survival = mode == "batch"
    current = np.array(seeds.batch_chance if survival else seeds.epoch_count, dtype=np.float64, copy=True)
    following = np.empty_like(current)
    total = current.copy()
    entries = np.zeros(num_rows, dtype=np.float64)
    if num_nodes == 0 or num_rows == 0:
        return TypedReads(total if not survival else current * float(seeds.num_batches), entries)
    parts = numba.get_num_threads()
    bounds = edge_balanced_bounds(indptr, parts)
    partials = np.zeros((parts, num_nodes), dtype=np.float64)
    values = np.empty(num_rows, dtype=np.float64)
    spans = [
        (r.type, r.row_offset, r.row_offset + schema.node_type(r.dst).count, schema.node_type(r.dst).offset)
        for r in schema.relations
    ]
    edges = int(indices.shape[0])
    with progress.stage("score: fanout-weighted hops", total=edges * hops, unit="edges") as bar:
        for hop in range(hops):
            for rel, lo, hi, offset in spans:
                fanout = per_relation[rel][hop]
                weights = current[offset : offset + hi - lo]
                reads_kernels.draw_values(indptr[lo : hi + 1], weights, fanout, survival, values[lo:hi])
                entries[lo:hi] += weights * _list_draws(indptr[lo : hi + 1], fanout)
            kernels.scatter_to_neighbours(indptr, indices, values, bounds, partials)
            if survival:
                reads_kernels.combine_survival(partials, current, following)
            else:
                reads_kernels.combine_sums(partials, following)
                total += following
            current, following = following, current
            bar.advance(edges)
    if survival:
        scale = float(seeds.num_batches)
        return TypedReads(current * scale, entries * scale)
    return TypedReads(total, entries)


def split_by_type(values: np.ndarray, schema: Schema) -> dict[str, np.ndarray]:
    """Views of a per-node array (``[N, ...]`` over global ids) per type: ``{type: values[offset:stop]}``
    (indexed by the type's local ids)."""
    return {t.name: values[t.offset : t.stop] for t in schema.node_types}


def split_by_relation(values: np.ndarray, schema: Schema) -> dict[RelationType, np.ndarray]:
    """Views of a per-row array (``[num_rows, ...]``, one row per (relation, destination)) per relation
    (indexed by the destination type's local ids)."""
    return {r.type: values[r.row_offset : r.row_offset + schema.node_type(r.dst).count] for r in schema.relations}
