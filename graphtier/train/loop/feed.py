"""Seed batches in, model inputs on the device out: the producer thread (sample + gather) and the copy.

Used by the training loop (:mod:`graphtier.train.loop.trainer`) and by sampled evaluation
(:mod:`graphtier.train.loop.evaluation`); it reaches the data only through the :class:`GraphStore` it is given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np
import torch
from torch import nn

from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.memory import FeatureSource
from graphtier.sampling import MiniBatch
from graphtier.sampling.link.sampler import LinkMiniBatch
from graphtier.sampling.link.typed_link import TypedLinkMiniBatch
from graphtier.sampling.typed_batch import TypedMiniBatch
from graphtier.train.loop.pipeline import BatchProducer, PreparedBatch
from graphtier.train.nn.aggregate import FirstLayerInput, block_csr

SampleFn = Callable[[np.ndarray, int], MiniBatch]
"""``(seeds, batch_id) -> MiniBatch``: a sampler of the store (:meth:`GraphStore.sampler`)."""


@dataclass
class DeviceBatch:
    """One mini-batch's model inputs on the device.

    Attributes:
        x: float32 [len(n_id), D] input features, or the first layer's :class:`FirstLayerInput` (CPU GraphSAGE).
        blocks: the sampled blocks, input layer first.
        y: the targets: int64 [B] labels of the seeds, or float32 [M] pair labels of a link batch.
        seed_index: int64 [B] rows of the model output that belong to the seeds.
        degree: float [len(n_id)] full-graph in-degrees of the batch's nodes (GCN with full degrees), else None.
        src_index, dst_index: int64 [M] output rows of each pair's source and destination (link batches), else None.
        n_id: int64 [len(n_id)] global ids of the batch's nodes, seeds first (a typed batch: ``{type: local ids}``).
    """

    x: Any  # torch.Tensor; TypedDeviceBatch: dict[str, torch.Tensor]
    blocks: list[Any]
    y: torch.Tensor
    seed_index: torch.Tensor
    degree: torch.Tensor | None
    src_index: torch.Tensor | None = None
    dst_index: torch.Tensor | None = None
    n_id: Any = None

    def forward(self, model: nn.Module) -> torch.Tensor:
        """The model's output rows of this batch: ``model(x, blocks, degree)``."""
        return model(self.x, self.blocks, self.degree)


@dataclass
class TypedDeviceBatch(DeviceBatch):
    """A typed mini-batch's model inputs on the device: ``x`` is ``{type: float32 [len(n_id[type]), D_type]}``
    (featured types only), ``blocks`` the :class:`~graphtier.sampling.typed_batch.TypedBlock` list and ``n_id``
    ``{type: int64 local ids}`` (for the learnable tables of featureless types); ``seed_index`` indexes the
    target type's output rows."""

    def forward(self, model: nn.Module) -> torch.Tensor:
        """The target type's output rows: ``model(x, blocks, n_id)`` (a typed model; a typed link model: its
        embeddings per endpoint type, a dict)."""
        return model(self.x, self.blocks, self.n_id)


class BatchFeed:
    """Prepare mini-batches from seed batches in a producer thread and copy them to ``device``.

    Args:
        store: the graph's store: gather, feature row bytes.
        device: where the model runs.
        prefetch: how many prepared batches may wait (0: prepare each in the consumer's thread).
        num_threads: threads of the producer's sampler and gather (None: the store's default).
        block_csr: build each block's CSR in the producer (CPU SAGE/GCN kernels).
        first_layer_mean: GraphSAGE on the CPU: the producer reads the first layer's neighbour means and root
            rows straight from the feature table (:meth:`FeatureSource.gather_mean`) instead of gathering every
            source row of the input block; a store that cannot (not float32, not in host memory) gathers.
        block_degree: float [N] full-graph in-degrees on ``device`` handed to the model per batch, or None.
        targets: ``targets(seeds, batch) -> tensor``, the task's targets of a batch (:meth:`Task.targets`).
        edge_features: fill every block's ``edge_attr`` (the store's :meth:`GraphStore.gather_edges` of its
            ``edge_id``; float32 on ``device`` after :meth:`to_device`) in the producer, after sampling.
        edge_ages: fill every block's ``edge_age`` of a temporal batch (float32 [E], ``n_time[dst] -
            edge_time[edge_id]``) in the producer.
    """

    def __init__(
        self,
        store: GraphStore,
        device: torch.device,
        *,
        prefetch: int,
        num_threads: int | None,
        block_csr: bool,
        block_degree: torch.Tensor | None,
        targets: Callable[[np.ndarray, MiniBatch], torch.Tensor],
        first_layer_mean: bool = False,
        edge_features: bool = False,
        edge_ages: bool = False,
    ) -> None:
        self.edge_features, self.edge_ages = edge_features, edge_ages
        self.first_layer_mean = first_layer_mean and block_csr and isinstance(store.features, FeatureSource)
        self.targets = targets
        self.store = store
        self.device = device
        self.prefetch = prefetch
        self.num_threads = num_threads
        self.block_csr = block_csr
        self.block_degree = block_degree

    def producer(
        self, seed_batches: Iterable[np.ndarray], sample: SampleFn, first_batch_id: int, training: bool = True
    ) -> BatchProducer:
        """A producer of :class:`PreparedBatch` (CPU tensors) for ``seed_batches``; the caller closes it."""
        if self.edge_features or self.edge_ages:
            sample = self._with_edge_inputs(sample)
        return BatchProducer(
            seed_batches,
            sample,
            self.store.gather,
            self.targets,
            first_batch_id=first_batch_id,
            depth=self.prefetch,
            feature_bytes=self.store.feature_bytes,
            num_threads=self.num_threads,
            block_csr=self.block_csr,
            block_transpose=self.block_csr and training,
            inputs=self._first_layer if self.first_layer_mean else None,
        )

    def _with_edge_inputs(self, sample: SampleFn) -> SampleFn:
        """``sample`` whose batches' blocks carry their edge inputs (see the class; CPU tensors, or the edge
        source's output device)."""

        def sample_with_edges(seeds: np.ndarray, batch_id: int) -> MiniBatch:
            batch = sample(seeds, batch_id)
            add_edge_inputs(batch, self.store, self.edge_features, self.edge_ages)
            return batch

        return sample_with_edges

    def _first_layer(self, batch: MiniBatch) -> FirstLayerInput | None:
        """The first layer's mean and root rows of ``batch`` read from the table, or None (gather instead)."""
        if isinstance(batch, TypedMiniBatch) or not batch.blocks:
            return None
        features = self.store.features
        assert isinstance(features, FeatureSource)
        csr = block_csr(batch.blocks[0])
        pair = features.gather_mean(batch.n_id, csr.rowptr, csr.col)
        return None if pair is None else FirstLayerInput(*pair)

    def to_device(self, item: PreparedBatch) -> DeviceBatch:
        """``item``'s tensors on the device (features as float32); waits for the copies on CUDA. A typed
        batch gives a :class:`TypedDeviceBatch`."""
        non_blocking = self.device.type == "cuda"
        batch = item.batch
        if isinstance(batch, TypedMiniBatch):
            return self._typed_to_device(item, batch, non_blocking)
        x: Any = item.x  # a FirstLayerInput: CPU float32 rows, used where they are (CPU only)
        if not isinstance(x, FirstLayerInput):
            x = item.x.to(self.device, non_blocking=non_blocking).float()
        blocks = [blk.to(self.device, non_blocking=non_blocking) for blk in batch.blocks]
        for blk in blocks:
            if blk.edge_attr is not None:
                blk.edge_attr = blk.edge_attr.float()
        y = item.y.to(self.device, non_blocking=non_blocking)
        seed_index = batch.seed_index.to(self.device, non_blocking=non_blocking)
        n_id = batch.n_id.to(self.device, non_blocking=non_blocking)
        degree = None if self.block_degree is None else self.block_degree[n_id]
        src_index = dst_index = None
        if isinstance(batch, LinkMiniBatch):
            src_index = batch.src_index.to(self.device, non_blocking=non_blocking)
            dst_index = batch.dst_index.to(self.device, non_blocking=non_blocking)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return DeviceBatch(x, blocks, y, seed_index, degree, src_index, dst_index, n_id)

    def _typed_to_device(self, item: PreparedBatch, batch: TypedMiniBatch, non_blocking: bool) -> TypedDeviceBatch:
        assert isinstance(item.x, dict)
        moved = batch.to(self.device, non_blocking=non_blocking)
        x = {name: rows.to(self.device, non_blocking=non_blocking).float() for name, rows in item.x.items()}
        y = item.y.to(self.device, non_blocking=non_blocking)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        pairs = (moved.src_index, moved.dst_index) if isinstance(moved, TypedLinkMiniBatch) else (None, None)
        return TypedDeviceBatch(x, list(moved.blocks), y, moved.seed_index, None, *pairs, n_id=moved.n_id)


def add_edge_inputs(batch: MiniBatch | TypedMiniBatch, store: GraphStore, features: bool, ages: bool) -> None:
    """Set each block's ``edge_attr`` (with ``features``: ``store.gather_edges(edge_id)``, [E, d] in the edge table's
    dtype) and, for a temporal batch (``n_time`` set) with ``ages``, its ``edge_age`` (float32 [E], ``n_time`` of
    the destination row minus ``edge_time[edge_id]``). A block that needs them without ``edge_id`` (a sampler not
    asked to record it) is an error: the run's inputs would be silently missing. A typed batch: each relation
    block's ``edge_attr`` (typed batches have no edge ages)."""
    if isinstance(batch, TypedMiniBatch):
        for rel in (rel for blk in batch.blocks for rel in blk.relations.values()) if features else ():
            if rel.edge_id is None:
                raise AssertionError("a relation block without edge_id: the sampler was built without edge ids")
            rel.edge_attr = store.gather_edges(rel.edge_id)
        return
    edge_time = store.dataset.edge_time
    timed = ages and batch.n_time is not None and edge_time is not None
    for blk in batch.blocks:
        if (features or timed) and blk.edge_id is None:
            raise AssertionError("a block without edge_id: the sampler was built without edge ids")
        if features:
            blk.edge_attr = store.gather_edges(blk.edge_id)
        if timed:
            ids = blk.edge_id.cpu().numpy()
            dst_time = batch.n_time.cpu()[blk.destinations().cpu()].numpy()
            blk.edge_age = torch.from_numpy((dst_time - np.asarray(edge_time[ids])).astype(np.float32))


def edge_input_dim(model: nn.Module) -> int:
    """The width of the edge inputs ``model`` reads (its ``edge_input_dim`` attribute: edge features and a time
    encoding), 0 for a model without edge inputs."""
    return int(
        getattr(model, "edge_input_dim", 0) or getattr(getattr(model, "encoder", None), "edge_input_dim", 0) or 0
    )


def require_edge_model(model: nn.Module, store: GraphStore) -> bool:
    """True when ``model`` reads the store's edge features: its ``edge_dim`` attribute (a link model's: its
    encoder's; the width of the ``edge_attr`` it reads) equals the edge table's width; a one-line
    :class:`OptionError` naming ``edge_features`` otherwise (a model without edge inputs, or one of another width)."""
    source = store.edge_features
    assert source is not None  # opened by the store with placement.edge_features
    reader = getattr(model, "encoder", model)  # a link model's encoder reads the blocks
    dim = getattr(reader, "edge_dim", None)
    name = getattr(reader, "kind", None) or type(reader).__name__
    if not dim:
        raise OptionError(
            f"{{edge_features}}: the model {name} reads no edge features (a model with edge inputs has edge_dim)",
            options=("edge_features", "model"),
        )
    if int(dim) != source.dim:
        raise OptionError(
            f"{{edge_features}}: the model {name} reads {dim} edge features per edge, the dataset's "
            f"edge_feat.npy has {source.dim}", options=("edge_features",),
        )  # fmt: skip
    return True
