"""PyG integration: graphtier's sampler and dataset behind PyG's own loader interfaces.

A PyG user gets neighbour sampling without pyg-lib or torch-sparse::

    from torch_geometric.loader import NodeLoader
    from graphtier import Dataset
    from graphtier.pyg import GraphtierFeatureStore, GraphtierGraphStore, GraphtierNeighborSampler

    ds = Dataset.open("data/cora")
    stores = (GraphtierFeatureStore(ds), GraphtierGraphStore(ds))
    loader = NodeLoader(stores, GraphtierNeighborSampler(ds, [10, 10]),
                        input_nodes=torch.from_numpy(ds.train_idx[:]), batch_size=128, shuffle=True)
    for batch in loader:            # a torch_geometric.data.Data
        out = model(batch.x, batch.edge_index)[: batch.batch_size]
        loss = F.cross_entropy(out, batch.y[: batch.batch_size])

The batch follows PyG's ``NeighborLoader`` layout: ``batch.n_id`` global ids with the seeds first,
``edge_index`` over local ids (row 0 source, row 1 destination), all hops merged, and
``num_sampled_nodes`` / ``num_sampled_edges`` per hop (seeds first) for ``trim_to_layer``.
``neighbor_loader`` builds all of this in one call.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import EdgeAttr, FeatureStore, GraphStore, TensorAttr
from torch_geometric.data.graph_store import EdgeLayout
from torch_geometric.loader import NodeLoader
from torch_geometric.sampler import BaseSampler, NodeSamplerInput, SamplerOutput

from graphtier.dataset import Dataset
from graphtier.errors import GraphtierError, OptionError
from graphtier.sampling import NeighborSampler
from graphtier.store import HostFeatureStore


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


class GraphtierFeatureStore(FeatureStore):
    """A read-only PyG ``FeatureStore`` over a graphtier dataset.

    Attributes (group ``None``): ``x`` (float32 [N, D], gathered by graphtier's parallel CPU gather and
    converted from float16 when stored so) and ``y`` (int64 [N] labels, -1 = unlabelled).
    """

    def __init__(self, dataset: Dataset) -> None:
        super().__init__()
        self.dataset = dataset
        self._gather = HostFeatureStore(dataset.features) if dataset.features is not None else None

    def _put_tensor(self, tensor: Any, attr: TensorAttr) -> bool:
        raise _ReadOnlyStoreError("GraphtierFeatureStore is read-only: prepare a new dataset to change features")

    def _remove_tensor(self, attr: TensorAttr) -> bool:
        raise _ReadOnlyStoreError("GraphtierFeatureStore is read-only")

    def _get_tensor(self, attr: TensorAttr) -> Tensor | None:
        if attr.attr_name == "x" and self._gather is not None:
            ids = _index_to_numpy(attr.index, self.dataset.num_nodes)
            return self._gather.gather(ids).to(torch.float32, copy=True)
        if attr.attr_name == "y" and self.dataset.labels is not None:
            ids = _index_to_numpy(attr.index, self.dataset.num_nodes)
            return torch.from_numpy(np.asarray(self.dataset.labels[ids], dtype=np.int64))
        return None

    def _get_tensor_size(self, attr: TensorAttr) -> tuple[int, ...] | None:
        if attr.attr_name == "x" and self.dataset.features is not None:
            return tuple(self.dataset.features.shape)
        if attr.attr_name == "y" and self.dataset.labels is not None:
            return (self.dataset.num_nodes,)
        return None

    def get_all_tensor_attrs(self) -> list[TensorAttr]:
        attrs = []
        if self.dataset.features is not None:
            attrs.append(TensorAttr(group_name=None, attr_name="x"))
        if self.dataset.labels is not None:
            attrs.append(TensorAttr(group_name=None, attr_name="y"))
        return attrs


class GraphtierGraphStore(GraphStore):
    """A read-only PyG ``GraphStore`` exposing the dataset's CSC topology (``layout='csc'``)."""

    def __init__(self, dataset: Dataset) -> None:
        super().__init__()
        self.dataset = dataset
        n = dataset.num_nodes
        self._attr = EdgeAttr(edge_type=None, layout=EdgeLayout.CSC, is_sorted=True, size=(n, n))

    def _put_edge_index(self, edge_index: Any, edge_attr: EdgeAttr) -> bool:
        raise _ReadOnlyStoreError("GraphtierGraphStore is read-only")

    def _remove_edge_index(self, edge_attr: EdgeAttr) -> bool:
        raise _ReadOnlyStoreError("GraphtierGraphStore is read-only")

    def _get_edge_index(self, edge_attr: EdgeAttr) -> tuple[Tensor, Tensor] | None:
        if edge_attr.layout != EdgeLayout.CSC:
            return None
        rows = torch.from_numpy(np.asarray(self.dataset.indices).astype(np.int64))
        colptr = torch.from_numpy(np.asarray(self.dataset.indptr, dtype=np.int64).copy())
        return rows, colptr

    def get_all_edge_attrs(self) -> list[EdgeAttr]:
        return [self._attr]


class GraphtierNeighborSampler(BaseSampler):
    """PyG ``BaseSampler`` backed by graphtier's parallel uniform neighbour sampler.

    Args:
        dataset: the graph (CSC, in-neighbours are sampled).
        fanouts: neighbours per hop, the first hop from the seeds first (PyG's ``num_neighbors``);
            -1 = all neighbours.
        seed: sampling seed; batches are reproducible for a seed.
    """

    def __init__(self, dataset: Dataset, fanouts: Sequence[int], *, seed: int = 0, num_threads: int | None = None) -> None:
        self.sampler = NeighborSampler(
            np.asarray(dataset.indptr), np.asarray(dataset.indices), list(fanouts), seed=seed, num_threads=num_threads
        )
        self.num_hops = len(fanouts)

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs: Any) -> SamplerOutput:
        """Sample around ``index.node`` (distinct global seed ids) and return PyG's merged subgraph."""
        seeds = index.node.cpu().numpy().astype(np.int64, copy=False)
        batch = self.sampler.sample(seeds)
        if batch.num_nodes and int(batch.blocks[-1].num_dst if batch.blocks else batch.num_nodes) != seeds.shape[0]:
            raise OptionError("GraphtierNeighborSampler expects distinct seed nodes in a batch")
        blocks = batch.blocks[::-1]  # hop 1 (from the seeds) first, as PyG orders them
        edge_index = (
            torch.cat([blk.edge_index for blk in blocks], dim=1) if blocks else torch.empty((2, 0), dtype=torch.long)
        )
        num_sampled_nodes = [seeds.shape[0]] + [blk.num_src - blk.num_dst for blk in blocks]
        num_sampled_edges = [blk.num_edges for blk in blocks]
        return SamplerOutput(
            node=batch.n_id,
            row=edge_index[0],
            col=edge_index[1],
            edge=None,
            batch=None,
            num_sampled_nodes=num_sampled_nodes,
            num_sampled_edges=num_sampled_edges,
            metadata=(index.input_id, index.time),
        )

    def sample_from_edges(self, index: Any, neg_sampling: Any = None) -> SamplerOutput:
        raise OptionError("GraphtierNeighborSampler samples from nodes only (link prediction is not supported)")


def neighbor_loader(
    dataset: Dataset,
    fanouts: Sequence[int],
    *,
    input_nodes: str | Tensor | np.ndarray = "train",
    batch_size: int = 1024,
    shuffle: bool = True,
    seed: int = 0,
    **loader_options: Any,
) -> NodeLoader:
    """A PyG ``NodeLoader`` over ``dataset`` sampling ``fanouts`` around ``input_nodes``.

    ``input_nodes`` is a split name (``train``, ``valid``, ``test``) or an int64 tensor/array of node ids.
    Extra options go to ``torch.utils.data.DataLoader`` (``num_workers`` must stay 0: the sampler is
    already parallel and releases the GIL).
    """
    if isinstance(input_nodes, str):
        ids = dataset.split(input_nodes)
        if ids is None:
            raise OptionError(f"{dataset.path}: dataset has no {input_nodes!r} split")
        nodes = torch.from_numpy(np.asarray(ids, dtype=np.int64).copy())
    else:
        nodes = torch.as_tensor(np.asarray(input_nodes, dtype=np.int64))
    stores = (GraphtierFeatureStore(dataset), GraphtierGraphStore(dataset))
    return NodeLoader(
        stores,
        GraphtierNeighborSampler(dataset, fanouts, seed=seed),
        input_nodes=nodes,
        batch_size=batch_size,
        shuffle=shuffle,
        **loader_options,
    )
