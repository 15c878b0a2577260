"""Temporal neighbour sampling: one hop of a time-bounded sampler and the (node, time bound) relabel, numba
kernels with their plain-Python references.

The graph is the dataset's CSC (each destination's list ``indptr[d] .. indptr[d + 1]`` sorted by source)
with ``edge_time`` in CSC order and ``order``: for every list, that list's CSC positions sorted by time
(``edge_time[order[p]]`` is non-decreasing within a list). The edges strictly earlier than a bound
(``inclusive=False``) or at most the bound (``inclusive=True``) are then a prefix of ``order``'s slice, found
by binary search. From that prefix a hop picks ``fanout`` of them uniformly without replacement (Floyd's
algorithm, the same counter-based draws as the untimed sampler) or the ``fanout`` most recent (``recent``);
``fanout < 0`` takes them all.

Time bound of a sampled neighbour: it inherits the bound of the destination it was sampled for, which is
the seed time of the seed whose path reached it (PyG's temporal scheme), so no hop reads past its seed's
time. A node is one row per (node, bound) pair (:func:`relabel_pairs`), never a minimum over seeds.
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier.sampling._neighbor_kernels import floyd_positions, floyd_positions_py, node_key, node_key_py


@numba.njit(cache=True, nogil=True)
def _cut(
    edge_time: np.ndarray, order: np.ndarray, start: np.int64, stop: np.int64, bound: np.int64, inclusive: bool
) -> np.int64:
    """First position p in [start, stop) with ``edge_time[order[p]]`` >= bound (> bound if inclusive); stop if none."""
    lo = start
    hi = stop
    while lo < hi:
        mid = (lo + hi) >> 1
        t = edge_time[order[mid]]
        if t < bound or (inclusive and t == bound):
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def temporal_hop(
    indptr: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
    order: np.ndarray,
    dst: np.ndarray,
    bound: np.ndarray,
    fanout: np.int64,
    recent: bool,
    inclusive: bool,
    stream: np.uint64,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One temporal hop.

    Args:
        indptr: int64 [N + 1], CSC offsets. indices: int32/int64 [E], source of each edge.
        edge_time: int64 [E], time of each edge (CSC order). order: int64 [E], each list's positions by time.
        dst: int64 [B], destination nodes. bound: int64 [B], time bound of each destination.
        fanout: picks per destination (all admissible edges if fewer, or if negative). recent: latest edges
            instead of uniform. inclusive: admit edges at the bound (``<=``) instead of strictly before (``<``).
        stream: uint64 hop key; destination ``j`` draws with ``node_key(stream, j)``.

    Returns:
        (src int64 [S], src_bound int64 [S], edge_id int64 [S], dst_index int64 [S]): for each sampled
        edge its source node, the bound the source inherits (its destination's), its CSC position (the edge id
        that reads its time and features) and the index into ``dst`` of its destination; grouped by
        destination in order, earliest admissible edge first for ``recent`` and full lists.
    """
    n = dst.shape[0]
    counts = np.empty(n, np.int64)
    cuts = np.empty(n, np.int64)
    for j in range(n):
        start = indptr[dst[j]]
        cut = _cut(edge_time, order, start, indptr[dst[j] + 1], bound[j], inclusive)
        cuts[j] = cut
        counts[j] = cut - start if fanout < 0 else min(fanout, cut - start)
    total = counts.sum()
    src = np.empty(total, np.int64)
    src_bound = np.empty(total, np.int64)
    edge_id = np.empty(total, np.int64)
    dst_index = np.empty(total, np.int64)
    width = max(fanout, 1)
    out = np.empty(width, np.int64)
    size = 1
    while size < 2 * width:
        size *= 2
    table = np.empty(size, np.int64)
    w = 0
    for j in range(n):
        start = indptr[dst[j]]
        degree = cuts[j] - start
        k = counts[j]
        for i in range(k):
            if k == degree:
                p = i
            elif recent:
                p = degree - k + i
            else:
                if i == 0:
                    floyd_positions(node_key(stream, j), degree, k, out, table)
                p = out[i]
            pos = order[start + p]
            src[w] = indices[pos]
            src_bound[w] = bound[j]
            edge_id[w] = pos
            dst_index[w] = j
            w += 1
    return src, src_bound, edge_id, dst_index


def temporal_hop_py(
    indptr: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
    order: np.ndarray,
    dst: np.ndarray,
    bound: np.ndarray,
    fanout: int,
    recent: bool,
    inclusive: bool,
    stream: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Plain numpy/Python reference of :func:`temporal_hop` (same arguments, identical output)."""
    src: list[int] = []
    src_bound: list[int] = []
    edge_id: list[int] = []
    dst_index: list[int] = []
    side = "right" if inclusive else "left"
    for j, (d, t) in enumerate(zip(dst.tolist(), bound.tolist())):
        start, stop = int(indptr[d]), int(indptr[d + 1])
        by_time = order[start:stop]
        degree = int(np.searchsorted(edge_time[by_time], t, side=side))
        k = degree if fanout < 0 else min(fanout, degree)
        if k == degree:
            picks = list(range(k))
        elif recent:
            picks = list(range(degree - k, degree))
        else:
            picks = floyd_positions_py(node_key_py(stream, j), degree, k)
        for p in picks:
            pos = int(by_time[p])
            src.append(int(indices[pos]))
            src_bound.append(t)
            edge_id.append(pos)
            dst_index.append(j)
    as64 = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
    return as64(src), as64(src_bound), as64(edge_id), as64(dst_index)


@numba.njit(cache=True, nogil=True)
def _slot(
    table: np.ndarray, keys_node: np.ndarray, keys_bound: np.ndarray, node: np.int64, bound: np.int64
) -> np.int64:
    """The slot of (node, bound) in the open-addressing ``table`` (its row, or the empty slot where it goes)."""
    mask = table.shape[0] - 1
    h = np.uint64(node) * np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(bound) * np.uint64(0xC2B2AE3D27D4EB4F)
    i = np.int64((h ^ (h >> np.uint64(31))) & np.uint64(mask))
    while True:
        row = table[i]
        if row < 0 or (keys_node[row] == node and keys_bound[row] == bound):
            return i
        i = (i + 1) & mask


@numba.njit(cache=True, nogil=True)
def relabel_pairs(
    node: np.ndarray,
    bound: np.ndarray,
    table: np.ndarray,
    keys_node: np.ndarray,
    keys_bound: np.ndarray,
    count: np.int64,
    local: np.ndarray,
) -> np.int64:
    """Give each (node, bound) pair a row in first-seen order, after the ``count`` rows known already.

    Args:
        node, bound: int64 [S], the pairs. table: int64 [T] (a power of two > the final row count), -1 where
            empty, the row of each known pair elsewhere. keys_node, keys_bound: int64 [>= final count], the
            node and bound of each row (rows ``[0, count)`` known). local: int64 [S], receives each pair's row.

    Returns:
        The row count after the pairs.
    """
    for i in range(node.shape[0]):
        s = _slot(table, keys_node, keys_bound, node[i], bound[i])
        row = table[s]
        if row < 0:
            row = count
            table[s] = row
            keys_node[row] = node[i]
            keys_bound[row] = bound[i]
            count += 1
        local[i] = row
    return count


def relabel_pairs_py(
    node: np.ndarray, bound: np.ndarray, known: list[tuple[int, int]]
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Reference of :func:`relabel_pairs`: (int64 [S] rows, the known pairs extended in first-seen order)."""
    rows = {pair: r for r, pair in enumerate(known)}
    out = []
    for pair in zip(node.tolist(), bound.tolist()):
        if pair not in rows:
            rows[pair] = len(known)
            known = [*known, pair]
        out.append(rows[pair])
    return np.asarray(out, dtype=np.int64), known
