"""Measured reads: replay the real training sampler and count each node's feature and topology reads.

The feature counts are the ground truth every hotness score predicts (Data Tiering, Fig. 7): the
``presample`` score and the access analysis (:mod:`graphtier.tiering.access`) are built on them.
The topology counts feed the capacity planner (:mod:`graphtier.tiering.plan.topology`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress, Stage
from graphtier.errors import OptionError
from graphtier.graph._score_kernels import accumulate_counts
from graphtier.sampling.batch import MiniBatch
from graphtier.sampling.neighbor.sampler import NeighborSampler
from graphtier.sampling.seeds import iter_seed_batches

Batch = TypeVar("Batch")
"""A replayed sampler's batch (:class:`MiniBatch`, or a typed dataset's ``TypedMiniBatch``)."""


@dataclass(frozen=True)
class SampledReads:
    """Reads of one replay (sums over every traced batch).

    Attributes:
        features: int64 [N], how many mini-batches read each node's feature row (ids of ``n_id``).
        list_entries: int64 [N], ``indices`` entries read in each node's in-neighbour list
            ``indices[indptr[v]:indptr[v + 1]]``: one per sampled edge with destination ``v``, every hop.
        destinations: destination nodes summed over every hop of every batch (each reads two
            ``indptr`` entries).
        batches: mini-batches replayed.
    """

    features: np.ndarray
    list_entries: np.ndarray
    destinations: int
    batches: int


def count_sampled_reads(
    indptr: np.ndarray,
    indices: np.ndarray,
    train_idx: np.ndarray,
    *,
    fanouts: Sequence[int],
    batch_size: int,
    epochs: int,
    seed: int,
    first_epoch: int = 0,
    topology: bool = True,
    sample: Callable[[np.ndarray, int], MiniBatch] | None = None,
    progress: Progress = NO_PROGRESS,
    on_reads: Callable[[np.ndarray], None] | None = None,
) -> SampledReads:
    """Replay the sampler and count feature reads and (``topology=True``) neighbour-list reads per node.

    Runs :class:`graphtier.sampling.neighbor.sampler.NeighborSampler` (``fanouts``, random stream ``seed``)
    for ``epochs`` epochs over ``train_idx`` (int64 [T]) shuffled into batches of ``batch_size``
    (shuffle seeded by ``seed`` and the epoch). Epochs are numbered from ``first_epoch``; batch ids run
    on from 0. The trainer numbers epochs from 1 (``first_epoch=1`` replays exactly the batches
    ``graphtier train`` samples with ``--seed seed``). Feature reads: every id of every batch's
    ``n_id``. Topology reads: every edge of every block is one ``indices`` entry of its destination's
    list, and every block destination reads two ``indptr`` entries. ``indptr``/``indices``: the CSC
    graph (numpy or memory maps, CPU). With ``topology=False`` ``list_entries`` is all zeros.

    ``sample``: another training sampler ``(seed_ids, batch_id) -> MiniBatch`` replayed instead (the link
    sampler of :meth:`graphtier.tiering.seeds.EpochSeeds.sampler`, whose ``train_idx`` are pair ids); its
    blocks are counted as they come (a link batch's excluded target edges were read but are not counted).
    ``progress`` reports the stage ``replay the sampler`` batch by batch. ``on_reads``: called with each batch's
    feature rows (int64 [M], the batch's ``n_id``), in replay order (the row-access trace of a cache replay).
    """
    check_epochs(epochs)
    if sample is None:
        sample = NeighborSampler(indptr, indices, list(fanouts), seed=seed).sample
    num_nodes = np.asarray(indptr).shape[0] - 1
    features = np.zeros(num_nodes, dtype=np.int64)
    entries = np.zeros(num_nodes, dtype=np.int64)
    destinations = 0
    batches = 0
    for batch in replay_batches(sample, train_idx, batch_size, epochs, seed, first_epoch, progress):
        n_id = batch.n_id.numpy()
        accumulate_counts(features, n_id)
        if on_reads is not None:
            on_reads(n_id)
        if topology:
            for block in batch.blocks:
                accumulate_counts(entries, n_id[block.destinations().numpy()])
                destinations += block.num_dst
        batches += 1
    return SampledReads(features=features, list_entries=entries, destinations=destinations, batches=batches)


def check_epochs(epochs: int) -> None:
    """Raise :class:`OptionError` (naming ``--epochs``) unless ``epochs`` is a positive integer (of a replay)."""
    if isinstance(epochs, bool) or epochs < 1:
        raise OptionError(f"--epochs: expected a positive integer, found {epochs!r}")


def replay_batches(
    sample: Callable[[np.ndarray, int], Batch],
    train_idx: np.ndarray,
    batch_size: int,
    epochs: int,
    seed: int,
    first_epoch: int,
    progress: Progress,
) -> Iterator[Batch]:
    """The batches of a replay, in order: ``sample(seeds, batch_id)`` of each batch of ``train_idx`` (int64 [T])
    shuffled into batches of ``batch_size`` for epochs ``first_epoch`` to ``first_epoch + epochs - 1`` (the shuffle
    seeded by ``seed`` and the epoch, as the trainer's), batch ids running on from 0. ``progress`` reports the stage
    of :func:`replay_stage`, a batch done once the caller has taken the next one (or stopped)."""
    with replay_stage(progress, epochs, train_idx, batch_size) as bar:
        batch_id = 0
        for epoch in range(first_epoch, first_epoch + epochs):
            for seeds in iter_seed_batches(train_idx, batch_size, shuffle=True, seed=seed, epoch=epoch):
                yield sample(seeds, batch_id)
                batch_id += 1
                bar.advance()


def replay_stage(progress: Progress, epochs: int, train_idx: np.ndarray, batch_size: int) -> Stage:
    """The stage ``replay the sampler (E epochs)`` of a replay of ``epochs`` epochs over ``train_idx`` [T] in
    batches of ``batch_size`` (its total: the batches, ``epochs * ceil(T / batch_size)``)."""
    batches = epochs * -(-int(np.asarray(train_idx).shape[0]) // batch_size)
    return progress.stage(f"replay the sampler ({epochs} epochs)", total=batches, unit="batches")


def count_feature_reads(
    indptr: np.ndarray,
    indices: np.ndarray,
    train_idx: np.ndarray,
    *,
    fanouts: Sequence[int],
    batch_size: int,
    epochs: int,
    seed: int,
    first_epoch: int = 0,
    sample: Callable[[np.ndarray, int], MiniBatch] | None = None,
    progress: Progress = NO_PROGRESS,
) -> np.ndarray:
    """int64 [N]: how many mini-batches read each node's feature row (see :func:`count_sampled_reads`)."""
    return count_sampled_reads(
        indptr,
        indices,
        train_idx,
        fanouts=fanouts,
        batch_size=batch_size,
        epochs=epochs,
        seed=seed,
        first_epoch=first_epoch,
        topology=False,
        sample=sample,
        progress=progress,
    ).features
