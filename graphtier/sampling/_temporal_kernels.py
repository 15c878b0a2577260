"""Temporal neighbour sampling: one hop of a time-bounded sampler, a numba kernel and its plain-Python reference.

Each destination ``j`` carries a time bound ``bound[j]``. Its neighbour list (CSC, positions
``indptr[d] .. indptr[d + 1]``) is sorted by edge time, so the edges strictly earlier than the bound
(``inclusive=False``) or at most the bound (``inclusive=True``) are a prefix found by binary search.
From that prefix the hop picks ``fanout`` positions uniformly without replacement (Floyd's algorithm,
the same counter-based draws as the untimed sampler) or the ``fanout`` most recent ones (``recent``).

Time bound of a sampled neighbour: it inherits the bound of the destination it was sampled for, which
is the seed time of the seed whose path reached it (PyG's temporal scheme). A node reached from two
seeds therefore appears once per (node, bound) pair the caller keeps; the kernel returns one entry per
sampled edge with the bound it carries, never a minimum over seeds.
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier.sampling._neighbor_kernels import floyd_positions, floyd_positions_py, node_key, node_key_py


@numba.njit(cache=True, nogil=True)
def _cut(edge_time: np.ndarray, start: np.int64, stop: np.int64, bound: np.int64, inclusive: bool) -> np.int64:
    """First position in [start, stop) whose time is >= bound (> bound if inclusive); stop if none."""
    lo = start
    hi = stop
    while lo < hi:
        mid = (lo + hi) >> 1
        t = edge_time[mid]
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
    dst: np.ndarray,
    bound: np.ndarray,
    fanout: np.int64,
    recent: bool,
    inclusive: bool,
    stream: np.uint64,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One temporal hop.

    Args:
        indptr: int64 [N + 1], CSC offsets. indices: int64 [E], source of each edge.
        edge_time: int64 [E], time of each edge, sorted ascending within each destination's list.
        dst: int64 [B], destination nodes. bound: int64 [B], time bound of each destination.
        fanout: picks per destination (all admissible edges if fewer). recent: latest edges instead of uniform.
        inclusive: admit edges at the bound (``<=``) instead of strictly before it (``<``).
        stream: uint64 hop key; destination ``j`` draws with ``node_key(stream, j)``.

    Returns:
        (src int64 [S], src_bound int64 [S], edge_pos int64 [S], dst_index int64 [S]): for each sampled
        edge its source node, the bound the source inherits (its destination's), its CSC position and the
        index into ``dst`` of its destination; grouped by destination in order.
    """
    n = dst.shape[0]
    counts = np.empty(n, np.int64)
    cuts = np.empty(n, np.int64)
    for j in range(n):
        start = indptr[dst[j]]
        cut = _cut(edge_time, start, indptr[dst[j] + 1], bound[j], inclusive)
        cuts[j] = cut
        counts[j] = min(fanout, cut - start)
    total = counts.sum()
    src = np.empty(total, np.int64)
    src_bound = np.empty(total, np.int64)
    edge_pos = np.empty(total, np.int64)
    dst_index = np.empty(total, np.int64)
    out = np.empty(max(fanout, 1), np.int64)
    size = 1
    while size < 2 * max(fanout, 1):
        size *= 2
    table = np.empty(size, np.int64)
    w = 0
    for j in range(n):
        start = indptr[dst[j]]
        degree = cuts[j] - start
        k = counts[j]
        if k == degree:
            for i in range(k):
                out[i] = i
        elif recent:
            for i in range(k):
                out[i] = degree - k + i
        else:
            floyd_positions(node_key(stream, j), degree, k, out, table)
        for i in range(k):
            pos = start + out[i]
            src[w] = indices[pos]
            src_bound[w] = bound[j]
            edge_pos[w] = pos
            dst_index[w] = j
            w += 1
    return src, src_bound, edge_pos, dst_index


def temporal_hop_py(
    indptr: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
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
    edge_pos: list[int] = []
    dst_index: list[int] = []
    side = "right" if inclusive else "left"
    for j, (d, t) in enumerate(zip(dst.tolist(), bound.tolist())):
        start, stop = int(indptr[d]), int(indptr[d + 1])
        degree = int(np.searchsorted(edge_time[start:stop], t, side=side))
        k = min(fanout, degree)
        if k == degree:
            picks = list(range(k))
        elif recent:
            picks = list(range(degree - k, degree))
        else:
            picks = floyd_positions_py(node_key_py(stream, j), degree, k)
        for p in picks:
            src.append(int(indices[start + p]))
            src_bound.append(t)
            edge_pos.append(start + p)
            dst_index.append(j)
    as64 = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
    return as64(src), as64(src_bound), as64(edge_pos), as64(dst_index)
