"""Numba kernels of edge timestamps (``edge_time.npy``, ``edge_time_order.npy``; docs/dataset-format.md).

Edge times travel in CSC order next to ``indices``: position ``p`` is the edge ``indices[p] -> v``. Every kernel
has a plain numpy reference (``*_reference``) that tests/dataset/test_edge_time_kernels.py compares it with on
random inputs.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _argsort_pairs(primary: np.ndarray, secondary: np.ndarray) -> np.ndarray:
    """int64 [K]: the order of ``(primary[k], secondary[k], k)`` ascending (stable two-key sort)."""
    by_secondary = np.argsort(secondary, kind="mergesort")
    by_primary = np.argsort(primary[by_secondary], kind="mergesort")
    return by_secondary[by_primary].astype(np.int64)


# ---------------------------------------------------------------------------- the order file


@numba.njit(parallel=True, cache=True, nogil=True)
def edge_time_order(indptr: np.ndarray, edge_time: np.ndarray) -> np.ndarray:
    """int64 [E]: for every list ``[indptr[v], indptr[v + 1])`` its CSC positions sorted by ``(time, position)``.

    ``indptr``: int64 [R + 1] (R rows: nodes, or (relation, destination) rows of a typed dataset);
    ``edge_time``: int64 [E] in CSC order.
    """
    order = np.empty(edge_time.shape[0], dtype=np.int64)
    for v in numba.prange(indptr.shape[0] - 1):
        start, stop = indptr[v], indptr[v + 1]
        if stop > start:
            order[start:stop] = np.argsort(edge_time[start:stop], kind="mergesort") + start
    return order


def edge_time_order_reference(indptr: np.ndarray, edge_time: np.ndarray) -> np.ndarray:
    """numpy reference of :func:`edge_time_order`: one global lexsort by (row, time, position)."""
    indptr = np.asarray(indptr, dtype=np.int64)
    rows = np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))
    positions = np.arange(rows.shape[0], dtype=np.int64)
    return positions[np.lexsort((positions, np.asarray(edge_time), rows))]


@numba.njit(cache=True, nogil=True)
def order_mismatch(indptr: np.ndarray, edge_time: np.ndarray, order: np.ndarray, rows: np.ndarray) -> np.int64:
    """The first row of ``rows`` (int64 [K]) whose ``order`` entries are not its positions sorted by (time,
    position), or -1: the sampled open-time check of ``edge_time_order.npy``."""
    for k in range(rows.shape[0]):
        v = rows[k]
        start, stop = indptr[v], indptr[v + 1]
        for i in range(start, stop):
            p = order[i]
            if p < start or p >= stop:
                return v
            if i > start:
                q = order[i - 1]
                if edge_time[q] > edge_time[p] or (edge_time[q] == edge_time[p] and q >= p):
                    return v
    return -1


# ---------------------------------------------------------------------------- building a timed CSC


@numba.njit(cache=True, nogil=True)
def scatter_timed_sources(
    src: np.ndarray, dst: np.ndarray, time: np.ndarray, cursor: np.ndarray, indices: np.ndarray, edge_time: np.ndarray
) -> None:
    """Place ``src[e]`` at ``indices[cursor[dst[e]]]`` and ``time[e]`` at ``edge_time`` of the same slot, then
    advance that cursor (in place; the timed twin of ``importers.common.kernels.scatter_sources``).

    ``src``/``dst``: int [K]; ``time``: int64 [K]; ``cursor``: int64 [N]; ``indices``/``edge_time``: [E].
    """
    for e in range(src.shape[0]):
        d = dst[e]
        indices[cursor[d]] = src[e]
        edge_time[cursor[d]] = time[e]
        cursor[d] += 1


@numba.njit(parallel=True, cache=True, nogil=True)
def sort_timed_halves(
    indptr: np.ndarray, middle: np.ndarray, indices: np.ndarray, edge_time: np.ndarray, edge_row: np.ndarray
) -> None:
    """Sort ``[indptr[v], middle[v])`` and ``[middle[v], indptr[v + 1])`` of every node, each on its own, by
    (source, time), moving ``edge_time`` with ``indices`` (in place; ``middle = indptr[1:]`` sorts whole lists).
    ``edge_row`` (int64 [E], each edge's input row, ascending within each half as scattered; or empty: none) moves
    along, so equal (source, time) entries stay in input order."""
    rows = edge_row.shape[0] > 0
    for v in numba.prange(indptr.shape[0] - 1):
        for half in range(2):
            start = indptr[v] if half == 0 else middle[v]
            stop = middle[v] if half == 0 else indptr[v + 1]
            if stop - start > 1:
                order = _argsort_pairs(indices[start:stop], edge_time[start:stop])
                indices[start:stop] = indices[start:stop][order]
                edge_time[start:stop] = edge_time[start:stop][order]
                if rows:
                    edge_row[start:stop] = edge_row[start:stop][order]


def sort_timed_halves_reference(
    indptr: np.ndarray, middle: np.ndarray, indices: np.ndarray, edge_time: np.ndarray
) -> None:
    """numpy reference of :func:`sort_timed_halves`."""
    for v in range(indptr.shape[0] - 1):
        for start, stop in ((indptr[v], middle[v]), (middle[v], indptr[v + 1])):
            order = np.lexsort((edge_time[start:stop], indices[start:stop]))
            indices[start:stop] = indices[start:stop][order]
            edge_time[start:stop] = edge_time[start:stop][order]


@numba.njit(cache=True, nogil=True)
def merge_timed_halves_in_place(
    indptr: np.ndarray,
    middle: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
    new_indptr: np.ndarray,
    keep_duplicates: bool,
    scratch: np.ndarray,
    scratch_time: np.ndarray,
    edge_row: np.ndarray,
    scratch_row: np.ndarray,
) -> None:
    """The timed write of ``csc.merge_list_halves`` (the same ids in the same places): a source ``x`` seen ``a``
    times in the first half and ``b`` in the second is written ``max(a, b)`` times with ``keep_duplicates``, else
    once, with the earliest times of its ``a + b`` copies (halves sorted by (source, time)). ``edge_row`` (int64
    [E], the input row of each entry, or empty: none) moves with the times: a kept copy is the earliest by (time,
    input row). Sequential and in place: node ``v``'s output ``[new_indptr[v], new_indptr[v + 1])`` never
    overtakes an unread list."""
    rows = edge_row.shape[0] > 0
    for v in range(indptr.shape[0] - 1):
        start, mid, stop = indptr[v], middle[v], indptr[v + 1]
        length = stop - start
        scratch[:length] = indices[start:stop]
        scratch_time[:length] = edge_time[start:stop]
        if rows:
            scratch_row[:length] = edge_row[start:stop]
        i, j, end_i, end_j = 0, mid - start, mid - start, length
        out = new_indptr[v]
        while i < end_i or j < end_j:
            x = scratch[i] if i < end_i and (j >= end_j or scratch[i] <= scratch[j]) else scratch[j]
            a = 0
            while i + a < end_i and scratch[i + a] == x:
                a += 1
            b = 0
            while j + b < end_j and scratch[j + b] == x:
                b += 1
            copies = max(a, b) if keep_duplicates else 1
            ia, jb = i, j
            for _ in range(copies):  # the earliest `copies` (time, row) of the two sorted runs
                first = jb >= j + b
                if not first and ia < i + a:
                    ta, tb = scratch_time[ia], scratch_time[jb]
                    first = ta < tb or (ta == tb and (not rows or scratch_row[ia] <= scratch_row[jb]))
                k = ia if first else jb
                edge_time[out] = scratch_time[k]
                if rows:
                    edge_row[out] = scratch_row[k]
                if first:
                    ia += 1
                else:
                    jb += 1
                indices[out] = x
                out += 1
            i += a
            j += b


def merge_timed_halves_reference(
    indptr: np.ndarray, middle: np.ndarray, indices: np.ndarray, edge_time: np.ndarray, keep_duplicates: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plain-Python reference of :func:`merge_timed_halves_in_place`: ``(new_indptr, indices, edge_time)``."""
    new_indptr, out_ids, out_times = [0], [], []
    for v in range(indptr.shape[0] - 1):
        first = list(zip(indices[indptr[v] : middle[v]].tolist(), edge_time[indptr[v] : middle[v]].tolist()))
        second = list(zip(indices[middle[v] : indptr[v + 1]].tolist(), edge_time[middle[v] : indptr[v + 1]].tolist()))
        for x in sorted({s for s, _ in first + second}):
            a = sum(1 for s, _ in first if s == x)
            b = sum(1 for s, _ in second if s == x)
            times = sorted(t for s, t in first + second if s == x)
            copies = max(a, b) if keep_duplicates else 1
            out_ids += [x] * copies
            out_times += times[:copies]
        new_indptr.append(len(out_ids))
    return np.array(new_indptr, np.int64), np.array(out_ids, indices.dtype), np.array(out_times, np.int64)


# ---------------------------------------------------------------------------- rewriting a timed CSC


@numba.njit(parallel=True, cache=True, nogil=True)
def kept_positions(
    indptr: np.ndarray, indices: np.ndarray, new_indptr: np.ndarray, new_indices: np.ndarray
) -> np.ndarray:
    """int64 [E']: the old CSC position of every edge of a graph ``(new_indptr, new_indices)`` made by removing
    edges from ``(indptr, indices)`` (each new list a subsequence of the old one, same order): the edge split's
    way to keep ``edge_time`` aligned. A new entry takes the first unused old entry with its id."""
    positions = np.empty(new_indices.shape[0], dtype=np.int64)
    for v in numba.prange(indptr.shape[0] - 1):
        i = indptr[v]
        for k in range(new_indptr[v], new_indptr[v + 1]):
            while indices[i] != new_indices[k]:
                i += 1
            positions[k] = i
            i += 1
    return positions


def kept_positions_reference(
    indptr: np.ndarray, indices: np.ndarray, new_indptr: np.ndarray, new_indices: np.ndarray
) -> np.ndarray:
    """Plain-Python reference of :func:`kept_positions`."""
    positions = []
    for v in range(indptr.shape[0] - 1):
        i = int(indptr[v])
        for k in range(int(new_indptr[v]), int(new_indptr[v + 1])):
            while indices[i] != new_indices[k]:
                i += 1
            positions.append(i)
            i += 1
    return np.array(positions, dtype=np.int64)


@numba.njit(parallel=True, cache=True, nogil=True)
def relocated_positions(
    indptr: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
    perm: np.ndarray,
    inverse: np.ndarray,
    new_indptr: np.ndarray,
    out: np.ndarray,
) -> None:
    """The old CSC position of every edge of a reordered CSC (``graph.reorder.reorder_topology``): row ``i`` of the
    new graph is old row ``perm[i]`` with sources renumbered by ``inverse`` and sorted by (new source, time, old
    position) (by (new source, old position) when ``edge_time`` is empty); ``out`` (int64 [E]) receives the old
    positions in that order, so ``edge_time[out]`` and every per-edge file gathered by ``out`` follow their edges.
    ``indptr``/``new_indptr`` int64 [R + 1], ``perm`` int64 [R], ``inverse`` int64 [N], ``indices`` the old [E],
    ``edge_time`` int64 [E] or [0]."""
    timed = edge_time.shape[0] > 0
    for i in numba.prange(perm.shape[0]):
        start, stop = indptr[perm[i]], indptr[perm[i] + 1]
        if stop == start:
            continue
        renumbered = np.empty(stop - start, dtype=np.int64)
        for k in range(stop - start):
            renumbered[k] = inverse[indices[start + k]]
        positions = np.arange(start, stop).astype(np.int64)
        order = _argsort_pairs(renumbered, edge_time[start:stop] if timed else positions)
        base = new_indptr[i]
        for k in range(order.shape[0]):
            out[base + k] = positions[order[k]]


# ---------------------------------------------------------------------------- EdgeBank


@numba.njit(cache=True, nogil=True, inline="always")
def _first_copy(indptr: np.ndarray, indices: np.ndarray, s: np.int64, d: np.int64) -> np.int64:
    """The first position of source ``s`` in ``d``'s ascending list (a binary search; the copies of a repeated edge
    follow it), or where it would be."""
    lo, hi = indptr[d], indptr[d + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        if np.int64(indices[mid]) < s:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True, inline="always")
def _earliest(indptr: np.ndarray, indices: np.ndarray, edge_time: np.ndarray, s: np.int64, d: np.int64) -> np.int64:
    """The earliest time of the edge ``s -> d`` (its copies are adjacent from :func:`_first_copy`); the largest
    int64 when there is none."""
    lo, stop = _first_copy(indptr, indices, s, d), indptr[d + 1]
    best = np.iinfo(np.int64).max
    while lo < stop and np.int64(indices[lo]) == s:
        best = min(best, edge_time[lo])
        lo += 1
    return best


@numba.njit(parallel=True, cache=True, nogil=True)
def pair_positions(
    indptr: np.ndarray, indices: np.ndarray, edge_time: np.ndarray, src: np.ndarray, dst: np.ndarray, times: np.ndarray
) -> np.ndarray:
    """int64 [P]: the first CSC position of the edge ``src[i] -> dst[i]``, with time ``times[i]`` when ``times`` is
    not empty (``edge_time`` int64 [E] then); -1 when there is none. ``indptr`` int64 [N + 1], ``indices`` [E],
    ``src``/``dst`` int64 [P]."""
    out = np.full(src.shape[0], -1, np.int64)
    timed = times.shape[0] > 0
    for i in numba.prange(src.shape[0]):
        s, d = src[i], dst[i]
        lo, stop = _first_copy(indptr, indices, s, d), indptr[d + 1]
        while lo < stop and np.int64(indices[lo]) == s:
            if not timed or edge_time[lo] == times[i]:
                out[i] = lo
                break
            lo += 1
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def edgebank(
    indptr: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    times: np.ndarray,
    undirected: bool,
) -> np.ndarray:
    """float32 [P]: 1 where the edge ``src[i] -> dst[i]`` (or, when ``undirected``, ``dst[i] -> src[i]``) is in
    the CSC graph with a time ``< times[i]``, else 0 (EdgeBank with unlimited memory)."""
    out = np.zeros(src.shape[0], np.float32)
    for i in numba.prange(src.shape[0]):
        s, d = np.int64(src[i]), np.int64(dst[i])
        first = _earliest(indptr, indices, edge_time, s, d)
        if undirected:
            first = min(first, _earliest(indptr, indices, edge_time, d, s))
        if first < times[i]:
            out[i] = 1.0
    return out


def edgebank_reference(
    indptr: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    times: np.ndarray,
    undirected: bool,
) -> np.ndarray:
    """numpy :func:`edgebank`: the earliest time of every distinct edge key ``dst * N + src``, looked up per pair."""
    n = max(indptr.shape[0] - 1, 1)
    dst_of_edge = np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))
    keys = dst_of_edge * n + np.asarray(indices, np.int64)
    order = np.lexsort((np.asarray(edge_time), keys))
    unique_keys, first = np.unique(keys[order], return_index=True)
    earliest = np.asarray(edge_time)[order][first]
    src, dst, times = (np.asarray(a, np.int64) for a in (src, dst, times))
    out = np.zeros(src.shape[0], np.bool_)
    for query in [dst * n + src] + ([src * n + dst] if undirected else []):
        if unique_keys.shape[0] == 0:
            break
        at = np.minimum(np.searchsorted(unique_keys, query), unique_keys.shape[0] - 1)
        out |= (unique_keys[at] == query) & (earliest[at] < times)
    return out.astype(np.float32)
