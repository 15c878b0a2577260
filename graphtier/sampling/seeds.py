"""Seed handling: checking requested seeds, and splitting training nodes into mini-batches."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch

from graphtier.errors import OptionError


def as_seed_array(seeds: np.ndarray | torch.Tensor, num_nodes: int) -> np.ndarray:
    """Seeds as a contiguous int64 numpy array [B] (CPU); OptionError unless 1-d integers in [0, num_nodes)."""
    if isinstance(seeds, torch.Tensor):
        if seeds.dtype.is_floating_point or seeds.dtype.is_complex or seeds.dtype == torch.bool:
            raise OptionError(f"seeds: expected an integer tensor, found dtype {seeds.dtype}")
        array = seeds.detach().cpu().numpy()
    else:
        array = np.asarray(seeds)
        if array.size == 0 and array.dtype.kind == "f":  # np.asarray([]) is float64
            array = array.astype(np.int64)
    if array.dtype.kind not in "iu":
        raise OptionError(f"seeds: expected integer node ids, found dtype {array.dtype}")
    if array.ndim != 1:
        raise OptionError(f"seeds: expected a 1-d array, found shape {tuple(array.shape)}")
    array = np.ascontiguousarray(array, dtype=np.int64)
    if array.size:
        low, high = int(array.min()), int(array.max())
        if low < 0 or high >= num_nodes:
            raise OptionError(f"seeds: expected node ids in [0, {num_nodes}), found values in [{low}, {high}]")
    return array


def iter_seed_batches(
    train_idx: np.ndarray,
    batch_size: int,
    *,
    shuffle: bool,
    seed: int,
    epoch: int,
    drop_last: bool = False,
) -> Iterator[np.ndarray]:
    """Split ``train_idx`` (int [T]) into int64 batches [<= batch_size] (CPU numpy).

    With ``shuffle`` the order is a permutation drawn from ``(seed, epoch)``, so every epoch differs
    and the same ``(seed, epoch)`` always gives the same batches. ``drop_last`` skips a final short batch.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise OptionError(f"batch_size: expected a positive integer, found {batch_size!r}")
    ids = np.asarray(train_idx)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        raise OptionError(f"train_idx: expected a 1-d integer array, found shape {ids.shape} dtype {ids.dtype}")
    ids = ids.astype(np.int64, copy=False)
    if shuffle:
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, int(epoch)])
        ids = ids[rng.permutation(ids.size)]
    batch_size = int(batch_size)
    stop = ids.size - ids.size % batch_size if drop_last else ids.size
    for start in range(0, stop, batch_size):
        yield np.ascontiguousarray(ids[start : start + batch_size])
