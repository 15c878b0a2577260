"""Per-edge columns of a text edge list: ``prepare edgelist --edge-feature-columns C1,C2,... --label-column C``.

The chosen columns are parsed (a numba float-column parser over the same line chunks as the ids) into a scratch
table in input order, row k = the k-th edge line; the CSC build carries each edge's input row and
:func:`graphtier.dataset.edges.edge_data.write_edge_columns` gathers the table by it (docs/dataset-format.md, "Edge
features and labels").
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from graphtier.dataset.edges.edge_data import EdgeColumns
from graphtier.dataset.finite import NonFiniteGuard, find_non_finite
from graphtier.dataset.importers.common import textio
from graphtier.dataset.importers.common.features import note_replaced
from graphtier.dataset.importers.common.node_data import load_npy
from graphtier.errors import DatasetError, OptionError

ColumnSpec = int | str
"""One column: its 0-based index (2 or more) or, when the file has a header, its name."""


def parse_column_list(value: str | Sequence[ColumnSpec] | None) -> list[ColumnSpec] | None:
    """``"2,weight"`` (the CLI's comma-separated list) or a sequence -> the column list; None stays None."""
    if value is None:
        return None
    items = [c.strip() for c in value.split(",")] if isinstance(value, str) else list(value)
    if not items or any(isinstance(c, str) and not c for c in items):
        raise OptionError(
            f"{{edge_feature_columns}}: expected column indexes or header names separated by commas, found {value!r}",
            options=("edge_feature_columns",),
        )
    return items


def column_names(path: Path, indexes: Sequence[int], has_header: bool) -> list[str]:
    """The name of every column: its header name, or ``"column K"`` without a header."""
    header = textio.first_data_lines(path, 1) if has_header else []
    tokens = textio._SEPARATOR.split(header[0]) if header else []
    return [tokens[i] if i < len(tokens) else f"column {i}" for i in indexes]


def resolve_edge_columns(
    path: Path,
    feature_columns: Sequence[ColumnSpec] | None,
    label_column: ColumnSpec | None,
    has_header: bool,
    *,
    feature_option: str = "{edge_feature_columns}",
    label_option: str = "{label_column}",
) -> tuple[list[int], int | None]:
    """The 0-based indexes of the feature columns and of the label column of the edge list ``path`` (resolved as
    ``--time-column`` is: an index >= 2 or a header name); :class:`OptionError` names the option."""
    features = [textio.resolve_time_column(path, c, has_header, feature_option) for c in feature_columns or []]
    if len(set(features)) != len(features):
        raise OptionError(
            f"{feature_option}: expected distinct columns, found {list(feature_columns or [])} (column indexes "
            f"{features})",
            options=("edge_feature_columns",),
        )
    label = textio.resolve_time_column(path, label_column, has_header, label_option)
    return [int(i) for i in features], label  # type: ignore[misc]


def read_edge_columns(
    path: Path,
    features: Sequence[int],
    label: int | None,
    *,
    skip_header: bool,
    scratch: Path,
    num_edges: int,
    non_finite: str,
    writer: object,
    chunk_bytes: int = textio.CHUNK_BYTES,
) -> EdgeColumns:
    """The chosen columns of every edge line of ``path`` as :class:`EdgeColumns` in input order: features float32
    [num_edges, d] and the label float32 [num_edges], memory maps of the files ``scratch`` + ``.feat`` /
    ``.label``. NaN/Inf are refused (``non_finite`` ``error``, one line naming file, line and column) or replaced by
    0 and counted (``replace``). :class:`DatasetError` when the rows do not match the ``num_edges`` edges read."""
    wanted = list(features) + ([label] if label is not None else [])
    parsed = sorted(set(wanted))
    take = np.array([parsed.index(c) for c in wanted], dtype=np.int64)
    guard = NonFiniteGuard(path, non_finite)
    feat_path, label_path = scratch.with_suffix(".feat"), scratch.with_suffix(".label")
    rows, d = 0, len(features)
    with open(feat_path, "wb") as feat_out, open(label_path, "wb") as label_out:
        for block in textio.iter_float_columns(
            path, parsed, skip_header=skip_header, finite_only=non_finite == "error", chunk_bytes=chunk_bytes
        ):
            block = guard.apply(block[:, take].astype(np.float32), rows)
            feat_out.write(np.ascontiguousarray(block[:, :d]).tobytes())
            label_out.write(np.ascontiguousarray(block[:, d:]).tobytes())
            rows += block.shape[0]
    note_replaced(writer, guard)  # type: ignore[arg-type]
    if rows != num_edges:
        raise DatasetError(f"{path}: expected {num_edges} rows of edge columns (one per edge line), found {rows}")

    def table(p: Path, shape: tuple[int, ...]) -> np.ndarray:
        return np.memmap(p, np.float32, "r", shape=shape) if rows else np.empty(shape, np.float32)

    names = column_names(path, wanted, skip_header)
    return EdgeColumns(
        table(feat_path, (rows, d)) if d else None,
        table(label_path, (rows,)) if label is not None else None,
        names[:d],
        names[-1] if label is not None else None,
        [feat_path, label_path],
    )


def read_edge_feature_file(
    path: Path,
    num_edges: int,
    option: str,
    *,
    non_finite: str = "error",
    scratch: Path | None = None,
    writer: object = None,
) -> np.ndarray:
    """A ``.npy`` of edge features [num_edges, d] (float16/32/64, as given; memory-mapped) aligned with the rows of
    an edge file; one-line :class:`DatasetError` naming ``option`` otherwise. NaN/Inf are refused (``non_finite``
    ``error``, naming the file and the row) or replaced by 0 in a copy at ``scratch`` (``replace``; counted in
    ``writer``'s notes), copied in chunks."""
    table = load_npy(path, option)
    if table.ndim != 2 or table.shape[0] != num_edges or str(table.dtype) not in ("float16", "float32", "float64"):
        raise DatasetError(
            f"{path}: {option}: expected a float16/32/64 array [{num_edges}, d] (one row per edge of the relation), "
            f"found {table.dtype} {tuple(table.shape)}"
        )
    found = find_non_finite(table) if table.size else None
    if found is None:
        return table
    if non_finite == "error" or scratch is None:
        raise DatasetError(
            f"{path}: {option}: expected finite values, found NaN/Inf in row {found[0]}; "
            "pass {non_finite=replace} to replace them by 0",
            options=("non_finite",),
        )
    guard = NonFiniteGuard(path, "replace")
    out = np.lib.format.open_memmap(scratch, "w+", table.dtype, table.shape)
    step = max(1, (16 << 20) // max(1, table.shape[1] * table.itemsize))
    for start in range(0, table.shape[0], step):
        out[start : start + step] = guard.apply(np.asarray(table[start : start + step]), start)
    out.flush()
    note_replaced(writer, guard)  # type: ignore[arg-type]
    return out
