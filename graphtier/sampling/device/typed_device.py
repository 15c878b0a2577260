"""The typed hops of :class:`~graphtier.sampling.device.sampler.DeviceNeighborSampler`: per-relation sampling where the
graph is.

A :class:`DeviceTypedHops` reads the back-to-back CSC of every relation (row ``r.row_offset + v`` for
destination ``v`` of relation ``r``) through a :class:`~graphtier.sampling.device.sampler.Topology` and does each hop with
torch ops on its device, over the CPU sampler's work items (:mod:`graphtier.sampling.neighbor._typed_kernels`): relation-major,
one item per (relation, frontier node of its destination type, in that type's batch order), item ``i`` with its
relation's fanout. The picks are :func:`graphtier.sampling.device.sampler.draw_picks` (Triton on CUDA, the numba twin on
the CPU), one call per distinct fanout of the hop, each item keyed by ``node_key(stream, i)`` as on the CPU; new
nodes are numbered in first-seen order over the hop's edges (:func:`first_seen_relabel`). A batch is therefore
identical, tensor for tensor, to ``NeighborSampler(indptr, indices, fanouts, schema=schema, seed=seed).sample(seeds,
batch_id)``, on the topology's device.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from types import ModuleType

import numpy as np
import torch

from graphtier.dataset.schema import RelationType, Schema
from graphtier.sampling.batch import Block
from graphtier.sampling.device.device_hops import (
    Topology,
    draw_picks,
    edge_layout,
    first_seen_relabel,
    seeds_on_device,
)
from graphtier.sampling.neighbor import _neighbor_kernels as cpu_kernels
from graphtier.sampling.relation_layout import RelationLayout
from graphtier.sampling.typed_batch import TypedBlock, TypedMiniBatch


def type_positions(offsets: torch.Tensor, n_id: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """``(node_type, type_position, type_count)`` of a batch's rows ``n_id`` (global ids, first-seen order; a typed
    sampler's rows) under the schema's type ``offsets`` (int64 [T + 1] on their device): each row's type and its
    position among the rows of that type (int64 [N] on the device), and the count per type (host ints)."""
    node_type = torch.searchsorted(offsets, n_id, right=True) - 1
    counts = torch.bincount(node_type, minlength=int(offsets.shape[0]) - 1)
    type_start = torch.cumsum(counts, 0) - counts
    by_type = torch.argsort(node_type, stable=True)
    type_position = torch.empty_like(n_id)
    type_position[by_type] = torch.arange(n_id.shape[0], device=n_id.device) - type_start[node_type[by_type]]
    return node_type, type_position, counts.tolist()


class DeviceTypedHops:
    """The per-relation hops of a :class:`~graphtier.sampling.device.sampler.DeviceNeighborSampler` built with a schema
    (see the module): its ``topology`` (the back-to-back CSC, ``topology.num_nodes == schema.num_rows``), ``seed``,
    resolved pick ``kernels`` (None: the numba twin) and ``with_edge_ids`` as that sampler checked them, and the
    schema's :class:`RelationLayout` with ``fanouts``."""

    def __init__(
        self,
        topology: Topology,
        schema: Schema,
        fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]],
        seed: int,
        kernels: ModuleType | None,
        with_edge_ids: bool,
    ) -> None:
        self.layout = RelationLayout.build(schema, fanouts, topology.num_nodes, "topology")
        self.topology, self.schema, self.seed = topology, schema, seed
        self.with_edge_ids = with_edge_ids
        self.device = torch.device(topology.device)
        self._kernels = kernels
        on_device = {
            name: torch.from_numpy(getattr(self.layout, name)).to(self.device)
            for name in ("type_offsets", "rel_dst", "row_offset", "fanout_table")
        }
        self._type_offsets, self._rel_dst = on_device["type_offsets"], on_device["rel_dst"]
        self._row_offset, self._fanouts_on_device = on_device["row_offset"], on_device["fanout_table"]

    def sample(self, seeds: np.ndarray | torch.Tensor, batch_id: int) -> TypedMiniBatch:
        """The batch of ``seeds`` (int [B], local ids of the target type: numpy, CPU or device tensor) in stream
        ``batch_id``, on the topology's device (:meth:`DeviceNeighborSampler.sample`)."""
        target = self.schema.target_type
        local_seeds = seeds_on_device(seeds, target.count, self.device)
        batch, _ = self._sample(local_seeds + int(target.offset), batch_id)
        batch.seeds = local_seeds
        return batch

    def sample_global(
        self, global_seeds: np.ndarray | torch.Tensor, batch_id: int
    ) -> tuple[TypedMiniBatch, torch.Tensor]:
        """Seeds of any types (:meth:`DeviceNeighborSampler.sample_global`); the rows on the device."""
        seeds = seeds_on_device(global_seeds, self.schema.num_nodes, self.device)
        return self._sample(seeds, batch_id)

    def _sample(self, global_seeds: torch.Tensor, batch_id: int) -> tuple[TypedMiniBatch, torch.Tensor]:
        """The batch of ``global_seeds`` (int64 [B] on the device; its ``seeds`` those ids) and each seed's row among
        its type's rows."""
        # Triton launches on the current CUDA device: make it the topology's (the caller may be any thread)
        with torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext():
            n_id, seed_index = first_seen_relabel(global_seeds[:0], global_seeds)
            node_type, type_position, type_count = type_positions(self._type_offsets, n_id)
            seed_rows = type_position[seed_index]
            layer_counts = [type_count]
            hop_relations: list[dict[RelationType, Block]] = []
            for hop in range(self.layout.num_hops):
                stream = cpu_kernels.stream_key(self.seed, batch_id, hop)
                spans, sources, positions = self._hop(hop, stream, n_id, node_type, type_position, type_count)
                n_id, local_sources = first_seen_relabel(n_id, sources)
                node_type, type_position, type_count = type_positions(self._type_offsets, n_id)
                columns = type_position[local_sources]  # each edge's source row among its type's sources
                sources_of = dict(zip(self.schema.type_names, type_count))
                hop_relations.append({key: Block(rowptr, columns[low:high], sources_of[key[0]],
                                                 positions[low:high] if self.with_edge_ids else None)
                                      for key, (rowptr, low, high) in spans.items()})  # fmt: skip
                layer_counts.append(type_count)
        names = self.schema.type_names
        local = n_id - self._type_offsets[node_type]
        blocks = [
            TypedBlock(
                num_src={name: layer_counts[h + 1][t] for t, name in enumerate(names)},
                num_dst={name: layer_counts[h][t] for t, name in enumerate(names)},
                relations=hop_relations[h],
            )
            for h in reversed(range(self.layout.num_hops))
        ]
        batch = TypedMiniBatch(
            n_id={name: local[node_type == t] for t, name in enumerate(names)},
            blocks=blocks,
            seed_index=seed_index,
            seeds=global_seeds,
            target=self.schema.target,
        )
        return batch, seed_rows

    def _hop(
        self,
        hop: int,
        stream: int,
        n_id: torch.Tensor,
        node_type: torch.Tensor,
        type_position: torch.Tensor,
        type_count: list[int],
    ) -> tuple[dict[RelationType, tuple[torch.Tensor, int, int]], torch.Tensor, torch.Tensor]:
        """Draw hop ``hop`` for the batch's nodes: per relation ``(rowptr, first edge, stop edge)``, the global
        source id of every edge and its CSC position (int64 [E] each, on the device)."""
        device = self.device
        counts_by_type = torch.tensor(type_count, device=device)
        type_start = torch.cumsum(counts_by_type, 0) - counts_by_type
        # the frontier's local ids grouped by type, each type in its batch order
        frontier_local = torch.empty_like(n_id)
        frontier_local[type_start[node_type] + type_position] = n_id - self._type_offsets[node_type]
        # relation-major items: relation r has one item per frontier node of its destination type
        item_start_host = np.zeros(len(self.schema.relations) + 1, dtype=np.int64)
        np.cumsum(np.asarray(type_count, dtype=np.int64)[self.layout.rel_dst], out=item_start_host[1:])
        num_items = int(item_start_host[-1])
        item_start = torch.from_numpy(item_start_host).to(device)
        item_relation = torch.repeat_interleave(
            torch.arange(len(self.schema.relations), device=device),
            item_start[1:] - item_start[:-1],
            output_size=num_items,
        )
        within = torch.arange(num_items, device=device) - item_start[item_relation]
        rows = self._row_offset[item_relation] + frontier_local[type_start[self._rel_dst][item_relation] + within]
        indptr = self.topology.indptr
        starts = indptr[rows]
        degrees = indptr[rows + 1] - starts
        item_fanout = self._fanouts_on_device[hop][item_relation]
        counts = torch.where((item_fanout < 0) | (degrees <= item_fanout), degrees, item_fanout)
        offsets, num_edges, items = edge_layout(counts)
        # every edge's position as if its item took its whole list; the picks overwrite the rest
        positions = torch.arange(num_edges, device=device) + (starts - offsets[:-1])[items]
        cut = counts < degrees
        for fanout in sorted({int(f) for f in self.layout.fanout_table[hop] if f > 0}):
            picked = torch.nonzero(cut & (item_fanout == fanout)).flatten()
            if picked.numel():
                draw_picks(
                    self._kernels, picked, (starts, degrees, offsets), stream, fanout, positions,
                    self.topology.num_edges,
                )  # fmt: skip
        sources = self.topology.gather_positions(positions)
        bounds = offsets[item_start].tolist()
        spans = {}
        for r, rel in enumerate(self.schema.relations):
            first, stop = int(item_start_host[r]), int(item_start_host[r + 1])
            spans[rel.type] = (offsets[first : stop + 1] - bounds[r], bounds[r], bounds[r + 1])
        return spans, sources, positions
