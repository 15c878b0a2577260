"""Edge timestamps of a dataset (docs/dataset-format.md, "Edge times").

``edge_time.npy`` (int64 [E]) holds the time of every edge in CSC order: position ``p`` is the edge
``indices[p] -> v``. ``edge_time_order.npy`` (int64 [E]) holds, for every list ``[indptr[v], indptr[v + 1])``, that
list's positions sorted by (time, position), so a temporal sampler binary-searches the edges earlier than a bound
while ``indices`` stays sorted by source. Both files or neither; ``meta.json`` ``"edge_time"`` records
``{"unit": str | None, "min": int, "max": int}``.

This module loads and validates them (:func:`load_edge_time`, :func:`validate_edge_time`) and keeps them right
while a dataset is written: :func:`carry_edge_time` after edges leave the graph (the edge split),
:func:`finish_edge_time` at the end of an import or rewrite (the order file and the meta entry).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from graphtier.dataset.checks import index_range
from graphtier.dataset.edges._edge_time_kernels import edge_time_order, kept_positions, order_mismatch
from graphtier.dataset.edges.edge_data import EDGE_COLUMN_STEMS
from graphtier.errors import DatasetError

EDGE_TIME = "edge_time"
EDGE_TIME_ORDER = "edge_time_order"
EDGE_TIME_STEMS = frozenset({EDGE_TIME, EDGE_TIME_ORDER})
META_KEY = "edge_time"


class ArrayWriter(Protocol):
    """What :func:`carry_edge_time` and :func:`finish_edge_time` use of a
    :class:`~graphtier.dataset.writer.DatasetWriter` (not imported here: the writer imports the format)."""

    def path(self, name: str) -> Path: ...

    def save(self, name: str, array: np.ndarray) -> None: ...


SAMPLED_ROWS = 4096
"""Rows of ``edge_time_order.npy`` whose order :func:`validate_edge_time` checks entry by entry (all when fewer)."""


def load_edge_time(
    root: Path, meta: dict[str, Any], load: Callable[[Path], np.ndarray]
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(edge_time, edge_time_order)`` of the dataset ``root`` loaded with ``load`` (memory maps), or
    ``(None, None)`` when it has no edge times; one-line :class:`DatasetError` when only one file, or the files
    without the ``meta.json`` entry (or the entry without the files), is there."""
    paths = [root / f"{stem}.npy" for stem in (EDGE_TIME, EDGE_TIME_ORDER)]
    present = [p.is_file() for p in paths]
    if present[0] != present[1]:
        have, missing = (paths[0], paths[1]) if present[0] else (paths[1], paths[0])
        raise DatasetError(f"{missing}: file missing (expected it next to {have.name}: edge times need both files)")
    if present[0] != (META_KEY in meta):
        if present[0]:
            raise DatasetError(f"{root / 'meta.json'}: field {META_KEY!r} missing (the dataset has {paths[0].name})")
        raise DatasetError(f"{paths[0]}: file missing (meta.json has the field {META_KEY!r})")
    if not present[0]:
        return None, None
    return load(paths[0]), load(paths[1])


def validate_edge_time(
    root: Path, meta: dict[str, Any], indptr: np.ndarray, edge_time: np.ndarray, order: np.ndarray
) -> None:
    """Check the edge time files against ``meta.json`` and ``indptr`` (int64 [R + 1]): dtype int64 and shape [E]
    each, the ``meta.json`` entry (unit a string or null, min/max the times' range), the order's values in
    ``[0, E)`` and, in :data:`SAMPLED_ROWS` rows spread over the graph (every row when fewer), each row's positions
    sorted by (time, position). Raises :class:`DatasetError` naming the file, the expected and the found value."""
    e = int(meta["num_edges"])
    meta_path = root / "meta.json"
    entry = meta[META_KEY]
    for stem, array in ((EDGE_TIME, edge_time), (EDGE_TIME_ORDER, order)):
        p = root / f"{stem}.npy"
        if str(array.dtype) != "int64":
            raise DatasetError(f"{p}: expected dtype int64, found {array.dtype}")
        if tuple(array.shape) != (e,):
            raise DatasetError(f"{p}: expected shape {(e,)}, found {tuple(array.shape)}")
    if not isinstance(entry, dict) or set(entry) != {"unit", "min", "max"}:
        found = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
        raise DatasetError(f"{meta_path}: field {META_KEY!r} expected an object with unit, min, max, found {found}")
    if entry["unit"] is not None and not isinstance(entry["unit"], str):
        raise DatasetError(f"{meta_path}: field 'edge_time.unit' expected a string or null, found {entry['unit']!r}")
    low, high = index_range(edge_time) if e else (None, None)
    for key, value in (("min", low), ("max", high)):
        if entry[key] != value or isinstance(entry[key], bool):
            raise DatasetError(
                f"{meta_path}: field 'edge_time.{key}' expected {value} (the times in {root / 'edge_time.npy'}), "
                f"found {entry[key]!r}"
            )
    if e == 0:
        return
    p = root / f"{EDGE_TIME_ORDER}.npy"
    lo, hi = index_range(order)
    if lo < 0 or hi >= e:
        raise DatasetError(f"{p}: expected edge positions in [0, {e}), found values in [{lo}, {hi}]")
    num_rows = indptr.shape[0] - 1
    rows = np.unique(np.linspace(0, num_rows - 1, min(num_rows, SAMPLED_ROWS)).astype(np.int64))
    bad = int(order_mismatch(np.asarray(indptr), edge_time, order, rows))
    if bad >= 0:
        lo_p, hi_p = int(indptr[bad]), int(indptr[bad + 1])
        raise DatasetError(
            f"{p}: row {bad}: expected its positions [{lo_p}, {hi_p}) sorted by (time, position), "
            f"found {np.asarray(order[lo_p : min(hi_p, lo_p + 8)]).tolist()}{'...' if hi_p - lo_p > 8 else ''}"
        )


def carry_edge_time(
    writer: ArrayWriter,
    indptr: np.ndarray,
    indices: np.ndarray,
    new_indptr: np.ndarray,
    new_indices: np.ndarray,
) -> None:
    """Keep ``edge_time.npy`` and the other per-edge files (``edge_feat.npy``, ``edge_label.npy``;
    :mod:`graphtier.dataset.edges.edge_data`) that ``writer`` wrote aligned when the graph ``(indptr, indices)`` loses
    edges and becomes ``(new_indptr, new_indices)`` (each list a subsequence of the old one: the edge split); no-op
    without them. Call it before ``edge_time_order.npy`` is made (:func:`finish_edge_time`)."""
    stems = [stem for stem in (EDGE_TIME, *EDGE_COLUMN_STEMS) if writer.path(stem).is_file()]
    if not stems:
        return
    kept = kept_positions(np.asarray(indptr), np.asarray(indices), np.asarray(new_indptr), np.asarray(new_indices))
    for stem in stems:
        writer.save(stem, np.load(writer.path(stem), mmap_mode="r", allow_pickle=False)[kept])


def finish_edge_time(writer: ArrayWriter, meta: dict[str, Any]) -> dict[str, Any]:
    """When ``writer`` wrote ``edge_time.npy``: write ``edge_time_order.npy`` for the final ``indptr.npy`` and
    return ``meta`` with ``"edge_time"`` (unit kept from ``meta["edge_time"]["unit"]``, else null; min, max);
    else ``meta`` unchanged."""
    path = writer.path(EDGE_TIME)
    if not path.is_file():
        return meta
    times = np.load(path, allow_pickle=False)
    indptr = np.load(writer.path("indptr"), allow_pickle=False)
    writer.save(EDGE_TIME_ORDER, edge_time_order(indptr, times))
    unit = (meta.get(META_KEY) or {}).get("unit")
    low, high = index_range(times) if times.size else (None, None)
    return {**meta, META_KEY: {"unit": unit, "min": low, "max": high}}


def time_range_text(entry: Any) -> str | None:
    """``"1289192400 .. 1453684324 (s)"``: a time range entry of ``meta.json`` (``meta["edge_time"]``,
    ``meta["node_time"]``) for ``graphtier info``, or None when it is not an entry."""
    if not isinstance(entry, dict):
        return None
    unit = f" ({entry['unit']})" if entry.get("unit") else ""
    if entry.get("min") is None:
        return f"none (no edges){unit}"
    return f"{entry['min']} .. {entry['max']}{unit}"
