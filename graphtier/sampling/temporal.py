"""Temporal neighbour sampling: seeds with times -> layer-wise blocks that never read an edge at or after the
time of the seed they serve.

Each seed carries a time. Hop ``h`` keeps, for every row, only its in-edges strictly earlier than the row's
time bound (``inclusive=True``: at most the bound), and samples ``fanouts[h]`` of them uniformly without
replacement or the most recent ones (``strategy="recent"``, TGAT/TGN style). A sampled neighbour inherits its
destination's bound, so a path from a seed never leaves the seed's past. A row is a (node, bound) pair: a node
reached from seeds of two different times is two rows with two bounds (``MiniBatch.n_time``); seeds of one time
share their rows. Blocks carry ``edge_id`` (the CSC position of each edge) to read edge times and features.

The cut is a binary search in each list's time order (``edge_time_order``), so a hop costs what an untimed hop
costs plus ``log(degree)`` per row. Kernels and their references: :mod:`graphtier.sampling._temporal_kernels`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import torch

from graphtier._choices import TEMPORAL_STRATEGIES
from graphtier.errors import OptionError
from graphtier.sampling import _neighbor_kernels as kernels
from graphtier.sampling._temporal_kernels import (
    rehash,
    relabel_pairs,
    relabel_pairs_hashed,
    reset_rows,
    temporal_cuts,
    temporal_hop,
)
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.buffers import Workspace, WorkspacePool
from graphtier.sampling.fanouts import check_fanouts
from graphtier.sampling.neighbor import check_graph, check_seed, next_batch_id
from graphtier.sampling.seeds import as_seed_array


def check_edge_times(edge_time: np.ndarray, order: np.ndarray, num_edges: int) -> tuple[np.ndarray, np.ndarray]:
    """``edge_time`` and ``edge_time_order`` as int64 arrays [E]; OptionError naming the argument otherwise."""
    arrays = []
    for name, array in (("edge_time", edge_time), ("edge_time_order", order)):
        array = np.asarray(array)
        if array.ndim != 1 or array.dtype != np.int64 or array.shape[0] != num_edges:
            raise OptionError(
                f"{name}: expected an int64 array of {num_edges} entries (one per edge), "
                f"found {array.dtype} {tuple(array.shape)}"
            )
        arrays.append(np.ascontiguousarray(array))
    return arrays[0], arrays[1]


def seed_times(times: np.ndarray | torch.Tensor | int, count: int) -> np.ndarray:
    """Seed times as int64 [count] (a scalar is every seed's time); OptionError unless integers of that length."""
    array = times.detach().cpu().numpy() if isinstance(times, torch.Tensor) else np.asarray(times)
    if array.ndim == 0:
        array = np.full(count, array)
    if array.dtype.kind not in "iu":
        raise OptionError(f"seed_time: expected integer times, found dtype {array.dtype}")
    if array.shape != (count,):
        raise OptionError(f"seed_time: expected one time per seed ({count}), found shape {tuple(array.shape)}")
    return np.ascontiguousarray(array, dtype=np.int64)


class TemporalNeighborSampler:
    """Time-bounded neighbour sampler: ``(seeds, seed_time)`` -> ``len(fanouts)`` hops of bipartite blocks.

    Args:
        indptr: int64 [N + 1] CSC column pointers. indices: int32/int64 [E] in-neighbour ids (the dataset's CSC).
        edge_time: int64 [E], each edge's time, CSC order. edge_time_order: int64 [E], each list's CSC positions
            sorted by time (the dataset's ``edge_time_order.npy``).
        fanouts: PyG order, ``fanouts[0]`` = neighbours drawn per seed; -1 = every admissible neighbour.
        strategy: ``"uniform"`` (without replacement) or ``"recent"`` (the latest admissible edges).
        inclusive: admit edges at the bound (``<=``); default strictly earlier (``<``), so a link seed's own edge,
            at its time, is never in its subgraph.
        seed: base of the counter-based random stream; the same ``(seed, batch_id, seeds, seed_time)`` gives
            the same batch.

    Arrays stay as given (memory maps are read in place). Each concurrent :meth:`sample` call holds one
    node-indexed scratch array (:class:`~graphtier.sampling.buffers.Workspace`), reset after its batch.
    """

    def __init__(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        edge_time: np.ndarray,
        edge_time_order: np.ndarray,
        fanouts: Sequence[int],
        *,
        strategy: str = "uniform",
        inclusive: bool = False,
        seed: int = 0,
    ) -> None:
        self.indptr, self.indices = check_graph(indptr, indices)
        self.edge_time, self.edge_time_order = check_edge_times(edge_time, edge_time_order, self.indices.shape[0])
        self.num_nodes = self.indptr.shape[0] - 1
        self.fanouts = check_fanouts(fanouts)
        if strategy not in TEMPORAL_STRATEGIES:
            raise OptionError(f"strategy: expected one of {', '.join(TEMPORAL_STRATEGIES)}, found {strategy!r}")
        self.recent = strategy == "recent"
        self.inclusive = bool(inclusive)
        self.seed = check_seed(seed)
        self._batch_counter = itertools.count()
        self._workspaces = WorkspacePool(self.num_nodes)

    def sample(
        self, seeds: np.ndarray | torch.Tensor, seed_time: np.ndarray | torch.Tensor | int, batch_id: int | None = None
    ) -> MiniBatch:
        """Sample a mini-batch for ``seeds`` (int [B] global ids) at ``seed_time`` (int [B], or one int for all).

        Returns a :class:`MiniBatch` of CPU int64 tensors: ``n_id`` and ``n_time`` [R] (rows: distinct
        (node, time) pairs, the distinct seeds first), one block per hop with ``edge_id``, ``seed_index`` [B].
        """
        seed_array = as_seed_array(seeds, self.num_nodes)
        times = seed_times(seed_time, seed_array.shape[0])
        batch_id = next_batch_id(batch_id, self._batch_counter)
        workspace = self._workspaces.take()
        # a failed batch may leave rows in the scratch: its workspace is dropped, not given back
        n_id, n_time, hops, sizes, seed_index = self._sample(seed_array, times, int(batch_id), workspace)
        self._workspaces.give_back(workspace)
        blocks = [
            Block(torch.from_numpy(hops[h][0]), sizes[h + 1], sizes[h], torch.from_numpy(hops[h][1]))
            for h in reversed(range(len(self.fanouts)))
        ]
        return MiniBatch(
            n_id=torch.from_numpy(n_id),
            blocks=blocks,
            seed_index=torch.from_numpy(seed_index),
            seeds=torch.from_numpy(seed_array.copy()),
            n_time=torch.from_numpy(n_time),
        )

    def _sample(
        self, seeds: np.ndarray, times: np.ndarray, batch_id: int, workspace: Workspace
    ) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]], list[int], np.ndarray]:
        """(n_id [R], n_time [R], (edge_index [2, E_h], edge_id [E_h]) per hop, rows known before each hop and
        after the last, seed_index [B]): fresh arrays; the workspace's node-indexed scratch is reset on the way out."""
        first_row = workspace.local_id
        size = seeds.shape[0]
        rows = {name: workspace.array(name, size) for name in ("next", "node", "bound")}
        # seeds of several times: rows found through a hash of (node, time) (a hub reached at many times would
        # make the node's chain long); one time: through the node-indexed chain, one step per lookup
        hashed = seeds.shape[0] > 0 and bool(times.min() != times.max())
        table = _empty_table(workspace, 2 * size if hashed else 0)
        seed_index = np.empty(seeds.shape[0], np.int64)
        count = 0
        try:
            if hashed:
                count = int(relabel_pairs_hashed(seeds, times, table, rows["node"], rows["bound"], 0, seed_index))
            else:
                count = int(relabel_pairs(seeds, times, first_row, rows["next"], rows["node"], rows["bound"], 0,
                                          seed_index))  # fmt: skip
            sizes = [count]
            hops: list[tuple[np.ndarray, np.ndarray]] = []
            for hop, fanout in enumerate(self.fanouts):
                cuts = workspace.array("cuts", count)
                total = int(
                    temporal_cuts(self.indptr, self.edge_time, self.edge_time_order, rows["node"][:count],
                                  rows["bound"][:count], np.int64(fanout), self.inclusive, cuts)
                )  # fmt: skip
                rows = {name: workspace.array(name, count + total, keep=count) for name in rows}
                if hashed and table.shape[0] < 2 * (count + total):
                    table = _empty_table(workspace, 2 * (count + total))
                    rehash(table, rows["node"], rows["bound"], np.int64(count))
                edge_index = np.empty((2, total), np.int64)
                edge_id = np.empty(total, np.int64)
                stream = np.uint64(kernels.stream_key(self.seed, batch_id, hop))
                count = int(
                    temporal_hop(self.indptr, self.indices, self.edge_time_order, cuts, np.int64(count),
                                 np.int64(fanout), self.recent, stream, first_row, rows["next"], table, rows["node"],
                                 rows["bound"], np.int64(count), edge_index[0], edge_index[1], edge_id)
                )  # fmt: skip
                sizes.append(count)
                hops.append((edge_index, edge_id))
        finally:
            if not hashed:
                reset_rows(first_row, rows["node"], count)
        return rows["node"][:count].copy(), rows["bound"][:count].copy(), hops, sizes, seed_index


def _empty_table(workspace: Workspace, need: int) -> np.ndarray:
    """The workspace's hash table (int64, -1 everywhere) of a power-of-two size of at least ``need`` slots (16 or
    more), or an empty array when ``need`` is 0 (rows are found through the chain)."""
    if need == 0:
        return np.empty(0, np.int64)
    size = 16
    while size < need:
        size *= 2
    table = workspace.array("table", size)
    table[:] = -1
    return table
