"""Numba kernel behind :mod:`graphtier.memory.plan.typed_budget`: the best prefixes of a table, as densities.

A GPU tier holds a prefix of each table (rows sorted hottest first by a reorder). When the reads per byte
along a prefix are not non-increasing (a cold row before a hot one), the prefix that a greedy fill should
take is given by the upper concave hull of cumulative reads against cumulative bytes: its slopes are the
weighted isotonic (non-increasing) regression of the per-row densities, found by pooling adjacent
violators (:func:`prefix_hull_density`). Reference: :func:`prefix_hull_density_reference`.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def prefix_hull_density(reads: np.ndarray, row_bytes: np.ndarray) -> np.ndarray:
    """float64 [n]: non-increasing reads per byte of each row, pooled over adjacent violators.

    ``reads`` float64 [n] (expected reads of each row), ``row_bytes`` float64 [n] (> 0). Each row's value is
    the slope of the concave hull of ``(cumsum(row_bytes), cumsum(reads))`` over its segment, so that taking
    the rows whose value exceeds a threshold is always a prefix and always the most reads for its bytes.
    """
    n = reads.shape[0]
    block_reads = np.empty(n, dtype=np.float64)
    block_bytes = np.empty(n, dtype=np.float64)
    block_end = np.empty(n, dtype=np.int64)
    blocks = 0
    for i in range(n):
        block_reads[blocks] = reads[i]
        block_bytes[blocks] = row_bytes[i]
        block_end[blocks] = i + 1
        blocks += 1
        while blocks > 1 and (
            block_reads[blocks - 1] * block_bytes[blocks - 2] > block_reads[blocks - 2] * block_bytes[blocks - 1]
        ):
            block_reads[blocks - 2] += block_reads[blocks - 1]
            block_bytes[blocks - 2] += block_bytes[blocks - 1]
            block_end[blocks - 2] = block_end[blocks - 1]
            blocks -= 1
    out = np.empty(n, dtype=np.float64)
    start = 0
    for b in range(blocks):
        value = block_reads[b] / block_bytes[b]
        for i in range(start, block_end[b]):
            out[i] = value
        start = block_end[b]
    return out


def prefix_hull_density_reference(reads: np.ndarray, row_bytes: np.ndarray) -> np.ndarray:
    """Reference for :func:`prefix_hull_density`: for each row, the best average density of a segment that
    starts at its block's start, by brute force over the hull (O(n^2), small inputs only)."""
    reads = np.asarray(reads, dtype=np.float64)
    row_bytes = np.asarray(row_bytes, dtype=np.float64)
    n = reads.shape[0]
    out = np.empty(n, dtype=np.float64)
    start = 0
    while start < n:
        cum_reads = np.cumsum(reads[start:])
        cum_bytes = np.cumsum(row_bytes[start:])
        slopes = cum_reads / cum_bytes
        end = start + int(np.flatnonzero(slopes == slopes.max())[-1]) + 1  # the longest best segment
        out[start:end] = slopes[end - start - 1]
        start = end
    return out
