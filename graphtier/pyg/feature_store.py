"""PyG ``FeatureStore`` adapters: features and labels of a :class:`GraphStore` (or of a dataset, opened as one).

``TieredPyGFeatureStore`` replaces the gather by a graphtier store (tiered, zero-copy, ...)::

    store = make_feature_store(ds.features, "tiered", device=torch.device("cuda"), gpu_budget="auto")
    stores = (TieredPyGFeatureStore(ds, store), GraphtierGraphStore(ds))

``x`` is then float32 on the store's ``output_device`` (the GPU for the tiered modes on CUDA).

Edge features (``edge_feat.npy``) are the attribute ``edge_attr`` (group ``None``), indexed by edge ids (CSC
positions, the ``e_id`` of PyG's batches). PyG's loaders index every attribute that ``get_all_tensor_attrs`` lists by
the batch's NODE ids, so ``edge_attr`` is not listed: :class:`EdgeAttrs` (a loader ``transform``) reads it by
``batch.e_id``::

    loader = NeighborLoader((fs, gs), ..., transform=EdgeAttrs(fs))   # batch.edge_attr [num_edges, d]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import FeatureStore, HeteroData, TensorAttr

from graphtier.dataset import Dataset
from graphtier.errors import GraphtierError, OptionError
from graphtier.graphstore import GraphStore
from graphtier.graphstore.edge_features import mapped_rows
from graphtier.memory import FeatureSource, HostFeatureStore

EDGE_ATTR = "edge_attr"
"""The attribute name of the edge features (PyG's ``Data.edge_attr``)."""


class _ReadOnlyStoreError(GraphtierError):
    pass


def _index_to_numpy(index: Any, num_rows: int) -> np.ndarray:
    if index is None:
        return np.arange(num_rows, dtype=np.int64)
    if isinstance(index, slice):
        return np.arange(num_rows, dtype=np.int64)[index]
    if isinstance(index, Tensor):
        return index.detach().cpu().numpy().astype(np.int64, copy=False)
    return np.asarray(index, dtype=np.int64)


def host_graph_store(dataset: Dataset, num_threads: int | None = None) -> GraphStore:
    """A :class:`GraphStore` over ``dataset`` that samples and gathers on the CPU (the adapters' default); a dataset
    with edge features (homogeneous) also serves them, and its samplers record each edge's id (PyG's ``e_id``)."""
    features = HostFeatureStore(dataset.features) if dataset.features is not None else None
    return GraphStore(dataset, features, num_threads=num_threads, edge_features=host_edge_features(dataset))


def host_edge_features(dataset: Dataset) -> FeatureSource | None:
    """The edge feature rows of ``dataset`` gathered on the CPU by CSC position (a typed dataset's: positions of its
    back-to-back CSC, every relation's rows in one table), or None without ``edge_feat.npy``."""
    table = dataset.edge_features
    return mapped_rows(dataset, HostFeatureStore(table)) if table is not None else None


class GraphtierFeatureStore(FeatureStore):
    """A read-only PyG ``FeatureStore`` over a :class:`GraphStore` (a Dataset is opened as a CPU one).

    Attributes (group ``None``): ``x`` (float32 [N, D] on the store's feature device, gathered by
    graphtier and converted from float16 when stored so), ``y`` (int64 [N] labels, -1 = unlabelled, CPU) and, when
    the dataset has edge features, ``edge_attr`` (float32 [E, d] indexed by edge ids; see :class:`EdgeAttrs`).
    A typed dataset has groups named by node type, PyG's ``HeteroData`` layout: ``x`` (float32 [count, D_t]) per
    type with features, indexed by local ids, and ``y`` on the target type.
    """

    def __init__(self, source: Dataset | GraphStore) -> None:
        super().__init__()
        self.store = source if isinstance(source, GraphStore) else host_graph_store(source)
        self.dataset = self.store.dataset

    def _put_tensor(self, tensor: Any, attr: TensorAttr) -> bool:
        raise _ReadOnlyStoreError("GraphtierFeatureStore is read-only: prepare a new dataset to change features")

    def _remove_tensor(self, attr: TensorAttr) -> bool:
        raise _ReadOnlyStoreError("GraphtierFeatureStore is read-only")

    def _typed_rows(self, node_type: str, ids: np.ndarray) -> Tensor:
        """float32 [len(ids), D_t] features of local ids of ``node_type``: through the store's typed gather when it
        has one (``GraphStore.open``), else read from the dataset's host table (memory map)."""
        if self.store.features is not None:
            return self.store.gather({node_type: torch.from_numpy(ids)})[node_type].to(torch.float32, copy=True)
        return torch.from_numpy(np.asarray(self.dataset.type_features[node_type][ids], dtype=np.float32))

    def _typed_sizes(self) -> dict[tuple[Any, str], tuple[int, ...]]:
        """``{(group, attr): size}`` of a typed dataset's tensors: ``x`` per featured type, ``y`` of the target and,
        with edge features, ``edge_attr`` per relation type ``(src, name, dst)``, indexed by the positions of the
        typed CSC (the sampler's ``e_id``, one table for every relation)."""
        schema = self.dataset.schema
        sizes: dict[tuple[Any, str], tuple[int, ...]] = {
            (t.name, "x"): (t.count, t.feature_dim) for t in schema.node_types if t.name in self.dataset.type_features
        }
        if self.dataset.labels is not None:
            sizes[(schema.target, "y")] = (schema.target_type.count,)
        if self.store.edge_features is not None:
            for rel in schema.relations:
                sizes[(rel.type, EDGE_ATTR)] = (self.dataset.num_edges, self.store.edge_features.dim)
        return sizes

    def _get_tensor(self, attr: TensorAttr) -> Tensor | None:
        if self.dataset.is_hetero:
            group = tuple(attr.group_name) if isinstance(attr.group_name, (tuple, list)) else attr.group_name
            size = self._typed_sizes().get((group, attr.attr_name))
            if size is None:
                return None
            ids = _index_to_numpy(attr.index, size[0])
            if attr.attr_name == EDGE_ATTR:
                return self.store.gather_edges(ids).to(torch.float32, copy=True)
            return (
                self._typed_rows(attr.group_name, ids)
                if attr.attr_name == "x"
                else torch.from_numpy(self.store.labels(ids))
            )
        if attr.attr_name == "x" and self.store.features is not None:
            ids = _index_to_numpy(attr.index, self.store.num_nodes)
            return self.store.gather(ids).to(torch.float32, copy=True)
        if attr.attr_name == "y" and self.dataset.labels is not None:
            ids = _index_to_numpy(attr.index, self.store.num_nodes)
            return torch.from_numpy(self.store.labels(ids))
        if attr.attr_name == EDGE_ATTR and self.store.edge_features is not None:
            ids = _index_to_numpy(attr.index, self.dataset.num_edges)
            return self.store.gather_edges(ids).to(torch.float32, copy=True)
        return None

    def _get_tensor_size(self, attr: TensorAttr) -> tuple[int, ...] | None:
        if self.dataset.is_hetero:
            return self._typed_sizes().get((attr.group_name, attr.attr_name))
        if attr.attr_name == "x" and self.store.features is not None:
            return (self.store.features.num_rows, self.store.features.dim)
        if attr.attr_name == "y" and self.dataset.labels is not None:
            return (self.store.num_nodes,)
        if attr.attr_name == EDGE_ATTR and self.store.edge_features is not None:
            return (self.dataset.num_edges, self.store.edge_features.dim)
        return None

    def get_all_tensor_attrs(self) -> list[TensorAttr]:
        if self.dataset.is_hetero:  # node attributes (edge_attr is read by e_id: EdgeAttrs)
            return [TensorAttr(group_name=t, attr_name=name) for t, name in self._typed_sizes() if name != EDGE_ATTR]
        attrs = []
        if self.store.features is not None:
            attrs.append(TensorAttr(group_name=None, attr_name="x"))
        if self.dataset.labels is not None:
            attrs.append(TensorAttr(group_name=None, attr_name="y"))
        return attrs


class TieredPyGFeatureStore(GraphtierFeatureStore):
    """PyG ``FeatureStore`` over ``dataset`` with ``x`` gathered by ``store`` (any :class:`FeatureSource`).

    ``x[index]``: float32 [len(index), D] on ``store.output_device``; ``y``: int64 labels on the CPU.
    """

    def __init__(self, dataset: Dataset, store: FeatureSource) -> None:
        if dataset.features is None:
            raise OptionError(f"{dataset.path}: dataset has no features to serve")
        if store.num_rows != dataset.num_nodes or store.dim != dataset.feature_dim:
            raise OptionError(
                f"feature store shape: expected [{dataset.num_nodes}, {dataset.feature_dim}] (the dataset), "
                f"found [{store.num_rows}, {store.dim}]"
            )
        super().__init__(GraphStore(dataset, store))


class EdgeAttrs:
    """A PyG loader ``transform`` setting ``batch.edge_attr`` (float32 [num_edges, d]) from ``feature_store``'s
    ``edge_attr`` rows of ``batch.e_id`` (the sampled edges' ids, which the loader sets from the sampler).

    ``NeighborLoader`` / ``LinkNeighborLoader`` / ``NodeLoader`` with a :class:`GraphtierNeighborSampler` over a
    dataset with edge features give ``e_id``; OptionError (one line) when a batch has none or the store has no
    edge features."""

    def __init__(self, feature_store: GraphtierFeatureStore) -> None:
        if feature_store.store.edge_features is None:
            raise OptionError(f"{feature_store.dataset.path}: the feature store has no edge features (edge_feat.npy)")
        self.feature_store = feature_store

    def __call__(self, batch: Any) -> Any:
        """``batch`` (a PyG ``Data``) with ``edge_attr`` set; a ``HeteroData`` with ``edge_attr`` of every edge type
        (its ``e_id``: positions of the typed CSC)."""
        if isinstance(batch, HeteroData):
            stores = [(store, store._key) for store in batch.edge_stores]
        else:
            stores = [(batch, None)]
        for store, group in stores:
            e_id = getattr(store, "e_id", None)
            if e_id is None:
                raise OptionError("EdgeAttrs: the batch has no e_id (sample with GraphtierNeighborSampler)")
            attr = TensorAttr(group_name=group, attr_name=EDGE_ATTR, index=e_id)
            store.edge_attr = self.feature_store.get_tensor(attr)
        return batch
