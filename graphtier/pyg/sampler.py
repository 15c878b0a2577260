"""PyG ``BaseSampler`` backed by graphtier's neighbour samplers (CPU, or GPU through a :class:`GraphStore`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch_geometric.sampler import BaseSampler, NodeSamplerInput, SamplerOutput

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore


class GraphtierNeighborSampler(BaseSampler):
    """PyG ``BaseSampler`` backed by graphtier's parallel uniform neighbour sampler.

    Args:
        source: the graph: a Dataset (opened as a CPU :class:`GraphStore`: sampled on the CPU from its CSC) or a
            :class:`GraphStore` (sampled where the store samples: ``sample_on="gpu"`` gives batches on
            the GPU, read from its topology tiers, counted in ``store.traffic()``).
        fanouts: neighbours per hop, the first hop from the seeds first (PyG's ``num_neighbors``);
            -1 = all neighbours.
        seed: sampling seed; batches are reproducible for a seed.
    """

    def __init__(
        self, source: Dataset | GraphStore, fanouts: Sequence[int], *, seed: int = 0, num_threads: int | None = None
    ) -> None:
        store = source if isinstance(source, GraphStore) else GraphStore(source, None, num_threads=num_threads)
        self._sample = store.sampler(fanouts, seed=seed)
        self.num_hops = len(fanouts)

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs: Any) -> SamplerOutput:
        """Sample around ``index.node`` (distinct global seed ids) and return PyG's merged subgraph."""
        seeds = index.node.cpu().numpy().astype(np.int64, copy=False)
        batch = self._sample(seeds, None)
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
