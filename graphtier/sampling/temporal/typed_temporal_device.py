"""The typed hops of :class:`~graphtier.sampling.temporal.temporal_device.DeviceTemporalSampler`: time-bounded sampling of a
graph of any schema where the graph is.

A :class:`DeviceTypedTemporalHops` runs the homogeneous device sampler's hop
(:meth:`~graphtier.sampling.temporal.temporal_device.DeviceTemporalSampler.hop`: the time cut, Floyd or most recent picks,
the edge ids) relation by relation over the back-to-back CSC, as the CPU typed sampler runs the CPU kernels: for
relation ``r`` at hop ``h`` the rows of its destination type (in row order), their CSC rows ``r.row_offset + local
id``, the fanout ``fanouts[r][h]`` and the stream ``stream_key(seed, batch_id, h * R + r)``. The (node, bound)
rows are numbered in first-seen order over the hop's edges, relation-major (:func:`~graphtier.sampling.
device_hops.first_seen_pairs`; the last hop's sources one row per node, :func:`~graphtier.sampling.device.device_hops.
first_seen_inputs`). A batch therefore equals, tensor for tensor, the CPU sampler's of the same
seed, batch id, seeds and times.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from graphtier.dataset.schema import RelationType, Schema
from graphtier.sampling.batch import Block
from graphtier.sampling.device.device_hops import Topology, first_seen_inputs, first_seen_pairs, seeds_on_device
from graphtier.sampling.device.typed_device import type_positions
from graphtier.sampling.neighbor import _neighbor_kernels as cpu_kernels
from graphtier.sampling.relation_layout import RelationLayout
from graphtier.sampling.typed_batch import TypedBlock, TypedMiniBatch

Hop = Callable[[torch.Tensor, torch.Tensor, int, int], tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]]
"""``(CSC rows, bounds, fanout, stream) -> (sources, destinations, edge_id, rowptr)``: the homogeneous device hop."""
Times = Callable[[np.ndarray | torch.Tensor | int, int], torch.Tensor]
"""``(seed_time, count) -> int64 [count]`` seed times on the device, checked."""


class DeviceTypedTemporalHops:
    """The per-relation time-bounded hops of a :class:`~graphtier.sampling.temporal.temporal_device.DeviceTemporalSampler`
    built with a schema (see the module): its ``topology`` (the back-to-back CSC), ``seed``, ``hop`` and
    ``times`` (its bound methods) and the schema's :class:`RelationLayout` with ``fanouts``."""

    def __init__(
        self,
        topology: Topology,
        schema: Schema,
        fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]],
        seed: int,
        hop: Hop,
        times: Times,
    ) -> None:
        self.layout = RelationLayout.build(schema, fanouts, topology.num_nodes, "topology")
        self.schema, self.seed = schema, seed
        self.fanout_table = self.layout.fanout_table
        self.device = torch.device(topology.device)
        self._hop, self._times = hop, times
        self._offsets = torch.from_numpy(self.layout.type_offsets).to(self.device)

    def sample(
        self, seeds: np.ndarray | torch.Tensor, seed_time: np.ndarray | torch.Tensor | int, batch_id: int
    ) -> TypedMiniBatch:
        """The batch of ``seeds`` (int [B], local ids of the target type) at ``seed_time`` in stream ``batch_id``,
        every tensor on the topology's device (:meth:`DeviceTemporalSampler.sample`)."""
        target = self.schema.target_type
        local = seeds_on_device(seeds, target.count, self.device)
        batch, _ = self._sample(local + int(target.offset), self._times(seed_time, int(local.shape[0])), batch_id)
        batch.seeds = local
        return batch

    def sample_global(
        self, global_seeds: np.ndarray | torch.Tensor, batch_id: int, seed_time: np.ndarray | torch.Tensor | int
    ) -> tuple[TypedMiniBatch, torch.Tensor]:
        """Seeds of any types (global ids) at their times (:meth:`DeviceTemporalSampler.sample_global`)."""
        seeds = seeds_on_device(global_seeds, self.schema.num_nodes, self.device)
        return self._sample(seeds, self._times(seed_time, int(seeds.shape[0])), batch_id)

    def _sample(self, seeds: torch.Tensor, times: torch.Tensor, batch_id: int) -> tuple[TypedMiniBatch, torch.Tensor]:
        names = self.schema.type_names
        with torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext():
            empty = seeds[:0]
            node, bound, seed_index = first_seen_pairs((empty, empty), (seeds, times))
            kind, position, before = type_positions(self._offsets, node)
            seed_rows = position[seed_index]
            hops: list[TypedBlock] = []
            for hop in range(self.layout.num_hops):
                relations, sources, bounds = {}, [], []
                low = 0
                for r, rel in enumerate(self.schema.relations):
                    t = names.index(rel.dst)
                    members = torch.nonzero(kind == t).flatten()  # the type's rows, in row (= position) order
                    rows = rel.row_offset + node[members] - self._offsets[t]
                    stream = cpu_kernels.stream_key(self.seed, batch_id, hop * len(self.schema.relations) + r)
                    src, dst, edge_id, rowptr = self._hop(rows, bound[members], int(self.fanout_table[hop, r]), stream)
                    relations[rel.type] = (rowptr, low, low + int(src.shape[0]), edge_id)
                    sources.append(src)
                    bounds.append(bound[members][dst])
                    low += int(src.shape[0])
                relabel = first_seen_inputs if hop == self.layout.num_hops - 1 else first_seen_pairs  # inputs: by node
                node, bound, local = relabel((node, bound), (torch.cat(sources), torch.cat(bounds)))
                kind, position, after = type_positions(self._offsets, node)
                columns = position[local]  # each edge's source row among its type's rows
                sources_of = dict(zip(names, after))
                blocks = {key: Block(rowptr, columns[a:b], sources_of[key[0]], edge_id)
                          for key, (rowptr, a, b, edge_id) in relations.items()}  # fmt: skip
                hops.append(TypedBlock(sources_of, {n: before[i] for i, n in enumerate(names)}, blocks))
                before = after
        local_ids = node - self._offsets[kind]
        n_id = {n: local_ids[kind == i] for i, n in enumerate(names)}
        n_time = {n: bound[kind == i] for i, n in enumerate(names)}
        batch = TypedMiniBatch(n_id=n_id, blocks=hops[::-1], seed_index=seed_index, seeds=seeds,
                               target=self.schema.target, n_time=n_time)  # fmt: skip
        return batch, seed_rows
