"""One-call PyG ``NodeLoader`` over a graphtier dataset or :class:`GraphStore`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.loader import NodeLoader

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.pyg.feature_store import GraphtierFeatureStore, host_graph_store
from graphtier.pyg.graph_store import GraphtierGraphStore
from graphtier.pyg.sampler import GraphtierNeighborSampler


def neighbor_loader(
    source: Dataset | GraphStore,
    fanouts: Sequence[int],
    *,
    input_nodes: str | Tensor | np.ndarray = "train",
    batch_size: int = 1024,
    shuffle: bool = True,
    seed: int = 0,
    **loader_options: Any,
) -> NodeLoader:
    """A PyG ``NodeLoader`` over ``source`` sampling ``fanouts`` around ``input_nodes``.

    ``source`` is a Dataset (CPU sampling, CPU gather) or a :class:`GraphStore` (its sampler and its
    feature store: with ``sample_on="gpu"`` and a tiered feature store the whole data path runs on the GPU).

    ``input_nodes`` is a split name (``train``, ``valid``, ``test``) or an int64 tensor/array of node ids.
    Extra options go to ``torch.utils.data.DataLoader`` (``num_workers`` must stay 0: the sampler is
    already parallel and releases the GIL).
    """
    store = source if isinstance(source, GraphStore) else host_graph_store(source)
    dataset = store.dataset
    if isinstance(input_nodes, str):
        ids = dataset.split(input_nodes)
        if ids is None:
            raise OptionError(f"{dataset.path}: dataset has no {input_nodes!r} split")
        nodes = torch.from_numpy(np.asarray(ids, dtype=np.int64).copy())
    else:
        nodes = torch.as_tensor(np.asarray(input_nodes, dtype=np.int64))
    stores = (GraphtierFeatureStore(store), GraphtierGraphStore(store))
    return NodeLoader(
        stores,
        GraphtierNeighborSampler(store, fanouts, seed=seed),
        input_nodes=nodes,
        batch_size=batch_size,
        shuffle=shuffle,
        **loader_options,
    )
