"""The public mini-batch loader: seeds in, model inputs on the device out, prepared ahead by a producer thread.

For users who write their own training loop (PyG's ``NeighborLoader``, with graphtier's placement)::

    loader = graphtier.Loader("data/cora", fanouts=(10, 10), batch_size=512, device="cpu")
    for epoch in range(1, 11):
        for batch in loader:                      # one pass over the training seeds, reshuffled every pass
            out = batch.forward(model)            # model(batch.x, batch.blocks, batch.degree)
            loss = F.cross_entropy(out[batch.seed_index], batch.y)
    loader.close()

It is :class:`~graphtier.train.loop.feed.BatchFeed` (the producer thread that samples and gathers, and the copy to the
device), which the trainer runs its epochs and sampled evaluation on, behind one object. Any dataset (a typed one
gives :class:`~graphtier.train.loop.feed.TypedDeviceBatch` es: ``batch.forward(model)`` calls ``model(x, blocks,
n_id)``), any placement (``features_on``, budgets and ``sample_on`` as :meth:`GraphStore.open` takes them), node
seeds or link seeds (``task="link"``: the pairs of ``link_train.npy`` with negatives drawn, ``batch.y`` the pair
labels and ``batch.src_index`` / ``batch.dst_index`` the rows of each pair's endpoints).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphtier._fanouts import DEFAULT_FANOUTS, check_fanouts
from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.sampling import iter_seed_batches
from graphtier.train.loop.feed import BatchFeed, DeviceBatch, SampleFn
from graphtier.train.loop.task import Task, make_task
from graphtier.train.options.config import require_link_split
from graphtier.train.options.spec import TaskSpec

SPLIT_NAMES = ("train", "valid", "test")


class Loader:
    """Iterate over device mini-batches of a dataset: each ``iter(loader)`` is one pass over its seeds.

    Args:
        data: a :class:`GraphStore` (used as it is, not closed by the loader), or a :class:`Dataset` or a path,
            which the loader opens with ``device`` and ``placement_options`` and closes in :meth:`close`.
        seeds: ``"train"``, ``"valid"`` or ``"test"`` (the node split; with ``task="link"`` only ``"train"``:
            the training pairs), or int64 [S] node ids (local ids of the target type on a typed dataset).
        fanouts: neighbours per hop, PyG order (first hop first); -1 takes them all.
        batch_size: seeds (node ids or positive pairs) per batch.
        task: ``"node"`` (``batch.y``: int64 [B] labels) or ``"link"`` (``batch.y``: float32 [M] pair labels).
        shuffle: a new order every pass, drawn from ``(seed, pass)``; False keeps the order of ``seeds``.
        seed: seeds the shuffling, the sampler and the negatives (the same seed gives the same batches).
        relation_fanouts: per-relation fanouts of a typed dataset (as ``--fanouts-per-relation``).
        sampler: ``"neighbor"`` or ``"shadow"`` (homogeneous datasets).
        num_negatives: negatives drawn per positive pair (``task="link"``; None: the trainer's default).
        negative_sampling: how they are drawn, ``"uniform"`` or ``"degree"`` (None: the trainer's default).
        prefetch: prepared batches that may wait (0: prepare each batch in the iterating thread).
        num_threads: threads of the producer's sampler and gather (None: the store's default).
        device: where the batches go (and, when the loader opens the store, its compute device).
        placement_options: ``features_on``, ``gpu_budget``, ``ram_budget``, ``sample_on``, ... when the loader
            opens the store (:meth:`GraphStore.open`); ``edge_features=True``: every block carries ``edge_attr``
            (float32 [E, d] rows of ``edge_feat.npy``) as in ``train --edge-features``.

    A batch is a :class:`~graphtier.train.loop.feed.DeviceBatch` on ``device``: ``x`` float32 [len(n_id), D],
    ``blocks`` (input layer first), ``y``, ``seed_index`` int64 [B] (the output rows of the seeds),
    ``forward(model)``. Leaving a loop early is safe: the producer stops when the iterator is closed or
    collected; :meth:`close` (or ``with Loader(...) as loader``) ends it and closes a store the loader opened.
    """

    def __init__(
        self,
        data: GraphStore | Dataset | str | Path,
        seeds: str | np.ndarray = "train",
        *,
        fanouts: tuple[int, ...] | list[int] = DEFAULT_FANOUTS,
        batch_size: int = 1024,
        task: str = "node",
        shuffle: bool = True,
        seed: int = 0,
        relation_fanouts: str | Mapping[Any, Any] | None = None,
        sampler: str = "neighbor",
        num_negatives: int | None = None,
        negative_sampling: str | None = None,
        prefetch: int = 2,
        num_threads: int | None = None,
        device: str | torch.device = "cpu",
        **placement_options: Any,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise OptionError.invalid("batch_size", "an integer >= 1", batch_size)
        if isinstance(prefetch, bool) or not isinstance(prefetch, int) or prefetch < 0:
            raise OptionError.invalid("prefetch", "an integer >= 0", prefetch)
        self.fanouts = tuple(check_fanouts(fanouts))
        link_options = {"num_negatives": num_negatives, "negative_sampling": negative_sampling}
        spec = TaskSpec(task=task, **{k: v for k, v in link_options.items() if v is not None})
        self.device = torch.device(device)
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = int(seed)
        self.passes = 0
        self._owns_store = not isinstance(data, GraphStore)
        if isinstance(data, GraphStore):
            if placement_options:
                raise OptionError(
                    f"{{{next(iter(placement_options))}}}: a placement option applies when the loader opens the "
                    "dataset; the given GraphStore is placed already",
                    options=tuple(placement_options),
                )
            self.store = data
        else:
            self.store = GraphStore.open(
                data, device=self.device, seed=self.seed, num_threads=num_threads, batch_size=batch_size,
                fanouts=self.fanouts, prefetch=prefetch, relation_fanouts=relation_fanouts, log=lambda _: None,
                **placement_options,
            )  # fmt: skip
        try:
            if spec.task == "link":
                require_link_split(self.store.dataset)
            self.task: Task = make_task(spec, self.store, relation_fanouts)
            self.seeds = self._resolve_seeds(seeds)
            self._sample = self._make_sampler(sampler, relation_fanouts)
        except BaseException:
            self.close()
            raise
        self.feed = BatchFeed(
            self.store, self.device, prefetch=prefetch, num_threads=num_threads, block_csr=False,
            block_degree=None, targets=lambda ids, batch: self.task.targets(self.store, ids, batch),
            edge_features=self.store.edge_features is not None,  # edge_features=True: blocks carry edge_attr
        )  # fmt: skip

    def _resolve_seeds(self, seeds: str | np.ndarray) -> np.ndarray:
        if isinstance(seeds, str):
            if seeds not in SPLIT_NAMES:
                raise OptionError.invalid("seeds", f"one of {', '.join(SPLIT_NAMES)} or an array of node ids", seeds)
            if self.task.name == "link":
                if seeds != "train":
                    raise OptionError(
                        f"{{seeds={seeds}}}: a link loader iterates the training pairs (with negatives drawn); "
                        "evaluate held-out pairs with graphtier.predict or train(..., task='link')",
                        options=("seeds",),
                    )
                return self.task.train_seeds(self.store)
            return np.asarray(self.store.split(seeds), dtype=np.int64)
        if self.task.name == "link":
            raise OptionError("{seeds}: a link loader takes seeds='train' (the training pairs), found an array",
                              options=("seeds",))  # fmt: skip
        ids = np.asarray(seeds)
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise OptionError.invalid("seeds", "a 1-D integer array of node ids", f"{ids.dtype} {ids.shape}")
        count = self.store.dataset.schema.target_type.count
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= count):
            raise OptionError.invalid("seeds", f"node ids in [0, {count})", f"[{int(ids.min())}, {int(ids.max())}]")
        return ids.astype(np.int64, copy=False)

    def _make_sampler(self, kind: str, relation_fanouts: str | Mapping[Any, Any] | None) -> SampleFn:
        if self.task.name == "link":
            return self.task.train_sampler(self.store, lambda f, s: self.store.sampler(f, seed=s), self.fanouts,
                                           self.seed)  # fmt: skip
        return self.store.sampler(self.fanouts, relation_fanouts, seed=self.seed, kind=kind,
                                  num_layers=len(self.fanouts))  # fmt: skip

    def __len__(self) -> int:
        """Batches in one pass."""
        return -(-len(self.seeds) // self.batch_size)

    def __iter__(self) -> Iterator[DeviceBatch]:
        """One pass over the seeds (the next pass's order when ``shuffle``): device batches in order."""
        self.passes += 1
        batches = iter_seed_batches(self.seeds, self.batch_size, shuffle=self.shuffle, seed=self.seed,
                                    epoch=self.passes)  # fmt: skip
        producer = self.feed.producer(batches, self._sample, (self.passes - 1) * len(self))
        try:
            for item in producer:
                yield self.feed.to_device(item)
        finally:
            producer.close()

    def close(self) -> None:
        """Close the store if the loader opened it (its buffers and host registrations are released)."""
        if self._owns_store and getattr(self, "store", None) is not None:
            self.store.close()

    def __enter__(self) -> Loader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
