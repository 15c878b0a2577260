"""The edge table's read order: a numba kernel and its plain-Python reference (:mod:`graphtier.dataset.edges.edge_rows`)."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def lay_out_rows(indptr: np.ndarray, lists: np.ndarray, source_row: np.ndarray, rows: np.ndarray,
                 row_of: np.ndarray) -> None:  # fmt: skip
    """Lay the edge table out list by list in the order ``lists`` (int64 [L], CSC rows, each once; empty lists may
    be left out): row ``r`` of the new table holds the edge at the r-th position met, each list's positions in
    CSC order. ``source_row`` (int64 [E]): where the edge at each CSC position is read from. Writes ``rows``
    (int64 [E], the source row of each new row) and ``row_of`` (int [E], the new row of each CSC position)."""
    r = 0
    for k in range(lists.shape[0]):
        v = lists[k]
        for p in range(indptr[v], indptr[v + 1]):
            rows[r] = source_row[p]
            row_of[p] = r
            r += 1


def lay_out_rows_py(indptr: np.ndarray, lists: np.ndarray, source_row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reference of :func:`lay_out_rows`: (rows, row_of) as int64 arrays."""
    positions = [p for v in lists.tolist() for p in range(int(indptr[v]), int(indptr[v + 1]))]
    row_of = np.empty(len(positions), np.int64)
    row_of[positions] = np.arange(len(positions))
    return np.asarray(source_row, np.int64)[positions], row_of
