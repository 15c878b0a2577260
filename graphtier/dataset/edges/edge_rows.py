"""The row order of a dataset's edge table: ``edge_row.npy`` maps each edge's CSC position to its row of
``edge_feat.npy``.

Without the file, row ``p`` of ``edge_feat.npy`` belongs to the edge at CSC position ``p``, so a tier of the table
(its first rows, :mod:`graphtier.graphstore.edge_features`) holds the lists of the first destinations. After
``graphtier reorder`` those are the nodes whose features are read most, often hubs, whose long lists have each edge
read rarely: a generated 200k-node graph's 10% prefix served 2.1% of the edge-row reads where the best 10% of rows
would serve 79.5% (docs/guide/plan.md). ``reorder`` therefore writes the table list by list in descending reads per
edge (:func:`read_order`, from fwr's expected reads of each list) and this map: int32 [E] (int64 from 2^31 edges),
a permutation of ``[0, E)``. Every reader of edge rows goes through it
(:class:`graphtier.graphstore.edge_features.MappedRows`, the plan).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset.checks import check_permutation
from graphtier.dataset.edges._edge_row_kernels import lay_out_rows
from graphtier.errors import DatasetError

EDGE_ROW = "edge_row"
"""File stem of the map (``edge_row.npy``)."""


def edge_row_map(dataset: Any) -> np.ndarray | None:
    """``edge_row.npy`` of ``dataset`` (int [E], a memory map), or None: row ``p`` is position ``p``."""
    return dataset.extra.get(EDGE_ROW)


def row_dtype(num_edges: int) -> type:
    """The map's dtype: int32 below 2^31 edges, else int64."""
    return np.int32 if num_edges < 2**31 else np.int64


def check_edge_rows(root: Path, rows: np.ndarray, num_edges: int, has_table: bool) -> None:
    """``edge_row.npy`` must be a permutation of ``[0, E)`` of :func:`row_dtype` beside an ``edge_feat.npy``;
    :class:`DatasetError` names the file, expected and found."""
    path = root / f"{EDGE_ROW}.npy"
    if not has_table:
        raise DatasetError(f"{path}: unexpected file (it orders edge_feat.npy, which the dataset does not have)")
    expected = np.dtype(row_dtype(num_edges))
    if rows.dtype != expected or rows.shape != (num_edges,):
        raise DatasetError(
            f"{path}: expected {expected} [{num_edges}] (one row per edge), found {rows.dtype} {list(rows.shape)}"
        )
    check_permutation(path, rows, num_edges, "rows")


def read_order(indptr: np.ndarray, list_reads: np.ndarray) -> np.ndarray:
    """int64 [L]: the non-empty lists (CSC rows) in descending reads per edge (``list_reads`` float [rows], the
    expected reads of each list's entries, e.g. :func:`graphtier.tiering.hotness.list_reads`), ties by row. ``indptr`` int64
    [rows + 1]."""
    degree = np.diff(np.asarray(indptr))
    if list_reads.shape != degree.shape:
        raise DatasetError(f"list_reads: expected shape {tuple(degree.shape)} (one per list), found {list_reads.shape}")
    lists = np.flatnonzero(degree > 0)
    density = np.asarray(list_reads, np.float64)[lists] / degree[lists]
    return lists[np.argsort(-density, kind="stable")]


def lay_out(indptr: np.ndarray, lists: np.ndarray, source_row: np.ndarray, row_of: np.ndarray) -> np.ndarray:
    """The table in the order of ``lists`` (:func:`read_order`): returns int64 [E], for each new row, the row of
    ``source_row`` (int64 [E], each CSC position's row in the table read from) to copy there; fills ``row_of``
    (int [E], e.g. the output's ``edge_row.npy`` memory map) with each CSC position's new row."""
    rows = np.empty(source_row.shape[0], np.int64)
    lay_out_rows(np.asarray(indptr), lists, source_row, rows, row_of)
    return rows
