"""CPU row-gather kernel (numba) and its plain numpy reference.

``gather_rows(table, ids, out)`` copies ``table[ids[i]]`` into ``out[i]`` for every i, in parallel
over rows, without allocating: the caller owns ``out`` (a reusable, possibly pinned, buffer).
"""

from __future__ import annotations

import numba
import numpy as np


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


@numba.njit(parallel=True, cache=True, nogil=True)
def gather_rows(table: np.ndarray, ids: np.ndarray, out: np.ndarray) -> None:
    """``out[i, :] = table[ids[i], :]`` for i in [0, len(ids)); table [N, D], ids int [B], out [>=B, D]."""
    for i in numba.prange(ids.shape[0]):
        copy_row(out, i, table, ids[i])


def as_raw_bits(array: np.ndarray) -> np.ndarray:
    """View an array as unsigned integers of the same width (numba has no CPU float16): a bit-exact copy."""
    return array.view(np.dtype(f"u{array.dtype.itemsize}"))


def gather_rows_reference(table: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Plain numpy reference: ``table[ids]``."""
    return np.asarray(table)[np.asarray(ids)]
