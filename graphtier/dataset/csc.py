"""Build a CSC graph (the dataset layout) from edge arrays.

``edges_to_csc(src, dst, N)`` groups edges by destination: ``indices[indptr[v]:indptr[v + 1]]`` are
the sources of the edges ``u -> v``, sorted ascending. The reference implementation is
:func:`edges_to_csc_reference` (scipy-free numpy ``lexsort``); tests compare the two.
"""

from __future__ import annotations

import numba
import numpy as np

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
def _compact(indptr: np.ndarray, indices: np.ndarray, new_indptr: np.ndarray, out: np.ndarray,
             dedup: bool, drop_self_loops: bool) -> None:
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
