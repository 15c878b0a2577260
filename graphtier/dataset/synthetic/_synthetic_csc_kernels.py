"""Numba kernels that turn the generator's edge chunks into a CSC, in parallel over node ranges.

- :func:`count_endpoints`, :func:`scatter_endpoints`: group edges by destination (CSC); each of
  ``parts`` threads owns a contiguous destination range, so no two threads write the same list.
- :func:`sort_and_count_unique`, :func:`compact_lists`: sort lists, drop duplicates and self-loops.

Tested end to end against ``graphtier.dataset.csc.edges_to_csc_reference``.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, inline="always")
def _node_range(part: np.int64, parts: np.int64, num_nodes: np.int64) -> tuple[np.int64, np.int64]:
    step = (num_nodes + parts - 1) // parts
    return part * step, min(num_nodes, (part + 1) * step)


@numba.njit(parallel=True, cache=True, nogil=True)
def count_endpoints(src: np.ndarray, dst: np.ndarray, counts: np.ndarray, symmetric: bool, parts: np.int64) -> None:
    """Add 1 to ``counts[dst[i]]`` (and to ``counts[src[i]]`` when ``symmetric``) for every edge i.

    ``counts`` int64 [N]; ``src``/``dst`` integer [B]. Each of ``parts`` tasks (pass
    ``numba.get_num_threads()``) owns a range of node ids and scans all edges: no write conflicts.
    """
    n = counts.shape[0]
    for part in numba.prange(parts):
        low, high = _node_range(part, parts, n)
        for i in range(dst.shape[0]):
            d = dst[i]
            if low <= d < high:
                counts[d] += 1
            if symmetric:
                s = src[i]
                if low <= s < high:
                    counts[s] += 1


@numba.njit(parallel=True, cache=True, nogil=True)
def scatter_endpoints(
    src: np.ndarray, dst: np.ndarray, cursor: np.ndarray, indices: np.ndarray, symmetric: bool, parts: np.int64
) -> None:
    """Place the source of every edge into its destination's list (and the reverse when ``symmetric``).

    ``cursor`` int64 [N] holds the next free slot of every list and is advanced; ``indices`` [E] int32/64.
    Each of ``parts`` tasks owns a range of destinations (no conflicts); lists keep the edge order.
    """
    n = cursor.shape[0]
    for part in numba.prange(parts):
        low, high = _node_range(part, parts, n)
        for i in range(dst.shape[0]):
            s = src[i]
            d = dst[i]
            if low <= d < high:
                indices[cursor[d]] = s
                cursor[d] += 1
            if symmetric and low <= s < high:
                indices[cursor[s]] = d
                cursor[s] += 1


@numba.njit(cache=True, nogil=True, inline="always")
def _sort_slice(values: np.ndarray, start: np.int64, stop: np.int64) -> None:
    if stop - start <= 24:  # insertion sort: no allocation for the many short lists
        for i in range(start + 1, stop):
            x = values[i]
            j = i - 1
            while j >= start and values[j] > x:
                values[j + 1] = values[j]
                j -= 1
            values[j + 1] = x
    else:
        values[start:stop].sort()


@numba.njit(parallel=True, cache=True, nogil=True)
def sort_and_count_unique(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Sort every list ``indices[indptr[v]:indptr[v + 1]]`` in place; return int64 [N] counts of
    distinct entries per list, self-loops (``v`` in list ``v``) not counted."""
    n = indptr.shape[0] - 1
    counts = np.zeros(n, dtype=np.int64)
    for v in numba.prange(n):
        start, stop = indptr[v], indptr[v + 1]
        _sort_slice(indices, start, stop)
        count = 0
        for i in range(start, stop):
            if indices[i] == v:
                continue
            if i > start and indices[i] == indices[i - 1]:
                continue
            count += 1
        counts[v] = count
    return counts


@numba.njit(cache=True, nogil=True)
def compact_lists(indptr: np.ndarray, indices: np.ndarray) -> np.int64:
    """Drop repeated entries and self-loops from sorted lists, in place (sequential, moves data left).

    Rewrites ``indptr`` int64 [N + 1] to the compacted layout and returns the new edge count; the
    first ``indptr[-1]`` entries of ``indices`` then hold the compacted lists.
    """
    n = indptr.shape[0] - 1
    write = np.int64(0)
    start = indptr[0]
    for v in range(n):
        stop = indptr[v + 1]
        indptr[v] = write
        for i in range(start, stop):
            if indices[i] == v:
                continue
            if i > start and indices[i] == indices[i - 1]:
                continue
            indices[write] = indices[i]
            write += 1
        start = stop
    indptr[n] = write
    return write


# ---------------------------------------------------------------------------------------------- features
