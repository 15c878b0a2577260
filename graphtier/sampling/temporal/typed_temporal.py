"""The typed hops of :class:`~graphtier.sampling.temporal.sampler.TemporalNeighborSampler`: time-bounded sampling of a
graph of any schema.

Each seed (a node of the target type) carries a time; every hop keeps only the edges strictly earlier than its
row's bound (at most the bound with ``inclusive``), in every relation into the row's type, picked uniformly
without replacement or the most recent ones, and a sampled neighbour inherits the bound of the row it was sampled
for, so no hop of any relation reads past its seed's time. A row is a (node, bound) pair, as in the homogeneous
sampler, and the last hop's sources are one row per node (:mod:`~graphtier.sampling.temporal._input_rows_kernels`). The cut and the picks are the homogeneous sampler's kernels (:mod:`graphtier.sampling.temporal._temporal_kernels`)
run relation by relation over the typed CSC (the rows of relation ``r`` are ``r.row_offset + local destination
id``); the (node, bound) rows are numbered by its hashed relabel over global ids.

The batch is a :class:`~graphtier.sampling.typed_batch.TypedMiniBatch` with ``n_time`` (per type the bound of
each row) and every relation block's ``edge_id`` (its CSC position: the row of ``edge_time.npy`` and
``edge_feat.npy``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from graphtier.dataset.schema import RelationType, Schema
from graphtier.sampling.batch import Block
from graphtier.sampling.neighbor import _neighbor_kernels as kernels
from graphtier.sampling.neighbor.hops import seed_times
from graphtier.sampling.relation_layout import RelationLayout
from graphtier.sampling.seeds import as_seed_array
from graphtier.sampling.temporal._input_rows_kernels import relabel_inputs_hashed
from graphtier.sampling.temporal._temporal_kernels import (
    TimeOrder,
    empty_pair_table,
    rehash,
    relabel_pairs_hashed,
    temporal_draws,
    temporal_spans,
)
from graphtier.sampling.typed_batch import TypedBlock, TypedMiniBatch


class TypedTemporalHops:
    """The per-relation time-bounded hops of a :class:`~graphtier.sampling.temporal.sampler.TemporalNeighborSampler` built
    with a schema (see the module): its ``indptr``, lists in time order (``order``), ``recent``, ``inclusive`` and
    ``seed`` as that sampler checked them, and the schema's :class:`RelationLayout` with ``fanouts``."""

    def __init__(
        self,
        indptr: np.ndarray,
        order: TimeOrder,
        schema: Schema,
        fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]],
        *,
        recent: bool,
        inclusive: bool,
        seed: int,
    ) -> None:
        self.layout = RelationLayout.build(schema, fanouts, indptr.shape[0] - 1)
        self.indptr, self._order, self.schema = indptr, order, schema
        self.fanout_table = self.layout.fanout_table
        self.recent, self.inclusive, self.seed = recent, inclusive, seed

    def sample(
        self, seeds: np.ndarray | torch.Tensor, seed_time: np.ndarray | torch.Tensor | int, batch_id: int
    ) -> TypedMiniBatch:
        """The batch of ``seeds`` (int [B], local ids of the target type) at ``seed_time`` in stream ``batch_id``
        (:meth:`TemporalNeighborSampler.sample`)."""
        target = self.schema.target_type
        local = as_seed_array(seeds, target.count)
        batch, _ = self._sample(local + int(target.offset), seed_times(seed_time, local.shape[0]), batch_id)
        batch.seeds = torch.from_numpy(local.copy())
        return batch

    def sample_global(
        self, global_seeds: np.ndarray, batch_id: int, seed_time: np.ndarray | torch.Tensor | int
    ) -> tuple[TypedMiniBatch, np.ndarray]:
        """Seeds of any types at their times (:meth:`TemporalNeighborSampler.sample_global`)."""
        global_seeds = self.layout.global_seeds(global_seeds)
        batch, rows = self._sample(global_seeds, seed_times(seed_time, global_seeds.shape[0]), batch_id)
        batch.seeds = torch.from_numpy(global_seeds.copy())
        return batch, rows

    def _sample(self, global_seeds: np.ndarray, times: np.ndarray, batch_id: int) -> tuple[TypedMiniBatch, np.ndarray]:
        """The batch of ``global_seeds`` (int64 [B]) at ``times`` (int64 [B]) and each seed's row among its type's
        rows (its ``seeds`` left for the caller)."""
        rows = _Rows(self.schema, 2 * global_seeds.shape[0] + 16)
        seed_index = rows.add(global_seeds, times)
        seed_rows = rows.position[seed_index]
        before = rows.type_counts()
        hops: list[TypedBlock] = []
        for hop in range(self.layout.num_hops):
            relations, sources, bounds = self._hop(hop, batch_id, rows)
            last = hop == self.layout.num_hops - 1  # the input rows: one per node (_input_rows_kernels)
            source_rows = rows.add(sources, bounds, by_node=last)  # may grow the row arrays: index them after
            columns = rows.position[source_rows]  # each edge's source row among its type's rows
            after = rows.type_counts()
            names = self.schema.type_names
            sources_of = {n: int(after[t]) for t, n in enumerate(names)}
            blocks = {
                key: Block(torch.from_numpy(rowptr), torch.from_numpy(columns[low:high]), sources_of[key[0]],
                           torch.from_numpy(edge_id))
                for key, (rowptr, low, high, edge_id) in relations.items()
            }  # fmt: skip
            hops.append(TypedBlock(sources_of,
                                   {n: int(before[t]) for t, n in enumerate(names)}, blocks))  # fmt: skip
            before = after
        n_id, n_time = rows.by_type(self.schema.type_names)
        batch = TypedMiniBatch(n_id=n_id, blocks=hops[::-1], seed_index=torch.from_numpy(seed_index),
                               seeds=torch.from_numpy(global_seeds.copy()), target=self.schema.target,
                               n_time=n_time)  # fmt: skip
        return batch, seed_rows

    def _hop(
        self, hop: int, batch_id: int, rows: _Rows
    ) -> tuple[dict[RelationType, tuple[np.ndarray, int, int, np.ndarray]], np.ndarray, np.ndarray]:
        """Draw hop ``hop`` for every known row: per relation ``(rowptr, first edge, stop edge, edge ids)``, and for
        every edge (relation-major) its global source id and its bound (its destination row's)."""
        count = rows.count
        node, bound = rows.node[:count], rows.bound[:count]
        types = self.schema.type_of(node)
        relations = {}
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        low = 0
        for r, rel in enumerate(self.schema.relations):
            dst_type = self.schema.type_names.index(rel.dst)
            members = np.flatnonzero(types == dst_type)  # the type's rows: row order is position order
            csc_rows = rel.row_offset + (node[members] - rows.offsets[dst_type])
            row_bounds = np.ascontiguousarray(bound[members])
            starts, degrees = np.empty(members.shape[0], np.int64), np.empty(members.shape[0], np.int64)
            offsets = np.zeros(members.shape[0] + 1, np.int64)
            total = int(temporal_spans(self.indptr, *self._order.search, csc_rows, row_bounds,
                                       np.int64(self.fanout_table[hop, r]), self.inclusive, False, starts, degrees,
                                       offsets) if members.size else 0)  # fmt: skip
            edge_id, src, dst_index = (np.empty(total, np.int64) for _ in range(3))
            stream = np.uint64(kernels.stream_key(self.seed, batch_id, hop * len(self.schema.relations) + r))
            if total:
                temporal_draws(self._order.rows, starts, degrees, offsets, self.recent, stream, edge_id, src, dst_index)
            relations[rel.type] = (offsets, low, low + total, edge_id)
            parts.append((src, row_bounds[dst_index] if total else np.empty(0, np.int64)))
            low += total
        sources, bounds = (np.concatenate([p[i] for p in parts]) if parts else np.empty(0, np.int64) for i in range(2))
        return relations, sources, bounds


class _Rows:
    """The batch's (node, bound) rows in first-seen order: global node ids, bounds, and each row's position among
    the rows of its type (:meth:`Schema.type_of`)."""

    def __init__(self, schema: Schema, capacity: int) -> None:
        self.schema = schema
        self.offsets = schema.offsets()
        self.count = 0
        self.node = np.empty(capacity, np.int64)
        self.bound = np.empty(capacity, np.int64)
        self.position = np.empty(capacity, np.int64)
        self.counts = np.zeros(self.offsets.shape[0] - 1, np.int64)
        self.table = empty_pair_table(2 * capacity)

    def type_counts(self) -> np.ndarray:
        return self.counts.copy()

    def add(self, node: np.ndarray, bound: np.ndarray, by_node: bool = False) -> np.ndarray:
        """The rows of the pairs (int64 [S] each), new pairs appended; returns int64 [S] their rows. ``by_node``:
        the last hop's sources, numbered by node (:func:`relabel_inputs_hashed`)."""
        need = self.count + node.shape[0]
        if need > self.node.shape[0]:
            size = max(need, 2 * self.node.shape[0])
            for name in ("node", "bound", "position"):
                grown = np.empty(size, np.int64)
                grown[: self.count] = getattr(self, name)[: self.count]
                setattr(self, name, grown)
        if self.table.shape[0] < 2 * need:  # a larger table, the known rows inserted again in row order
            self.table = empty_pair_table(2 * need)
            if not by_node:
                rehash(self.table, np.int64(0), self.node, self.bound, np.int64(self.count))
        out = np.empty(node.shape[0], np.int64)
        first = self.count
        node, bound = np.ascontiguousarray(node, dtype=np.int64), np.ascontiguousarray(bound, dtype=np.int64)
        if by_node:  # overwrites the pair table: no pair is added after the input rows
            self.count = int(
                relabel_inputs_hashed(node, bound, self.table, self.node, self.bound, np.int64(first), out)
            )
        else:
            self.count = int(relabel_pairs_hashed(node, bound, self.table, np.int64(0), self.node, self.bound,
                                                  np.int64(first), out))  # fmt: skip
        types = self.schema.type_of(self.node[first : self.count])
        for t in np.unique(types):
            new = first + np.flatnonzero(types == t)
            self.position[new] = self.counts[t] + np.arange(new.shape[0])
            self.counts[t] += new.shape[0]
        return out

    def by_type(self, names: Sequence[str]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        """Per type its rows' local ids and bounds, in position order."""
        node, bound = self.node[: self.count], self.bound[: self.count]
        types = self.schema.type_of(node)
        n_id, n_time = {}, {}
        for t, name in enumerate(names):
            members = np.flatnonzero(types == t)  # row order is position order within a type
            n_id[name] = torch.from_numpy(node[members] - self.offsets[t])
            n_time[name] = torch.from_numpy(bound[members].copy())
        return n_id, n_time
