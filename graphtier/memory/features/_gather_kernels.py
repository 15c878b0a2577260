"""CPU row-gather kernels (numba) and their plain numpy references.

``gather_rows_checked(table, ids, out, first, stop)`` copies ``table[ids[i]]`` into ``out[i]`` for every
i in [first, stop) with ids[i] in [0, N), without allocating: the caller owns ``out`` (a reusable,
possibly pinned, buffer). It returns how many ids were out of range (their rows are left unwritten),
so the bounds check costs no separate pass over the ids. It runs on one thread: the stores split a
batch between threads (:mod:`graphtier.memory.features.threads`).
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier._prefetch import PREFETCH_DISTANCE, prefetch_row

# Rows at least this long are copied as one slice (a memcpy); shorter rows by an explicit element loop,
# which measured up to 2x faster for 128-512 B rows on 2 threads (docs/benchmarks.md).
SLICE_COPY_BYTES = 2048


@numba.njit(inline="always", cache=True, nogil=True)
def copy_row(out: np.ndarray, target: int, source: np.ndarray, row: int) -> None:
    """``out[target, :] = source[row, :]``: one memcpy for long rows, an element loop for short ones."""
    width = out.shape[1]
    if width * out.itemsize >= SLICE_COPY_BYTES:
        out[target, :] = source[row, :]
    else:
        for j in range(width):
            out[target, j] = source[row, j]


@numba.njit(cache=True, nogil=True)
def gather_rows_checked(table: np.ndarray, ids: np.ndarray, out: np.ndarray, first: int, stop: int) -> int:
    """``out[i, :] = table[ids[i], :]`` for i in [first, stop) where 0 <= ids[i] < N; returns the other ids' count.

    One thread's share of a gather (the store splits [0, B) between threads, see ``graphtier.memory.features.host``);
    releases the GIL. Row ``ids[i + PREFETCH_DISTANCE]`` is prefetched while row ``ids[i]`` is copied
    (:mod:`graphtier._prefetch`).
    """
    num_rows = table.shape[0]
    bad = 0
    for i in range(first, stop):
        if i + PREFETCH_DISTANCE < stop:
            prefetch_row(table, ids[i + PREFETCH_DISTANCE])
        row = ids[i]
        if row < 0 or row >= num_rows:
            bad += 1
        else:
            copy_row(out, i, table, row)
    return bad


def as_raw_bits(array: np.ndarray) -> np.ndarray:
    """View an array as unsigned integers of the same width (numba has no CPU float16): a bit-exact copy."""
    return array.view(np.dtype(f"u{array.dtype.itemsize}"))


def gather_rows_reference(table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Plain numpy reference: ``table[ids]``."""
    return np.asarray(table)[np.asarray(ids)]


def gather_rows_checked_reference(table: np.ndarray, ids: np.ndarray, out: np.ndarray, first: int, stop: int) -> int:
    """Plain numpy reference of :func:`gather_rows_checked`: writes the in-range rows, returns the rest's count."""
    ids = np.asarray(ids)[first:stop]
    valid = (ids >= 0) & (ids < table.shape[0])
    out[first + np.flatnonzero(valid)] = np.asarray(table)[ids[valid]]
    return int(ids.shape[0] - np.count_nonzero(valid))
