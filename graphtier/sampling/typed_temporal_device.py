"""Device-side time-bounded sampling of a typed graph: the batches of :class:`~graphtier.sampling.typed_temporal.
TypedTemporalNeighborSampler`, computed where the graph is.

A :class:`DeviceTypedTemporalSampler` runs the homogeneous device sampler's hop
(:meth:`~graphtier.sampling.temporal_device.DeviceTemporalSampler.hop`: the time cut, Floyd or most recent picks,
the edge ids) relation by relation over the back-to-back CSC, as the CPU typed sampler runs the CPU kernels: for
relation ``r`` at hop ``h`` the rows of its destination type (in row order), their CSC rows ``r.row_offset + local
id``, the fanout ``fanouts[r][h]`` and the stream ``stream_key(seed, batch_id, h * R + r)``. The (node, bound)
rows are numbered in first-seen order over the hop's edges, relation-major (:func:`~graphtier.sampling.
temporal_device.first_seen_pairs`). A batch therefore equals, tensor for tensor, the CPU sampler's of the same
seed, batch id, seeds and times.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping, Sequence
from types import ModuleType

import numpy as np
import torch

from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling import _neighbor_kernels as cpu_kernels
from graphtier.sampling.device import Topology, seeds_on_device
from graphtier.sampling.fanouts import Fanouts
from graphtier.sampling.neighbor import next_batch_id
from graphtier.sampling.temporal_device import DeviceTemporalSampler, first_seen_pairs
from graphtier.sampling.typed_batch import RelationBlock, TypedBlock, TypedMiniBatch
from graphtier.sampling.typed_device import type_positions
from graphtier.sampling.typed_neighbor import check_typed_fanouts


class DeviceTypedTemporalSampler:
    """Time-bounded per-relation neighbour sampler on ``topology.device``, identical to
    :class:`~graphtier.sampling.typed_temporal.TypedTemporalNeighborSampler`.

    Args:
        topology: the back-to-back CSC (``topology.num_nodes == schema.num_rows``), e.g. the store's tiered one.
        edge_time, edge_time_order: int64 [E] each, as the CPU sampler's (copied whole to the device, 16 bytes an
            edge). schema, fanouts, strategy, inclusive, seed: as the CPU sampler's.
        picks, kernels, cut_kernels: as :class:`~graphtier.sampling.temporal_device.DeviceTemporalSampler`.
    """

    def __init__(
        self,
        topology: Topology,
        edge_time: np.ndarray | torch.Tensor,
        edge_time_order: np.ndarray | torch.Tensor,
        schema: Schema,
        fanouts: Mapping[RelationType, Sequence[int]],
        *,
        strategy: str = "uniform",
        inclusive: bool = False,
        seed: int = 0,
        picks: str = "auto",
        kernels: ModuleType | None = None,
        cut_kernels: ModuleType | None = None,
    ) -> None:
        if topology.num_nodes != schema.num_rows:
            raise OptionError(
                f"topology: expected {schema.num_rows} rows (the schema's relation rows), found {topology.num_nodes}"
            )
        self.schema = schema
        self.fanout_table = check_typed_fanouts(fanouts, schema)  # int64 [H, R]
        self.fanouts = {rel.type: Fanouts(self.fanout_table[:, r].tolist()) for r, rel in enumerate(schema.relations)}
        self.num_hops = int(self.fanout_table.shape[0])
        self._inner = DeviceTemporalSampler(topology, edge_time, edge_time_order, [1], strategy=strategy,
                                            inclusive=inclusive, seed=seed, picks=picks, kernels=kernels,
                                            cut_kernels=cut_kernels)  # fmt: skip
        self.device = self._inner.device
        self.seed = self._inner.seed
        self._offsets = torch.from_numpy(schema.offsets()).to(self.device)
        self._batch_counter = itertools.count()

    def sample(
        self, seeds: np.ndarray | torch.Tensor, seed_time: np.ndarray | torch.Tensor | int, batch_id: int | None = None
    ) -> TypedMiniBatch:
        """A batch for ``seeds`` (int [B], LOCAL ids of the target type) at ``seed_time`` (int [B], or one int), as
        :meth:`TypedTemporalNeighborSampler.sample`, every tensor on the topology's device."""
        target = self.schema.target_type
        local = seeds_on_device(seeds, target.count, self.device)
        times = self._inner.times_on_device(seed_time, int(local.shape[0]))
        batch_id = int(next_batch_id(batch_id, self._batch_counter))
        batch, _ = self._sample(local + int(target.offset), times, batch_id)
        batch.seeds = local
        return batch

    def sample_global(
        self, global_seeds: np.ndarray | torch.Tensor, batch_id: int, seed_time: np.ndarray | torch.Tensor | int
    ) -> tuple[TypedMiniBatch, torch.Tensor]:
        """Seeds of any types (global ids) at their times, as :meth:`TypedTemporalNeighborSampler.sample_global`:
        the batch and each seed's row among its type's rows (int64 [B] on the device)."""
        seeds = seeds_on_device(global_seeds, self.schema.num_nodes, self.device)
        times = self._inner.times_on_device(seed_time, int(seeds.shape[0]))
        return self._sample(seeds, times, int(batch_id))

    def _sample(self, seeds: torch.Tensor, times: torch.Tensor, batch_id: int) -> tuple[TypedMiniBatch, torch.Tensor]:
        names = self.schema.type_names
        with torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext():
            empty = seeds[:0]
            node, bound, seed_index = first_seen_pairs((empty, empty), (seeds, times))
            kind, position, before = type_positions(self._offsets, node)
            seed_rows = position[seed_index]
            hops: list[TypedBlock] = []
            for hop in range(self.num_hops):
                relations, sources, bounds = {}, [], []
                low = 0
                for r, rel in enumerate(self.schema.relations):
                    t = names.index(rel.dst)
                    members = torch.nonzero(kind == t).flatten()  # the type's rows, in row (= position) order
                    rows = rel.row_offset + node[members] - self._offsets[t]
                    stream = cpu_kernels.stream_key(self.seed, batch_id, hop * len(self.schema.relations) + r)
                    src, dst, edge_id = self._inner.hop(rows, bound[members], int(self.fanout_table[hop, r]), stream)
                    rowptr = torch.zeros(members.shape[0] + 1, dtype=torch.int64, device=self.device)
                    torch.cumsum(torch.bincount(dst, minlength=members.shape[0]), 0, out=rowptr[1:])
                    relations[rel.type] = (rowptr, low, low + int(src.shape[0]), edge_id)
                    sources.append(src)
                    bounds.append(bound[members][dst])
                    low += int(src.shape[0])
                node, bound, local = first_seen_pairs((node, bound), (torch.cat(sources), torch.cat(bounds)))
                kind, position, after = type_positions(self._offsets, node)
                columns = position[local]  # each edge's source row among its type's rows
                blocks = {key: RelationBlock(rowptr, columns[a:b], edge_id)
                          for key, (rowptr, a, b, edge_id) in relations.items()}  # fmt: skip
                hops.append(TypedBlock({n: after[i] for i, n in enumerate(names)},
                                       {n: before[i] for i, n in enumerate(names)}, blocks))  # fmt: skip
                before = after
        local_ids = node - self._offsets[kind]
        n_id = {n: local_ids[kind == i] for i, n in enumerate(names)}
        n_time = {n: bound[kind == i] for i, n in enumerate(names)}
        batch = TypedMiniBatch(n_id=n_id, blocks=hops[::-1], seed_index=seed_index, seeds=seeds,
                               target=self.schema.target, n_time=n_time)  # fmt: skip
        return batch, seed_rows
