"""ShaDow k-hop sampling (ShaDow-GNN; PyG ``ShaDowKHopSampler`` semantics).

Each distinct root gets its own subgraph: a ``len(fanouts)``-hop sampled neighbourhood (hop ``h``
draws up to ``fanouts[h]`` in-neighbours without replacement of every node first reached at hop
``h - 1``), closed under the induced subgraph of the original graph. Subgraphs are disjoint (a node
reached from two roots is copied), so an ``num_layers``-layer model (``num_layers`` may exceed the
sampling depth) runs on one square block repeated ``num_layers`` times, and the roots' outputs are
read at ``seed_index``.

Differences from torch_sparse's ``ego_k_hop_sample_adj`` (behind PyG's sampler): one fanout per
hop instead of one ``num_neighbors`` for all; each hop expands only the nodes first reached at the
previous hop (PyG expands every draw, repeats included); the induced edges come from sorted-list
intersections rather than a map lookup per neighbour (same edges, repeated edges kept).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import torch

from graphtier.errors import OptionError
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.neighbor import _neighbor_kernels as nkernels
from graphtier.sampling.neighbor.hops import (
    check_graph,
    check_num_threads,
    check_seed,
    hop_sources,
    hop_spans,
    next_batch_id,
    numba_threads,
    threads_for,
)
from graphtier.sampling.neighbor.sampler import check_fanouts
from graphtier.sampling.seeds import as_seed_array
from graphtier.sampling.shadow import _shadow_kernels as kernels

# Edges per subgraph node kept from the first intersection pass (see _shadow_kernels.induced_edges_buffered).
EDGE_BUFFER_PER_NODE = 16


def first_seen_unique(seeds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values of ``seeds`` (int64 [B]) in first-seen order, and each seed's index among them (int64 [B])."""
    values, first, inverse = np.unique(seeds, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(order.shape[0], dtype=np.int64)
    rank[order] = np.arange(order.shape[0], dtype=np.int64)
    return values[order].astype(np.int64), rank[inverse.reshape(-1)]


class ShadowSampler:
    """ShaDow-k-hop sampler: one disjoint induced subgraph per root, ``num_layers`` square blocks.

    Args:
        indptr: int64 [N + 1] CSC column pointers; indices: int32/int64 [E] in-neighbours, sorted per node.
        fanouts: neighbours drawn per node at each sampling hop (-1 = all); the depth is ``len(fanouts)``.
        num_layers: model layers; the batch holds that many references to one square block.
        seed: as for :class:`~graphtier.sampling.NeighborSampler`, as is ``num_threads``.

    Batch layout: ``n_id`` starts with the distinct roots (first-seen order), then each root's other
    nodes, root after root, by ascending global id; ``subgraph`` gives each node's root index. The
    same ``(seed, batch_id, seeds)`` gives the same batch for any thread count; the sampler holds no
    per-batch state, so it is safe to share between threads.
    """

    def __init__(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        fanouts: Sequence[int],
        num_layers: int,
        *,
        seed: int = 0,
        num_threads: int | None = None,
    ) -> None:
        self.indptr, self.indices = check_graph(indptr, indices)
        self.num_nodes = self.indptr.shape[0] - 1
        self.fanouts = check_fanouts(fanouts)
        if isinstance(num_layers, bool) or not isinstance(num_layers, (int, np.integer)) or num_layers < 1:
            raise OptionError(f"num_layers: expected a positive integer, found {num_layers!r}")
        self.num_layers = int(num_layers)
        self.seed = check_seed(seed)
        self.num_threads = check_num_threads(num_threads)
        self._batch_counter = itertools.count()

    def sample(self, seeds: np.ndarray | torch.Tensor, batch_id: int | None = None) -> MiniBatch:
        """Sample one subgraph per distinct root of ``seeds`` (int [B] global ids, numpy or CPU tensor).

        Returns a :class:`MiniBatch` of CPU int64 tensors: ``n_id`` [M], ``num_layers`` references to
        one Block with ``num_src == num_dst == M``, ``seed_index`` [B] (each root's row), ``subgraph`` [M].
        """
        seed_array = as_seed_array(seeds, self.num_nodes)
        batch_id = next_batch_id(batch_id, self._batch_counter)
        with numba_threads(threads_for(int(seed_array.shape[0]) * 8, self.num_threads)):
            n_id, edge_index, seed_index, subgraph = self._sample(seed_array, int(batch_id))
        total = int(n_id.shape[0])
        block = Block.from_edge_index(torch.from_numpy(edge_index), total, total)
        return MiniBatch(
            n_id=torch.from_numpy(n_id),
            blocks=[block] * self.num_layers,
            seed_index=torch.from_numpy(seed_index),
            seeds=torch.from_numpy(seed_array.copy()),
            subgraph=torch.from_numpy(subgraph),
        )

    def _sample(self, seeds: np.ndarray, batch_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        roots, seed_index = first_seen_unique(seeds)
        num_roots = roots.shape[0]
        set_nodes = roots.copy()
        set_ptr = np.arange(num_roots + 1, dtype=np.int64)
        frontier = roots.copy()
        frontier_ptr = set_ptr.copy()
        for hop, fanout in enumerate(self.fanouts):
            spans = hop_spans(None, self.indptr, frontier, fanout)
            offsets = spans[0]
            candidates = np.empty(int(offsets[-1]), dtype=np.int64)
            positions = np.empty(int(offsets[-1]), dtype=np.int64)
            stream = np.uint64(nkernels.stream_key(self.seed, batch_id, hop))
            hop_sources(None, self.indices, spans, fanout, stream, candidates, positions)
            cand_ptr = offsets[frontier_ptr]
            counts = kernels.new_members(candidates, cand_ptr, set_nodes, set_ptr)
            new_ptr = np.zeros(num_roots + 1, dtype=np.int64)
            np.cumsum(counts, out=new_ptr[1:])
            merged_ptr = set_ptr + new_ptr
            merged = np.empty(int(merged_ptr[-1]), dtype=np.int64)
            frontier = np.empty(int(new_ptr[-1]), dtype=np.int64)
            kernels.merge_members(set_nodes, set_ptr, candidates, cand_ptr, new_ptr, merged_ptr, merged, frontier)
            set_nodes, set_ptr, frontier_ptr = merged, merged_ptr, new_ptr
        total = int(set_ptr[-1])
        n_id = np.empty(total, dtype=np.int64)
        subgraph = np.empty(total, dtype=np.int64)
        local = kernels.assign_local_ids(roots, set_nodes, set_ptr, n_id, subgraph)
        # Room for EDGE_BUFFER_PER_NODE edges per member; larger subgraphs are intersected twice.
        sizes = np.diff(set_ptr)
        buffer_ptr = np.zeros(num_roots + 1, dtype=np.int64)
        np.cumsum(np.minimum(sizes * sizes, EDGE_BUFFER_PER_NODE * sizes), out=buffer_ptr[1:])
        buffer = np.empty((2, int(buffer_ptr[-1])), dtype=np.int64)
        edge_offsets = kernels.induced_edges_buffered(
            self.indptr, self.indices, set_nodes, set_ptr, local, buffer_ptr, buffer
        )
        edge_index = np.empty((2, int(edge_offsets[-1])), dtype=np.int64)
        kernels.write_induced_edges(
            self.indptr, self.indices, set_nodes, set_ptr, local, buffer_ptr, buffer, edge_offsets, edge_index
        )
        return n_id, edge_index, seed_index, subgraph
