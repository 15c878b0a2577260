"""The common end of every importer: node data (labels, features, splits), ``meta.json`` fields and provenance,
then validation and the atomic rename by the writer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import provenance as prov
from graphtier.dataset.edges.edge_data import EdgeColumns, write_edge_columns
from graphtier.dataset.edges.edge_time import EDGE_TIME, finish_edge_time
from graphtier.dataset.edges.edge_time import META_KEY as EDGE_TIME_META
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble.options import EDGE_FORMAT_FIELDS, ImportOptions
from graphtier.dataset.importers.common import node_data
from graphtier.dataset.importers.common.edges import BuiltCsc, EdgeChunks, EdgeCounts, EdgeSpill, IdMap, build_csc
from graphtier.dataset.importers.common.features import synthetic_features, write_feature_file
from graphtier.dataset.importers.common.labels import Labels
from graphtier.dataset.importers.split.holdout import split_written_graph
from graphtier.dataset.importers.split.link_files import split_written_graph_from_files
from graphtier.dataset.importers.split.pair_files import IdLookup
from graphtier.dataset.importers.split.splits import random_split, save_splits
from graphtier.dataset.importers.split.time_holdout import split_written_graph_by_time
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import OptionError

# ---------------------------------------------------------------------------- meta


def default_name(output: str | os.PathLike[str]) -> str:
    """The default dataset name: the name of the output directory (``data/acm`` -> ``acm``)."""
    return Path(output).name or Path(output).resolve().name


@dataclass
class NodeData:
    """What :func:`write_node_data` wrote, for ``meta.json``."""

    feature_dim: int
    feature_dtype: str
    num_classes: int
    provenance: dict[str, Any]


def dataset_meta(
    *,
    name: str,
    num_nodes: int,
    num_edges: int,
    directed: bool,
    feature_dim: int,
    feature_dtype: str,
    num_classes: int,
    importer: str,
    inputs: Sequence[str | os.PathLike[str]],
    options: dict[str, Any],
    provenance: dict[str, Any] | None = None,
    nodes_only_in_node_data: int = 0,
    edge_counts: EdgeCounts | None = None,
) -> dict[str, Any]:
    """The ``meta.json`` fields every importer fills (``node_order`` is set by the writer).

    ``provenance`` says whether features and labels are input or synthetic (see
    :mod:`graphtier.dataset.provenance`); ``nodes_only_in_node_data`` counts nodes that only a
    features/labels file knows (no edge), recorded when positive. ``edge_counts`` (what the CSC
    build did) goes to ``source.edges`` and its ``symmetric`` to the top-level ``symmetric``.
    """

    meta: dict[str, Any] = {
        "name": name,
        "num_nodes": int(num_nodes),
        "num_edges": int(num_edges),
        "directed": bool(directed),
        "feature_dim": int(feature_dim),
        "feature_dtype": feature_dtype if feature_dim > 0 else "float32",
        "num_classes": int(num_classes),
        "source": {
            "importer": importer,
            "inputs": [str(Path(p).resolve()) for p in inputs],
            "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in options.items()},
        },
        "provenance": provenance
        or {
            "features": prov.input_data() if feature_dim > 0 else prov.no_data(),
            "labels": prov.input_data() if num_classes > 0 else prov.no_data(),
        },
    }
    if nodes_only_in_node_data > 0:
        meta["nodes_only_in_node_data"] = int(nodes_only_in_node_data)
    if edge_counts is not None:
        meta["symmetric"] = bool(edge_counts.symmetric)
        meta["source"]["edges"] = edge_counts.as_meta()
    return meta


def save_spilled_csc(
    writer: DatasetWriter,
    spill: EdgeSpill,
    chunks: EdgeChunks,
    num_nodes: int,
    options: ImportOptions,
    progress: Progress,
    *,
    timed: bool,
    columns: EdgeColumns | None,
    where: str = "",
) -> tuple[BuiltCsc, dict[str, Any]]:
    """Build the CSC graph of the edges of ``spill`` (read through ``chunks``: (src, dst[, time]) int64 [K]
    chunks of ``num_nodes`` dense ids), remove the spill and write ``indptr.npy``, ``indices.npy``, the edge times
    (``timed``) and the per-edge ``columns`` (``where`` names them in errors).

    Returns:
        The :class:`BuiltCsc` (indptr int64 [N + 1], indices [E'], counts) and the ``meta.json`` entries of the
        edge columns (empty without ``columns``).
    """
    built = build_csc(
        chunks,
        num_nodes,
        undirected=options.undirected,
        keep_duplicates=options.keep_duplicates,
        drop_self_loops=options.drop_self_loops,
        progress=progress,
        num_input_edges=spill.num_edges,
        timed=timed,
        rows=columns is not None,
    )
    spill.remove()
    writer.save("indptr", built.indptr)
    writer.save("indices", built.indices)
    if built.edge_time is not None:
        writer.save(EDGE_TIME, built.edge_time)
    edge_meta = write_edge_columns(writer, [(columns, built.edge_row)], where) if columns is not None else {}
    if columns is not None:
        columns.remove()
    return built, edge_meta


def finish_edge_import(
    writer: DatasetWriter,
    idmap: IdMap,
    *,
    importer: str,
    source: Path,
    name: str | None,
    num_edges: int,
    labels: Labels | None,
    options: ImportOptions,
    format_options: dict[str, Any],
    features: np.ndarray | Any | None = None,
    edge_counts: EdgeCounts | None = None,
    progress: Progress = NO_PROGRESS,
    edge_time_unit: str | None = None,
    edge_meta: dict[str, Any] | None = None,
) -> Dataset:
    """The common end of the edge-list-like importers: node data, ``meta.json``, validate and rename.

    ``features``: the feature rows already read (from ``options.features`` or the input itself), or
    None; ``format_options``: the ``meta.json`` ``source.options`` entries of the format's own options;
    ``progress``: reports copying the features and validating (:func:`write_node_data`, :func:`finish_dataset`);
    ``edge_time_unit``: the unit of the edge times the importer wrote (``edge_time.npy``), for ``meta.json``;
    ``edge_meta``: the ``meta.json`` entries of the edge features and label it wrote
    (:func:`~graphtier.dataset.edges.edge_data.write_edge_columns`).
    """
    written = write_node_data(writer, idmap, labels=labels, features=features, options=options, progress=progress)
    meta = dataset_meta(
        name=name or default_name(writer.output),
        num_nodes=idmap.num_nodes,
        num_edges=num_edges,
        directed=not options.undirected,
        feature_dim=written.feature_dim,
        feature_dtype=written.feature_dtype,
        num_classes=written.num_classes,
        importer=importer,
        inputs=[p for p in (source, options.labels, options.features) if p is not None],
        options={**format_options, **options.to_meta(EDGE_FORMAT_FIELDS)},
        provenance=written.provenance,
        nodes_only_in_node_data=idmap.nodes_only_in_node_data,
        edge_counts=edge_counts,
    )
    if edge_time_unit is not None:
        meta[EDGE_TIME_META] = {"unit": edge_time_unit}
    meta.update(edge_meta or {})
    return finish_dataset(writer, meta, options, lookup=None if idmap.is_identity else idmap.lookup, progress=progress)


def finish_dataset(
    writer: DatasetWriter,
    meta: dict[str, Any],
    options: ImportOptions,
    *,
    lookup: IdLookup | None = None,
    progress: Progress = NO_PROGRESS,
) -> Dataset:
    """The last step of every importer: the edge split of ``options.edge_split`` (if any) on the graph
    ``writer`` wrote (:func:`~graphtier.dataset.importers.split.holdout.split_written_graph`; with ``options.split_by``
    ``time``: :func:`~graphtier.dataset.importers.split.time_holdout.split_written_graph_by_time`), or of
    ``options.edge_split_files`` read through the id map ``lookup`` (None: ids are node ids;
    :func:`~graphtier.dataset.importers.split.link_files.split_written_graph_from_files`), the edge time order
    (:func:`~graphtier.dataset.edges.edge_time.finish_edge_time`, when the importer wrote ``edge_time.npy``), then
    ``writer.finish(meta)`` (validate and rename; ``progress`` reports the validation)."""
    split = split_written_graph_by_time if options.split_by == "time" else split_written_graph
    meta = split(writer, meta, options.edge_split, seed=options.seed, eval_negatives=options.eval_negatives)
    meta = split_written_graph_from_files(
        writer,
        meta,
        options.edge_split_files,
        lookup=lookup,
        eval_negatives=options.eval_negatives,
        seed=options.seed,
    )
    meta = finish_edge_time(writer, meta)
    return writer.finish(meta, progress=progress)


def write_node_data(
    writer: DatasetWriter,
    idmap: IdMap,
    *,
    labels: Labels | None,
    features: np.ndarray | Any | None,
    options: ImportOptions,
    progress: Progress = NO_PROGRESS,
) -> NodeData:
    """Write labels, features (the rows read from a file or the input, else synthetic) and a random split
    for ``idmap.num_nodes`` nodes, as ``options`` say.

    ``options.synthetic_labels`` K > 0 generates uniformly random labels for an unlabelled graph;
    synthetic features (``options.synthetic_features`` D > 0) are pure noise unless
    ``options.synthetic_feature_signal`` > 0.
    ``progress`` reports copying or generating the features (rows).
    Returns the :class:`NodeData` for ``meta.json`` (dims, class count, provenance).
    """
    n = idmap.num_nodes
    synthetic_classes, synthetic_dim = options.synthetic_labels, options.synthetic_features
    synthetic_signal, seed, split = options.synthetic_feature_signal, options.seed, options.split
    label_values: np.ndarray | None = None
    num_classes = 0
    labels_prov = prov.no_data()
    if synthetic_classes:
        if labels is not None and labels.num_classes > 0:
            raise OptionError(
                "{synthetic_labels}: the graph already has labels; expected an unlabelled graph",
                options=("synthetic_labels",),
            )
        label_values, num_classes = node_data.synthetic_labels(n, synthetic_classes, seed), synthetic_classes
        writer.save("labels", label_values)
        labels_prov = prov.synthetic_labels(synthetic_classes, seed)
    elif labels is not None and labels.num_classes > 0:
        label_values, num_classes = labels.values, labels.num_classes
        writer.save("labels", label_values)
        write_label_names(writer, labels)
        labels_prov = prov.input_data()
    feature_dim, feature_dtype = 0, "float32"
    features_prov = prov.no_data()
    if features is not None:
        feature_dim, feature_dtype = write_feature_file(
            features, idmap, writer, options.features, options.non_finite, progress=progress
        )
        features_prov = prov.input_data()
    elif synthetic_dim:
        if synthetic_signal > 0 and label_values is None:
            raise OptionError(
                "{synthetic_feature_signal}: expected labels ({labels} or {synthetic_labels}) to encode, found none",
                options=("synthetic_feature_signal", "labels", "synthetic_labels"),
            )
        out = writer.open_memmap("features", (n, synthetic_dim), np.float32)
        synthetic_features(
            label_values, synthetic_dim, seed, num_nodes=n, out=out, signal=synthetic_signal, progress=progress
        )
        out.flush()
        del out
        feature_dim = synthetic_dim
        features_prov = prov.synthetic_features(synthetic_signal, seed)
    if split is not None:
        mask = label_values >= 0 if label_values is not None else None
        save_splits(writer, random_split(n, split, seed, mask))
    return NodeData(feature_dim, feature_dtype, num_classes, {"features": features_prov, "labels": labels_prov})


LABEL_NAMES_FILE = "label_names.json"
"""The class names of a dataset whose labels were names (or codes): a JSON list, class id i = entry i."""


def write_label_names(writer: DatasetWriter, labels: Labels) -> None:
    """Write ``label_names.json`` when ``labels`` carries class names (ids follow the sorted names)."""
    if labels.class_names is not None:
        writer.write_text(LABEL_NAMES_FILE, json.dumps(labels.class_names) + "\n")
