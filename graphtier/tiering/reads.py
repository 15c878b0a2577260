"""Measured feature reads: replay the real training sampler and count each node's feature-row reads.

The counts are the ground truth every hotness score predicts (seed 000, Fig. 7): the ``presample``
score and the access analysis (:mod:`graphtier.tiering.access`) are built on them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphtier.errors import OptionError
from graphtier.graph._score_kernels import accumulate_counts
from graphtier.sampling.neighbor import NeighborSampler
from graphtier.sampling.seeds import iter_seed_batches


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
) -> np.ndarray:
    """int64 [N]: how many mini-batches read each node's feature row.

    Runs :class:`graphtier.sampling.neighbor.NeighborSampler` (``fanouts``, random stream ``seed``)
    for ``epochs`` epochs over ``train_idx`` (int64 [T]) shuffled into batches of ``batch_size``
    (shuffle seeded by ``seed`` and the epoch), counting every id of every batch's ``n_id``.
    Epochs are numbered from ``first_epoch``; batch ids run on from 0. The trainer numbers epochs from 1
    (``first_epoch=1`` replays exactly the batches ``graphtier train`` samples with ``--seed seed``).
    ``indptr``/``indices``: the CSC graph (numpy or memory maps, CPU).
    """
    if isinstance(epochs, bool) or epochs < 1:
        raise OptionError(f"--epochs: expected a positive integer, found {epochs!r}")
    sampler = NeighborSampler(indptr, indices, list(fanouts), seed=seed)
    counts = np.zeros(np.asarray(indptr).shape[0] - 1, dtype=np.int64)
    batch_id = 0
    for epoch in range(first_epoch, first_epoch + epochs):
        for seeds in iter_seed_batches(train_idx, batch_size, shuffle=True, seed=seed, epoch=epoch):
            batch = sampler.sample(seeds, batch_id)
            accumulate_counts(counts, batch.n_id.numpy())
            batch_id += 1
    return counts
