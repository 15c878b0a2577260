"""Numba kernels behind :mod:`graphtier.graph.reorder` (Data Tiering, Algorithm 2, parallel).

``perm`` is int64 [N], new id -> old id; ``inverse`` is int64 [N], old id -> new id. Each kernel
has a numpy reference (``*_reference``) that the tests compare against on random inputs.
"""

from __future__ import annotations

import numba
import numpy as np

SHORT_LIST = 24  # lists up to this length are sorted by insertion sort, longer ones by quicksort


@numba.njit(parallel=True, cache=True, nogil=True)
def inverse_permutation(perm: np.ndarray) -> np.ndarray:
    """int64 [N] ``inverse`` with ``inverse[perm[i]] = i``; ``perm`` int64 [N] a permutation."""
    inverse = np.empty(perm.shape[0], dtype=np.int64)
    for i in numba.prange(perm.shape[0]):
        inverse[perm[i]] = i
    return inverse


def inverse_permutation_reference(perm: np.ndarray) -> np.ndarray:
    """Reference for :func:`inverse_permutation` (``np.argsort``)."""
    return np.argsort(perm, kind="stable").astype(np.int64)


@numba.njit(parallel=True, cache=True, nogil=True)
def permuted_degrees(indptr: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """int64 [N]: the list length of every new node, ``deg_new[i] = deg_old[perm[i]]``.

    ``indptr`` int64 [N + 1] (old CSC pointers), ``perm`` int64 [N].
    """
    degrees = np.empty(perm.shape[0], dtype=np.int64)
    for i in numba.prange(perm.shape[0]):
        old = perm[i]
        degrees[i] = indptr[old + 1] - indptr[old]
    return degrees


def permuted_degrees_reference(indptr: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Reference for :func:`permuted_degrees`."""
    return np.diff(np.asarray(indptr))[perm].astype(np.int64)


@numba.njit(cache=True, nogil=True)
def _sort_small(values: np.ndarray) -> None:
    for i in range(1, values.shape[0]):
        key = values[i]
        j = i - 1
        while j >= 0 and values[j] > key:
            values[j + 1] = values[j]
            j -= 1
        values[j + 1] = key


@numba.njit(parallel=True, cache=True, nogil=True)
def relocate_lists(
    indptr: np.ndarray,
    indices: np.ndarray,
    perm: np.ndarray,
    inverse: np.ndarray,
    new_indptr: np.ndarray,
    bounds: np.ndarray,
    out: np.ndarray,
) -> None:
    """Copy and relabel the neighbour lists of a block of new nodes, each list sorted ascending.

    ``indptr`` int64 [N + 1] and ``indices`` [E] are the old graph; ``perm``/``inverse`` int64 [N];
    ``new_indptr`` int64 [N + 1] the new pointers; ``bounds`` int64 [parts + 1] a split of the block
    of new nodes ``bounds[0]:bounds[-1]`` into parts run in parallel; ``out`` receives the lists of
    that block, i.e. new edge positions ``new_indptr[bounds[0]]:new_indptr[bounds[-1]]``, so
    ``out[k]`` is new edge ``new_indptr[bounds[0]] + k``.
    """
    base = new_indptr[bounds[0]]
    for part in numba.prange(bounds.shape[0] - 1):
        for i in range(bounds[part], bounds[part + 1]):
            old = perm[i]
            source = indptr[old]
            start = new_indptr[i] - base
            length = new_indptr[i + 1] - new_indptr[i]
            for k in range(length):
                out[start + k] = inverse[indices[source + k]]
            if length > SHORT_LIST:
                out[start : start + length].sort()
            elif length > 1:
                _sort_small(out[start : start + length])


def reorder_topology_reference(
    indptr: np.ndarray, indices: np.ndarray, perm: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Plain numpy reference of the whole topology reorder: (int64 [N + 1], indices dtype [E])."""
    indptr = np.asarray(indptr)
    num_nodes = indptr.shape[0] - 1
    inverse = inverse_permutation_reference(perm)
    degrees = np.diff(indptr)
    dst = inverse[np.repeat(np.arange(num_nodes), degrees)]
    src = inverse[np.asarray(indices, dtype=np.int64)]
    order = np.lexsort((src, dst))
    new_indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=num_nodes), out=new_indptr[1:])
    return new_indptr, src[order].astype(np.asarray(indices).dtype)


@numba.njit(parallel=True, cache=True, nogil=True)
def scatter_rows_into_window(
    source: np.ndarray, targets: np.ndarray, first: int, stop: int, window: np.ndarray
) -> None:
    """``window[targets[i] - first, :] = source[i, :]`` for every i with ``first <= targets[i] < stop``, in parallel.

    ``source`` [K, D] (a block of consecutive source rows) and ``window`` [stop - first, D] of one dtype (pass
    float16 data viewed as uint16); ``targets`` int64 [K], the new position of each source row (distinct).
    Rows whose target lies outside the window are skipped. Reference: :func:`scatter_rows_into_window_reference`.
    """
    width = source.shape[1]
    for i in numba.prange(source.shape[0]):
        target = targets[i]
        if first <= target < stop:
            row = target - first
            for j in range(width):
                window[row, j] = source[i, j]


def scatter_rows_into_window_reference(
    source: np.ndarray, targets: np.ndarray, first: int, stop: int, window: np.ndarray
) -> None:
    """numpy reference of :func:`scatter_rows_into_window`."""
    inside = (targets >= first) & (targets < stop)
    window[targets[inside] - first] = source[inside]


@numba.njit(parallel=True, cache=True, nogil=True)
def parallel_copy(source: np.ndarray, out: np.ndarray, parts: int) -> None:
    """``out[:] = source`` for 1-d arrays of one dtype, split into ``parts`` parallel ranges (a memcpy baseline)."""
    n = source.shape[0]
    step = (n + parts - 1) // parts
    for part in numba.prange(parts):
        start = part * step
        stop = min(n, start + step)
        out[start:stop] = source[start:stop]
