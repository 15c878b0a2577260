"""Numba kernels of the edge split: removing node pairs from a CSC graph, testing pairs for edges, drawing
negative destinations. Each kernel has a plain numpy/Python reference (``*_reference``) that the tests compare
against.

The graph is CSC: ``indices[indptr[v]:indptr[v + 1]]`` are the sources of the edges into ``v``, sorted ascending
(the dataset format's invariant), so ``(src, dst)`` is an edge when a binary search of column ``dst`` finds ``src``.
Pairs are also handled as int64 keys ``dst * N + src`` (exact for N < 2^31.5).

Random numbers come from a counter-based generator (splitmix64 of ``seed``, a row and a draw number), so a row's
draws do not depend on the thread that makes them: the result is a pure function of the inputs and the seed.
"""

from __future__ import annotations

import numba
import numpy as np

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_ROW_MIX = 0xD1B54A32D192ED03


@numba.njit(cache=True, nogil=True, inline="always")
def _splitmix64(x: np.uint64) -> np.uint64:
    z = x + np.uint64(_GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True, nogil=True, inline="always")
def _uniform(seed: np.uint64, row: np.int64, draw: np.int64, lo: np.int64, span: np.int64) -> np.int64:
    """A uniform integer in ``[lo, lo + span)``: draw number ``draw`` of ``row`` under ``seed``."""
    x = _splitmix64(seed ^ (np.uint64(row) * np.uint64(_ROW_MIX)) ^ _splitmix64(np.uint64(draw)))
    return lo + np.int64(x % np.uint64(span))


def uniform_reference(seed: int, row: int, draw: int, lo: int, span: int) -> int:
    """Pure-Python :func:`_uniform` (the reference of the drawing kernels)."""

    def mix(x: int) -> int:
        z = (x + _GOLDEN) & _MASK64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    x = mix((seed & _MASK64) ^ ((row * _ROW_MIX) & _MASK64) ^ mix(draw & _MASK64))
    return lo + x % span


@numba.njit(cache=True, nogil=True, inline="always")
def _in_sorted(values: np.ndarray, lo: np.int64, hi: np.int64, target: np.int64) -> bool:
    """Whether ``target`` is in the ascending ``values[lo:hi]`` (binary search)."""
    while lo < hi:
        mid = (lo + hi) >> 1
        v = np.int64(values[mid])
        if v < target:
            lo = mid + 1
        elif v > target:
            hi = mid
        else:
            return True
    return False


@numba.njit(cache=True, nogil=True, inline="always")
def _is_excluded(
    indptr: np.ndarray, indices: np.ndarray, forbidden: np.ndarray, n: np.int64, src: np.int64, dst: np.int64
) -> bool:
    """Whether ``(src, dst)`` may not be a negative: a self-loop, an edge, or a key of ``forbidden``."""
    if src == dst:
        return True
    if _in_sorted(indices, indptr[dst], indptr[dst + 1], src):
        return True
    return _in_sorted(forbidden, 0, forbidden.shape[0], dst * n + src)


@numba.njit(parallel=True, cache=True, nogil=True)
def pairs_excluded(
    indptr: np.ndarray, indices: np.ndarray, forbidden: np.ndarray, src: np.ndarray, dst: np.ndarray, undirected: bool
) -> np.ndarray:
    """bool [P]: whether each ``(src[i], dst[i])`` is a self-loop, an edge or a ``forbidden`` key (sorted int64
    ``dst * N + src``), also checking ``(dst, src)`` when ``undirected``."""
    n = np.int64(indptr.shape[0] - 1)
    out = np.empty(src.shape[0], np.bool_)
    for i in numba.prange(src.shape[0]):
        s, d = np.int64(src[i]), np.int64(dst[i])
        hit = _is_excluded(indptr, indices, forbidden, n, s, d)
        if not hit and undirected:
            hit = _is_excluded(indptr, indices, forbidden, n, d, s)
        out[i] = hit
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def edge_pairs(
    indptr: np.ndarray, indices: np.ndarray, src: np.ndarray, dst: np.ndarray, undirected: bool
) -> np.ndarray:
    """bool [P]: whether each ``(src[i], dst[i])`` is an edge of the CSC graph (a binary search of column
    ``dst[i]``), or, when ``undirected``, ``(dst[i], src[i])`` is. Self-loops count only when stored."""
    out = np.empty(src.shape[0], np.bool_)
    for i in numba.prange(src.shape[0]):
        s, d = np.int64(src[i]), np.int64(dst[i])
        hit = _in_sorted(indices, indptr[d], indptr[d + 1], s)
        if not hit and undirected:
            hit = _in_sorted(indices, indptr[s], indptr[s + 1], d)
        out[i] = hit
    return out


def edge_pairs_reference(
    indptr: np.ndarray, indices: np.ndarray, src: np.ndarray, dst: np.ndarray, undirected: bool
) -> np.ndarray:
    """numpy :func:`edge_pairs` (a lookup of keys ``dst * N + src``)."""
    n = indptr.shape[0] - 1
    dst_of_edge = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    keys = dst_of_edge * n + np.asarray(indices, np.int64)
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    out = np.isin(dst * n + src, keys)
    if undirected:
        out |= np.isin(src * n + dst, keys)
    return out


def pairs_excluded_reference(
    indptr: np.ndarray, indices: np.ndarray, forbidden: np.ndarray, src: np.ndarray, dst: np.ndarray, undirected: bool
) -> np.ndarray:
    """numpy :func:`pairs_excluded`."""
    n = indptr.shape[0] - 1
    dst_of_edge = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    keys = np.concatenate([dst_of_edge * n + np.asarray(indices, np.int64), np.asarray(forbidden, np.int64)])
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    out = (src == dst) | np.isin(dst * n + src, keys)
    if undirected:
        out |= np.isin(src * n + dst, keys)
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _is_kept(indices: np.ndarray, e: int, v: int, removed_ptr: np.ndarray, removed_src: np.ndarray) -> bool:
    """Whether edge ``e`` of column ``v`` is kept: its source ``indices[e]`` is not among the column's removed
    sources ``removed_src[removed_ptr[v]:removed_ptr[v + 1]]`` (int64, ascending)."""
    lo, hi = removed_ptr[v], removed_ptr[v + 1]
    return lo == hi or not _in_sorted(removed_src, lo, hi, np.int64(indices[e]))


@numba.njit(parallel=True, cache=True, nogil=True)
def kept_counts(
    indptr: np.ndarray, indices: np.ndarray, removed_ptr: np.ndarray, removed_src: np.ndarray
) -> np.ndarray:
    """int64 [N]: per column, the edges whose source is not among the column's removed sources
    (``removed_src[removed_ptr[v]:removed_ptr[v + 1]]``, ascending)."""
    n = indptr.shape[0] - 1
    out = np.empty(n, np.int64)
    for v in numba.prange(n):
        count = 0
        for e in range(indptr[v], indptr[v + 1]):
            if _is_kept(indices, e, v, removed_ptr, removed_src):
                count += 1
        out[v] = count
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def compact_kept(
    indptr: np.ndarray,
    indices: np.ndarray,
    removed_ptr: np.ndarray,
    removed_src: np.ndarray,
    new_indptr: np.ndarray,
    out: np.ndarray,
) -> None:
    """Write the kept edges of every column (see :func:`kept_counts`) into ``out`` at ``new_indptr``."""
    n = indptr.shape[0] - 1
    for v in numba.prange(n):
        j = new_indptr[v]
        for e in range(indptr[v], indptr[v + 1]):
            if _is_kept(indices, e, v, removed_ptr, removed_src):
                out[j] = indices[e]
                j += 1


def remove_keys_reference(indptr: np.ndarray, indices: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy: the CSC without every edge whose key ``dst * N + src`` is in ``keys``."""
    n = indptr.shape[0] - 1
    dst_of_edge = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    keep = ~np.isin(dst_of_edge * n + np.asarray(indices, np.int64), keys)
    counts = np.bincount(dst_of_edge[keep], minlength=n)
    new_indptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    return new_indptr, np.asarray(indices)[keep]


@numba.njit(cache=True, nogil=True)
def _table_insert(table: np.ndarray, value: np.int64) -> bool:
    """Insert ``value`` (>= 0) into the open-addressing set ``table`` (-1 = empty, size a power of two); False
    when it was there already."""
    mask = table.shape[0] - 1
    slot = np.int64(_splitmix64(np.uint64(value)) & np.uint64(mask))
    while table[slot] != -1:
        if table[slot] == value:
            return False
        slot = (slot + 1) & mask
    table[slot] = value
    return True


@numba.njit(parallel=True, cache=True, nogil=True)
def draw_destinations(
    indptr: np.ndarray,
    indices: np.ndarray,
    forbidden: np.ndarray,
    sources: np.ndarray,
    k: int,
    lo: int,
    hi: int,
    seed: np.uint64,
    undirected: bool,
    max_draws: int,
    out: np.ndarray,
) -> np.ndarray:
    """Fill ``out`` int64 [P, k] with distinct destinations in ``[lo, hi)`` per source ``sources[i]``, none of them
    excluded (:func:`pairs_excluded`), by rejection: at most ``max_draws`` draws per row. Returns int64 [P]: how many
    each row got (< k: the row needs :func:`valid_destinations`)."""
    n = np.int64(indptr.shape[0] - 1)
    span = np.int64(hi - lo)
    size = 1
    while size < 2 * k + 2:
        size *= 2
    filled = np.empty(sources.shape[0], np.int64)
    for i in numba.prange(sources.shape[0]):
        table = np.full(size, -1, np.int64)
        s = np.int64(sources[i])
        got = 0
        draw = 0
        while got < k and draw < max_draws:
            d = _uniform(seed, i, draw, lo, span)
            draw += 1
            if _is_excluded(indptr, indices, forbidden, n, s, d):
                continue
            if undirected and _is_excluded(indptr, indices, forbidden, n, d, s):
                continue
            if _table_insert(table, d):
                out[i, got] = d
                got += 1
        filled[i] = got
    return filled


def draw_destinations_reference(
    indptr: np.ndarray,
    indices: np.ndarray,
    forbidden: np.ndarray,
    sources: np.ndarray,
    k: int,
    lo: int,
    hi: int,
    seed: int,
    undirected: bool,
    max_draws: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Pure Python :func:`draw_destinations`: ``(out [P, k], filled [P])``."""
    out = np.zeros((len(sources), k), np.int64)
    filled = np.zeros(len(sources), np.int64)
    for i, s in enumerate(np.asarray(sources, np.int64).tolist()):
        seen: set[int] = set()
        draw = 0
        while len(seen) < k and draw < max_draws:
            d = uniform_reference(seed, i, draw, lo, hi - lo)
            draw += 1
            src = np.array([s], np.int64)
            if d in seen or pairs_excluded_reference(indptr, indices, forbidden, src, np.array([d]), undirected)[0]:
                continue
            out[i, len(seen)] = d
            seen.add(d)
        filled[i] = len(seen)
    return out, filled


@numba.njit(cache=True, nogil=True)
def valid_destinations(
    indptr: np.ndarray, indices: np.ndarray, forbidden: np.ndarray, source: int, lo: int, hi: int, undirected: bool
) -> np.ndarray:
    """int64: every destination in ``[lo, hi)`` that ``(source, d)`` may take as a negative, ascending."""
    n = np.int64(indptr.shape[0] - 1)
    s = np.int64(source)
    out = np.empty(hi - lo, np.int64)
    count = 0
    for d in range(lo, hi):
        if _is_excluded(indptr, indices, forbidden, n, s, d):
            continue
        if undirected and _is_excluded(indptr, indices, forbidden, n, d, s):
            continue
        out[count] = d
        count += 1
    return out[:count]
