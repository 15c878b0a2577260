"""Import a text edge list: ``graphtier prepare edgelist SOURCE OUTPUT``.

One edge ``src dst`` per line, separated by blanks, a tab or a comma; optionally gzip; ``#`` and
``%`` comment lines; an optional header line; columns after the second (weights, timestamps)
are ignored, except the integer edge time of ``time_column`` (``--time-column``; saved as ``edge_time.npy``,
see :mod:`graphtier.dataset.edges.edge_time`). Integer ids are parsed by a numba byte parser over 64 MiB chunks and
spilled to a scratch file, so the edge list never exists as Python objects. Ids that are not ``0..max`` (gaps,
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
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble import finish
from graphtier.dataset.importers.assemble.options import ImportOptions
from graphtier.dataset.importers.common import edges, kernels, node_data, textio
from graphtier.dataset.importers.common.edge_columns import parse_column_list, read_edge_columns, resolve_edge_columns
from graphtier.dataset.importers.common.labels import (
    Labels,
    labels_from_pairs,
    mark_unlabelled,
)
from graphtier.dataset.importers.split.time_holdout import no_edge_times
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
    options: ImportOptions | None = None,
    header: str = "auto",
    ids: str = "auto",
    num_nodes: int | None = None,
    chunk_bytes: int = textio.CHUNK_BYTES,
    progress: Progress = NO_PROGRESS,
    time_column: int | str | None = None,
    time_unit: str | None = None,
    edge_feature_columns: str | Sequence[int | str] | None = None,
    label_column: int | str | None = None,
    **option_values: Any,
) -> Dataset:
    """Import the edge list ``source`` into the dataset directory ``output``.

    Args:
        source: text file (optionally gzip) of ``src dst`` lines.
        output: dataset directory to create (replaced only with ``overwrite``).
        name: dataset name (default: the name of the output directory).
        options: the options every importer shares (:class:`ImportOptions`): graph handling, labels and
            features files (row k = original node id k; ids that only they cover become nodes without
            edges, counted in meta ``nodes_only_in_node_data``), synthetic node data, split, seed, non_finite.
        option_values: keyword convenience, ``import_edgelist(src, out, undirected=True)``: the
            :class:`ImportOptions` fields to set on top of ``options``.
        header: ``auto`` (first line is a header if it is not numeric but the next is), ``yes``, ``no``.
        ids: ``auto`` (integer unless the first edge has a non-integer id), ``int`` or ``string``.
        num_nodes: keep integer ids as they are, in ``[0, num_nodes)`` (adds isolated nodes).
        chunk_bytes: bytes of text parsed per chunk.
        progress: reports reading the edges and building the CSC (:func:`edges.build_csc`).
        time_column: the column holding each edge's time, an integer (int64; ``1289192400``, not ``1.5``): its
            0-based index (2 or more) or, when the file has a header, its name. The dataset then has
            ``edge_time`` (int64 [E], in CSC order) and ``edge_time_order``: a reverse edge of ``undirected`` gets
            its edge's time, a merged repeat of an edge keeps the earliest time. None: no edge times.
        time_unit: what the times count (``"s"``, ``"days"``; recorded in ``meta.json`` ``edge_time.unit``).
        edge_feature_columns: the columns holding each edge's features (``"3,4"``, or a list of 0-based indexes >= 2
            or header names): saved as ``edge_feat.npy`` (float32 [E, d], CSC order; docs/dataset-format.md "Edge
            features and labels"). A reverse edge of ``undirected`` copies its edge's row; a merged repeat keeps
            the row of its first line (with times: of its earliest (time, line)).
        label_column: the column holding each edge's target (a number), saved as ``edge_label.npy`` (float32 [E])
            like the features; an edge split then writes ``link_{split}_label.npy`` for its pairs.

    Returns:
        The written :class:`Dataset` (memory-mapped).
    """
    path = textio.require_file(source, "edge list")
    kind, description = node_data.sniff(path)
    if kind not in ("text", "gzip"):
        hint = {
            "npz": " (for an indptr/indices archive use 'prepare csr-npz')",
            "mat": " (use 'prepare mat')",
            "hdf5": " (use 'prepare mat' after re-saving with -v7)",
        }.get(kind, "")
        raise DatasetError(
            f"{path}: expected a text edge list ('src dst' per line, optionally gzip), got {description}{hint}"
        )
    options = ImportOptions.of(options, option_values)
    if ids not in ID_MODES:
        raise OptionError.invalid("ids", f"one of {', '.join(ID_MODES)}", ids)
    options.check_inputs()
    labels, features, labels_column = options.labels, options.features, options.labels_column
    skip_header = textio.has_header(path, header, 2, allow_extra_columns=True)
    feature_specs = parse_column_list(edge_feature_columns)
    named = [time_column, label_column, *(feature_specs or [])]
    if header == "auto" and not skip_header and any(textio.names_a_column(path, c) for c in named):
        skip_header = True  # a column NAME: the first line that has that column name is the header
    time_index = textio.resolve_time_column(path, time_column, skip_header)
    feature_indexes, label_index = resolve_edge_columns(path, feature_specs, label_column, skip_header)
    edge_columns = bool(feature_indexes) or label_index is not None
    if time_unit is not None and time_index is None:
        raise OptionError(
            f"{{time_unit}}: expected {{time_column}} with it (the times it describes), found {time_unit!r}",
            options=("time_unit", "time_column"),
        )
    if options.split_by == "time" and time_index is None:
        raise no_edge_times()  # before the edges are read
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
    if string_ids and options.edge_split_files is not None:
        raise OptionError(
            "--edge-split-files: expected integer node ids (the pair files use them), found non-integer ids"
        )
    if string_ids and labels_column is not None:
        raise OptionError(
            "--labels-column: expected integer node ids (row k = node k), found non-integer ids; use 'id,label' lines"
        )
    if string_ids and labels is not None and options.labels_layout == "lines":
        raise OptionError(
            "--labels-layout lines: expected integer node ids (line k = node k), found non-integer ids; "
            "use 'id,label' lines"
        )

    format_options = {"header": header, "ids": "string" if string_ids else "int", "num_nodes": num_nodes}
    if time_index is not None:
        format_options.update(time_column=time_column, time_unit=time_unit)
    if feature_specs:
        format_options.update(edge_feature_columns=feature_specs)
    if label_index is not None:
        format_options.update(label_column=label_column)
    with DatasetWriter(output, overwrite=overwrite) as writer, edges.EdgeSpill(writer.tmp) as spill:
        names: dict[str, int] | None = None
        parsed_labels: Labels | None = None
        feature_matrix: np.ndarray | None = None
        if string_ids:
            names = _spill_string_edges(path, spill, skip_header, progress, time_index)
            in_edges = len(names)
            if labels is not None:
                parsed_labels = _read_string_labels(
                    textio.require_file(labels, "--labels file"), names, header, options.unlabelled_value
                )
            idmap = edges.IdMap(num_nodes=len(names), nodes_only_in_node_data=len(names) - in_edges)
        else:
            spill.extend(
                textio.iter_int_rows(
                    path,
                    2 if time_index is None else 3,
                    allow_extra_columns=True,
                    skip_header=skip_header,
                    expected="two integer node ids 'src dst'"
                    if time_index is None
                    else f"two integer node ids and an integer time in column {time_index}",
                    chunk_bytes=chunk_bytes,
                    columns=None if time_index is None else (0, 1, time_index),
                ),
                progress,
                timed=time_index is not None,
            )
            raw_labels = (
                node_data.read_raw_labels(
                    labels, options.labels_layout, header, column=labels_column, unlabelled=options.unlabelled_value
                )
                if labels is not None
                else None
            )
            if features is not None:
                feature_matrix = node_data.read_feature_matrix(features, writer.tmp / "features.scratch")
            coverage = node_data.NodeCoverage.of(feature_matrix, raw_labels)
            idmap = edges.build_id_map(spill, num_nodes, path, coverage)
            if raw_labels is not None:
                parsed_labels = raw_labels.to_labels(labels, idmap)  # type: ignore[arg-type]
        n = idmap.num_nodes
        columns = (
            read_edge_columns(
                path,
                feature_indexes,
                label_index,
                skip_header=skip_header,
                scratch=writer.tmp / "edge_columns.scratch",
                num_edges=spill.num_edges,
                non_finite=options.non_finite,
                writer=writer,
                chunk_bytes=chunk_bytes,
            )
            if edge_columns
            else None
        )

        def mapped_chunks():  # type: ignore[no-untyped-def]
            if time_index is None:
                for src, dst in spill:
                    yield idmap.map_known(src), idmap.map_known(dst)
            else:
                for src, dst, time in spill.timed_chunks():
                    yield idmap.map_known(src), idmap.map_known(dst), time

        built, edge_meta = finish.save_spilled_csc(
            writer, spill, mapped_chunks, n, options, progress, timed=time_index is not None, columns=columns
        )
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
            labels=parsed_labels,
            features=feature_matrix,
            options=options,
            format_options=format_options,
            progress=progress,
            edge_time_unit=time_unit,
            edge_meta=edge_meta,
        )


def _spill_string_edges(
    path: Path,
    spill: edges.EdgeSpill,
    skip_header: bool,
    progress: Progress = NO_PROGRESS,
    time_index: int | None = None,
) -> dict[str, int]:
    """Parse an edge list with non-integer ids (Python path); ids numbered by first appearance, the integer time
    of column ``time_index`` spilled with each edge (None: no times). ``progress`` reports the stage
    ``prepare: read edges`` every :data:`_STRING_FLUSH` edges."""
    names: dict[str, int] = {}
    src: list[int] = []
    dst: list[int] = []
    times: list[int] = []

    def flush() -> None:
        time = None if time_index is None else np.array(times, dtype=np.int64)
        spill.append(np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), time)
        bar.advance(len(src))
        src.clear()
        dst.clear()
        times.clear()

    with progress.stage("prepare: read edges", unit="edges") as bar:
        for number, line in textio.enumerate_data_lines(path, skip_header):
            tokens = _SEPARATOR.split(line)
            if len(tokens) < 2 or not tokens[0] or not tokens[1]:
                raise DatasetError(f"{path}: line {number}: expected two node ids 'src dst', found {line!r}")
            if time_index is not None:
                times.append(_time_token(path, number, line, tokens, time_index))
            src.append(names.setdefault(tokens[0], len(names)))
            dst.append(names.setdefault(tokens[1], len(names)))
            if len(src) >= _STRING_FLUSH:
                flush()
        flush()
    return names


def _time_token(path: Path, number: int, line: str, tokens: list[str], index: int) -> int:
    """The integer time in column ``index`` of a line, or a one-line :class:`DatasetError` (missing, not an
    integer, outside int64)."""
    token = tokens[index] if index < len(tokens) else ""
    if not re.fullmatch(r"[+-]?\d+", token) or not -(2**63) <= int(token) < 2**63:
        found = "too few columns" if index >= len(tokens) else f"{token!r}"
        raise DatasetError(
            f"{path}: line {number}: expected an integer time in column {index}, found {found}: {line[:80]!r}"
        )
    return int(token)


def _read_string_labels(path: Path, names: dict[str, int], header: str, unlabelled: int | None = None) -> Labels:
    """``id,label`` lines for non-integer node ids; integer labels or class names.

    An id that no edge uses is added to ``names`` (a node without edges), never dropped.
    """
    if path.suffix == ".npy" or node_data.sniff(path)[0] == "npy":
        raise OptionError(f"{path}: --labels as .npy needs integer node ids; use a CSV of 'id,label' lines")
    skip = textio.has_header(path, header, 2, allow_extra_columns=False)
    ids: list[int] = []
    raw_labels: list[str] = []
    for number, line in textio.enumerate_data_lines(path, skip):
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
