"""CPU kernel (numba) of layer-wise inference's neighbour sum or mean over the whole graph, and its reference.

Layer-wise inference computes every node's layer output from all its in-neighbours. For a sum or mean there is
no need to build a relabelled block per step (dedupe the sources, copy their rows, aggregate):
``neighbour_rows`` reads each neighbour's row straight from a table by its global id (the CSC's ``indices``)
and writes only the destinations' sums or means. The mean's arithmetic is that of the training kernel
(:func:`graphtier.train.nn._aggregate_kernels.csr_spmm_rows` with the mean's weights: ``1 / max(degree, 1)`` in
float32, accumulated in edge order), so the result matches the block path to float rounding. GCN sums rows
that were scaled by their node's normalisation beforehand.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(parallel=True, cache=True, nogil=True, fastmath=True)
def neighbour_rows(
    table: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    first: int,
    stop: int,
    out: np.ndarray,
    mean: bool,
    base: int,
) -> int:
    """``out[v - first] = sum (or with ``mean`` the mean) of table[indices[e] - base]`` over ``indptr[v] <= e <
    indptr[v + 1]``, for ``first <= v < stop`` (zeros for a node without in-edges), in parallel over the nodes.

    ``table`` float32 [N, D] (the previous layer's output, possibly a memory map), ``indptr`` int64 [>= stop + 1],
    ``indices`` int32/int64 [E] source ids, ``base`` the id of the table's row 0 (0 for a homogeneous graph; a
    typed graph's source type offset), ``out`` float32 [stop - first, D]. Returns how many indices - base were
    outside [0, N) (skipped, so a corrupt graph cannot read outside the table).
    """
    dim = table.shape[1]
    num_rows = table.shape[0]
    bad = 0
    for i in numba.prange(stop - first):
        node = first + i
        start, end = indptr[node], indptr[node + 1]
        acc = out[i]
        for k in range(dim):
            acc[k] = 0.0
        weight = np.float32(1.0) / np.float32(max(end - start, 1)) if mean else np.float32(1.0)
        for e in range(start, end):
            source = indices[e] - base
            if source < 0 or source >= num_rows:
                bad += 1
                continue
            row = table[source]
            for k in range(dim):
                acc[k] += weight * row[k]
    return bad


def neighbour_rows_reference(
    table: np.ndarray, indptr: np.ndarray, indices: np.ndarray, first: int, stop: int, mean: bool, base: int = 0
) -> np.ndarray:
    """Plain numpy reference of :func:`neighbour_rows` (float64 accumulation): float32 [stop - first, D]."""
    table = np.asarray(table, dtype=np.float64)
    out = np.zeros((stop - first, table.shape[1]), dtype=np.float64)
    for i, node in enumerate(range(first, stop)):
        neighbours = np.asarray(indices[indptr[node] : indptr[node + 1]], dtype=np.int64) - base
        if neighbours.size:
            out[i] = table[neighbours].mean(axis=0) if mean else table[neighbours].sum(axis=0)
    return out.astype(np.float32)
