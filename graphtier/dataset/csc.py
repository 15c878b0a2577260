"""Build a CSC graph (the dataset layout) from edge arrays.

``edges_to_csc(src, dst, N)`` groups edges by destination: ``indices[indptr[v]:indptr[v + 1]]`` are
the sources of the edges ``u -> v``, sorted ascending. The reference implementation is
:func:`edges_to_csc_reference` (scipy-free numpy ``lexsort``); tests compare the two.
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier.dataset.edges._edge_time_kernels import merge_timed_halves_in_place
from graphtier.dataset.format import index_dtype


@numba.njit(cache=True, nogil=True)
def _scatter_by_destination(src: np.ndarray, dst: np.ndarray, indptr: np.ndarray, out: np.ndarray) -> None:
    cursor = indptr[:-1].copy()
    for e in range(src.shape[0]):
        d = dst[e]
        out[cursor[d]] = src[e]
        cursor[d] += 1


@numba.njit(parallel=True, cache=True, nogil=True)
def sort_neighbour_lists(indptr: np.ndarray, indices: np.ndarray) -> None:
    """Sort ``indices[indptr[v]:indptr[v + 1]]`` ascending for every node v (in place)."""
    for v in numba.prange(indptr.shape[0] - 1):
        start, stop = indptr[v], indptr[v + 1]
        if stop - start > 1:
            indices[start:stop] = np.sort(indices[start:stop])


@numba.njit(parallel=True, cache=True, nogil=True)
def _kept_counts(indptr: np.ndarray, indices: np.ndarray, dedup: bool, drop_self_loops: bool) -> np.ndarray:
    n = indptr.shape[0] - 1
    counts = np.zeros(n, dtype=np.int64)
    for v in numba.prange(n):
        count = 0
        for i in range(indptr[v], indptr[v + 1]):
            if drop_self_loops and indices[i] == v:
                continue
            if dedup and i > indptr[v] and indices[i] == indices[i - 1]:
                continue
            count += 1
        counts[v] = count
    return counts


@numba.njit(parallel=True, cache=True, nogil=True)
def _compact(
    indptr: np.ndarray, indices: np.ndarray, new_indptr: np.ndarray, out: np.ndarray, dedup: bool, drop_self_loops: bool
) -> None:
    for v in numba.prange(indptr.shape[0] - 1):
        j = new_indptr[v]
        for i in range(indptr[v], indptr[v + 1]):
            if drop_self_loops and indices[i] == v:
                continue
            if dedup and i > indptr[v] and indices[i] == indices[i - 1]:
                continue
            out[j] = indices[i]
            j += 1


def edges_to_csc(
    src: np.ndarray,
    dst: np.ndarray,
    num_nodes: int,
    *,
    dedup: bool = False,
    drop_self_loops: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Group the edges ``src[i] -> dst[i]`` by destination.

    Args:
        src, dst: integer arrays [E] of node ids in [0, num_nodes) (any integer dtype, CPU).
        num_nodes: N.
        dedup: keep one copy of repeated edges.
        drop_self_loops: drop edges ``v -> v``.

    Returns:
        ``(indptr, indices)``: int64 [N + 1] and int32/int64 [E'] (int32 when N < 2^31), every
        neighbour list sorted ascending.
    """
    src = np.asarray(src)
    dst = np.asarray(dst)
    if src.shape != dst.shape or src.ndim != 1:
        raise ValueError(f"src and dst must be 1-d arrays of one length, got {src.shape} and {dst.shape}")
    out_dtype = index_dtype(num_nodes)
    counts = np.bincount(dst, minlength=num_nodes).astype(np.int64) if dst.size else np.zeros(num_nodes, np.int64)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    del counts
    indices = np.empty(src.shape[0], dtype=out_dtype)
    _scatter_by_destination(src.astype(out_dtype, copy=False), dst, indptr, indices)
    sort_neighbour_lists(indptr, indices)
    if not (dedup or drop_self_loops):
        return indptr, indices
    return compact_csc(indptr, indices, dedup=dedup, drop_self_loops=drop_self_loops)


def compact_csc(
    indptr: np.ndarray, indices: np.ndarray, *, dedup: bool = True, drop_self_loops: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Drop repeated entries (``dedup``; lists must be sorted) and/or self-loops; returns a new (indptr, indices)."""
    counts = _kept_counts(indptr, indices, dedup, drop_self_loops)
    new_indptr = np.zeros_like(indptr)
    np.cumsum(counts, out=new_indptr[1:])
    out = np.empty(int(new_indptr[-1]), dtype=indices.dtype)
    _compact(indptr, indices, new_indptr, out, dedup, drop_self_loops)
    return new_indptr, out


def edges_to_csc_reference(
    src: np.ndarray, dst: np.ndarray, num_nodes: int, *, dedup: bool = False, drop_self_loops: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Plain numpy reference for :func:`edges_to_csc`."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if drop_self_loops:
        keep = src != dst
        src, dst = src[keep], dst[keep]
    order = np.lexsort((src, dst))
    src, dst = src[order], dst[order]
    if dedup and src.size:
        keep = np.ones(src.size, dtype=bool)
        keep[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
        src, dst = src[keep], dst[keep]
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=num_nodes), out=indptr[1:])
    return indptr, src.astype(index_dtype(num_nodes))


def csc_to_edges(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of :func:`edges_to_csc`: int64 ``(src, dst)`` arrays [E] in CSC order."""
    indptr = np.asarray(indptr)
    dst = np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))
    return np.asarray(indices).astype(np.int64), dst


# ---------------------------------------------------------------------------- symmetrising and deduplicating


@numba.njit(parallel=True, cache=True, nogil=True)
def sort_list_halves(indptr: np.ndarray, middle: np.ndarray, indices: np.ndarray) -> None:
    """Sort ``indices[indptr[v]:middle[v]]`` and ``indices[middle[v]:indptr[v + 1]]`` ascending, each on its own."""
    for v in numba.prange(indptr.shape[0] - 1):
        start, mid, stop = indptr[v], middle[v], indptr[v + 1]
        if mid - start > 1:
            indices[start:mid] = np.sort(indices[start:mid])
        if stop - mid > 1:
            indices[mid:stop] = np.sort(indices[mid:stop])


@numba.njit(cache=True, nogil=True)
def _merge_runs(
    v: np.int64, first: np.ndarray, second: np.ndarray, keep_duplicates: bool, out: np.ndarray, write: bool
) -> tuple[int, int, int]:
    """Merge two sorted lists of node ``v`` into their union (see :func:`merge_list_halves`)."""
    i = 0
    j = 0
    kept = 0
    duplicates = 0
    reciprocal = 0
    while i < first.shape[0] or j < second.shape[0]:
        if i < first.shape[0] and (j >= second.shape[0] or first[i] <= second[j]):
            x = first[i]
        else:
            x = second[j]
        a = 0
        while i < first.shape[0] and first[i] == x:
            a += 1
            i += 1
        b = 0
        while j < second.shape[0] and second[j] == x:
            b += 1
            j += 1
        copies = max(a, b) if keep_duplicates else 1
        if write:
            for _ in range(copies):
                out[kept] = x
                kept += 1
        else:
            kept += copies
        if a > 1 and not keep_duplicates:
            duplicates += a - 1
        if a > 0 and b > 0 and x != v:
            reciprocal += min(a, b) if keep_duplicates else 1
    return kept, duplicates, reciprocal


@numba.njit(parallel=True, cache=True, nogil=True)
def _merged_counts(
    indptr: np.ndarray, middle: np.ndarray, indices: np.ndarray, keep_duplicates: bool
) -> tuple[np.ndarray, int, int]:
    n = indptr.shape[0] - 1
    counts = np.zeros(n, dtype=np.int64)
    duplicates = 0
    reciprocal = 0
    unused = np.empty(0, dtype=indices.dtype)
    for v in numba.prange(n):
        kept, dup, rec = _merge_runs(
            v, indices[indptr[v] : middle[v]], indices[middle[v] : indptr[v + 1]], keep_duplicates, unused, False
        )
        counts[v] = kept
        duplicates += dup
        reciprocal += rec
    return counts, duplicates, reciprocal


@numba.njit(cache=True, nogil=True)
def _merge_in_place(
    indptr: np.ndarray,
    middle: np.ndarray,
    indices: np.ndarray,
    new_indptr: np.ndarray,
    keep_duplicates: bool,
    scratch: np.ndarray,
) -> None:
    # sequential: node v's output starts at new_indptr[v] <= indptr[v] and ends before indptr[v + 1],
    # so it never overwrites a list not yet read; its own list is copied to ``scratch`` first
    for v in range(indptr.shape[0] - 1):
        start, mid, stop = indptr[v], middle[v], indptr[v + 1]
        length = stop - start
        scratch[:length] = indices[start:stop]
        _merge_runs(
            v,
            scratch[: mid - start],
            scratch[mid - start : length],
            keep_duplicates,
            indices[new_indptr[v] : new_indptr[v + 1]],
            True,
        )


def merge_list_halves(
    indptr: np.ndarray,
    middle: np.ndarray,
    indices: np.ndarray,
    *,
    keep_duplicates: bool = False,
    edge_time: np.ndarray | None = None,
    edge_row: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Replace each node's two sorted halves by their union, in place (no second copy of ``indices``).

    Node ``v``'s list ``indices[indptr[v]:indptr[v + 1]]`` holds the sources of its input edges
    ``u -> v`` in ``[indptr[v], middle[v])`` and the sources to add (the targets ``u`` of its edges
    ``v -> u``, for symmetrising; empty when ``middle`` is ``indptr[1:]``) in the rest, each half
    sorted (:func:`sort_list_halves`). An id ``u`` seen ``a`` times in the first half and ``b``
    times in the second is kept once, or ``max(a, b)`` times with ``keep_duplicates``: only missing
    directions are added, so a list that already held ``u`` is unchanged.

    Args:
        indptr: int64 [N + 1]; middle: int64 [N]; indices: int32/int64 [E] (CPU, overwritten).
        edge_time: int64 [E], the time of each entry (CPU, overwritten; halves sorted by (source, time) with
            ``_edge_time_kernels.sort_timed_halves``), or None: merged along, a kept entry taking the earliest
            times of its copies; ``edge_time[:E']`` is then the result's.
        edge_row: int64 [E], the input row of each entry (with ``edge_time`` only; ascending within equal (source,
            time) of each half), or None: moved with the times, a kept entry taking the row of its kept copy
            (the earliest by (time, row)); ``edge_row[:E']`` is then the result's.

    Returns:
        ``(new_indptr int64 [N + 1], indices[:E'] (a view of the input), duplicates, reciprocal)``:
        ``duplicates`` counts the repeated entries of first halves that were dropped (0 with
        ``keep_duplicates``), ``reciprocal`` the first-half entries ``u != v`` whose id is also in
        the second half (input edges that already had their reverse).
    """
    counts, duplicates, reciprocal = _merged_counts(indptr, middle, indices, keep_duplicates)
    new_indptr = np.zeros_like(indptr)
    np.cumsum(counts, out=new_indptr[1:])
    del counts
    longest = int(np.max(np.diff(indptr))) if indptr.shape[0] > 1 else 0
    scratch = np.empty(longest, dtype=indices.dtype)
    if edge_time is None:
        _merge_in_place(indptr, middle, indices, new_indptr, keep_duplicates, scratch)
    else:
        rows = np.empty(0, np.int64) if edge_row is None else edge_row
        merge_timed_halves_in_place(
            indptr,
            middle,
            indices,
            edge_time,
            new_indptr,
            keep_duplicates,
            scratch,
            np.empty(longest, np.int64),
            rows,
            np.empty(longest if rows.size else 0, np.int64),
        )
    return new_indptr, indices[: int(new_indptr[-1])], int(duplicates), int(reciprocal)


def edge_balanced_bounds(indptr: np.ndarray, parts: int) -> np.ndarray:
    """int64 [parts + 1] node boundaries splitting nodes into ``parts`` ranges of about equal edge count.

    ``indptr``: int64 [N + 1] CSC pointers. The ranges are ``bounds[p]:bounds[p + 1]``; they cover
    ``0..N`` and are non-decreasing.
    """
    indptr = np.asarray(indptr)
    num_nodes = indptr.shape[0] - 1
    targets = np.linspace(0, int(indptr[-1]), parts + 1)
    bounds = np.searchsorted(indptr, targets, side="left").astype(np.int64)
    bounds = np.minimum(bounds, num_nodes)
    bounds[0] = 0
    bounds[-1] = num_nodes
    return np.maximum.accumulate(bounds)


_RECIPROCITY_RANGES = 256  # vertex ranges of about equal edge count, counted in parallel


@numba.njit(parallel=True, cache=True, nogil=True)
def _reciprocity(indptr: np.ndarray, indices: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    # one row of counts (reciprocal, duplicates, asymmetric) per range of vertices bounds[c]:bounds[c + 1],
    # summed by the caller: no scalar reductions over prange (numba 0.68 on Python 3.12 fails to compile
    # those out of this loop nest: "unexpected cycle in lookup()")
    counts = np.zeros((bounds.shape[0] - 1, 3), np.int64)
    for c in numba.prange(bounds.shape[0] - 1):
        reciprocal = 0
        duplicates = 0
        asymmetric = 0
        for v in range(bounds[c], bounds[c + 1]):
            i = indptr[v]
            stop = indptr[v + 1]
            while i < stop:
                u = indices[i]
                a = 0
                while i < stop and indices[i] == u:
                    a += 1
                    i += 1
                duplicates += a - 1
                if u != v:
                    other = indices[indptr[u] : indptr[u + 1]]
                    b = np.searchsorted(other, v, side="right") - np.searchsorted(other, v, side="left")
                    reciprocal += min(a, b)
                    if a != b:
                        asymmetric += 1
        counts[c, 0] = reciprocal
        counts[c, 1] = duplicates
        counts[c, 2] = asymmetric
    return counts


def reciprocity(indptr: np.ndarray, indices: np.ndarray) -> tuple[int, int, bool]:
    """``(reciprocal, duplicates, symmetric)`` of a CSC graph with sorted lists (memory maps work).

    ``reciprocal``: edges ``u -> v`` (``u != v``) whose reverse ``v -> u`` is stored too (with
    repeats, ``min`` of the two multiplicities); ``duplicates``: stored repeats of an edge;
    ``symmetric``: every edge ``u -> v`` is stored as often as ``v -> u``. O(E log degree).
    """
    indptr = np.asarray(indptr)
    bounds = edge_balanced_bounds(indptr, _RECIPROCITY_RANGES)
    reciprocal, duplicates, asymmetric = _reciprocity(indptr, np.asarray(indices), bounds).sum(axis=0)
    return int(reciprocal), int(duplicates), bool(asymmetric == 0)


def reciprocity_reference(indptr: np.ndarray, indices: np.ndarray) -> tuple[int, int, bool]:
    """Plain-Python reference of :func:`reciprocity`."""
    from collections import Counter

    src, dst = csc_to_edges(indptr, indices)
    pairs = Counter(zip(src.tolist(), dst.tolist()))
    reciprocal = sum(min(m, pairs.get((v, u), 0)) for (u, v), m in pairs.items() if u != v)
    duplicates = sum(m - 1 for m in pairs.values())
    symmetric = all(pairs.get((v, u), 0) == m for (u, v), m in pairs.items())
    return reciprocal, duplicates, symmetric
