"""Edge features and an edge label of a dataset (docs/dataset-format.md, "Edge features and labels").

``edge_feat.npy`` (float16/float32/float64 [E, d]) and ``edge_label.npy`` (float32 [E]) hold one row per edge in
CSC order, exactly like ``edge_time.npy``: position ``p`` is the edge ``indices[p] -> v``. ``meta.json`` records
``"edge_features": {"dim": d, "dtype": str, "columns": [names]}`` and ``"edge_label": {"column": name}``; each
file and its entry come together or not at all. An edge split with an edge label writes ``link_{split}_label.npy``
(float32 [P], row-aligned with ``link_{split}.npy``) and ``meta.json`` ``link.label: {"column": name}``.

An importer carries each edge's input row through the CSC build (``edges.build_csc(rows=True)``) and then gathers
every per-edge column by that row permutation in chunks (:func:`write_edge_columns`); the edge split keeps the
rows of the edges that stay (:func:`graphtier.dataset.edges.edge_time.carry_edge_time` moves every per-edge file) and
labels its pairs (:func:`write_link_labels`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset.edges._edge_time_kernels import pair_positions
from graphtier.dataset.edges.link_split import LINK_META_KEY, LINK_SPLITS, positive_times_file, positives_file
from graphtier.dataset.edges.link_split import label_file as link_label_file
from graphtier.dataset.finite import find_non_finite
from graphtier.errors import DatasetError

EDGE_FEAT = "edge_feat"
EDGE_LABEL = "edge_label"
FEATURES_KEY = "edge_features"
LABEL_KEY = "edge_label"
FEATURE_DTYPES = ("float16", "float32", "float64")
GATHER_BYTES = 64 << 20
"""Bytes of gathered rows per chunk (bounds the memory of :func:`write_edge_columns` and the carries)."""


EDGE_COLUMN_STEMS = (EDGE_FEAT, EDGE_LABEL)
"""The per-edge files besides ``edge_time.npy`` that every rewrite of the edges moves along
(:func:`graphtier.dataset.edges.edge_time.carry_edge_time`, ``reorder``)."""

EDGE_DATA_STEMS = frozenset([EDGE_FEAT, EDGE_LABEL] + [link_label_file(s) for s in LINK_SPLITS])
"""Every file stem of edge features and labels (not listed in ``Dataset.extra``)."""


def load_edge_data(
    root: Path, meta: dict[str, Any], load: Callable[[Path], np.ndarray]
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(edge_features, edge_label)`` of the dataset ``root`` loaded with ``load`` (memory maps), each None when
    absent; one-line :class:`DatasetError` when a file comes without its ``meta.json`` entry or the reverse."""
    loaded: list[np.ndarray | None] = []
    for stem, key in ((EDGE_FEAT, FEATURES_KEY), (EDGE_LABEL, LABEL_KEY)):
        path = root / f"{stem}.npy"
        if path.is_file() != (key in meta):
            if path.is_file():
                raise DatasetError(f"{root / 'meta.json'}: field {key!r} missing (the dataset has {path.name})")
            raise DatasetError(f"{path}: file missing (meta.json has the field {key!r})")
        loaded.append(load(path) if path.is_file() else None)
    return loaded[0], loaded[1]


def validate_edge_data(
    root: Path, meta: dict[str, Any], edge_features: np.ndarray | None, edge_label: np.ndarray | None
) -> None:
    """Check ``edge_feat.npy`` (dtype and dim of ``meta["edge_features"]``, [E, d], finite) and ``edge_label.npy``
    (float32 [E], finite) against ``meta.json``; :class:`DatasetError` names the file, expected and found."""
    e = int(meta["num_edges"])
    where = root / "meta.json"
    if edge_features is not None:
        entry = meta[FEATURES_KEY]
        if not isinstance(entry, dict) or set(entry) != {"dim", "dtype", "columns"}:
            found = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
            raise DatasetError(
                f"{where}: field {FEATURES_KEY!r} expected an object with dim, dtype, columns, found {found}"
            )
        if entry["dtype"] not in FEATURE_DTYPES:
            raise DatasetError(
                f"{where}: field 'edge_features.dtype' expected one of {', '.join(FEATURE_DTYPES)}, found {entry['dtype']!r}"
            )
        columns = entry["columns"]
        if (
            not isinstance(columns, list)
            or len(columns) != entry["dim"]
            or not all(isinstance(c, str) for c in columns)
        ):
            raise DatasetError(
                f"{where}: field 'edge_features.columns' expected {entry['dim']} column names, found {columns!r}"
            )
        path = root / f"{EDGE_FEAT}.npy"
        _expect(path, "dtype", entry["dtype"], str(edge_features.dtype))
        _expect(path, "shape", (e, entry["dim"]), tuple(edge_features.shape))
        _check_finite(path, edge_features)
    if edge_label is not None:
        entry = meta[LABEL_KEY]
        if not isinstance(entry, dict) or set(entry) != {"column"} or not isinstance(entry["column"], str):
            raise DatasetError(f"{where}: field {LABEL_KEY!r} expected an object {{'column': name}}, found {entry!r}")
        path = root / f"{EDGE_LABEL}.npy"
        _expect(path, "dtype", "float32", str(edge_label.dtype))
        _expect(path, "shape", (e,), tuple(edge_label.shape))
        _check_finite(path, edge_label)
    link = meta.get(LINK_META_KEY)
    labelled = isinstance(link, dict) and "label" in link
    for split in LINK_SPLITS:
        path = root / f"{link_label_file(split)}.npy"
        pairs = root / f"{positives_file(split)}.npy"
        if path.is_file() != (labelled and pairs.is_file()):
            if path.is_file():
                raise DatasetError(f"{path}: unexpected file (meta.json 'link' has no 'label' entry)")
            raise DatasetError(f"{path}: file missing (meta.json 'link.label' needs a label per pair of {pairs.name})")
        if path.is_file():
            label = np.load(path, mmap_mode="r", allow_pickle=False)
            rows = int(np.load(pairs, mmap_mode="r", allow_pickle=False).shape[0])
            _expect(path, "dtype", "float32", str(label.dtype))
            _expect(path, "shape", (rows,), tuple(label.shape))


def _expect(path: Path, what: str, expected: Any, found: Any) -> None:
    if expected != found:
        raise DatasetError(f"{path}: expected {what} {expected}, found {found}")


def _check_finite(path: Path, table: np.ndarray) -> None:
    if table.size == 0:
        return
    found = find_non_finite(table.reshape(table.shape[0], -1))
    if found is not None:
        raise DatasetError(f"{path}: expected finite values, found NaN/Inf in row {found[0]}")


# ---------------------------------------------------------------------------- writing


@dataclass
class EdgeColumns:
    """Per-edge columns of an import in input order (row k = the k-th input edge; memory maps or arrays):
    ``features`` float16/32/64 [E_in, d] named ``feature_names``, ``label`` float [E_in] from the column
    ``label_name``; either may be None."""

    features: np.ndarray | None = None
    label: np.ndarray | None = None
    feature_names: list[str] = field(default_factory=list)
    label_name: str | None = None
    scratch: list[Path] = field(default_factory=list)
    """Scratch files holding the tables (deleted by :meth:`remove`)."""

    def remove(self) -> None:
        """Drop the tables and delete their scratch files (idempotent)."""
        self.features = self.label = None
        for path in self.scratch:
            path.unlink(missing_ok=True)


def write_edge_columns(writer: Any, parts: Sequence[tuple[EdgeColumns, np.ndarray]], where: str = "") -> dict[str, Any]:
    """Write ``edge_feat.npy`` / ``edge_label.npy`` through ``writer`` (a ``DatasetWriter``) from ``parts``, one
    per relation in CSC order (one for a homogeneous graph): ``(columns, edge_row)`` where ``edge_row`` (int64
    [E_rel], from ``build_csc(rows=True)``) gives the input row of each stored edge; rows are gathered in chunks of
    :data:`GATHER_BYTES` (no table is copied whole). Every part has features of one dim or none, a label or none
    (:class:`DatasetError` naming ``where`` otherwise); the features' dtype is the widest given, their column
    names the first part's. Returns the ``meta.json`` entries."""
    if not parts:
        return {}
    first = parts[0][0]
    dims = {0 if c.features is None else int(c.features.shape[1]) for c, _ in parts}
    labelled = {c.label is not None for c, _ in parts}
    if len(dims) > 1 or len(labelled) > 1:
        raise DatasetError(
            f"{where}: expected every relation to have edge features of one dim and a label, or none, found "
            + "; ".join(
                ([f"feature dims {sorted(dims)}"] if len(dims) > 1 else [])
                + (["a label on some relations only"] if len(labelled) > 1 else [])
            )
        )
    d, e = dims.pop(), sum(int(row.shape[0]) for _, row in parts)
    dtype = np.result_type(*[c.features.dtype for c, _ in parts]) if d else np.dtype(np.float32)
    if d and str(dtype) not in FEATURE_DTYPES:
        raise DatasetError(f"{where}: expected edge features of dtype {', '.join(FEATURE_DTYPES)}, found {dtype}")
    feat = writer.open_memmap(EDGE_FEAT, (e, d), dtype) if d else None
    label = writer.open_memmap(EDGE_LABEL, (e,), np.float32) if labelled.pop() else None
    base = 0
    for columns, edge_row in parts:
        step = max(1, GATHER_BYTES // max(1, (d + 1) * 8))
        for start in range(0, int(edge_row.shape[0]), step):
            rows = np.asarray(edge_row[start : start + step])
            at = slice(base + start, base + start + rows.shape[0])
            if feat is not None and columns.features is not None:
                feat[at] = np.asarray(columns.features[rows])
            if label is not None and columns.label is not None:
                label[at] = np.asarray(columns.label[rows])
        base += int(edge_row.shape[0])
    entries: dict[str, Any] = {}
    if feat is not None:
        feat.flush()
        entries[FEATURES_KEY] = {"dim": d, "dtype": str(dtype), "columns": list(first.feature_names)}
    if label is not None:
        label.flush()
        entries[LABEL_KEY] = {"column": first.label_name}
    return entries


# ---------------------------------------------------------------------------- link labels


def write_link_labels(
    writer: Any,
    link: dict[str, Any],
    indptr: np.ndarray,
    indices: np.ndarray,
    meta: dict[str, Any],
    *,
    src_offset: int = 0,
    row_offset: int = 0,
) -> dict[str, Any]:
    """When ``writer`` wrote ``edge_label.npy`` for the full graph ``(indptr, indices)`` (before the split): write
    ``link_{split}_label.npy`` (float32 [P]) for every split ``link`` (the ``meta.json`` entry) has, each pair
    ``(src, dst)`` taking the label of its edge (its first copy; of a time split, the copy at the pair's time), and
    return ``link`` with ``"label": {"column": name}``; else ``link`` unchanged. A typed split's pairs hold local ids
    of one relation: ``src_offset`` (the source type's first global id) and ``row_offset`` (the relation's first
    ``indptr`` row) place them in the dataset's CSC."""
    path = writer.path(EDGE_LABEL)
    if not path.is_file():
        return link
    labels = np.load(path, mmap_mode="r", allow_pickle=False)
    time_path = writer.path("edge_time")
    by_time = link.get("split_by") == "time" and time_path.is_file()
    edge_time = np.load(time_path, allow_pickle=False) if by_time else np.empty(0, np.int64)
    for split in LINK_SPLITS:
        pairs_path = writer.path(positives_file(split))
        if not pairs_path.is_file():
            continue
        pairs = np.load(pairs_path, allow_pickle=False)
        times = np.load(writer.path(positive_times_file(split)), allow_pickle=False) if by_time else edge_time[:0]
        src, dst = np.ascontiguousarray(pairs[:, 0] + src_offset), np.ascontiguousarray(pairs[:, 1] + row_offset)
        at = pair_positions(np.asarray(indptr, np.int64), np.asarray(indices), edge_time, src, dst, times)
        if at.size and int(at.min()) < 0:
            bad = int(np.flatnonzero(at < 0)[0])
            raise DatasetError(
                f"{pairs_path.name}: pair {bad} {pairs[bad].tolist()}: expected an edge of the graph (its edge label "
                "is the pair's target), found none"
            )
        writer.save(link_label_file(split), np.asarray(labels[at], np.float32) if at.size else np.empty(0, np.float32))
    return {**link, "label": dict(meta[LABEL_KEY])}


def link_labels(dataset: Any, split: str) -> np.ndarray | None:
    """float32 [P] (memory map): the edge-level target of every positive pair of ``split`` of ``dataset`` (a
    :class:`~graphtier.dataset.format.Dataset`), row-aligned with ``link_{split}.npy``; None without ``meta.json``
    ``link.label``, empty when the split has no pairs file. :class:`DatasetError` (one line) when the file is missing,
    not float32 or not one value per pair."""
    root, meta = Path(dataset.path), dataset.meta
    path, pairs_path = root / f"{link_label_file(split)}.npy", root / f"{positives_file(split)}.npy"
    labelled = isinstance((meta.get(LINK_META_KEY) or {}).get("label"), dict)
    if not labelled or not pairs_path.is_file():
        return np.empty(0, np.float32) if labelled else None
    if not path.is_file():
        raise DatasetError(f"{path}: file missing (meta.json 'link.label' names edge-level targets)")
    labels = np.load(path, mmap_mode="r", allow_pickle=False)
    count = int(np.load(pairs_path, mmap_mode="r", allow_pickle=False).shape[0])
    if labels.dtype != np.float32 or labels.shape != (count,):
        raise DatasetError(f"{path}: expected float32 [{count}], found {labels.dtype} {list(labels.shape)}")
    return labels


def edge_data_lines(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """``(field, text)`` rows of ``graphtier info`` for the edge features and the edge label (none when absent)."""
    rows = []
    feats = meta.get(FEATURES_KEY)
    if isinstance(feats, dict):
        rows.append(
            (
                "edge features",
                f"dim {feats.get('dim')}, {feats.get('dtype')} (columns: {', '.join(feats.get('columns', []))})",
            )
        )
    label = meta.get(LABEL_KEY)
    if isinstance(label, dict):
        rows.append(("edge label", f"float32 (column {label.get('column')})"))
    return rows
