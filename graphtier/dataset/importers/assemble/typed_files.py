"""Reading the per-type and per-relation files of a typed (heterogeneous) import, and writing the dataset.

The manifest importer (:mod:`~graphtier.dataset.importers.formats.manifest`) and OGB's heterogeneous layout
(:mod:`~graphtier.dataset.importers.formats.ogb_hetero`) both read, in LOCAL ids of a node type:

* features: ``.npy`` [rows, D], a dense text matrix, or a ``scipy.sparse`` ``.npz`` (densified to float32);
  a type's features may be split by rows over several files (stacked in order, same width);
* labels: ``.npy`` or text, one class id per node (integral floats accepted; NaN / negative = unlabelled), or
  text of class names (``cat``, ``dog``: ids in sorted name order, the names kept in ``label_names.json``);
* split files: ``.npy`` or text, one local id per line;
* edges: one file per relation, ``src dst`` per line (text, csv, gzip, as ``prepare edgelist`` reads), an
  integer ``.npy`` [E, 2] (or [2, E]), or a sparse adjacency [source count, destination count] (a
  ``scipy.sparse`` ``.npz``, or a sparse ``.mat`` variable ``PATH:KEY``: entry ``[u, v] != 0`` is ``u -> v``).

Any of these files may be ``PATH:KEY``, an array inside an ``.npz`` or a ``.mat``
(:mod:`~graphtier.dataset.importers.common.members`).

Every error is one line naming the file, the node type or relation, the expected and the found value.
:func:`finish_typed_import` writes the graph (:func:`~graphtier.dataset.importers.assemble.typed_graph.write_typed_graph`),
labels, splits and ``meta.json`` (with its ``hetero`` entry).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import provenance as prov
from graphtier.dataset import resources
from graphtier.dataset.edges.edge_data import EdgeColumns
from graphtier.dataset.edges.edge_time import META_KEY as EDGE_TIME_META
from graphtier.dataset.edges.edge_time import finish_edge_time
from graphtier.dataset.finite import NonFiniteGuard
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble import finish
from graphtier.dataset.importers.assemble.typed_graph import TypedEdges, TypedNodes, spill_relation, write_typed_graph
from graphtier.dataset.importers.common import node_data, textio
from graphtier.dataset.importers.common.edge_columns import (
    read_edge_columns,
    read_edge_feature_file,
    resolve_edge_columns,
)
from graphtier.dataset.importers.common.edges import array_edge_chunks
from graphtier.dataset.importers.common.features import note_replaced
from graphtier.dataset.importers.common.labels import Labels, labels_from_values
from graphtier.dataset.importers.common.members import MemberPath, load_member
from graphtier.dataset.importers.common.sparse import DenseRows, load_sparse_npz
from graphtier.dataset.importers.split.splits import save_splits
from graphtier.dataset.importers.split.typed_holdout import TypedSplit, split_written_typed_graph
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError

SPLIT_NAMES = ("train", "valid", "test")


def _matrix(path: Path, what: str, scratch: Path) -> np.ndarray:
    """One feature file as [rows, D] through :func:`node_data.read_feature_matrix`; a sparse one (a
    ``scipy.sparse`` ``.npz`` or a sparse ``PATH:KEY``) is densified to float32 after the memory check."""
    try:
        matrix = node_data.read_feature_matrix(path, scratch)
    except DatasetError as exc:
        raise DatasetError(f"{exc} ({what})") from None
    if not isinstance(matrix, DenseRows):
        return matrix
    rows, cols = matrix.shape
    resources.require_memory(rows * cols * 4, f"{path}: densifying the sparse features of {what} ({rows} x {cols})")
    return matrix[:rows]


def read_type_features(
    paths: Sequence[Path], what: str, scratch_dir: Path, count: int | None, non_finite: str = "error"
) -> tuple[np.ndarray, Any]:
    """The features of one node type: ``paths`` stacked by rows, float32/float16 [rows, D] on the CPU.

    ``what`` names the type in errors (``nodes.paper.features``); ``count`` (None: any) is the number of rows
    expected in total. Widths must agree across files. Returns ``(features, guard)`` (the non-finite guard,
    for :func:`note_replaced`).
    """
    parts: list[np.ndarray] = []
    width: tuple[int, Path] | None = None
    for i, path in enumerate(paths):
        part = _matrix(path, what, scratch_dir / f"features.{i}.scratch")
        if part.ndim != 2:
            raise DatasetError(f"{path}: {what}: expected a 2-d array [nodes, dim], found shape {tuple(part.shape)}")
        if width is not None and part.shape[1] != width[0]:
            raise DatasetError(
                f"{path}: {what}: expected {width[0]} feature columns (as {width[1].name}), found {part.shape[1]}"
            )
        width = width or (int(part.shape[1]), path)
        parts.append(part)
    rows = sum(int(p.shape[0]) for p in parts)
    if count is not None and rows != count:
        names = ", ".join(p.name for p in paths)
        raise DatasetError(f"{names}: {what}: expected {count} rows (the type's count), found {rows}")
    dtypes = {np.dtype(p.dtype) for p in parts}
    kept = dtypes.pop() if len(dtypes) == 1 else None
    out_dtype = kept if kept in (np.float16, np.float32) else np.dtype(np.float32)
    guard = NonFiniteGuard(paths[0], non_finite)
    out = np.empty((rows, width[0] if width else 0), dtype=out_dtype)
    start = 0
    for part in parts:
        out[start : start + part.shape[0]] = guard.apply(np.asarray(part).astype(out_dtype, copy=False), start)
        start += part.shape[0]
    parts.clear()
    part = None  # drop the last memory map before its scratch file goes
    for i in range(len(paths)):  # text matrices were parsed into these; the dataset must not keep them
        (scratch_dir / f"features.{i}.scratch").unlink(missing_ok=True)
    return out, guard


def read_type_labels(path: Path, count: int, what: str) -> Labels:
    """One class id per node of a type with ``count`` nodes: ``.npy`` or text (one label per line)."""
    kind, description = node_data.sniff(path)
    if kind == "npy":
        raw = np.asarray(node_data.load_npy(path, what))
        if raw.ndim == 2 and raw.shape[1] == 1:
            raw = raw[:, 0]
    elif kind in ("text", "gzip"):
        first = textio.first_data_lines(path, 1)
        if first and not _is_number(first[0]):  # class names (cat, dog): ids in sorted name order, names kept
            named = node_data.read_raw_labels(path, "lines", header="no")
            if named.class_names is None:
                raise DatasetError(f"{path}: {what}: expected one label per line, found {first[0]!r} on the first line")
            if named.classes.shape[0] != count:
                raise DatasetError(
                    f"{path}: {what}: expected {count} labels (one per node), found {named.classes.shape[0]}"
                )
            labels = labels_from_values(f"{path}: {what}", named.classes)
            labels.class_names, labels.num_classes = named.class_names, len(named.class_names)
            return labels
        blocks = [b[:, 0].copy() for b in textio.iter_float_rows(path, 1, expected="one label per line")]
        raw = np.concatenate(blocks) if blocks else np.empty(0, np.float32)
    else:
        raise DatasetError(f"{path}: {what}: expected a .npy array or text (one label per line), got {description}")
    if raw.ndim != 1 or raw.shape[0] != count:
        raise DatasetError(f"{path}: {what}: expected {count} labels (one per node), found shape {tuple(raw.shape)}")
    return labels_from_values(f"{path}: {what}", raw)


def _is_number(text: str) -> bool:
    try:
        float(text.strip())
    except ValueError:
        return False
    return True


def read_local_ids(path: Path, count: int, what: str, type_name: str) -> np.ndarray:
    """int64 [K]: local ids of type ``type_name`` (``count`` nodes) from a ``.npy`` or text (one id per line)."""
    kind, description = node_data.sniff(path)
    if kind == "npy":
        ids = np.asarray(node_data.load_npy(path, what))
        if ids.ndim == 2 and 1 in ids.shape:
            ids = ids.reshape(-1)
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise DatasetError(f"{path}: {what}: expected a 1-d integer array, found {ids.dtype} {tuple(ids.shape)}")
    elif kind in ("text", "gzip"):
        ids = textio.read_int_rows(
            path, 1, allow_extra_columns=False, skip_header=False, expected="one integer id per line", column=0
        )
    else:
        raise DatasetError(f"{path}: {what}: expected a .npy array or text (one id per line), got {description}")
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= count):  # before the cast: uint64 2^64-1 is not -1
        raise DatasetError(
            f"{path}: {what}: expected {type_name} ids in [0, {count}), found values in [{int(ids.min())}, {int(ids.max())}]"
        )
    return ids.astype(np.int64, copy=False)


def check_split_ids(splits: dict[str, np.ndarray], paths: dict[str, Path], key: str = "split") -> None:
    """Raise :class:`DatasetError` naming the input file (``paths[name]``) and its ``key.name`` when a split
    (int64 local ids, from :func:`read_local_ids`) repeats an id or shares one with an earlier split: checked on
    the inputs, so the error names the user's file rather than the dataset being written."""
    seen: dict[str, np.ndarray] = {}
    for name in SPLIT_NAMES:
        ids = splits.get(name)
        if ids is None:
            continue
        unique = np.unique(ids)
        where = f"{paths[name]}: {key}.{name}"
        if unique.size != ids.size:
            raise DatasetError(f"{where}: expected distinct ids, found {ids.size - unique.size:,} repeated")
        for earlier, other in seen.items():
            shared = np.intersect1d(unique, other, assume_unique=True)
            if shared.size:
                raise DatasetError(
                    f"{where}: expected ids disjoint from {key}.{earlier} ({paths[earlier]}), found {shared.size:,} "
                    f"in both (first {int(shared[0])})"
                )
        seen[name] = unique


def read_relation_edges(
    path: Path,
    relation: tuple[str, str, str],
    where: str,
    scratch: Path,
    progress: Progress = NO_PROGRESS,
    time_column: int | str | None = None,
    *,
    columns: tuple[Sequence[int | str] | Path | None, int | str | None] = (None, None),
    non_finite: str = "error",
    notes: Any = None,
) -> TypedEdges:
    """The edges of ``relation`` in ``path``: ``src dst`` lines (text/csv/gzip, optional header, extra
    columns ignored) or an integer ``.npy`` [E, 2] / [2, E]; local ids of the source and destination types.
    They are spilled chunk by chunk to a scratch file in the folder ``scratch``
    (:func:`~graphtier.dataset.importers.assemble.typed_graph.spill_relation`), never held in memory whole.
    ``progress`` reports reading a text file as the stage ``prepare: read edges <relation name>``.
    ``time_column`` (a text file's column index >= 2 or header name; the manifest's ``where.time``): each edge's
    integer time, spilled with it (:attr:`TypedEdges.timed`). ``columns``: ``(features, label)`` of the manifest's
    ``where.features`` (columns of a text file, or an ``.npy`` [E, d] aligned with the edges) and ``where.label``
    (a column): read into :attr:`TypedEdges.columns` (:mod:`~graphtier.dataset.importers.common.edge_columns`; NaN/Inf
    as ``non_finite`` says, replacements counted in ``notes``, the writer)."""
    features, label = columns
    if label is not None and kind_of(path) not in ("text", "gzip"):
        raise DatasetError(f"{path}: {where}.label: expected a text edge file with a label column, found no columns")
    if isinstance(features, list) and kind_of(path) not in ("text", "gzip"):
        raise DatasetError(
            f"{path}: {where}.features: expected a text edge file with feature columns (or an .npy of features)"
        )
    edges = _read_relation_edges(path, relation, where, scratch, progress, time_column)
    if features is None and label is None:
        return edges
    text = kind_of(path) in ("text", "gzip")
    skip = text and (
        textio.has_header(path, "auto", 2, allow_extra_columns=True)
        or any(
            textio.names_a_column(path, c)
            for c in [time_column, label, *(features if isinstance(features, list) else [])]
        )
    )
    try:
        indexes, label_index = resolve_edge_columns(
            path, features if isinstance(features, list) else None, label, bool(skip),
            feature_option=f"{where}.features", label_option=f"{where}.label",
        )  # fmt: skip
        table = (
            read_edge_columns(
                path,
                indexes,
                label_index,
                skip_header=bool(skip),
                scratch=scratch / f"{uuid.uuid4().hex}.edges",
                num_edges=edges.num_edges,
                non_finite=non_finite,
                writer=notes,
            )  # fmt: skip
            if indexes or label_index is not None
            else EdgeColumns()
        )
        if isinstance(features, Path):
            scratch_copy = scratch / f"{uuid.uuid4().hex}.edge-features.npy"
            table.features = read_edge_feature_file(
                features,
                edges.num_edges,
                f"{where}.features",
                non_finite=non_finite,
                scratch=scratch_copy,
                writer=notes,
            )
            table.scratch.append(scratch_copy)
            table.feature_names = [f"{features.name}[{k}]" for k in range(table.features.shape[1])]
    except BaseException:
        edges.remove()
        raise
    edges.columns = table
    return edges


def kind_of(path: Path) -> str:
    """The sniffed kind of ``path`` (``text``, ``gzip``, ``npy``, ...)."""
    return node_data.sniff(path)[0]


def _read_relation_edges(
    path: Path,
    relation: tuple[str, str, str],
    where: str,
    scratch: Path,
    progress: Progress = NO_PROGRESS,
    time_column: int | str | None = None,
) -> TypedEdges:
    """:func:`read_relation_edges` without the per-edge columns."""
    what = f"{where} relation {relation}"
    kind, description = node_data.sniff(path)
    if time_column is not None and kind not in ("text", "gzip"):
        raise DatasetError(
            f"{path}: {where}.time: expected a text edge file with a time column, found {description} (no columns)"
        )
    sparse = load_member(path) if isinstance(path, MemberPath) else load_sparse_npz(path) if kind == "npz" else None
    if sparse is not None and not isinstance(sparse, np.ndarray):  # an adjacency: entry [u, v] != 0 is u -> v
        coo = sparse.tocoo()
        nonzero = coo.data != 0
        rows, cols, shape = coo.row[nonzero], coo.col[nonzero], (int(coo.shape[0]), int(coo.shape[1]))
        del coo, sparse
        edges = spill_relation(relation, array_edge_chunks(rows, cols)(), scratch, str(path))
        edges.shape = shape
        return edges
    if kind == "npy":  # a PATH:KEY member was read above: its array, not a second read of the container
        pairs = sparse if isinstance(sparse, np.ndarray) else np.asarray(node_data.load_npy(path, what))
        if pairs.ndim == 2 and pairs.shape[1] != 2 and pairs.shape[0] == 2:
            pairs = pairs.T
        if pairs.ndim != 2 or pairs.shape[1] != 2 or not np.issubdtype(pairs.dtype, np.integer):
            raise DatasetError(
                f"{path}: {what}: expected an integer array [edges, 2] of (src, dst), "
                f"found {pairs.dtype} {tuple(pairs.shape)}"
            )
        return spill_relation(relation, array_edge_chunks(pairs[:, 0], pairs[:, 1])(), scratch, str(path))
    if kind not in ("text", "gzip"):
        raise DatasetError(f"{path}: {what}: expected a text edge list ('src dst' per line) or .npy, got {description}")
    skip = textio.has_header(path, "auto", 2, allow_extra_columns=True) or textio.names_a_column(path, time_column)
    time_index = textio.resolve_time_column(path, time_column, skip, option=f"{where}.time")
    expected = "two integer ids 'src dst'"
    if time_index is not None:
        expected = f"two integer ids and an integer time in column {time_index} ({where}.time)"

    def text_blocks() -> Iterator[tuple[np.ndarray, ...]]:
        with progress.stage(f"prepare: read edges {relation[1]}", unit="edges") as bar:
            for block in textio.iter_int_rows(
                path,
                2 if time_index is None else 3,
                allow_extra_columns=True,
                skip_header=skip,
                expected=expected,
                columns=None if time_index is None else (0, 1, time_index),
            ):
                yield (block[:, 0], block[:, 1]) if time_index is None else (block[:, 0], block[:, 1], block[:, 2])
                bar.advance(int(block.shape[0]))

    return spill_relation(relation, text_blocks(), scratch, str(path))


@dataclass
class TypedImport:
    """Everything a typed import read: node types (features in them), relations, the target's labels and
    splits (local ids), and the input files for ``meta.json``."""

    types: list[TypedNodes]
    relations: list[TypedEdges]
    target: str
    labels: Labels | None = None
    splits: dict[str, np.ndarray] = field(default_factory=dict)
    inputs: list[Path] = field(default_factory=list)


def finish_typed_import(
    writer: DatasetWriter,
    data: TypedImport,
    *,
    name: str | None,
    importer: str,
    add_reverse: bool,
    options: dict[str, Any],
    guards: Sequence[NonFiniteGuard] = (),
    progress: Progress = NO_PROGRESS,
    link: TypedSplit | None = None,
    edge_time_unit: str | None = None,
    before_finish: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Dataset:
    """Write ``data`` into ``writer`` (graph, per-type features, labels, splits, ``meta.json`` with ``hetero``),
    validate and move it into place; returns the opened :class:`Dataset`. ``progress`` reports building the
    CSC and validating. ``link``: the edge split of one relation for link prediction
    (:mod:`graphtier.dataset.importers.split.typed_holdout`), or None; ``edge_time_unit``: the unit of timed relations'
    times for ``meta.json``; ``before_finish(meta) -> meta``: the importer's last files and entries (after the
    split, e.g. its pairs' edge-level targets)."""
    edge_meta: dict[str, Any] = {}
    schema = write_typed_graph(
        writer,
        data.types,
        data.relations,
        target=data.target,
        add_reverse=add_reverse,
        progress=progress,
        edge_meta=edge_meta,
    )
    num_classes = 0
    if data.labels is not None:
        writer.save("labels", data.labels.values)
        finish.write_label_names(writer, data.labels)
        num_classes = data.labels.num_classes
    save_splits(writer, [data.splits.get(s) for s in SPLIT_NAMES])
    for guard in guards:
        note_replaced(writer, guard)
    has_features = any(t.features is not None for t in data.types)
    meta = finish.dataset_meta(
        name=name or finish.default_name(writer.output),
        num_nodes=schema.num_nodes,
        num_edges=schema.num_edges,
        directed=True,
        feature_dim=0,
        feature_dtype="float32",
        num_classes=num_classes,
        importer=importer,
        inputs=[os.fspath(p) for p in data.inputs],
        options={"add_reverse": add_reverse, **options},
        provenance={
            "features": prov.input_data() if has_features else prov.no_data(),
            "labels": prov.input_data() if num_classes else prov.no_data(),
        },
    )
    meta["hetero"] = schema.to_meta()
    meta.update(edge_meta)  # edge features and label of the relations (a manifest's edges[i].features/label)
    if edge_time_unit is not None:
        meta[EDGE_TIME_META] = {"unit": edge_time_unit}
    if link is not None:
        meta = split_written_typed_graph(writer, meta, link)
    if before_finish is not None:
        meta = before_finish(meta)
    meta = finish_edge_time(writer, meta)  # when the relations carried times (a manifest's edges[i].time)
    return writer.finish(meta, progress=progress)
