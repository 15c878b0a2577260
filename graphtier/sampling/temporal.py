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

from graphtier.errors import OptionError
from graphtier.sampling import _neighbor_kernels as kernels
from graphtier.sampling._temporal_kernels import relabel_pairs, temporal_hop
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.fanouts import check_fanouts
from graphtier.sampling.neighbor import check_graph, check_seed, next_batch_id
from graphtier.sampling.seeds import as_seed_array

TEMPORAL_STRATEGIES = ("uniform", "recent")


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

    Arrays stay as given (memory maps are read in place); the sampler holds no per-node scratch.
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
        # rows grow by at most the sampled edges of each hop; the table is sized once the total is known
        capacity = max(seed_array.shape[0], 1)
        keys_node = np.empty(capacity, np.int64)
        keys_bound = np.empty(capacity, np.int64)
        table = np.full(_table_size(capacity), -1, np.int64)
        seed_index = np.empty(seed_array.shape[0], np.int64)
        count = int(relabel_pairs(seed_array, times, table, keys_node, keys_bound, 0, seed_index))
        sizes = [count]
        hops: list[tuple[np.ndarray, np.ndarray]] = []
        for hop, fanout in enumerate(self.fanouts):
            stream = np.uint64(kernels.stream_key(self.seed, int(batch_id), hop))
            src, src_bound, edge_id, dst_index = temporal_hop(
                self.indptr, self.indices, self.edge_time, self.edge_time_order, keys_node[:count],
                keys_bound[:count], np.int64(fanout), self.recent, self.inclusive, stream,
            )  # fmt: skip
            need = count + src.shape[0]
            if need > keys_node.shape[0]:
                keys_node = _grown(keys_node, need, count)
                keys_bound = _grown(keys_bound, need, count)
            if _table_size(need) > table.shape[0]:
                table = _rehashed(keys_node, keys_bound, count, _table_size(need))
            local = np.empty(src.shape[0], np.int64)
            count = int(relabel_pairs(src, src_bound, table, keys_node, keys_bound, count, local))
            sizes.append(count)
            hops.append((np.stack([local, dst_index]), edge_id))
        blocks = [
            Block(torch.from_numpy(hops[h][0]), sizes[h + 1], sizes[h], torch.from_numpy(hops[h][1]))
            for h in reversed(range(len(self.fanouts)))
        ]
        return MiniBatch(
            n_id=torch.from_numpy(keys_node[:count].copy()),
            blocks=blocks,
            seed_index=torch.from_numpy(seed_index),
            seeds=torch.from_numpy(seed_array.copy()),
            n_time=torch.from_numpy(keys_bound[:count].copy()),
        )


def _table_size(rows: int) -> int:
    """A power of two of at least twice ``rows`` (the hash table's load stays at most 1/2)."""
    size = 16
    while size < 2 * rows:
        size *= 2
    return size


def _grown(array: np.ndarray, need: int, keep: int) -> np.ndarray:
    """``array`` with room for ``need`` entries (at least doubled), its first ``keep`` entries kept."""
    out = np.empty(max(need, 2 * array.shape[0]), np.int64)
    out[:keep] = array[:keep]
    return out


def _rehashed(keys_node: np.ndarray, keys_bound: np.ndarray, count: int, size: int) -> np.ndarray:
    """A hash table of ``size`` slots holding rows ``[0, count)`` (their keys are distinct, so no row moves)."""
    table = np.full(size, -1, np.int64)
    scratch = np.empty(count, np.int64)
    relabel_pairs(keys_node[:count], keys_bound[:count], table, keys_node.copy(), keys_bound.copy(), 0, scratch)
    return table
