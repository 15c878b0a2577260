"""Measured reads of a typed dataset: replay the typed sampler and count feature and list reads per node / row.

The typed twin of :func:`graphtier.tiering.reads.count_sampled_reads` (the same epoch numbering and shuffle):
the ground truth that the analytic typed ``fwr`` (:mod:`graphtier.graph.typed_scores`) predicts, and the
``presample`` ranking of a typed dataset. Counts are over GLOBAL node ids (every type) and CSC rows (every
relation, destination); :func:`graphtier.graph.typed_scores.split_by_type` / ``split_by_relation`` slice them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.schema import RelationType, Schema
from graphtier.graph._score_kernels import accumulate_counts
from graphtier.graph.typed_scores import relation_fanouts
from graphtier.sampling.neighbor.sampler import NeighborSampler
from graphtier.sampling.typed_batch import TypedMiniBatch
from graphtier.tiering.reads import SampledReads, check_epochs, replay_batches


def count_typed_reads(
    indptr: np.ndarray,
    indices: np.ndarray,
    schema: Schema,
    train_idx: np.ndarray,
    *,
    fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]],
    batch_size: int,
    epochs: int,
    seed: int,
    first_epoch: int = 0,
    progress: Progress = NO_PROGRESS,
    sample: Callable[[np.ndarray, int], TypedMiniBatch] | None = None,
    on_reads: Callable[[np.ndarray], None] | None = None,
) -> SampledReads:
    """Replay :class:`~graphtier.sampling.neighbor.sampler.NeighborSampler` (with the schema) for ``epochs`` epochs over
    ``train_idx`` (int64 [T], LOCAL ids of the target type) shuffled into batches of ``batch_size``, as
    :func:`graphtier.tiering.reads.count_sampled_reads` does.

    Returns a :class:`SampledReads` whose ``features`` is int64 [N] (batches that read each global node) and
    ``list_entries`` int64 [num_rows] (``indices`` entries read from each CSC row: one per sampled edge);
    ``destinations`` counts (relation, destination) visits (two ``indptr`` entries each). ``progress`` reports
    the stage ``replay the sampler`` batch by batch. ``sample``: another sampler of the same batches (the typed
    link sampler, whose ``train_idx`` are then rows of the training pair table), else the typed neighbour sampler.
    ``on_reads``: called with each batch's feature rows as GLOBAL ids (int64 [M], type after type), in replay order.
    """
    check_epochs(epochs)
    if sample is None:
        sample = NeighborSampler(indptr, indices, relation_fanouts(schema, fanouts), schema=schema, seed=seed).sample
    offsets = {t.name: t.offset for t in schema.node_types}
    rows = {r.type: r.row_offset for r in schema.relations}
    features = np.zeros(schema.num_nodes, dtype=np.int64)
    entries = np.zeros(np.asarray(indptr).shape[0] - 1, dtype=np.int64)
    destinations = 0
    batches = 0
    for batch in replay_batches(sample, train_idx, batch_size, epochs, seed, first_epoch, progress):
        n_id = {name: ids.numpy() for name, ids in batch.n_id.items()}
        read = [ids + offsets[name] for name, ids in n_id.items()]
        for ids in read:
            accumulate_counts(features, ids)
        if on_reads is not None:
            on_reads(np.concatenate(read) if read else np.zeros(0, dtype=np.int64))
        for block in batch.blocks:
            for rel, part in block.relations.items():
                counts = np.diff(part.rowptr.numpy())
                entries[rows[rel] + n_id[rel[2]][: counts.shape[0]]] += counts  # distinct rows
            destinations += sum(block.num_dst[r.dst] for r in schema.relations)
        batches += 1
    return SampledReads(features=features, list_entries=entries, destinations=destinations, batches=batches)
