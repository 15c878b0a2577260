"""Import a heterogeneous graph described by a manifest: ``graphtier prepare manifest FILE OUTPUT``.

The manifest (JSON, or YAML for ``.yaml``/``.yml``; modelled on GraphBolt's ``OnDiskDataset`` metadata)::

    {"name": "acm",
     "nodes": {"paper":   {"count": 4019, "features": "p_feat.npz", "labels": "labels.npy"},
               "author":  {"count": 7167},
               "subject": {"count": 60}},
     "edges": [{"type": ["paper", "written_by", "author"], "path": "pa.txt"},
               {"type": ["paper", "about", "subject"],     "path": "ps.txt"}],
     "target": "paper",
     "split": {"train": "train_20.npy", "valid": "val_20.npy", "test": "test_20.npy"}}

Node types are numbered in the order listed. ``count`` may be left out when the type has ``features`` (the
rows). ``features`` is one file or a list of files stacked by rows (see
:mod:`~graphtier.dataset.importers.assemble.typed_files` for the formats). ``labels`` and ``split`` belong to the
``target`` type (default: the one type with labels). An edge file lists ``src dst`` pairs in LOCAL ids of the
relation's source and destination types. Instead of (or beside) ``edges``, ``adjacency`` gives one adjacency
over global ids with a type id per node (MAGNN's IMDB shape; :mod:`~graphtier.dataset.importers.assemble.global_adjacency`):
``nodes`` then needs no ``count``, and the split files hold global ids unless ``"ids": "local"`` is in
``split``. An edge entry's optional ``"time"`` (a column index >= 2, or a header name, of a text edge file) gives
each edge's integer time (``edge_time.npy``; every relation then needs one); its optional ``"features"`` (a list of
columns of the text edge file, or an ``.npy`` [E_rel, d] aligned with the file's rows) and ``"label"`` (a column)
give each edge's features and target (``edge_feat.npy``, ``edge_label.npy``; every relation then needs the same). Paths are absolute or relative to the
manifest, and may be ``PATH:KEY`` (a member of an ``.npz`` or a variable of a ``.mat``). Unknown keys, unknown
types and missing files are one-line errors naming the manifest and the key.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble.global_adjacency import (
    ADJACENCY_KEYS,
    AdjacencySpec,
    read_global_types,
    split_adjacency,
)
from graphtier.dataset.importers.assemble.options import MANIFEST_FIELDS, ImportOptions
from graphtier.dataset.importers.assemble.typed_files import (
    SPLIT_NAMES,
    TypedImport,
    check_split_ids,
    finish_typed_import,
    read_local_ids,
    read_relation_edges,
    read_type_features,
    read_type_labels,
)
from graphtier.dataset.importers.assemble.typed_graph import TypedNodes
from graphtier.dataset.importers.common import textio
from graphtier.dataset.importers.common.members import file_or_member
from graphtier.dataset.importers.split.typed_holdout import TypedSplit
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError

TOP_KEYS = ("name", "nodes", "edges", "adjacency", "target", "split")
NODE_KEYS = ("count", "features", "labels")
EDGE_KEYS = ("type", "path", "time", "features", "label")
YAML_SUFFIXES = (".yaml", ".yml")


class Manifest:
    """A parsed and checked manifest: node type entries in order, relations, target, split files.

    Files are resolved (relative to the manifest's folder) and checked to exist; their contents are read
    by :func:`import_manifest`.
    """

    def __init__(self, path: Path, raw: Any) -> None:
        self.path = path
        self.base = path.parent
        if not isinstance(raw, dict):
            self.fail("", "an object with 'nodes' and 'edges'", type(raw).__name__)
        self._keys(raw, TOP_KEYS, "")
        self.name: str | None = None if raw.get("name") is None else str(raw["name"])
        self.adjacency = None if raw.get("adjacency") is None else self._adjacency(raw["adjacency"])
        nodes = raw.get("nodes", {} if self.adjacency is not None else None)
        if not isinstance(nodes, dict) or not (nodes or self.adjacency):
            self.fail("nodes", "an object of node types {name: {count, features, labels}}", _kind(nodes))
        self.counts: dict[str, int | None] = dict.fromkeys(self.adjacency.type_names) if self.adjacency else {}
        self.features: dict[str, list[Path]] = {}
        self.labels: dict[str, Path] = {}
        for type_name, entry in nodes.items():
            key = f"nodes.{type_name}"
            if self.adjacency is not None and type_name not in self.counts:
                self.fail(key, f"a type of adjacency.type_names ({', '.join(self.counts)})", repr(type_name))
            if not isinstance(entry, dict):
                self.fail(key, "an object {count, features, labels}", _kind(entry))
            self._keys(entry, NODE_KEYS, key)
            count = entry.get("count")
            if count is not None and (not isinstance(count, int) or isinstance(count, bool) or count < 0):
                self.fail(f"{key}.count", "a non-negative integer", repr(count))
            if "features" in entry:
                files = entry["features"] if isinstance(entry["features"], list) else [entry["features"]]
                if not files:
                    self.fail(f"{key}.features", "a file or a non-empty list of files", "[]")
                self.features[type_name] = [self.file(f"{key}.features", f) for f in files]
            elif count is None and self.adjacency is None:
                self.fail(f"{key}.count", "a node count (or 'features' to count the rows)", "neither")
            if "labels" in entry:
                self.labels[type_name] = self.file(f"{key}.labels", entry["labels"])
            self.counts[type_name] = count
        known = {t: c for t, c in self.counts.items() if c is not None}
        resources.require_type_capacity(known, f"{self.path}: nodes")
        edges = raw.get("edges", [] if self.adjacency is not None else None)
        if not isinstance(edges, list) or not (edges or self.adjacency):
            self.fail("edges", "a list of relations [{type: [src, name, dst], path}]", _kind(edges))
        self.relations: list[tuple[tuple[str, str, str], Path]] = []
        self.relation_times: list[int | str | None] = []
        """Each relation's ``time``: the column of its edge file holding each edge's integer time, or None."""
        self.relation_columns: list[tuple[list[int | str] | Path | None, int | str | None]] = []
        """Each relation's ``(features, label)``: feature columns of its text edge file or an ``.npy`` [E_rel, d]
        aligned with its rows, and the label column; None when absent."""
        for i, entry in enumerate(edges):
            key = f"edges[{i}]"
            if not isinstance(entry, dict):
                self.fail(key, "an object {type, path}", _kind(entry))
            self._keys(entry, EDGE_KEYS, key)
            rel = entry.get("type")
            if not isinstance(rel, list) or len(rel) != 3 or not all(isinstance(x, str) for x in rel):
                self.fail(f"{key}.type", "[src_type, relation, dst_type]", repr(rel))
            for end in (rel[0], rel[2]):
                if end not in self.counts:
                    self.fail(f"{key}.type", f"node types of 'nodes' ({', '.join(self.counts)})", repr(end))
            if "path" not in entry:
                self.fail(f"{key}.path", "the relation's edge file", "none")
            self.relations.append(((rel[0], rel[1], rel[2]), self.file(f"{key}.path", entry["path"])))
            time = entry.get("time")
            if time is not None and (isinstance(time, bool) or not isinstance(time, (int, str))):
                self.fail(f"{key}.time", "a column index (2 or more) or a header name", repr(time))
            self.relation_times.append(time)
            self.relation_columns.append(self._edge_columns(entry, key))
        self.target = self._target(raw.get("target"))
        self.global_split_ids = False
        self.splits = self._splits(raw.get("split"))

    def _edge_columns(self, entry: dict[str, Any], key: str) -> tuple[list[int | str] | Path | None, int | str | None]:
        features, label = entry.get("features"), entry.get("label")
        if features is not None:
            if isinstance(features, str):
                features = self.file(f"{key}.features", features)
            elif not (
                isinstance(features, list)
                and features
                and all(isinstance(c, (int, str)) and not isinstance(c, bool) for c in features)
            ):
                self.fail(
                    f"{key}.features",
                    "a list of columns (indexes >= 2 or header names) or an .npy file",
                    repr(features),
                )
        if label is not None and (isinstance(label, bool) or not isinstance(label, (int, str))):
            self.fail(f"{key}.label", "a column index (2 or more) or a header name", repr(label))
        return features, label

    def _target(self, value: Any) -> str:
        if value is not None and value not in self.counts:
            self.fail("target", f"a node type of 'nodes' ({', '.join(self.counts)})", repr(value))
        labelled = list(self.labels)
        target = value if value is not None else labelled[0] if len(labelled) == 1 else next(iter(self.counts))
        if value is None and len(labelled) > 1:
            self.fail(
                "target", f"the node type the labels belong to (several have labels: {', '.join(labelled)})", "none"
            )
        for type_name in labelled:
            if type_name != target:
                self.fail(f"nodes.{type_name}.labels", f"labels on the target type {target!r} only", type_name)
        return str(target)

    def _splits(self, value: Any) -> dict[str, Path]:
        if value is None:
            if self.target in self.labels:
                self.fail(
                    f"nodes.{self.target}.labels", "a 'split' {train, valid, test} of the labelled type", "no split"
                )
            return {}
        if not isinstance(value, dict):
            self.fail("split", "an object {train, valid, test} of files", _kind(value))
        self._keys(value, SPLIT_NAMES + ("ids",), "split")
        if self.target not in self.labels:
            self.fail("split", f"labels on the target type {self.target!r} (nodes.{self.target}.labels)", "none")
        ids = value.get("ids", "global" if self.adjacency is not None else "local")
        if ids not in ("global", "local") or (ids == "global" and self.adjacency is None):
            allowed = "'global' or 'local'" if self.adjacency is not None else "'local' (no adjacency)"
            self.fail("split.ids", allowed, repr(ids))
        self.global_split_ids = ids == "global"
        return {name: self.file(f"split.{name}", path) for name, path in value.items() if name != "ids"}

    def _adjacency(self, value: Any) -> AdjacencySpec:
        if not isinstance(value, dict):
            self.fail("adjacency", "an object {path, node_types, type_names}", _kind(value))
        self._keys(value, ADJACENCY_KEYS, "adjacency")
        names = value.get("type_names")
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            self.fail("adjacency.type_names", "the node type names in type-id order", repr(names))
        if len(set(names)) != len(names):
            self.fail("adjacency.type_names", "distinct names", repr(names))
        for key in ("path", "node_types"):
            if key not in value:
                self.fail(f"adjacency.{key}", "a file", "none")
        relation_names: dict[tuple[str, str], str] = {}
        for i, rel in enumerate(value.get("relations") or []):
            if not isinstance(rel, list) or len(rel) != 3 or not all(isinstance(x, str) for x in rel):
                self.fail(f"adjacency.relations[{i}]", "[src_type, relation, dst_type]", repr(rel))
            if rel[0] not in names or rel[2] not in names:
                self.fail(f"adjacency.relations[{i}]", f"types of type_names ({', '.join(names)})", repr(rel))
            relation_names[(rel[0], rel[2])] = rel[1]
        return AdjacencySpec(
            self.file("adjacency.path", value["path"]),
            self.file("adjacency.node_types", value["node_types"]),
            list(names),
            relation_names,
        )

    def _keys(self, entry: dict[str, Any], allowed: Sequence[str], key: str) -> None:
        unknown = [k for k in entry if k not in allowed]
        if unknown:
            self.fail(
                key or "(top level)", f"keys among {', '.join(allowed)}", f"unknown {', '.join(map(repr, unknown))}"
            )

    def file(self, key: str, value: Any) -> Path:
        """The existing file ``value`` names (relative to the manifest's folder); ``PATH:KEY`` names a member
        of an ``.npz`` or a ``.mat`` (:func:`~graphtier.dataset.importers.common.members.file_or_member`)."""
        if not isinstance(value, str) or not value:
            self.fail(key, "a file path", repr(value))
        path = file_or_member(value if os.path.isabs(value) else self.base / value)
        if not path.is_file():
            self.fail(key, "an existing file", f"{path} (not found)" if not path.exists() else f"{path} (not a file)")
        return path

    def fail(self, key: str, expected: str, found: str) -> Any:
        raise DatasetError(f"{self.path}: {key}: expected {expected}, found {found}")

    def inputs(self) -> list[Path]:
        """Every file the manifest names, the manifest first."""
        files = [self.path] + [f for paths in self.features.values() for f in paths] + list(self.labels.values())
        if self.adjacency is not None:
            files += [self.adjacency.path, self.adjacency.node_types]
        feature_files = [f for f, _ in self.relation_columns if isinstance(f, Path)]
        return files + [p for _, p in self.relations] + feature_files + list(self.splits.values())


def _kind(value: Any) -> str:
    return "nothing" if value is None else type(value).__name__


def _load_yaml(path: Path, text: str) -> Any:
    """The plain data of the YAML manifest ``text`` (of ``path``), read with ``yaml.safe_load`` only: a tag that
    would build a Python object (``!!python/object/apply:...``) is refused, never run. PyYAML is imported here,
    not with graphtier, so only a YAML manifest needs it."""
    try:
        import yaml
    except ImportError:
        raise DatasetError(
            f"{path}: reading a YAML manifest needs PyYAML, which is not installed (pip install pyyaml), "
            "or write the manifest as JSON"
        ) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DatasetError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None


def read_manifest(path: str | os.PathLike[str]) -> Manifest:
    """Parse and check the manifest ``path`` (JSON, or YAML by suffix); nothing is read from its files yet."""
    p = textio.require_file(path, "manifest")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{p}: cannot read the manifest ({exc})") from None
    if p.suffix.lower() in YAML_SUFFIXES:
        raw = _load_yaml(p, text)
    else:
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{p}: not valid JSON ({exc}); a YAML manifest needs a .yaml suffix") from None
    return Manifest(p, raw)


def import_manifest(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    name: str | None = None,
    overwrite: bool = False,
    add_reverse: bool = False,
    options: ImportOptions | None = None,
    progress: Progress = NO_PROGRESS,
    **option_values: Any,
) -> Dataset:
    """Import the heterogeneous graph the manifest ``source`` describes into the dataset directory ``output``.

    Args:
        source: the manifest file (see the module).
        output: dataset directory to create (replaced only with ``overwrite``).
        name: dataset name (default: the manifest's ``name``, else the output directory's name).
        add_reverse: add ``(dst, rev_<name>, src)`` for every relation.
        options, option_values: the shared :class:`ImportOptions`; a manifest takes :data:`MANIFEST_FIELDS`:
            ``non_finite`` (``error`` refuses NaN/Inf feature values, ``replace`` sets them to 0) and the link split
            of one relation (``edge_split``, ``split_relation``, ``eval_negatives``, ``seed``, and ``split_by``
            ``time`` for a chronological split of a relation with ``time``; :mod:`graphtier.dataset.importers.split.typed_holdout`).
        progress: reports reading the edge files, building the CSC and validating.

    Returns:
        The written :class:`Dataset` (``dataset.schema`` lists the types and relations).
    """
    options = ImportOptions.of(options, option_values)
    options.check_accepted(MANIFEST_FIELDS, "manifest")
    non_finite = options.non_finite
    manifest = read_manifest(source)
    nodes = None
    if manifest.adjacency is not None:
        nodes = read_global_types(manifest.adjacency, "adjacency.node_types")
        for (type_name, count), found in zip(manifest.counts.items(), nodes.counts, strict=True):
            if count is not None and count != found:
                manifest.fail(f"nodes.{type_name}.count", f"{found} (the {type_name} nodes of node_types)", count)
            manifest.counts[type_name] = found
    with DatasetWriter(output, overwrite=overwrite) as writer:
        types: list[TypedNodes] = []
        guards = []
        for type_name, count in manifest.counts.items():
            features = None
            if type_name in manifest.features:
                features, guard = read_type_features(
                    manifest.features[type_name], f"nodes.{type_name}.features", writer.tmp, count, non_finite
                )
                guards.append(guard)
                count = int(features.shape[0])
            types.append(TypedNodes(type_name, int(count), features))  # type: ignore[arg-type]
        counts = {t.name: t.count for t in types}
        target_count = counts[manifest.target]
        labels = None
        if manifest.target in manifest.labels:
            labels = read_type_labels(manifest.labels[manifest.target], target_count, f"nodes.{manifest.target}.labels")
        splits = {
            split: read_local_ids(path, target_count, f"split.{split}", manifest.target)
            if nodes is None or not manifest.global_split_ids
            else nodes.to_local(
                read_local_ids(path, nodes.types.size, f"split.{split}", "global"), manifest.target, f"{path}: split"
            )
            for split, path in manifest.splits.items()
        }
        if splits and manifest.global_split_ids:
            writer.source_notes["split"] = (
                f"the split files hold global ids of the adjacency, converted to {manifest.target}'s local ids"
            )
        check_split_ids(splits, manifest.splits)
        relations = (
            [] if nodes is None else split_adjacency(manifest.adjacency, nodes, "adjacency", writer.tmp)  # type: ignore[arg-type]
        )
        relations += [
            read_relation_edges(
                path,
                rel,
                f"edges[{i}]",
                writer.tmp,
                progress,
                time,
                columns=columns,
                non_finite=non_finite,
                notes=writer,
            )
            for i, ((rel, path), time, columns) in enumerate(
                zip(manifest.relations, manifest.relation_times, manifest.relation_columns, strict=True)
            )
        ]
        data = TypedImport(types, relations, manifest.target, labels, splits, manifest.inputs())
        return finish_typed_import(
            writer,
            data,
            name=name or manifest.name,
            importer="manifest",
            add_reverse=add_reverse,
            options={"manifest": str(manifest.path.resolve()), **options.to_meta(MANIFEST_FIELDS)},
            guards=guards,
            progress=progress,
            link=None
            if options.edge_split is None
            else TypedSplit(
                options.edge_split,
                options.split_relation,
                options.seed,
                options.eval_negatives,
                split_by=options.split_by,
            ),  # fmt: skip
        )
