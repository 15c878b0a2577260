"""The typed hops of :class:`~graphtier.sampling.neighbor.sampler.NeighborSampler`: a graph of any schema into typed
blocks (:class:`TypedMiniBatch`).

Hop ``h`` expands every node found so far (all types; the seeds, of the target type, first): a node ``v`` of type
``t`` draws up to ``fanouts[r][h]`` in-neighbours without replacement through every relation ``r`` whose
destination type is ``t`` (row ``r.row_offset + local(v)`` of the back-to-back CSC). The hop is ONE list of work
items over all relations, relation-major (:mod:`graphtier.sampling.neighbor._typed_kernels`), so each kernel runs once per
hop, split between threads by a :class:`ThreadTeam`. A node reached through any relation joins the batch once
(by global id, first-seen order over the hop's edges); its type's local ids then follow that order, so the
destinations of every type are a prefix of its sources.

Randomness: item ``i`` of hop ``h`` of batch ``b`` draws with the key ``node_key(stream_key(seed, b, h), i)``,
whatever thread handles it. With one relation (a homogeneous dataset's :meth:`Schema.homogeneous`) the items are
the nodes in batch order, so the batches are those of the homogeneous fast path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from graphtier._threads import ThreadTeam
from graphtier.dataset.schema import RelationType, Schema
from graphtier.sampling.batch import Block
from graphtier.sampling.buffers import Workspace, WorkspacePool
from graphtier.sampling.neighbor import _neighbor_kernels as kernels
from graphtier.sampling.neighbor import _typed_kernels as typed_kernels
from graphtier.sampling.neighbor.hops import NO_EDGE_IDS, PARALLEL_MIN_ITEMS, hop_sources, run_split
from graphtier.sampling.relation_layout import RelationLayout
from graphtier.sampling.seeds import as_seed_array
from graphtier.sampling.typed_batch import TypedBlock, TypedMiniBatch


class TypedHops:
    """The per-relation hops of a :class:`~graphtier.sampling.neighbor.sampler.NeighborSampler` built with a schema (see
    the module): its arrays, ``seed``, thread team (None: one thread) and ``with_edge_ids`` as that sampler checked
    them, and the schema's :class:`RelationLayout` with ``fanouts`` (a list for every relation or a mapping per
    relation type)."""

    def __init__(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        schema: Schema,
        fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]],
        seed: int,
        team: ThreadTeam | None,
        with_edge_ids: bool,
    ) -> None:
        self.indptr, self.indices = indptr, indices
        self.layout = RelationLayout.build(schema, fanouts, indptr.shape[0] - 1)
        self.schema = schema
        self.seed, self._team = seed, team
        self.with_edge_ids = with_edge_ids

    def sample(self, seeds: np.ndarray | torch.Tensor, batch_id: int, workspaces: WorkspacePool) -> TypedMiniBatch:
        """The batch of ``seeds`` (int [B], local ids of the target type) in stream ``batch_id``, its work arrays
        from ``workspaces`` (:meth:`NeighborSampler.sample`)."""
        layout = self.layout
        local_seeds = as_seed_array(seeds, self.schema.target_type.count)
        workspace = workspaces.take()
        # a failed batch may leave ids in the scratch: its workspace is dropped, not given back
        global_seeds = local_seeds + layout.type_offsets[layout.target]
        batch, _ = self._sample(global_seeds, local_seeds, batch_id, workspace, typed_rows=False)
        workspaces.give_back(workspace)
        return batch

    def sample_global(
        self, global_seeds: np.ndarray, batch_id: int, workspaces: WorkspacePool
    ) -> tuple[TypedMiniBatch, np.ndarray]:
        """Seeds of any types (:meth:`NeighborSampler.sample_global`)."""
        global_seeds = self.layout.global_seeds(global_seeds)
        workspace = workspaces.take()
        batch, rows = self._sample(global_seeds, global_seeds, batch_id, workspace, typed_rows=True)
        workspaces.give_back(workspace)
        return batch, rows

    def _sample(
        self, global_seeds: np.ndarray, seeds: np.ndarray, batch_id: int, workspace: Workspace, *, typed_rows: bool
    ) -> tuple[TypedMiniBatch, np.ndarray]:
        num_types = len(self.schema.node_types)
        local_id = workspace.local_id
        batch_size = global_seeds.shape[0]
        n_id = workspace.array("n_id", batch_size)  # global ids, first-seen order
        node_type = workspace.array("node_type", batch_size)
        type_position = workspace.array("type_position", batch_size)
        seed_index = np.empty(batch_size, dtype=np.int64)
        type_count = np.zeros(num_types, dtype=np.int64)
        layer_counts: list[np.ndarray] = []
        hop_relations: list[dict[RelationType, Block]] = []
        count = 0
        try:
            count = int(kernels.unique_seeds(global_seeds, local_id, n_id, seed_index))
            typed_kernels.assign_types(n_id, 0, count, self.layout.type_offsets, node_type, type_position, type_count)
            rows = type_position[seed_index] if typed_rows else seed_index  # per type (seeds of one type: the same)
            layer_counts.append(type_count.copy())
            for hop in range(self.layout.num_hops):
                relations, sources, num_edges = self._hop(hop, batch_id, workspace, count, type_count)
                n_id = workspace.array("n_id", count + num_edges, keep=count)
                new_count = int(kernels.relabel(sources, local_id, n_id, count))
                node_type = workspace.array("node_type", new_count, keep=count)
                type_position = workspace.array("type_position", new_count, keep=count)
                typed_kernels.assign_types(
                    n_id, count, new_count, self.layout.type_offsets, node_type, type_position, type_count
                )
                count = new_count
                columns = type_position[sources]  # each edge's source row among its type's sources
                positions = workspace.array("edge_ids", num_edges) if self.with_edge_ids else None
                sources_of = dict(zip(self.schema.type_names, type_count.tolist()))
                hop_relations.append({key: Block(rowptr, torch.from_numpy(columns[low:high]), sources_of[key[0]],
                                                 None if positions is None else
                                                 torch.from_numpy(positions[low:high].copy()))
                                      for key, (rowptr, low, high) in relations.items()})  # fmt: skip
                layer_counts.append(type_count.copy())
        finally:
            kernels.reset_local_ids(local_id, n_id, 0, count)
        names = self.schema.type_names
        types = node_type[:count]
        ids = n_id[:count]
        n_id_out = {
            name: torch.from_numpy(ids[types == t] - self.layout.type_offsets[t]) for t, name in enumerate(names)
        }
        blocks = [
            TypedBlock(
                num_src={name: int(layer_counts[h + 1][t]) for t, name in enumerate(names)},
                num_dst={name: int(layer_counts[h][t]) for t, name in enumerate(names)},
                relations=hop_relations[h],
            )
            for h in reversed(range(self.layout.num_hops))
        ]
        batch = TypedMiniBatch(
            n_id=n_id_out,
            blocks=blocks,
            seed_index=torch.from_numpy(seed_index),
            seeds=torch.from_numpy(seeds.copy()),
            target=self.schema.target,
        )
        return batch, rows

    def _hop(
        self, hop: int, batch_id: int, workspace: Workspace, count: int, type_count: np.ndarray
    ) -> tuple[dict[RelationType, tuple[torch.Tensor, int, int]], np.ndarray, int]:
        """Draw hop ``hop`` for the ``count`` nodes found so far: per relation ``(rowptr, first edge, stop edge)``,
        the global source id of every edge (int64 [E], a work array) and E."""
        n_id = workspace.array("n_id", count)
        node_type = workspace.array("node_type", count)
        type_position = workspace.array("type_position", count)
        # the frontier's local ids grouped by type, each type in its batch order
        type_start = np.zeros(len(type_count) + 1, dtype=np.int64)
        np.cumsum(type_count, out=type_start[1:])
        frontier_local = workspace.array("frontier_local", count)
        frontier_local[type_start[node_type] + type_position] = n_id - self.layout.type_offsets[node_type]
        # relation-major items: relation r has one item per frontier node of its destination type
        item_start = np.zeros(len(self.layout.rel_dst) + 1, dtype=np.int64)
        np.cumsum(type_count[self.layout.rel_dst], out=item_start[1:])
        rel_type_start = type_start[self.layout.rel_dst]
        fanout = self.layout.fanout_table[hop]
        num_items = int(item_start[-1])
        starts, degrees = workspace.array("starts", num_items), workspace.array("degrees", num_items)
        counts, offsets = workspace.array("counts", num_items), workspace.array("offsets", num_items + 1)
        team = self._team if num_items >= PARALLEL_MIN_ITEMS else None

        def spans(first: int, stop: int) -> None:
            typed_kernels.typed_spans(
                self.indptr, frontier_local, item_start, rel_type_start, self.layout.row_offset, fanout,
                starts, degrees, counts, first, stop,
            )  # fmt: skip

        run_split(team, spans, num_items)
        offsets[0] = 0
        np.cumsum(counts, out=offsets[1:])
        num_edges = int(offsets[-1])
        sources = workspace.array("sources", num_edges)
        destinations = workspace.array("destinations", num_edges)
        positive = fanout[fanout > 0]
        widest = int(positive.max()) if positive.size else -1  # Floyd draws at most this many per item
        stream = np.uint64(kernels.stream_key(self.seed, batch_id, hop))
        edge_ids = workspace.array("edge_ids", num_edges) if self.with_edge_ids else NO_EDGE_IDS
        hop_sources(team, self.indices, (offsets, starts, degrees), widest, stream, sources, destinations, edge_ids)
        relations = {}
        for r, rel in enumerate(self.schema.relations):
            first, stop = int(item_start[r]), int(item_start[r + 1])
            low, high = int(offsets[first]), int(offsets[stop])
            relations[rel.type] = (torch.from_numpy(offsets[first : stop + 1] - low), low, high)
        return relations, sources, num_edges
