"""Temporal neighbour sampling: seeds with times -> layer-wise blocks that never read an edge at or after the
time of the seed they serve.

Each seed carries a time. Hop ``h`` keeps, for every row, only its in-edges strictly earlier than the row's
time bound (``inclusive=True``: at most the bound), and samples ``fanouts[h]`` of them uniformly without
replacement or the most recent ones (``strategy="recent"``, TGAT/TGN style). A sampled neighbour inherits its
destination's bound, so a path from a seed never leaves the seed's past. A row is a (node, bound) pair: a node
reached from seeds of two different times is two rows with two bounds (``MiniBatch.n_time``); seeds of one time
share their rows. The last hop's sources, which nothing samples from (the model's input rows), are one row per node
(:mod:`~graphtier.sampling.temporal._input_rows_kernels`). Blocks carry ``edge_id`` (the CSC position of each edge) to read edge times and features.

The sampler builds once a copy of every list in time order
(:class:`~graphtier.sampling.temporal._temporal_kernels.TimeOrder`: the times, every 16th of them, and (CSC position, source)
per edge; 12.25 bytes per edge when the times span less than 2^31 units and the edge count and node ids are below
2^31, up to 24.5 else): the cut is a binary search over the list's every-16th times (an array a sixteenth
the size, often cached), then over one run of at most 15 times (the searches of many rows in lockstep), and the
draws read the positions and sources in the same order, so a hop costs what an untimed hop costs plus a short
search per row. Seeds of one time (or every seed after every edge) take
the untimed sampler's node-indexed relabel and skip the search where no edge can be cut; seeds of several times
find their (node, time) rows in a hash of the pairs. Kernels and their references:
:mod:`graphtier.sampling.temporal._temporal_kernels`.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from graphtier.dataset.schema import RelationType, Schema
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.buffers import Carver, OutputRing, Workspace, WorkspacePool
from graphtier.sampling.neighbor import _neighbor_kernels as kernels
from graphtier.sampling.neighbor.hops import (
    check_edge_times,
    check_graph,
    check_seed,
    homogeneous_fanouts,
    is_recent,
    next_batch_id,
    seed_times,
    typed_hops,
)
from graphtier.sampling.seeds import as_seed_array
from graphtier.sampling.temporal._input_rows_kernels import first_rows, new_row_bounds
from graphtier.sampling.temporal._temporal_kernels import (
    MAX_STAMP,
    SLOT_WORDS,
    empty_pair_table,
    rehash,
    relabel_pairs_hashed,
    temporal_draws,
    temporal_spans,
    time_ordered,
)
from graphtier.sampling.temporal.typed_temporal import TypedTemporalHops
from graphtier.sampling.typed_batch import TypedMiniBatch


class TemporalNeighborSampler:
    """Time-bounded neighbour sampler of any schema: ``(seeds, seed_time)`` -> one bipartite block per hop.

    Args:
        indptr: int64 [N + 1] CSC column pointers. indices: int32/int64 [E] in-neighbour ids (the dataset's CSC;
            with a ``schema``, every relation's CSC back to back and global source ids).
        edge_time: int64 [E], each edge's time, CSC order. edge_time_order: int64 [E], each list's CSC positions
            sorted by time (the dataset's ``edge_time_order.npy``).
        fanouts: PyG order, ``fanouts[0]`` = neighbours drawn per seed; -1 = every admissible neighbour. With a
            ``schema`` also a mapping per relation type, as :class:`~graphtier.sampling.NeighborSampler` takes.
        schema: None (homogeneous: :class:`MiniBatch` es of global ids), or the dataset's schema: per-relation
            time-bounded sampling into :class:`TypedMiniBatch` es (:mod:`graphtier.sampling.temporal.typed_temporal`);
            chosen once.
        strategy: ``"uniform"`` (without replacement) or ``"recent"`` (the latest admissible edges).
        inclusive: admit edges at the bound (``<=``); default strictly earlier (``<``), so a link seed's own edge,
            at its time, is never in its subgraph.
        seed: base of the counter-based random stream; the same ``(seed, batch_id, seeds, seed_time)`` gives
            the same batch.

    ``indices``, ``edge_time`` and ``edge_time_order`` are read once, into an in-memory copy of every list in time
    order (:class:`~graphtier.sampling.temporal._temporal_kernels.TimeOrder`, 12.25 to 24.5 bytes per edge; memory maps are not read
    again). Each concurrent :meth:`sample` call
    holds one node-indexed scratch array (:class:`~graphtier.sampling.buffers.Workspace`) and, for seeds of
    several times, a (node, time) hash table (16 bytes per slot, at least two slots per row of its largest
    batch; a batch's slots are told apart by a stamp, so it is cleared only when its 2^31 stamps run out). The returned tensors' memory is reused once released
    (:class:`~graphtier.sampling.buffers.OutputRing`).
    """

    def __init__(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        edge_time: np.ndarray,
        edge_time_order: np.ndarray,
        fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]],
        *,
        schema: Schema | None = None,
        strategy: str = "uniform",
        inclusive: bool = False,
        seed: int = 0,
    ) -> None:
        self.indptr, self.indices = check_graph(indptr, indices)
        self.edge_time, self.edge_time_order = check_edge_times(edge_time, edge_time_order, self.indices.shape[0])
        self.num_nodes = self.indptr.shape[0] - 1
        self.schema = schema
        self.recent = is_recent(strategy)
        self.inclusive = bool(inclusive)
        self.seed = check_seed(seed)
        self._batch_counter = itertools.count()
        self._typed: TypedTemporalHops | None = None
        if schema is not None:
            self._typed = TypedTemporalHops(
                self.indptr, time_ordered(self.indices, self.edge_time, self.edge_time_order), schema, fanouts,
                recent=self.recent, inclusive=self.inclusive, seed=self.seed,
            )  # fmt: skip
            self.fanouts: list[int] | dict[RelationType, Sequence[int]] = dict(self._typed.layout.fanouts)
            return
        self.fanouts = homogeneous_fanouts(fanouts)
        # every list in time order (times, every 16th time, (CSC position, source)): a hop reads contiguous runs
        self._order = time_ordered(self.indices, self.edge_time, self.edge_time_order)
        self._workspaces = WorkspacePool(self.num_nodes)
        self._outputs = OutputRing()
        self._tables: weakref.WeakKeyDictionary[Workspace, np.ndarray] = weakref.WeakKeyDictionary()
        self._stamps: weakref.WeakKeyDictionary[Workspace, int] = weakref.WeakKeyDictionary()  # last stamp per table

    def sample(
        self, seeds: np.ndarray | torch.Tensor, seed_time: np.ndarray | torch.Tensor | int, batch_id: int | None = None
    ) -> MiniBatch | TypedMiniBatch:
        """Sample a mini-batch for ``seeds`` (int [B] global ids; with a ``schema`` local ids of its target type) at
        ``seed_time`` (int [B], or one int for all).

        Returns a :class:`MiniBatch` of CPU int64 tensors: ``n_id`` and ``n_time`` [R] (rows: distinct
        (node, time) pairs, the distinct seeds first), one block per hop with ``edge_id``, ``seed_index`` [B]; with
        a schema a :class:`TypedMiniBatch` with ``n_id`` / ``n_time`` per type and every relation block's
        ``edge_id``.
        """
        batch_id = next_batch_id(batch_id, self._batch_counter)
        if self._typed is not None:
            return self._typed.sample(seeds, seed_time, int(batch_id))
        seed_array = as_seed_array(seeds, self.num_nodes)
        times = seed_times(seed_time, seed_array.shape[0])
        workspace = self._workspaces.take()
        carver = Carver(self._outputs.take())
        # a failed batch may leave rows in the scratch: its workspace is dropped, not given back
        n_id, n_time, hops, sizes, seed_index = self._sample(seed_array, times, int(batch_id), workspace, carver)
        self._workspaces.give_back(workspace)
        self._outputs.need(carver.used)
        blocks = [Block.from_grouped(rowptr, edge_index, sizes[h + 1], edge_id)
                  for h, (rowptr, edge_index, edge_id) in reversed(list(enumerate(hops)))]  # fmt: skip
        return MiniBatch(
            n_id=n_id, blocks=blocks, seed_index=seed_index, seeds=torch.from_numpy(seed_array.copy()), n_time=n_time
        )

    def sample_global(
        self, global_seeds: np.ndarray, batch_id: int, seed_time: np.ndarray | torch.Tensor | int
    ) -> tuple[TypedMiniBatch, np.ndarray]:
        """With a ``schema``: a batch for seeds of any types at their times, as
        :meth:`~graphtier.sampling.NeighborSampler.sample_global`: ``global_seeds`` int64 [B] (type offsets added),
        ``seed_time`` int [B] (or one int). Returns the batch (``seeds`` the global ids) and int64 [B] each seed's
        row among the rows of its own type (a (node, time) pair asked twice is one row). OptionError without a
        schema."""
        return typed_hops(self._typed).sample_global(global_seeds, int(batch_id), seed_time)

    def _all_past(self, first_bound: int) -> bool:
        """Whether every edge is admissible at every bound >= ``first_bound`` (the cut then needs no search)."""
        last = self._order.last
        return last is None or last < first_bound or (self.inclusive and last == first_bound)

    def _sample(
        self, seeds: np.ndarray, times: np.ndarray, batch_id: int, workspace: Workspace, carver: Carver
    ) -> tuple[
        torch.Tensor, torch.Tensor, list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]], list[int], torch.Tensor
    ]:
        """(n_id [R], n_time [R], (rowptr [D_h + 1], edge_index [2, E_h], edge_id [E_h]) per hop, rows known before
        each hop and after the last, seed_index [B]), carved from the output buffer; the workspace is left empty."""
        size = seeds.shape[0]
        # seeds of one time: a row is a node (the untimed node-indexed relabel); of several: a (node, time) hash
        one_time = size == 0 or bool(times.min() == times.max())
        all_past = self._all_past(int(times.min()) if size else 0)
        bound = times[:1] if one_time else None  # the one bound of every row, int64 [1]
        keys_node = workspace.array("n_id", size)
        keys_bound = workspace.array("bound", 0 if one_time else size)
        table = np.empty((0, SLOT_WORDS), np.int64) if one_time else self._pair_table(workspace, 2 * size)
        stamp = np.int64(self._next_stamp(workspace, table))
        seed_index = carver.take(size)
        count = 0
        try:
            if one_time:
                count = int(kernels.unique_seeds(seeds, workspace.local_id, keys_node, seed_index.numpy()))
            else:
                count = int(
                    relabel_pairs_hashed(seeds, times, table, stamp, keys_node, keys_bound, 0, seed_index.numpy())
                )
            sizes = [count]
            hops: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
            for hop, fanout in enumerate(self.fanouts):
                starts, degrees = workspace.array("starts", count), workspace.array("degrees", count)
                offsets = workspace.array("offsets", count + 1)
                total = int(
                    temporal_spans(self.indptr, *self._order.search, keys_node[:count],
                                   bound if bound is not None else keys_bound[:count], np.int64(fanout),
                                   self.inclusive, all_past, starts, degrees, offsets)
                )  # fmt: skip
                rowptr = carver.take(count + 1)
                rowptr.numpy()[:] = offsets
                edge_tensor, edge_id = carver.take(2 * total).view(2, total), carver.take(total)
                edge_index = edge_tensor.numpy()
                stream = np.uint64(kernels.stream_key(self.seed, batch_id, hop))
                temporal_draws(self._order.rows, starts, degrees, offsets, self.recent, stream,
                               edge_id.numpy(), edge_index[0], edge_index[1])  # fmt: skip
                keys_node = workspace.array("n_id", count + total, keep=count)
                if one_time:
                    count = int(kernels.relabel(edge_index[0], workspace.local_id, keys_node, count))
                else:
                    keys_bound = workspace.array("bound", count + total, keep=count)
                    src_bound = np.take(keys_bound, edge_index[1], out=workspace.array("src_bound", total), mode="clip")
                    if hop == len(self.fanouts) - 1:  # the input rows: one per node (_input_rows_kernels)
                        first_rows(workspace.local_id, keys_node, np.int64(count))
                        known, count = count, int(kernels.relabel(edge_index[0], workspace.local_id, keys_node, count))
                        new_row_bounds(edge_index[0], src_bound, keys_bound, np.int64(known))
                        kernels.reset_local_ids(workspace.local_id, keys_node, 0, count)
                    else:
                        if table.shape[0] < 2 * (count + total):
                            rows = (stamp, keys_node, keys_bound, count)
                            table = self._pair_table(workspace, 2 * (count + total), rows)
                        count = int(relabel_pairs_hashed(edge_index[0], src_bound, table, stamp, keys_node,
                                                         keys_bound, np.int64(count), edge_index[0]))  # fmt: skip
                sizes.append(count)
                hops.append((rowptr, edge_tensor, edge_id))
        finally:
            if one_time:
                kernels.reset_local_ids(workspace.local_id, keys_node, 0, count)
        n_id, n_time = carver.take(count), carver.take(count)
        n_id.numpy()[:] = keys_node[:count]
        n_time.numpy()[:] = keys_bound[:count] if not one_time else times[0] if count else 0
        return n_id, n_time, hops, sizes, seed_index

    def _pair_table(
        self, workspace: Workspace, need: int, rows: tuple[np.int64, np.ndarray, np.ndarray, int] | None = None
    ) -> np.ndarray:
        """The workspace's (node, stamp | row) hash table (:func:`empty_pair_table`, at least ``need`` slots). One
        too small is replaced by a larger one holding ``rows`` = (stamp, keys_node, keys_bound, count): rows
        ``[0, count)`` of the batch of that stamp, inserted again."""
        table = self._tables.get(workspace)
        if table is not None and table.shape[0] >= need:
            return table
        table = empty_pair_table(need)
        if rows is not None:
            rehash(table, rows[0], rows[1], rows[2], np.int64(rows[3]))
        self._tables[workspace] = table
        return table

    def _next_stamp(self, workspace: Workspace, table: np.ndarray) -> int:
        """The workspace table's next batch stamp; when its stamps run out (:data:`MAX_STAMP`), the table is cleared
        and they start again at 0."""
        stamp = self._stamps.get(workspace, -1) + 1
        if stamp >= MAX_STAMP:
            table.fill(-1)
            stamp = 0
        self._stamps[workspace] = stamp
        return stamp
