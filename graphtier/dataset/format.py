"""The on-disk dataset format, version 1 (see docs/dataset-format.md).

A dataset is a directory holding ``meta.json`` and numpy ``.npy`` arrays. The graph is stored in
CSC: ``indices[indptr[v]:indptr[v + 1]]`` are the sources of the edges that point into ``v``,
sorted ascending. :meth:`Dataset.open` memory-maps every array and validates the directory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset import swap
from graphtier.dataset.checks import check_permutation, index_range, is_non_decreasing
from graphtier.dataset.edges.edge_data import EDGE_DATA_STEMS, load_edge_data, validate_edge_data
from graphtier.dataset.edges.edge_rows import EDGE_ROW, check_edge_rows
from graphtier.dataset.edges.edge_time import EDGE_TIME_STEMS, load_edge_time, validate_edge_time
from graphtier.dataset.edges.link_split import (
    LINK_FILE_STEMS,
    LinkSplit,
    check_held_out,
    read_link_split,
    validate_link_split,
    validate_typed_link_split,
)
from graphtier.dataset.edges.node_time import NODE_TIME, load_node_time, validate_node_time
from graphtier.dataset.finite import SAMPLE_BLOCK_BYTES, SAMPLE_BLOCKS, find_non_finite
from graphtier.dataset.schema import Relation, Schema
from graphtier.errors import DatasetError

FORMAT_VERSION = 1
META_FILE = "meta.json"
FEATURE_DTYPES = ("float32", "float16")
SPLITS = ("train", "valid", "test")
REQUIRED_META_FIELDS = (
    "format_version",
    "name",
    "num_nodes",
    "num_edges",
    "directed",
    "feature_dim",
    "feature_dtype",
    "num_classes",
    "source",
    "node_order",
)


def index_dtype(num_nodes: int) -> np.dtype:
    """The dtype of ``indices.npy`` for a graph of ``num_nodes`` nodes: int32 below 2^31, else int64."""
    return np.dtype(np.int32) if num_nodes < 2**31 else np.dtype(np.int64)


def _load_array(path: Path, mmap: bool, *, writable: bool = False) -> np.ndarray:
    """``path`` memory-mapped read-only (``mmap``), copy-on-write (``writable``: writes stay in this
    process, the file never changes), or loaded into RAM."""
    if not path.is_file():
        raise DatasetError(f"{path}: file missing")
    mode = ("c" if writable else "r") if mmap else None
    try:
        return np.load(path, mmap_mode=mode, allow_pickle=False)
    except Exception as exc:  # numpy raises ValueError/OSError/EOFError on damaged files
        raise DatasetError(f"{path}: not a readable .npy array ({exc})") from None


def _expect(path: Path, what: str, expected: Any, found: Any) -> None:
    if expected != found:
        raise DatasetError(f"{path}: expected {what} {expected}, found {found}")


@dataclass
class Dataset:
    """A graphtier dataset opened from disk; arrays are memory maps by default.

    The graph and the features are mapped read-only; the labels and the splits (small: 8 bytes per
    node at most) are mapped copy-on-write, so they are writable numpy arrays that ``torch.from_numpy``
    takes without a warning, and a write changes this process's copy only, never the file.

    Attributes:
        path: the dataset directory.
        meta: the parsed ``meta.json``.
        indptr: int64 [N + 1], CSC column pointers.
        indices: int32 or int64 [E], in-neighbour (source) ids, sorted within each node.
        features: float32/float16 [N, D] or None when the dataset has no features.
        labels: int64 [N] with -1 for unlabelled, or None when ``num_classes == 0``.
        train_idx, valid_idx, test_idx: int64 node ids, or None when the split is absent.
        link: the edge split of link prediction (:class:`~graphtier.dataset.edges.link_split.LinkSplit`), or None.
        extra: other ``.npy`` arrays in the directory (``node_ids``, ``perm``, ...), by file stem.
        schema: node types and relations (:class:`~graphtier.dataset.schema.Schema`; one of each when homogeneous).
            A heterogeneous dataset's ``indptr`` has one row per (relation, destination), ``indices`` global ids,
            ``features`` is None and ``type_features`` holds each type's table; labels and splits are local
            ids of the target type.
        type_features: float32/float16 [count, dim] per node type with features (the homogeneous type ``_N``
            maps to ``features``).
        edge_time, edge_time_order: int64 [E], the time of each edge in CSC order (``indices[p]``'s edge at ``p``)
            and each list's positions by (time, position), or None (:mod:`graphtier.dataset.edges.edge_time`).
        node_time: int64 [N], the time of each node, or None (:mod:`graphtier.dataset.edges.node_time`).
        edge_features, edge_label: float16/32/64 [E, d] and float32 [E] per edge in CSC order, or None
            (:mod:`graphtier.dataset.edges.edge_data`; ``meta["edge_features"]``, ``meta["edge_label"]``).
    """

    path: Path
    meta: dict[str, Any]
    indptr: np.ndarray
    indices: np.ndarray
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    train_idx: np.ndarray | None = None
    valid_idx: np.ndarray | None = None
    test_idx: np.ndarray | None = None
    link: LinkSplit | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    schema: Schema = field(default=None)  # type: ignore[assignment]  # set in __post_init__ when None
    type_features: dict[str, np.ndarray] = field(default_factory=dict)
    edge_time: np.ndarray | None = None
    edge_time_order: np.ndarray | None = None
    node_time: np.ndarray | None = None
    edge_features: np.ndarray | None = None
    edge_label: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.schema is None:
            self.schema = Schema.from_meta(self.meta, self.path / META_FILE)
        if not self.schema.hetero and self.features is not None and not self.type_features:
            self.type_features = {self.schema.target: self.features}

    # ------------------------------------------------------------------ properties
    @property
    def name(self) -> str:
        return str(self.meta["name"])

    @property
    def num_nodes(self) -> int:
        return int(self.meta["num_nodes"])

    @property
    def num_edges(self) -> int:
        return int(self.meta["num_edges"])

    @property
    def feature_dim(self) -> int:
        return int(self.meta["feature_dim"])

    @property
    def num_classes(self) -> int:
        return int(self.meta["num_classes"])

    @property
    def class_names(self) -> list[str] | None:
        """The name of each class id (``label_names.json``: labels imported as names or codes), or None."""
        path = self.path / "label_names.json"
        if not path.is_file():
            return None
        try:
            names = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DatasetError(f"{path}: not readable JSON ({exc})") from None
        if not (isinstance(names, list) and all(isinstance(n, str) for n in names)) or len(names) != self.num_classes:
            found = f"{len(names)} entries" if isinstance(names, list) else type(names).__name__
            raise DatasetError(f"{path}: expected a list of {self.num_classes} class names (strings), found {found}")
        return names

    @property
    def directed(self) -> bool:
        return bool(self.meta["directed"])

    @property
    def node_order(self) -> str:
        """How the rows are ordered: ``"hottest-first (reordered by SCORE)"`` after ``graphtier reorder``, else
        ``"original"`` (as imported: a GPU prefix of a table is then not its hottest rows)."""
        reorder = self.meta.get("reorder")
        if self.meta.get("node_order") == "reordered" or reorder:
            score = reorder.get("score") if isinstance(reorder, dict) else None
            return f"hottest-first (reordered by {score})" if score else "hottest-first (reordered)"
        return "original"

    @property
    def is_hetero(self) -> bool:
        """True when the dataset has several node types or relations (a ``hetero`` entry in ``meta.json``)."""
        return self.schema.hetero

    def relation_csc(self, relation: Relation) -> tuple[np.ndarray, np.ndarray]:
        """``(indptr, indices)`` of ``relation``'s in-edges: int64 [count(dst) + 1] starting at its first edge's
        position (subtract ``indptr[0]`` for a 0-based CSC) and views of the dataset's arrays; ``indices`` are
        GLOBAL source ids (subtract the source type's offset for local ids)."""
        rows = self.schema.node_type(relation.dst).count
        indptr = self.indptr[relation.row_offset : relation.row_offset + rows + 1]
        return indptr, self.indices[int(indptr[0]) : int(indptr[-1])]

    def split(self, name: str) -> np.ndarray | None:
        """The int64 node ids of split ``name`` (``train``, ``valid`` or ``test``), or None."""
        if name not in SPLITS:
            raise DatasetError(f"{self.path}: unknown split {name!r}, expected one of {', '.join(SPLITS)}")
        return getattr(self, f"{name}_idx")

    def in_degrees(self) -> np.ndarray:
        """int64 [N]: the number of in-edges of every node (a typed dataset: over every relation into its type)."""
        return self.schema.in_degrees(self.indptr)

    def __repr__(self) -> str:
        return (
            f"Dataset({self.name!r}, nodes={self.num_nodes:,}, edges={self.num_edges:,}, "
            f"feature_dim={self.feature_dim}, classes={self.num_classes}, path='{self.path}')"
        )

    # ------------------------------------------------------------------ open + validate
    @classmethod
    def open(cls, path: str | os.PathLike[str], *, mmap: bool = True, validate: bool = True) -> "Dataset":
        """Open the dataset directory ``path``.

        Every array is memory-mapped (``mmap=False`` loads them into RAM instead), so a dataset larger
        than RAM can be opened: read-only, except the labels and splits (copy-on-write, see the class). With ``validate`` (the default) the directory is
        checked against ``meta.json`` and a :class:`DatasetError` naming the file, the expected
        and the found value is raised at the first inconsistency.
        """
        root = Path(path)
        if not root.is_dir() and not _recover(root):
            raise DatasetError(f"{root}: dataset directory not found")
        meta = read_meta(root)
        indptr = _load_array(root / "indptr.npy", mmap)
        indices = _load_array(root / "indices.npy", mmap)
        schema = Schema.from_meta(meta, root / META_FILE)
        features = _load_array(root / "features.npy", mmap) if int(meta["feature_dim"]) > 0 else None
        type_features = {
            t.name: _load_array(root / f"{schema.feature_file(t.name)}.npy", mmap)
            for t in schema.node_types
            if schema.hetero and t.feature_dim > 0
        }
        labels = _load_array(root / "labels.npy", mmap, writable=True) if int(meta["num_classes"]) > 0 else None
        split_paths = {name: root / f"{name}_idx.npy" for name in SPLITS}
        splits = {name: _load_array(p, mmap, writable=True) if p.is_file() else None for name, p in split_paths.items()}
        link = read_link_split(root, meta, lambda p: _load_array(p, mmap))
        edge_time, edge_time_order = load_edge_time(root, meta, lambda p: _load_array(p, mmap))
        known = {"indptr", "indices", "features", "labels"} | {f"{s}_idx" for s in SPLITS} | LINK_FILE_STEMS
        known |= EDGE_TIME_STEMS | EDGE_DATA_STEMS | {NODE_TIME}
        edge_features, edge_label = load_edge_data(root, meta, lambda p: _load_array(p, mmap))
        known |= {schema.feature_file(t.name) for t in schema.node_types if schema.hetero}
        extra = {p.stem: _load_array(p, mmap) for p in sorted(root.glob("*.npy")) if p.stem not in known}
        dataset = cls(
            path=root,
            meta=meta,
            indptr=indptr,
            indices=indices,
            features=features,
            labels=labels,
            train_idx=splits["train"],
            valid_idx=splits["valid"],
            test_idx=splits["test"],
            link=link,
            extra=extra,
            schema=schema,
            type_features=type_features,
            edge_time=edge_time,
            edge_time_order=edge_time_order,
            node_time=load_node_time(root, meta, lambda p: _load_array(p, mmap)),
            edge_features=edge_features,
            edge_label=edge_label,
        )
        if validate:
            dataset.validate()
        return dataset

    def validate(self) -> None:
        """Check every array against ``meta.json``; raise :class:`DatasetError` on the first problem."""
        root = self.path
        n, e = self.num_nodes, self.num_edges
        schema = self.schema
        if schema.hetero:
            _expect(root / META_FILE, "num_nodes (the sum of the node type counts)", schema.num_nodes, n)
            _expect(root / META_FILE, "num_edges (the sum of the relations' edges)", schema.num_edges, e)
        p = root / "indptr.npy"
        _expect(p, "dtype", "int64", str(self.indptr.dtype))
        _expect(p, "shape", (schema.num_rows + 1,), tuple(self.indptr.shape))
        if int(self.indptr[0]) != 0:
            raise DatasetError(f"{p}: expected indptr[0] == 0, found {int(self.indptr[0])}")
        if int(self.indptr[-1]) != e:
            raise DatasetError(f"{p}: expected indptr[-1] == num_edges {e}, found {int(self.indptr[-1])}")
        if not is_non_decreasing(self.indptr):
            raise DatasetError(f"{p}: expected non-decreasing values, found a decrease")
        p = root / "indices.npy"
        _expect(p, "dtype", str(index_dtype(n)), str(self.indices.dtype))
        _expect(p, "shape", (e,), tuple(self.indices.shape))
        if schema.hetero:
            self._validate_relations()
        elif e > 0:
            lo, hi = index_range(self.indices)
            if lo < 0 or hi >= n:
                raise DatasetError(f"{p}: expected node ids in [0, {n}), found values in [{lo}, {hi}]")
        for node_type in schema.node_types if schema.hetero else ():
            table = self.type_features.get(node_type.name)
            if table is not None:
                p = root / f"{schema.feature_file(node_type.name)}.npy"
                _expect(p, "dtype", node_type.feature_dtype, str(table.dtype))
                _expect(p, "shape", (node_type.count, node_type.feature_dim), tuple(table.shape))
                self._validate_finite(p, table)
        n_labelled = schema.target_type.count
        if self.features is not None:
            p = root / "features.npy"
            _expect(p, "dtype", self.meta["feature_dtype"], str(self.features.dtype))
            _expect(p, "shape", (n, self.feature_dim), tuple(self.features.shape))
            self._validate_finite(p, self.features)
        if self.labels is not None:
            p = root / "labels.npy"
            _expect(p, "dtype", "int64", str(self.labels.dtype))
            _expect(p, "shape", (n_labelled,), tuple(self.labels.shape))
            if n_labelled > 0:
                lo, hi = index_range(self.labels)
                if lo < -1 or hi >= self.num_classes:
                    raise DatasetError(
                        f"{p}: expected labels in [-1, {self.num_classes}), found values in [{lo}, {hi}]"
                    )
        if self.edge_time is not None and self.edge_time_order is not None:
            validate_edge_time(root, self.meta, self.indptr, self.edge_time, self.edge_time_order)
        validate_node_time(root, self.meta, self.node_time, n)
        validate_edge_data(root, self.meta, self.edge_features, self.edge_label)
        if self.link is not None:
            validate_link_split(root, self.link, n)
            if not schema.hetero:
                check_held_out(root, self.link, self.indptr, self.indices)
            else:
                validate_typed_link_split(root, self.link, schema, self.indptr, self.indices)
        if "perm" in self.extra:
            self._validate_perm(root / "perm.npy", self.extra["perm"])
        if EDGE_ROW in self.extra:
            check_edge_rows(root, self.extra[EDGE_ROW], self.num_edges, self.edge_features is not None)
        seen = np.zeros(n_labelled, dtype=np.bool_) if any(self.split(s) is not None for s in SPLITS) else None
        for name in SPLITS:
            idx = self.split(name)
            if idx is None:
                continue
            p = root / f"{name}_idx.npy"
            _expect(p, "dtype", "int64", str(idx.dtype))
            if idx.ndim != 1:
                raise DatasetError(f"{p}: expected a 1-d array, found shape {tuple(idx.shape)}")
            if idx.size == 0:
                continue
            lo, hi = index_range(idx)
            if lo < 0 or hi >= n_labelled:
                what = f"ids of type {schema.target!r}" if schema.hetero else "node ids"
                raise DatasetError(f"{p}: expected {what} in [0, {n_labelled}), found values in [{lo}, {hi}]")
            assert seen is not None
            idx_arr = np.asarray(idx)
            if np.unique(idx_arr).size != idx_arr.size:
                raise DatasetError(f"{p}: expected distinct node ids, found duplicates")
            overlap = int(seen[idx_arr].sum())
            if overlap:
                raise DatasetError(f"{p}: expected splits to be disjoint, found {overlap} ids also in an earlier split")
            seen[idx_arr] = True

    @staticmethod
    def _validate_finite(p: Path, table: np.ndarray) -> None:
        found = find_non_finite(table)
        if found is not None:
            row, sampled = found
            how = f" (sampled {SAMPLE_BLOCKS} blocks of {SAMPLE_BLOCK_BYTES >> 20} MiB)" if sampled else ""
            raise DatasetError(
                f"{p}: expected finite feature values, found NaN/Inf in row {row}{how}; "
                "re-import with {non_finite=replace}",
                options=("non_finite",),
            )

    def _validate_relations(self) -> None:
        """Every relation's sources lie in its source type's global id range."""
        p = self.path / "indices.npy"
        for rel in self.schema.relations:
            indptr, sources = self.relation_csc(rel)
            found = int(indptr[-1] - indptr[0])
            if found != rel.num_edges:
                raise DatasetError(
                    f"{self.path / 'indptr.npy'}: relation {rel}: expected {rel.num_edges} edges, found {found}"
                )
            if sources.size == 0:
                continue
            src = self.schema.node_type(rel.src)
            lo, hi = index_range(sources)
            if lo < src.offset or hi >= src.stop:
                raise DatasetError(
                    f"{p}: relation {rel}: expected source ids of type {rel.src!r} in [{src.offset}, {src.stop}) "
                    f"(local [0, {src.count})), found values in [{lo}, {hi}]"
                )

    def _validate_perm(self, p: Path, perm: np.ndarray) -> None:
        """``perm.npy`` (a reorder's new id -> original id) must be a permutation of ``[0, N)``."""
        n = self.num_nodes
        _expect(p, "dtype", "int64", str(perm.dtype))
        _expect(p, "shape", (n,), tuple(perm.shape))
        check_permutation(p, perm, n)


def _recover(root: Path) -> bool:
    """Put back a dataset that a writer killed in the middle of replacing it had moved aside (see
    :mod:`graphtier.dataset.swap`); True when ``root`` is a directory now."""
    try:
        return swap.recover(Path(os.path.realpath(root))) and root.is_dir()
    except OSError:
        return False


def read_meta(root: Path) -> dict[str, Any]:
    """Read and check ``root/meta.json``; raise :class:`DatasetError` naming the field on a problem."""
    path = root / META_FILE
    if not path.is_file():
        raise DatasetError(f"{path}: file missing (is {root} a graphtier dataset?)")
    try:
        meta = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise DatasetError(f"{path}: expected a JSON object, found {type(meta).__name__}")
    for key in REQUIRED_META_FIELDS:
        if key not in meta:
            raise DatasetError(f"{path}: field {key!r} missing")
    if meta["format_version"] != FORMAT_VERSION:
        raise DatasetError(
            f"{path}: field 'format_version' expected {FORMAT_VERSION}, found {meta['format_version']!r}"
        )
    for key in ("num_nodes", "num_edges", "feature_dim", "num_classes"):
        value = meta[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise DatasetError(f"{path}: field {key!r} expected a non-negative integer, found {value!r}")
    if meta["feature_dim"] > 0 and meta["feature_dtype"] not in FEATURE_DTYPES:
        raise DatasetError(
            f"{path}: field 'feature_dtype' expected one of {', '.join(FEATURE_DTYPES)}, "
            f"found {meta['feature_dtype']!r}"
        )
    return meta
