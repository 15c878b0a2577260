"""Import an OGB node- or link-property dataset from its raw layout: ``graphtier prepare ogb SOURCE OUTPUT``.

``SOURCE`` is the dataset folder as OGB unpacks it (for example ``ogbn_products/``)::

    raw/edge.csv.gz            "src,dst" per line, no header
    raw/num-node-list.csv.gz   the node count
    raw/num-edge-list.csv.gz   the edge count (optional; checked when present)
    raw/node-feat.csv.gz       N lines of D floats (optional)
    raw/node-label.csv.gz      N lines, one label each; "nan" = unlabelled (optional)
    raw/node_year.csv.gz       N lines, one integer year each (optional; ogbn-arxiv): node_time.npy, and each
                               edge's time as the later year of its ends (edge_time.npy; docs/guide/time.md)
    raw/edge_year.csv.gz       E lines, one integer year each (optional; ogbl-collab): edge_time.npy
    raw/edge_weight.csv.gz     E lines, one number each (optional; ogbl-collab): edge features (edge_feat.npy)
    raw/edge-feat.csv.gz       E lines of D floats (optional; ogbn-proteins): edge features (edge_feat.npy)
    split/<scheme>/{train,valid,test}.csv.gz   one node id per line (optional)
    split/<scheme>/{train,valid,test}.pt       an ogbl link split instead (dicts of tensors; graphtier.dataset.importers.formats.ogb_link)

Every file may also be uncompressed (``.csv``). OGB datasets whose ``master.csv`` says
``add_inverse_edge`` (ogbn-products, ogbn-proteins) need ``--undirected``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.edges.edge_time import EDGE_TIME
from graphtier.dataset.edges.node_time import NODE_TIME, edge_times_from_nodes, node_time_meta
from graphtier.dataset.finite import NonFiniteGuard
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble import finish
from graphtier.dataset.importers.assemble.options import OGB_FIELDS, ImportOptions
from graphtier.dataset.importers.common import edges, textio
from graphtier.dataset.importers.common.features import note_replaced
from graphtier.dataset.importers.common.labels import Labels, labels_from_values
from graphtier.dataset.importers.formats.ogb_edges import (
    OgbEdgeFiles,
    read_edge_years,
    read_ogb_edge_features,
    timed_edge_rows,
)
from graphtier.dataset.importers.formats.ogb_files import (
    choose_scheme,
    find_raw,
    read_int_list,
    read_node_years,
    read_single_int,
)
from graphtier.dataset.importers.formats.ogb_hetero import import_ogb_hetero, is_hetero_layout
from graphtier.dataset.importers.formats.ogb_link import LINK_PARTS, is_link_scheme, split_written_graph_from_ogb
from graphtier.dataset.importers.split import splits
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError


def read_id_list(path: Path, num_nodes: int) -> np.ndarray:
    """int64 [K]: one node id per line, each in ``[0, num_nodes)``."""
    ids = read_int_list(path, "one integer node id per line")
    if ids.size and (ids.min() < 0 or ids.max() >= num_nodes):
        raise DatasetError(f"{path}: expected node ids in [0, {num_nodes}), found [{ids.min()}, {ids.max()}]")
    return ids


def write_ogb_features(
    path: Path, num_nodes: int, writer: DatasetWriter, non_finite: str = "error", progress: Progress = NO_PROGRESS
) -> int:
    """Parse ``node-feat`` (N lines of D floats) into ``features.npy`` float32 [N, D]; returns D.

    NaN/±Inf values are refused, or replaced by 0 with ``non_finite="replace"``. ``progress`` reports the stage
    ``prepare: read features`` block by block (rows).
    """
    guard = NonFiniteGuard(path, non_finite)
    first = textio.first_data_lines(path, 1)
    if not first:
        raise DatasetError(f"{path}: expected {num_nodes} feature rows, found an empty file")
    dim = textio.count_columns(first[0])
    out = writer.open_memmap("features", (num_nodes, dim), np.float32)
    row = 0
    with progress.stage("prepare: read features", total=num_nodes, unit="rows") as bar:
        for block in textio.iter_float_rows(path, dim, expected=f"{dim} comma-separated floats"):
            if row + block.shape[0] > num_nodes:
                raise DatasetError(f"{path}: expected {num_nodes} feature rows (one per node), found more")
            out[row : row + block.shape[0]] = guard.apply(block, row)
            row += block.shape[0]
            bar.advance(int(block.shape[0]))
    if row != num_nodes:
        raise DatasetError(f"{path}: expected {num_nodes} feature rows (one per node), found {row}")
    out.flush()
    del out
    note_replaced(writer, guard)
    return dim


def read_ogb_labels(path: Path, num_nodes: int) -> Labels:
    """``node-label``: N lines with one label (integer-valued; ``nan`` or negative = unlabelled)."""
    first = textio.first_data_lines(path, 1)
    if first and textio.count_columns(first[0]) != 1:
        raise DatasetError(
            f"{path}: expected one label column (single-task node classification), "
            f"found {textio.count_columns(first[0])}"
        )
    blocks = [b[:, 0].copy() for b in textio.iter_float_rows(path, 1, expected="one label per line")]
    raw = np.concatenate(blocks) if blocks else np.empty(0, np.float32)
    if raw.shape[0] != num_nodes:
        raise DatasetError(f"{path}: expected {num_nodes} label rows (one per node), found {raw.shape[0]}")
    return labels_from_values(path, raw)


def import_ogb(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    name: str | None = None,
    overwrite: bool = False,
    scheme: str | None = None,
    chunk_bytes: int = textio.CHUNK_BYTES,
    options: ImportOptions | None = None,
    add_reverse: bool = False,
    progress: Progress = NO_PROGRESS,
    **option_values: Any,
) -> Dataset:
    """Import the OGB node-property dataset folder ``source`` into ``output``.

    A folder in OGB's heterogeneous layout (``raw/num-node-dict.csv.gz``, ogbn-mag) is imported by
    :func:`~graphtier.dataset.importers.formats.ogb_hetero.import_ogb_hetero` (only ``non_finite`` of the options
    applies; ``add_reverse`` adds a reverse relation per relation).

    Args:
        source: folder with ``raw/`` (and optionally ``split/<scheme>/``).
        scheme: split scheme folder name (default: the only one).
        add_reverse: heterogeneous layout only (a homogeneous graph takes ``undirected``).
        options, option_values: the shared :class:`ImportOptions` (:data:`OGB_FIELDS`; no labels or
            features files): ``undirected`` adds the missing reverse edges (OGB ``add_inverse_edge``);
            ``synthetic_features``/``synthetic_labels`` generate node data the folder lacks; ``split``
            draws random fractions instead of the OGB split; ``non_finite`` refuses or replaces NaN/±Inf
            in ``node-feat``.
        progress: reports reading the edges, building the CSC, reading the features and validating.

    Returns:
        The written :class:`Dataset`.
    """
    root = Path(source)
    options = ImportOptions.of(options, option_values)
    options.check_accepted(OGB_FIELDS, "ogb")
    if not root.is_dir():
        raise DatasetError(f"{root}: OGB dataset folder not found")
    raw = root / "raw"
    if not raw.is_dir():
        raise DatasetError(f"{raw}: folder not found (expected the OGB raw layout)")
    if is_hetero_layout(root):
        options.check_accepted(("non_finite",), "ogb (heterogeneous layout)")
        return import_ogb_hetero(
            root,
            output,
            name=name,
            overwrite=overwrite,
            scheme=scheme,
            add_reverse=add_reverse,
            non_finite=options.non_finite,
            progress=progress,
        )
    if add_reverse:
        raise OptionError(
            f"{{add_reverse}}: expected a heterogeneous OGB layout ({raw / 'num-node-dict.csv.gz'}), found a "
            "homogeneous one; pass {undirected} to add reverse edges",
            options=("add_reverse", "undirected"),
        )
    edge_path = find_raw(raw, "edge", required=True)
    assert edge_path is not None
    num_nodes_path = find_raw(raw, "num-node-list", required=True)
    assert num_nodes_path is not None
    num_edges_path = find_raw(raw, "num-edge-list", required=False)
    feat_path = find_raw(raw, "node-feat", required=False)
    label_path = find_raw(raw, "node-label", required=False)
    year_path = find_raw(raw, "node_year", required=False)
    edge_files = OgbEdgeFiles.find(raw)
    if feat_path is not None and options.synthetic_features:
        raise OptionError(
            f"{{synthetic_features}}: {feat_path} already provides features", options=("synthetic_features",)
        )
    if label_path is not None and options.synthetic_labels:
        raise OptionError(f"{{synthetic_labels}}: {label_path} already provides labels", options=("synthetic_labels",))
    split = options.split
    link_given = options.edge_split is not None or options.edge_split_files is not None
    scheme_dir = None if split is not None or link_given else choose_scheme(root, scheme)
    link_scheme = scheme_dir is not None and is_link_scheme(scheme_dir)
    options.check_inputs(labels_in_source=label_path is not None, link_split_in_source=link_scheme)
    n = read_single_int(num_nodes_path)
    if n < 0:
        raise DatasetError(f"{num_nodes_path}: expected a non-negative node count, found {n}")
    edges.require_csc_memory(n, 0, f"{num_nodes_path}: node count {n:,}")
    inputs: list[Path] = [p for p in (edge_path, num_nodes_path, num_edges_path, feat_path, label_path, year_path) if p]
    inputs += edge_files.paths
    edge_years = read_edge_years(edge_files.year) if edge_files.year is not None else None

    with DatasetWriter(output, overwrite=overwrite) as writer, edges.EdgeSpill(writer.tmp) as spill:
        pairs = textio.iter_int_rows(
            edge_path,
            2,
            allow_extra_columns=False,
            skip_header=False,
            expected="two integer node ids 'src,dst'",
            chunk_bytes=chunk_bytes,
        )
        timed = edge_years is not None
        if edge_years is not None:
            assert edge_files.year is not None
            pairs = timed_edge_rows(pairs, edge_years, edge_files.year)
        spill.extend(pairs, progress, timed=timed)
        del edge_years
        if spill.num_edges and (spill.min_id < 0 or spill.max_id >= n):  # type: ignore[operator]
            raise DatasetError(
                f"{edge_path}: expected node ids in [0, {n}) ({num_nodes_path.name}), "
                f"found ids in [{spill.min_id}, {spill.max_id}]"
            )
        if num_edges_path is not None:
            expected_edges = read_single_int(num_edges_path)
            if expected_edges != spill.num_edges:
                raise DatasetError(
                    f"{edge_path}: expected {expected_edges} edges ({num_edges_path.name}), found {spill.num_edges}"
                )

        columns = (
            read_ogb_edge_features(
                edge_files, spill.num_edges, writer.tmp / "edge_columns.scratch", options.non_finite, writer
            )
            if edge_files.has_features
            else None
        )

        def chunks() -> Iterator[tuple[np.ndarray, ...]]:
            yield from (spill.timed_chunks() if timed else spill)

        built, edge_meta = finish.save_spilled_csc(
            writer, spill, chunks, n, options, progress, timed=timed, columns=columns, where=str(raw)
        )
        num_edges = int(built.indices.shape[0])
        edge_counts = built.counts
        years = read_node_years(year_path, n) if year_path is not None else None
        if years is not None:
            writer.save(NODE_TIME, years)
            if not timed:  # node years only: each edge as old as its later end (a citation, its citing paper)
                writer.save(EDGE_TIME, edge_times_from_nodes(built.indptr, built.indices, years))
        del built

        labels = read_ogb_labels(label_path, n) if label_path is not None else None
        written = finish.write_node_data(
            writer, edges.IdMap(num_nodes=n), labels=labels, features=None, options=options, progress=progress
        )
        feature_dim, feature_dtype, num_classes = written.feature_dim, written.feature_dtype, written.num_classes
        if feat_path is not None:
            feature_dim, feature_dtype = (
                write_ogb_features(feat_path, n, writer, options.non_finite, progress),
                "float32",
            )
            written.provenance["features"] = {"kind": "input"}
        if scheme_dir is not None and not link_scheme:
            split_paths = [find_raw(scheme_dir, part, required=True) for part in ("train", "valid", "test")]
            inputs += [p for p in split_paths if p is not None]
            splits.save_splits(writer, [read_id_list(p, n) for p in split_paths if p is not None])
        meta = finish.dataset_meta(
            name=name or finish.default_name(output),
            num_nodes=n,
            num_edges=num_edges,
            directed=not options.undirected,
            feature_dim=feature_dim,
            feature_dtype=feature_dtype,
            num_classes=num_classes,
            importer="ogb",
            inputs=inputs,
            options={"scheme": scheme_dir.name if scheme_dir is not None else None, **options.to_meta(OGB_FIELDS)},
            provenance=written.provenance,
            edge_counts=edge_counts,
        )
        meta.update(edge_meta)
        if years is not None:
            meta[NODE_TIME] = node_time_meta(years, "year")
        if years is not None or timed:  # finish_dataset completes the edge time entry (range), writes the order file
            meta[EDGE_TIME] = {"unit": "year"}
        if link_scheme:
            assert scheme_dir is not None
            inputs += [scheme_dir / f"{part}.pt" for part in LINK_PARTS]
            meta["source"]["inputs"] = [str(p.resolve()) for p in inputs]
            meta = split_written_graph_from_ogb(writer, meta, scheme_dir, options.eval_negatives, options.seed)
        return finish.finish_dataset(writer, meta, options, progress=progress)
