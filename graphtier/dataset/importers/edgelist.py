"""Import a text edge list: ``graphtier prepare edgelist SOURCE OUTPUT``.

One edge ``src dst`` per line, separated by blanks, a tab or a comma; optionally gzip; ``#`` and
``%`` comment lines; an optional header line; columns after the second (weights, timestamps)
are ignored. Integer ids are parsed by a numba byte parser over 64 MiB chunks and spilled to a
scratch file, so the edge list never exists as Python objects. Ids that are not ``0..max`` (gaps,
negative or huge ids) are renumbered densely in ascending order and ``node_ids.npy`` (int64,
original id of each node) is saved; non-integer ids are renumbered in order of first appearance
(a slower Python path) and ``node_ids.json`` is saved.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from graphtier.dataset import finite
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers import (
    edges,
    finish,
    kernels,
    node_data,
    textio,
)
from graphtier.dataset.importers.labels import Labels, labels_from_pairs, mark_unlabelled
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError

ID_MODES = ("auto", "int", "string")
_SEPARATOR = re.compile(r"[ \t]*,[ \t]*|[ \t]+")
_STRING_FLUSH = 1 << 20


def import_edgelist(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    name: str | None = None,
    overwrite: bool = False,
    undirected: bool = False,
    drop_self_loops: bool = False,
    keep_duplicates: bool = False,
    labels: str | os.PathLike[str] | None = None,
    features: str | os.PathLike[str] | None = None,
    synthetic_features: int = 0,
    synthetic_feature_signal: float = 0.0,
    synthetic_labels: int = 0,
    labels_layout: str = "auto",
    labels_column: int | None = None,
    unlabelled_value: int | None = None,
    split: Sequence[float] | None = None,
    seed: int = 0,
    non_finite: str = "error",
    header: str = "auto",
    ids: str = "auto",
    num_nodes: int | None = None,
    chunk_bytes: int = textio.CHUNK_BYTES,
) -> Dataset:
    """Import the edge list ``source`` into the dataset directory ``output``.

    Args:
        source: text file (optionally gzip) of ``src dst`` lines.
        output: dataset directory to create (replaced only with ``overwrite``).
        name: dataset name (default: the name of the output directory).
        undirected: add ``dst -> src`` for every edge whose reverse is missing (meta ``directed``
            false); an input that already lists both directions gives the same graph.
        drop_self_loops: drop ``v -> v`` edges.
        keep_duplicates: keep repeated edges (default: keep one copy, count the rest in meta
            ``source.edges.duplicates_dropped``).
        labels: ``id,label`` lines, one label per line (line k = node k), or an ``.npy`` (row k =
            original id k); see ``labels_layout`` and :mod:`~graphtier.dataset.importers.node_data`.
        features: ``.npy`` or dense text matrix [rows, D], row k = original node id k (integer ids).
            Ids that only the features or labels cover become nodes without edges (never dropped;
            counted in meta ``nodes_only_in_node_data``).
        synthetic_features: D > 0 generates features (see :func:`synthetic_features`); they
            are pure noise unless ``synthetic_feature_signal`` > 0 (then they encode the labels).
        synthetic_labels: K > 0 generates uniformly random labels (unlabelled graphs).
        labels_layout: ``auto``, ``pairs`` or ``lines``.
        labels_column: take this column (0-based) of a 2-d ``.npy`` or text matrix of labels (row
            k = node id k); its codes are renumbered ``0..K-1`` and kept as class names.
        unlabelled_value: the class id that means "no label" (becomes -1).
        split: ``(train, valid, test)`` fractions for a random split (over labelled nodes when
            there are labels), drawn with ``seed``.
        header: ``auto`` (first line is a header if it is not numeric but the next is), ``yes``, ``no``.
        ids: ``auto`` (integer unless the first edge has a non-integer id), ``int`` or ``string``.
        num_nodes: keep integer ids as they are, in ``[0, num_nodes)`` (adds isolated nodes).
        chunk_bytes: bytes of text parsed per chunk.
        non_finite: ``error`` (refuse NaN/±Inf in ``features``) or ``replace`` (by 0, counted in
            ``meta.json`` ``source.non_finite_replaced``).

    Returns:
        The written :class:`Dataset` (memory-mapped).
    """
    path = textio.require_file(source, "edge list")
    kind, description = node_data.sniff(path)
    if kind not in ("text", "gzip"):
        hint = {"npz": " (for an indptr/indices archive use 'prepare csr-npz')",
                "mat": " (use 'prepare mat')", "hdf5": " (use 'prepare mat' after re-saving with -v7)"}.get(kind, "")
        raise DatasetError(
            f"{path}: expected a text edge list ('src dst' per line, optionally gzip), got {description}{hint}"
        )
    if ids not in ID_MODES:
        raise OptionError(f"--ids: expected one of {', '.join(ID_MODES)}, found {ids!r}")
    finish.check_node_data_options(
        labels, features, synthetic_features, split, synthetic_feature_signal, synthetic_labels
    )
    if labels_layout not in node_data.LABEL_LAYOUTS:
        raise OptionError(
            f"--labels-layout: expected one of {', '.join(node_data.LABEL_LAYOUTS)}, found {labels_layout!r}"
        )
    finite.check_mode(non_finite)
    skip_header = textio.has_header(path, header, 2, allow_extra_columns=True)
    string_ids = ids == "string"
    if ids == "auto":
        lines = textio.first_data_lines(path, 2)
        data_lines = lines[1:] if skip_header else lines
        string_ids = bool(
            data_lines
            and textio.line_parses_as_ints(data_lines[0], 2, True) == kernels.PARSE_BAD_TOKEN
            and textio.count_columns(data_lines[0]) >= 2
        )
    if string_ids and num_nodes is not None:
        raise OptionError("--num-nodes: expected integer node ids, found non-integer ids (--ids string)")
    if string_ids and features is not None:
        raise OptionError(
            "--features: expected integer node ids (row k = node id k), found non-integer ids; "
            "use --synthetic-features or convert the ids"
        )
    for option, given in (("--labels-column", labels_column), ("--unlabelled-value", unlabelled_value)):
        if given is not None and labels is None:
            raise OptionError(f"{option}: expected --labels FILE to apply it to, found none")
    if string_ids and labels_column is not None:
        raise OptionError(
            "--labels-column: expected integer node ids (row k = node k), found non-integer ids; use 'id,label' lines"
        )
    if string_ids and labels is not None and labels_layout == "lines":
        raise OptionError(
            "--labels-layout lines: expected integer node ids (line k = node k), found non-integer ids; "
            "use 'id,label' lines"
        )

    options = {
        "undirected": undirected,
        "drop_self_loops": drop_self_loops,
        "keep_duplicates": keep_duplicates,
        "labels": str(labels) if labels is not None else None,
        "features": str(features) if features is not None else None,
        "synthetic_features": synthetic_features,
        "synthetic_feature_signal": synthetic_feature_signal,
        "synthetic_labels": synthetic_labels,
        "labels_layout": labels_layout,
        "labels_column": labels_column,
        "unlabelled_value": unlabelled_value,
        "split": list(split) if split is not None else None,
        "seed": seed,
        "header": header,
        "ids": "string" if string_ids else "int",
        "num_nodes": num_nodes,
        "non_finite": non_finite,
    }
    with DatasetWriter(output, overwrite=overwrite) as writer, edges.EdgeSpill(writer.tmp) as spill:
        names: dict[str, int] | None = None
        parsed_labels: Labels | None = None
        feature_matrix: np.ndarray | None = None
        if string_ids:
            names = _spill_string_edges(path, spill, skip_header)
            in_edges = len(names)
            if labels is not None:
                parsed_labels = _read_string_labels(
                    textio.require_file(labels, "--labels file"), names, header, unlabelled_value
                )
            idmap = edges.IdMap(num_nodes=len(names), nodes_only_in_node_data=len(names) - in_edges)
        else:
            for block in textio.iter_int_rows(
                path,
                2,
                allow_extra_columns=True,
                skip_header=skip_header,
                expected="two integer node ids 'src dst'",
                chunk_bytes=chunk_bytes,
            ):
                spill.append(block[:, 0], block[:, 1])
            raw_labels = node_data.read_raw_labels(
                labels, labels_layout, header, column=labels_column, unlabelled=unlabelled_value
            ) if labels is not None else None
            if features is not None:
                feature_matrix = node_data.read_feature_matrix(features, writer.tmp / "features.scratch")
            coverage = node_data.NodeCoverage.of(feature_matrix, raw_labels)
            idmap = edges.build_id_map(spill, num_nodes, path, coverage)
            if raw_labels is not None:
                parsed_labels = raw_labels.to_labels(Path(labels), idmap)  # type: ignore[arg-type]
        n = idmap.num_nodes

        def mapped_chunks():  # type: ignore[no-untyped-def]
            for src, dst in spill:
                yield idmap.map_known(src), idmap.map_known(dst)

        built = edges.build_csc(
            mapped_chunks, n, undirected=undirected, keep_duplicates=keep_duplicates, drop_self_loops=drop_self_loops
        )
        spill.remove()
        writer.save("indptr", built.indptr)
        writer.save("indices", built.indices)
        num_edges = int(built.indices.shape[0])
        edge_counts = built.counts
        del built
        if names is not None:
            writer.write_text("node_ids.json", json.dumps(list(names)) + "\n")
        else:
            original = idmap.original_ids()
            if original is not None:
                writer.save("node_ids", original)

        return finish.finish_edge_import(
            writer,
            idmap,
            importer="edgelist",
            source=path,
            name=name,
            num_edges=num_edges,
            edge_counts=edge_counts,
            undirected=undirected,
            labels=parsed_labels,
            labels_path=labels,
            features=feature_matrix,
            features_path=features,
            synthetic_dim=synthetic_features,
            synthetic_signal=synthetic_feature_signal,
            synthetic_classes=synthetic_labels,
            split=split,
            seed=seed,
            options=options,
            non_finite=non_finite,
        )


def _spill_string_edges(path: Path, spill: edges.EdgeSpill, skip_header: bool) -> dict[str, int]:
    """Parse an edge list with non-integer ids (Python path); ids numbered by first appearance."""
    names: dict[str, int] = {}
    src: list[int] = []
    dst: list[int] = []
    first = True
    for number, line in textio.enumerate_data_lines(path):
        if first:
            first = False
            if skip_header:
                continue
        tokens = _SEPARATOR.split(line)
        if len(tokens) < 2 or not tokens[0] or not tokens[1]:
            raise DatasetError(f"{path}: line {number}: expected two node ids 'src dst', found {line!r}")
        src.append(names.setdefault(tokens[0], len(names)))
        dst.append(names.setdefault(tokens[1], len(names)))
        if len(src) >= _STRING_FLUSH:
            spill.append(np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64))
            src.clear()
            dst.clear()
    spill.append(np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64))
    return names


def _read_string_labels(path: Path, names: dict[str, int], header: str, unlabelled: int | None = None) -> Labels:
    """``id,label`` lines for non-integer node ids; integer labels or class names.

    An id that no edge uses is added to ``names`` (a node without edges), never dropped.
    """
    if path.suffix == ".npy" or node_data.sniff(path)[0] == "npy":
        raise OptionError(f"{path}: --labels as .npy needs integer node ids; use a CSV of 'id,label' lines")
    skip = textio.has_header(path, header, 2, allow_extra_columns=False)
    ids: list[int] = []
    raw_labels: list[str] = []
    first = True
    for number, line in textio.enumerate_data_lines(path):
        if first:
            first = False
            if skip:
                continue
        tokens = _SEPARATOR.split(line)
        if len(tokens) != 2 or not tokens[1]:
            raise DatasetError(f"{path}: line {number}: expected two columns 'node_id,label', found {line!r}")
        ids.append(names.setdefault(tokens[0], len(names)))
        raw_labels.append(tokens[1])
    identity = edges.IdMap(num_nodes=len(names))
    id_array = np.array(ids, dtype=np.int64)
    if all(re.fullmatch(r"[+-]?\d+", t) for t in raw_labels):
        classes = mark_unlabelled(np.array([int(t) for t in raw_labels], np.int64), unlabelled)
        return labels_from_pairs(path, id_array, classes, identity)
    class_names = sorted(set(raw_labels))
    code = {c: i for i, c in enumerate(class_names)}
    result = labels_from_pairs(path, id_array, np.array([code[t] for t in raw_labels], np.int64), identity)
    result.class_names = class_names
    result.num_classes = len(class_names)
    return result
