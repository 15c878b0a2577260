"""One replay of the training sampler for every tool that measures reads (``score --score presample``, ``analyze``,
``plan`` on a typed dataset, the cache-policy trace): the neighbour sampler of a homogeneous dataset, the typed
sampler of a typed one, or either link sampler from link seeds, over the same batches as ``graphtier train``."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.format import Dataset
from graphtier.sampling.relation_fanouts import parse_relation_fanouts
from graphtier.tiering.reads import SampledReads, count_sampled_reads
from graphtier.tiering.seeds import EpochSeeds, training_seeds
from graphtier.tiering.typed_reads import count_typed_reads


def replay_reads(
    dataset: Dataset,
    seeds: EpochSeeds,
    *,
    fanouts: Sequence[int],
    batch_size: int,
    epochs: int,
    seed: int,
    relation_fanouts: str | Mapping[Any, Any] | None = None,
    train: np.ndarray | None = None,
    first_epoch: int = 0,
    topology: bool = True,
    on_reads: Callable[[np.ndarray], None] | None = None,
    progress: Progress = NO_PROGRESS,
) -> SampledReads:
    """The reads of ``epochs`` epochs of the training sampler on ``dataset`` (:class:`SampledReads`, counts per global
    node and per CSC row): from ``seeds``' epoch (``train`` int64 [T] seed ids, default
    :func:`~graphtier.tiering.seeds.training_seeds`; link seeds replay the link sampler), ``fanouts`` (a typed
    dataset's overridden per relation by ``relation_fanouts``), batches of ``batch_size``, random stream ``seed``,
    epochs numbered from ``first_epoch``. ``topology`` False skips the list reads of a homogeneous replay;
    ``on_reads`` gets each batch's feature rows in order (:func:`graphtier.tiering.reads.count_sampled_reads`)."""
    if train is None:
        train = training_seeds(dataset, seeds)
    sample = seeds.sampler(dataset, list(fanouts), seed, relation_fanouts) if seeds.is_link else None
    options = dict(
        batch_size=batch_size, epochs=epochs, seed=seed, first_epoch=first_epoch, progress=progress,
        on_reads=on_reads, sample=sample,
    )  # fmt: skip
    if dataset.is_hetero:
        per_relation = parse_relation_fanouts(relation_fanouts, dataset.schema, list(fanouts))
        return count_typed_reads(
            dataset.indptr, dataset.indices, dataset.schema, train, fanouts=per_relation, **options
        )
    return count_sampled_reads(
        dataset.indptr, dataset.indices, train, fanouts=list(fanouts), topology=topology, **options
    )  # fmt: skip
