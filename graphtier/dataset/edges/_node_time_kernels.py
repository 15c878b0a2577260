"""Numba kernel of :mod:`graphtier.dataset.edges.node_time` (reference: ``np.maximum(t[indices], np.repeat(t, deg))``)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, parallel=True)
def later_endpoint_times(
    indptr: np.ndarray, indices: np.ndarray, node_time: np.ndarray, row_time: np.ndarray
) -> np.ndarray:
    """int64 [E]: ``max(node_time[indices[p]], row_time[v])`` for every position ``p`` of list ``v`` (``row_time``:
    the time of each list's destination; ``node_time`` itself on a homogeneous graph)."""
    out = np.empty(indices.shape[0], dtype=np.int64)
    for v in numba.prange(indptr.shape[0] - 1):
        own = row_time[v]
        for p in range(indptr[v], indptr[v + 1]):
            other = node_time[indices[p]]
            out[p] = other if other > own else own
    return out
