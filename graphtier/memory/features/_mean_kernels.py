"""CPU kernel (numba) of the first layer's neighbour mean read straight from the feature table, and its reference.

A GraphSAGE first layer needs, per destination ``r`` of the input block, its own row and the mean of its
sampled neighbours' rows. Gathering every source row of the block first (``x = table[n_id]``, the largest
tensor of a training step) and then averaging rows of ``x`` writes and reads that tensor once more than needed:
``gather_mean_rows`` reads the rows from the table and writes only ``root`` and ``agg`` (two [num_dst, D]
arrays). The arithmetic is that of :func:`graphtier.train.nn._aggregate_kernels.csr_spmm_rows` with the mean's
weights (``1 / max(degree, 1)`` in float32, the accumulation in edge order), so the result is the same floats.

Rows below ``host_end`` are read from ``ram`` (the CPU tiers' RAM rows), the others from ``disk`` (the whole
table, usually a memory map); a store with everything in one array passes it as both, ``host_end`` = N.
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier._prefetch import PREFETCH_DISTANCE, prefetch_row


@numba.njit(cache=True, nogil=True, fastmath=True)
def gather_mean_rows(
    ram: np.ndarray,
    disk: np.ndarray,
    host_end: int,
    ids: np.ndarray,
    rowptr: np.ndarray,
    col: np.ndarray,
    agg: np.ndarray,
    root: np.ndarray,
    first: int,
    stop: int,
) -> int:
    """``root[r] = table[ids[r]]`` and ``agg[r] = mean over e of table[ids[col[e]]]`` for rows ``first <= r < stop``.

    ``ram`` float32 [>= host_end, D], ``disk`` float32 [N, D] (the table: rows >= host_end are read here),
    ``ids`` int64 [S] the block's source nodes (global ids, destinations first), ``rowptr`` int64 [R + 1] and
    ``col`` int64 [E] the block's CSR over its destinations (local source ids), ``agg``/``root`` float32 [R, D].
    Returns how many ids were outside [0, N) or local ids outside [0, S) (their rows are left unwritten or
    skipped). One thread's share (the store splits [0, R) between threads); releases the GIL. The source row
    ``PREFETCH_DISTANCE`` edges ahead is prefetched from where it will be read (:mod:`graphtier._prefetch`).
    """
    dim = agg.shape[1]
    num_rows = disk.shape[0]
    num_src = ids.shape[0]
    bad = 0
    end = rowptr[stop]
    for r in range(first, stop):
        node = ids[r]
        if node < 0 or node >= num_rows:
            bad += 1
            continue
        own = ram[node] if node < host_end else disk[node]
        out = root[r]
        for k in range(dim):
            out[k] = own[k]
        acc = agg[r]
        for k in range(dim):
            acc[k] = 0.0
        count = rowptr[r + 1] - rowptr[r]
        weight = np.float32(1.0) / np.float32(max(count, 1))
        for e in range(rowptr[r], rowptr[r + 1]):
            if e + PREFETCH_DISTANCE < end:
                ahead = col[e + PREFETCH_DISTANCE]
                if ahead >= 0 and ahead < num_src:
                    source = ids[ahead]
                    if source < host_end:
                        prefetch_row(ram, source)
                    else:
                        prefetch_row(disk, source)
            local = col[e]
            if local < 0 or local >= num_src:
                bad += 1
                continue
            source = ids[local]
            if source < 0 or source >= num_rows:
                bad += 1
                continue
            row = ram[source] if source < host_end else disk[source]
            for k in range(dim):
                acc[k] += weight * row[k]
    return bad


def gather_mean_reference(
    table: np.ndarray, ids: np.ndarray, rowptr: np.ndarray, col: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Plain numpy reference: ``(agg, root)`` with ``x = table[ids]``, ``root = x[:R]`` and ``agg[r]`` the mean of
    ``x[col[e]]`` over destination ``r``'s edges (0 without edges), float64 accumulation."""
    x = np.asarray(table)[np.asarray(ids)].astype(np.float64)
    num_dst = rowptr.shape[0] - 1
    agg = np.zeros((num_dst, x.shape[1]), dtype=np.float64)
    for r in range(num_dst):
        edges = col[rowptr[r] : rowptr[r + 1]]
        if edges.shape[0]:
            agg[r] = x[edges].mean(axis=0)
    return agg.astype(table.dtype), x[:num_dst].astype(table.dtype)
