"""CPU kernels of the block aggregation (numba): CSR sparse x dense products and the CSR transpose.

A block's edges in CSR over destinations: ``rowptr`` int64 [R + 1], ``col`` int64 [E] (source local
ids), ``weight`` float32 [E]. ``csr_spmm_rows`` computes rows ``[first, stop)`` of
``out = A @ x`` (``out[r] = sum_e weight[e] * x[col[e]]`` over ``rowptr[r] <= e < rowptr[r + 1]``,
plus an optional diagonal term ``diag[r] * x[r]``: GCN's self-loops, and an optional dense term
``own[r]``: the gradient of GraphSAGE's root term, added in the same pass) without materialising one
message per edge; the backward pass is the same product with the
transposed matrix (:func:`csr_transpose`, a stable counting sort by column, built once per block). The kernels are plain
sequential functions that release the GIL: the caller splits the rows between threads.
``*_reference`` are the plain numpy versions the tests compare against.
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier._prefetch import PREFETCH_DISTANCE, prefetch_row


@numba.njit(cache=True, nogil=True, fastmath=True)
def csr_spmm_rows(
    rowptr: np.ndarray,
    col: np.ndarray,
    weight: np.ndarray,
    diag: np.ndarray,
    own: np.ndarray,
    gate: np.ndarray,
    gate_scale: float,
    x: np.ndarray,
    out: np.ndarray,
    first: int,
    stop: int,
) -> None:
    """``out[r] = diag[r] * x[r] + own[r] + sum_e weight[e] * x[col[e]]`` for rows ``first <= r < stop``.

    ``diag`` [D] adds a diagonal (self-loop) term to the first D rows (D = 0: none); ``own`` [O, d]
    adds its rows to the first O rows of the output (O = 0: none); out float [R, d]. ``gate`` [R, d]
    (or [0, d]: none) then sets ``out[r, k] = out[r, k] * gate_scale if gate[r, k] > 0 else 0``: the
    backward pass of a ReLU (+ dropout) whose output is ``gate``, applied while the row is in cache.
    The source row ``PREFETCH_DISTANCE`` edges ahead is prefetched (:mod:`graphtier._prefetch`).
    """
    dim = x.shape[1]
    num_diag = diag.shape[0]
    num_own = own.shape[0]
    gated = gate.shape[0] > 0
    end = rowptr[stop]
    for r in range(first, stop):
        acc = out[r]
        if r < num_diag:
            d = diag[r]
            row = x[r]
            for k in range(dim):
                acc[k] = d * row[k]
        else:
            for k in range(dim):
                acc[k] = 0.0
        if r < num_own:
            extra = own[r]
            for k in range(dim):
                acc[k] += extra[k]
        for e in range(rowptr[r], rowptr[r + 1]):
            if e + PREFETCH_DISTANCE < end:
                prefetch_row(x, col[e + PREFETCH_DISTANCE])
            w = weight[e]
            src = x[col[e]]
            for k in range(dim):
                acc[k] += w * src[k]
        if gated:
            g = gate[r]
            for k in range(dim):
                acc[k] = acc[k] * gate_scale if g[k] > 0 else 0.0


@numba.njit(cache=True, nogil=True)
def csr_transpose(rowptr: np.ndarray, col: np.ndarray, num_cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The transposed pattern in CSR: ``(colptr int64 [num_cols + 1], row int64 [E], order int64 [E])``.

    Entry ``t`` of the transpose is entry ``order[t]`` of the input (its weight is ``weight[order]``);
    entries of one column keep their row order (stable counting sort).
    """
    num_rows = rowptr.shape[0] - 1
    num_edges = col.shape[0]
    colptr = np.zeros(num_cols + 1, dtype=np.int64)
    for e in range(num_edges):
        colptr[col[e] + 1] += 1
    for c in range(num_cols):
        colptr[c + 1] += colptr[c]
    fill = colptr[:-1].copy()
    rows = np.empty(num_edges, dtype=np.int64)
    order = np.empty(num_edges, dtype=np.int64)
    for r in range(num_rows):
        for e in range(rowptr[r], rowptr[r + 1]):
            c = col[e]
            slot = fill[c]
            rows[slot] = r
            order[slot] = e
            fill[c] = slot + 1
    return colptr, rows, order


def csr_spmm_reference(
    rowptr: np.ndarray,
    col: np.ndarray,
    weight: np.ndarray,
    diag: np.ndarray,
    x: np.ndarray,
    own: np.ndarray | None = None,
    gate: np.ndarray | None = None,
    gate_scale: float = 1.0,
) -> np.ndarray:
    """Plain numpy ``A @ x`` plus the diagonal and ``own`` terms, then the gate (float64 accumulation).

    The reference of :func:`csr_spmm_rows`.
    """
    num_rows = rowptr.shape[0] - 1
    dst = np.repeat(np.arange(num_rows), np.diff(rowptr))
    out = np.zeros((num_rows, x.shape[1]), dtype=np.float64)
    out[: diag.shape[0]] = diag[:, None].astype(np.float64) * x[: diag.shape[0]].astype(np.float64)
    if own is not None:
        out[: own.shape[0]] += own.astype(np.float64)
    np.add.at(out, dst, weight[:, None].astype(np.float64) * x[col].astype(np.float64))
    if gate is not None:
        out = np.where(gate > 0, out * gate_scale, 0.0)
    return out.astype(x.dtype)


def csr_transpose_reference(
    rowptr: np.ndarray, col: np.ndarray, num_cols: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plain numpy transpose (stable argsort by column), the reference of :func:`csr_transpose`."""
    num_rows = rowptr.shape[0] - 1
    dst = np.repeat(np.arange(num_rows, dtype=np.int64), np.diff(rowptr))
    order = np.argsort(col, kind="stable")
    colptr = np.zeros(num_cols + 1, dtype=np.int64)
    np.cumsum(np.bincount(col, minlength=num_cols), out=colptr[1:])
    return colptr, dst[order], order
