"""Import OGB's heterogeneous raw layout (ogbn-mag) through ``graphtier prepare ogb SOURCE OUTPUT``.

Detected by ``raw/num-node-dict.csv.gz`` (:func:`is_hetero_layout`)::

    raw/num-node-dict.csv.gz                          a header of type names, then one line of their counts
    raw/relations/<src>___<rel>___<dst>/edge.csv.gz   "src,dst" per line, local ids of src and dst
    raw/relations/<...>/num-edge-list.csv.gz          the edge count (optional; checked when present)
    raw/node-feat/<type>/node-feat.csv.gz             count(type) lines of D floats (optional)
    raw/node-label/<type>/node-label.csv.gz           count(type) lines, one label each (the target type)
    raw/node_year/<type>/node_year.csv.gz             count(type) lines, one integer year each (optional;
                                                      ogbn-mag's papers): node_time.npy, a type without years
                                                      at the earliest year, each edge at its later end's year
    split/<scheme>/<target>/{train,valid,test}.csv.gz one local id per line (optional)

Node types are numbered in ``num-node-dict``'s order, relations in folder-name order; the target is the type
with labels. Every file may also be uncompressed (``.csv``). Other files (``edge_reltype``) are not needed and not
read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.edges.edge_time import EDGE_TIME
from graphtier.dataset.edges.node_time import NODE_TIME, edge_times_from_nodes, node_time_meta
from graphtier.dataset.finite import NonFiniteGuard
from graphtier.dataset.format import Dataset
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
from graphtier.dataset.importers.formats.ogb_files import choose_scheme, find_raw, read_node_years, read_single_int
from graphtier.dataset.schema import Schema
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError

RELATION_SEPARATOR = "___"


def is_hetero_layout(root: Path) -> bool:
    """Whether the OGB folder ``root`` holds the heterogeneous raw layout (``raw/num-node-dict.csv[.gz]``)."""
    return find_raw(root / "raw", "num-node-dict", required=False) is not None


def read_num_node_dict(path: Path) -> dict[str, int]:
    """``{type: count}`` of ``num-node-dict``: a header line of type names and one line of counts."""
    lines = textio.first_data_lines(path, 3)
    if len(lines) != 2:
        raise DatasetError(f"{path}: expected two lines (type names, then their counts), found {len(lines)}")
    names = [n.strip() for n in lines[0].split(",")]
    try:
        counts = [int(c) for c in lines[1].split(",")]
    except ValueError:
        raise DatasetError(f"{path}: expected integer counts on line 2, found {lines[1]!r}") from None
    if len(names) != len(counts) or any(c < 0 for c in counts):
        raise DatasetError(f"{path}: expected one non-negative count per type {names}, found {counts}")
    return dict(zip(names, counts, strict=True))


def _relation_folders(raw: Path, counts: dict[str, int]) -> list[tuple[tuple[str, str, str], Path]]:
    folder = raw / "relations"
    if not folder.is_dir():
        raise DatasetError(f"{folder}: folder not found (OGB heterogeneous layout: relations/<src>___<rel>___<dst>)")
    found = []
    for entry in sorted(p for p in folder.iterdir() if p.is_dir()):
        parts = entry.name.split(RELATION_SEPARATOR)
        if len(parts) != 3 or not all(parts):
            raise DatasetError(f"{entry}: expected a folder named <src>___<relation>___<dst>, found {entry.name!r}")
        for end in (parts[0], parts[2]):
            if end not in counts:
                raise DatasetError(
                    f"{entry}: relation {tuple(parts)}: unknown node type {end!r} (num-node-dict: {', '.join(counts)})"
                )
        found.append(((parts[0], parts[1], parts[2]), entry))
    if not found:
        raise DatasetError(f"{folder}: expected relation folders <src>___<rel>___<dst>, found none")
    return found


def _per_type(raw: Path, kind: str, counts: dict[str, int]) -> dict[str, Path]:
    """``raw/<kind>/<type>/<kind>.csv[.gz]`` of the types that have it; an unknown type folder is an error."""
    folder = raw / kind
    if not folder.is_dir():
        return {}
    found = {}
    for entry in sorted(p for p in folder.iterdir() if p.is_dir()):
        if entry.name not in counts:
            raise DatasetError(f"{entry}: unknown node type {entry.name!r} (num-node-dict: {', '.join(counts)})")
        path = find_raw(entry, kind, required=False)
        if path is not None:
            found[entry.name] = path
    return found


def import_ogb_hetero(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    name: str | None = None,
    overwrite: bool = False,
    scheme: str | None = None,
    add_reverse: bool = False,
    non_finite: str = "error",
    progress: Progress = NO_PROGRESS,
) -> Dataset:
    """Import the OGB heterogeneous dataset folder ``source`` (see the module) into ``output``.

    ``scheme``: the split folder under ``split/`` (default: the only one); ``add_reverse`` adds
    ``(dst, rev_<name>, src)`` per relation; ``non_finite``: ``error`` or ``replace`` NaN/Inf features;
    ``progress`` reports reading the edges, building the CSC and validating.
    """
    root = Path(source)
    raw = root / "raw"
    count_path = find_raw(raw, "num-node-dict", required=True)
    assert count_path is not None
    counts = read_num_node_dict(count_path)
    relation_dirs = _relation_folders(raw, counts)
    feature_paths = _per_type(raw, "node-feat", counts)
    label_paths = _per_type(raw, "node-label", counts)
    year_paths = _per_type(raw, "node_year", counts)
    if len(label_paths) > 1:
        raise DatasetError(
            f"{raw / 'node-label'}: expected labels for one node type (the target), found {', '.join(label_paths)}"
        )
    target = next(iter(label_paths), next(iter(counts)))
    scheme_dir = choose_scheme(root, scheme)
    split_paths: dict[str, Path] = {}
    if scheme_dir is not None:
        for split in SPLIT_NAMES:
            path = find_raw(scheme_dir / target, split, required=True)
            assert path is not None
            split_paths[split] = path
    inputs: list[Path] = [count_path]
    with DatasetWriter(output, overwrite=overwrite) as writer:
        types, guards = [], []
        for type_name, count in counts.items():
            features = None
            if type_name in feature_paths:
                inputs.append(feature_paths[type_name])
                guard: NonFiniteGuard
                features, guard = read_type_features(
                    [feature_paths[type_name]], f"node type {type_name!r} features", writer.tmp, count, non_finite
                )
                guards.append(guard)
            types.append(TypedNodes(type_name, count, features))
        relations = []
        for rel, folder in relation_dirs:
            edge_path = find_raw(folder, "edge", required=True)
            assert edge_path is not None
            edges = read_relation_edges(edge_path, rel, folder.name, writer.tmp, progress)
            count_file = find_raw(folder, "num-edge-list", required=False)
            if count_file is not None:
                expected = read_single_int(count_file)
                if expected != edges.num_edges:
                    raise DatasetError(
                        f"{edge_path}: relation {rel}: expected {expected} edges ({count_file.name}), "
                        f"found {edges.num_edges}"
                    )
            inputs.append(edge_path)
            relations.append(edges)
        labels = None
        if target in label_paths:
            inputs.append(label_paths[target])
            labels = read_type_labels(label_paths[target], counts[target], f"node type {target!r} labels")
        splits: dict[str, np.ndarray] = {
            split: read_local_ids(path, counts[target], f"split {split}", target) for split, path in split_paths.items()
        }
        check_split_ids(splits, split_paths)
        inputs += list(split_paths.values())
        years = {t: read_node_years(path, counts[t]) for t, path in year_paths.items()}
        inputs += list(year_paths.values())
        data = TypedImport(types, relations, target, labels, splits, inputs)
        return finish_typed_import(
            writer,
            data,
            name=name,
            importer="ogb",
            add_reverse=add_reverse,
            options={"scheme": scheme_dir.name if scheme_dir is not None else None, "non_finite": non_finite},
            guards=guards,
            progress=progress,
            before_finish=(lambda meta: _write_node_times(writer, meta, years)) if years else None,
        )


def _write_node_times(writer: DatasetWriter, meta: dict[str, Any], years: dict[str, np.ndarray]) -> dict[str, Any]:
    """``node_time.npy`` (global ids; a type without years at the earliest year given) and ``edge_time.npy`` (each
    edge at its later end's year) of the written typed graph, with their ``meta.json`` entries."""
    schema = Schema.from_meta(meta, writer.output)
    earliest = min(int(y.min()) for y in years.values() if y.size) if any(y.size for y in years.values()) else 0
    node_time = np.full(schema.num_nodes, earliest, np.int64)
    for kind in schema.node_types:
        if kind.name in years:
            node_time[kind.offset : kind.offset + kind.count] = years[kind.name]
    indptr = np.load(writer.path("indptr"), mmap_mode="r", allow_pickle=False)
    indices = np.load(writer.path("indices"), mmap_mode="r", allow_pickle=False)
    writer.save(NODE_TIME, node_time)
    writer.save(EDGE_TIME, edge_times_from_nodes(indptr, indices, node_time, schema))
    return {**meta, NODE_TIME: node_time_meta(node_time, "year"), EDGE_TIME: {"unit": "year"}}
