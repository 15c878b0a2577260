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
    if start == stop:
        return stop
    last = edge_time[order[stop - 1]]
    if last < bound or (inclusive and last == bound):  # the whole list is in the past: no search
        return stop
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
def temporal_cuts(
    indptr: np.ndarray,
    edge_time: np.ndarray,
    order: np.ndarray,
    dst: np.ndarray,
    bound: np.ndarray,
    fanout: np.int64,
    inclusive: bool,
    cuts: np.ndarray,
) -> np.int64:
    """First pass of a hop: ``cuts[j]`` (int64 [B]) = the end of destination ``j``'s admissible prefix (a CSC
    position in ``order``'s slice); returns the number of edges the hop samples (``fanout`` or fewer per
    destination, all of them when ``fanout < 0``)."""
    total = 0
    for j in range(dst.shape[0]):
        start = indptr[dst[j]]
        cut = _cut(edge_time, order, start, indptr[dst[j] + 1], bound[j], inclusive)
        cuts[j] = cut
        total += cut - start if fanout < 0 else min(fanout, cut - start)
    return total


@numba.njit(cache=True, nogil=True)
def temporal_hop(
    indptr: np.ndarray,
    indices: np.ndarray,
    order: np.ndarray,
    cuts: np.ndarray,
    num_dst: np.int64,
    fanout: np.int64,
    recent: bool,
    stream: np.uint64,
    first_row: np.ndarray,
    next_row: np.ndarray,
    table: np.ndarray,
    keys_node: np.ndarray,
    keys_bound: np.ndarray,
    count: np.int64,
    src_row: np.ndarray,
    dst_index: np.ndarray,
    edge_id: np.ndarray,
) -> np.int64:
    """Second pass of a hop: sample the admissible edges of rows ``[0, num_dst)`` and give their sources rows.

    Row ``j`` is destination ``keys_node[j]`` with bound ``keys_bound[j]``; its admissible edges end at
    ``cuts[j]`` (:func:`temporal_cuts`). It picks ``fanout`` of them uniformly without replacement (Floyd's
    algorithm, key ``node_key(stream, j)``), the ``fanout`` most recent (``recent``), or all when fewer or
    ``fanout < 0``; each picked source inherits the bound and gets its (node, bound) row as in
    :func:`relabel_pairs` (new rows appended after ``count``; the row arrays must hold ``count`` plus the
    hop's edges), through :func:`relabel_pairs_hashed` when ``table`` is not empty (it then must hold twice that).

    Outputs (int64 [S], S from :func:`temporal_cuts`), grouped by destination in order, earliest first for
    ``recent`` and full lists: ``src_row`` (the source's row), ``dst_index`` (the destination's row),
    ``edge_id`` (the edge's CSC position, which reads its time and features). Returns the row count after.
    """
    width = max(fanout, 1)
    out = np.empty(width, np.int64)
    size = 1
    while size < 2 * width:
        size *= 2
    scratch = np.empty(size, np.int64)  # Floyd's set
    # pass 1 (compute, and reads of ``order`` within each list): the picked edges' ids
    w = 0
    for j in range(num_dst):
        start = indptr[keys_node[j]]
        degree = cuts[j] - start
        k = degree if fanout < 0 else min(fanout, degree)
        if k == degree:
            for i in range(k):
                edge_id[w + i] = order[start + i]
        elif recent:
            for i in range(k):
                edge_id[w + i] = order[start + degree - k + i]
        else:
            floyd_positions(node_key(stream, j), degree, k, out, scratch)
            for i in range(k):
                edge_id[w + i] = order[start + out[i]]
        for i in range(k):
            dst_index[w + i] = j
        w += k
    # pass 2 (memory only): a branch-free gather of the sources, many cache misses in flight at once
    for e in range(w):
        src_row[e] = indices[edge_id[e]]
    # pass 3: each source inherits its destination's bound and gets its (node, bound) row
    bounds = np.empty(w, np.int64)
    for e in range(w):
        bounds[e] = keys_bound[dst_index[e]]
    if table.shape[0]:
        return relabel_pairs_hashed(src_row[:w], bounds, table, keys_node, keys_bound, count, src_row[:w])
    return relabel_pairs(src_row[:w], bounds, first_row, next_row, keys_node, keys_bound, count, src_row[:w])


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
    """Plain numpy/Python reference of one hop (:func:`temporal_cuts` then :func:`temporal_hop`) in node ids:
    (src int64 [S], src_bound int64 [S], edge_id int64 [S], dst_index int64 [S]) for destinations ``dst`` with
    bounds ``bound``; the kernel's ``src_row`` are these sources' rows by :func:`relabel_pairs_py`."""
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
def relabel_pairs(
    node: np.ndarray,
    bound: np.ndarray,
    first_row: np.ndarray,
    next_row: np.ndarray,
    keys_node: np.ndarray,
    keys_bound: np.ndarray,
    count: np.int64,
    local: np.ndarray,
) -> np.int64:
    """Give each (node, bound) pair a row in first-seen order, after the ``count`` rows known already.

    A node's rows form a chain: ``first_row[node]`` is its latest row (-1 for none) and ``next_row[row]`` the
    node's row before it, so a lookup is one read of the node-indexed scratch plus one step per other bound
    of the same node in the batch (the untimed relabel's cost when every seed has one time).

    Args:
        node, bound: int64 [S], the pairs. first_row: int64 [N] scratch, -1 for nodes without a row (reset them
            with :func:`reset_rows` after the batch). next_row, keys_node, keys_bound: int64 [>= final count]
            (rows ``[0, count)`` known). local: int64 [S], receives each pair's row.

    Returns:
        The row count after the pairs.
    """
    for i in range(node.shape[0]):  # ``local`` may be ``node`` itself: entry i is read before it is written
        v = node[i]
        b = bound[i]
        row = np.int64(first_row[v])
        while row >= 0 and keys_bound[row] != b:
            row = next_row[row]
        if row < 0:
            row = count
            next_row[row] = first_row[v]
            first_row[v] = row
            keys_node[row] = v
            keys_bound[row] = b
            count += 1
        local[i] = row
    return count


@numba.njit(cache=True, nogil=True)
def _home(v: np.int64, b: np.int64, mask: np.uint64) -> np.uint64:
    """The first slot probed for the pair (v, b) in a hash table of ``mask + 1`` slots."""
    h = np.uint64(v) * np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(b) * np.uint64(0xC2B2AE3D27D4EB4F)
    return (h ^ (h >> np.uint64(29))) & mask


@numba.njit(cache=True, nogil=True)
def rehash(table: np.ndarray, keys_node: np.ndarray, keys_bound: np.ndarray, count: np.int64) -> None:
    """Insert rows ``[0, count)`` (distinct pairs) into the empty hash ``table`` of :func:`relabel_pairs_hashed`."""
    mask = np.uint64(table.shape[0] - 1)
    for row in range(count):
        slot = _home(keys_node[row], keys_bound[row], mask)
        while table[slot] >= 0:
            slot = (slot + np.uint64(1)) & mask
        table[slot] = row


@numba.njit(cache=True, nogil=True)
def relabel_pairs_hashed(
    node: np.ndarray,
    bound: np.ndarray,
    table: np.ndarray,
    keys_node: np.ndarray,
    keys_bound: np.ndarray,
    count: np.int64,
    local: np.ndarray,
) -> np.int64:
    """:func:`relabel_pairs` through an open-addressing hash ``table`` of the rows (int64 [T], a power of two at
    least twice the final row count, -1 where empty, holding rows ``[0, count)``): one probe or two per pair
    whatever the number of bounds of a node, where a chain walks them all (seeds of many times share hubs)."""
    mask = np.uint64(table.shape[0] - 1)
    for i in range(node.shape[0]):  # ``local`` may be ``node`` itself: entry i is read before it is written
        v = node[i]
        b = bound[i]
        slot = _home(v, b, mask)
        while True:
            row = table[slot]
            if row < 0 or (keys_node[row] == v and keys_bound[row] == b):
                break
            slot = (slot + np.uint64(1)) & mask
        if row < 0:
            row = count
            table[slot] = row
            keys_node[row] = v
            keys_bound[row] = b
            count += 1
        local[i] = row
    return count


@numba.njit(cache=True, nogil=True)
def reset_rows(first_row: np.ndarray, keys_node: np.ndarray, count: np.int64) -> None:
    """Set ``first_row`` back to -1 for the nodes of rows ``[0, count)`` (touches only the batch's nodes)."""
    for row in range(count):
        first_row[keys_node[row]] = -1


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
