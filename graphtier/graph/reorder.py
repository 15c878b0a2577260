"""Reorder a dataset so the hottest nodes get the lowest ids (Data Tiering, Algorithm 2, parallel).

New ids follow descending score, ties broken by the old id. The topology is rebuilt in blocks of
new nodes (new ``indptr`` by a prefix sum over the permuted degrees; each list relocated,
relabelled and sorted), the feature rows are streamed from the source file into windows of the
output that fit in the page cache (:func:`permute_rows`), so a feature file larger than RAM is read
sequentially a few times instead of seeking for every row; labels, splits, an importer's ``node_ids`` and the link-prediction pair
files are permuted. The output is a normal dataset written atomically by :class:`DatasetWriter`; it
stores ``perm.npy`` (int64 [N], new id -> original id) and ``meta.json`` records the order under
``"reorder"``.

A typed dataset (:mod:`graphtier.dataset.schema`) is reordered per node type: each type's nodes by their own
scores, within the type's global id range (:func:`order_by_type`), so ``perm.npy`` is still one global
permutation. Each relation's CSC rows follow its destination type's order (:func:`relation_row_perm`), its
sources are renumbered and re-sorted, each type's feature table is permuted, and labels and splits (local
ids of the target type) follow the target type's order. A homogeneous dataset is the one-type case.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numba
import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.csc import edge_balanced_bounds
from graphtier.dataset.edges._edge_time_kernels import relocated_positions
from graphtier.dataset.edges.edge_data import EDGE_FEAT, EDGE_LABEL
from graphtier.dataset.edges.edge_rows import EDGE_ROW, edge_row_map, lay_out, read_order, row_dtype
from graphtier.dataset.edges.edge_time import EDGE_TIME, finish_edge_time
from graphtier.dataset.edges.link_split import LINK_META_KEY, LinkPairs, LinkSplit
from graphtier.dataset.edges.link_split import label_file as link_label_file
from graphtier.dataset.edges.node_time import NODE_TIME
from graphtier.dataset.format import Dataset
from graphtier.dataset.original_ids import NODE_IDS_JSON, json_node_ids
from graphtier.dataset.resources import available_memory
from graphtier.dataset.schema import Schema
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError
from graphtier.graph import _reorder_kernels as kernels

EDGE_ORDERS = ("auto", "reads", "csc")
"""How ``graphtier reorder`` lays out a dataset's edge table: by reads per edge (with ``edge_row.npy``), in CSC
order, or by reads when the task has training seeds."""
EDGE_CHUNK = 1 << 26  # new edges relocated per block (256 MiB of int32 output)
FEATURE_CHUNK_BYTES = 1 << 28  # feature bytes gathered per block


@dataclass
class ReorderTimings:
    """Wall seconds of each reorder stage and the sizes they moved."""

    sort_seconds: float = 0.0
    topology_seconds: float = 0.0
    feature_seconds: float = 0.0
    other_seconds: float = 0.0
    num_edges: int = 0
    feature_bytes: int = 0
    dropped_arrays: list[str] = field(default_factory=list)


def order_by_score(scores: np.ndarray) -> np.ndarray:
    """int64 [N] ``perm`` (new id -> old id): node ids by descending ``scores`` (float/int [N]), ties by old id."""
    scores = np.asarray(scores)
    keys = -scores.astype(np.float64) if scores.dtype.kind == "f" else -scores.astype(np.int64)
    return np.argsort(keys, kind="stable").astype(np.int64)


def order_by_type(scores: np.ndarray, schema: Schema) -> np.ndarray:
    """int64 [N] global ``perm`` (new id -> old id): each node type's ids by descending ``scores`` (float [N],
    global ids), ties by old id, within the type's range (a homogeneous schema: :func:`order_by_score`)."""
    if not schema.hetero:
        return order_by_score(scores)
    perm = np.empty(schema.num_nodes, dtype=np.int64)
    for t in schema.node_types:
        perm[t.offset : t.stop] = order_by_score(np.asarray(scores)[t.offset : t.stop]) + t.offset
    return perm


def relation_row_perm(perm: np.ndarray, schema: Schema) -> np.ndarray:
    """int64 [num_rows] new CSC row -> old CSC row: each relation's rows in its destination type's new order
    (``perm`` from :func:`order_by_type`; a homogeneous schema's rows are its nodes: ``perm`` itself)."""
    if not schema.hetero:
        return perm
    rows = np.empty(schema.num_rows, dtype=np.int64)
    for rel in schema.relations:
        dst = schema.node_type(rel.dst)
        rows[rel.row_offset : rel.row_offset + dst.count] = perm[dst.offset : dst.stop] - dst.offset + rel.row_offset
    return rows


def load_score_file(path: str | os.PathLike[str], num_nodes: int) -> np.ndarray:
    """Load a user score file: a 1-d numeric ``.npy`` of ``num_nodes`` finite values -> float64 [N]."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: score file not found")
    try:
        scores = np.load(path, allow_pickle=False)
    except Exception as exc:  # numpy raises ValueError/OSError on damaged files
        raise DatasetError(f"{path}: not a readable .npy array ({exc})") from None
    if scores.dtype.kind not in "iuf":
        raise DatasetError(f"{path}: expected a numeric score array, found dtype {scores.dtype}")
    if scores.shape != (num_nodes,):
        raise DatasetError(f"{path}: expected shape ({num_nodes},) (one score per node), found {scores.shape}")
    if scores.dtype.kind == "f" and not np.all(np.isfinite(scores)):
        raise DatasetError(f"{path}: expected finite scores, found NaN or infinity")
    return scores.astype(np.float64)


def reorder_topology(
    indptr: np.ndarray,
    indices: np.ndarray,
    perm: np.ndarray,
    *,
    out: np.ndarray | None = None,
    edge_chunk: int = EDGE_CHUNK,
    inverse: np.ndarray | None = None,
    progress: Progress = NO_PROGRESS,
) -> tuple[np.ndarray, np.ndarray]:
    """Relabel and relocate a CSC graph by ``perm``.

    ``indptr`` int64 [N + 1], ``indices`` int32/int64 [E] (may be memory maps), ``perm`` int64 [N]
    new -> old. A typed CSC passes its row order as ``perm`` (int64 [num_rows], :func:`relation_row_perm`)
    and the node order's ``inverse`` (int64 [N], old id -> new id) to renumber the sources. ``out`` (optional, [E] of ``indices``' dtype, e.g. a writable memory map) receives the
    new indices; it is filled in blocks of about ``edge_chunk`` edges. Returns (new int64 [N + 1]
    indptr, new indices) with every list sorted ascending.
    """
    indptr = np.asarray(indptr)
    indices_view = np.asarray(indices)
    num_nodes = perm.shape[0]
    if inverse is None:
        inverse = kernels.inverse_permutation(perm)
    new_indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(kernels.permuted_degrees(indptr, perm), out=new_indptr[1:])
    if out is None:
        out = np.empty(indices_view.shape[0], dtype=indices_view.dtype)
    out_view = np.asarray(out)
    parts = numba.get_num_threads()
    first = 0
    with progress.stage("reorder: relocate edges", total=int(new_indptr[-1]), unit="edges") as bar:
        while first < num_nodes:
            target = new_indptr[first] + edge_chunk
            last = int(np.searchsorted(new_indptr, target, side="right")) - 1
            last = min(num_nodes, max(last, first + 1))
            block = new_indptr[first : last + 1] - new_indptr[first]
            bounds = edge_balanced_bounds(block, parts) + first
            lo, hi = int(new_indptr[first]), int(new_indptr[last])
            kernels.relocate_lists(indptr, indices_view, perm, inverse, new_indptr, bounds, out_view[lo:hi])
            bar.advance(hi - lo)
            first = last
    return new_indptr, out


def permute_rows(
    source: np.ndarray,
    perm: np.ndarray,
    out: np.ndarray,
    *,
    chunk_bytes: int = FEATURE_CHUNK_BYTES,
    window_bytes: int | None = None,
    progress: Progress = NO_PROGRESS,
    description: str = "reorder: permute features",
) -> None:
    """``out[i] = source[perm[i]]`` for a [N, D] array, reading ``source`` only sequentially.

    ``source`` and ``out`` [N, D] float32/float16 (either may be a memory map), ``perm`` int64 [N].
    A table larger than RAM cannot be gathered row by row: every random row read would be a disk seek. So
    ``out`` is filled one window of about ``window_bytes`` at a time (default: a third of the available
    memory), and for each window ``source`` is streamed in blocks of about ``chunk_bytes``, every row landing
    in the window scattered to its place. A table that fits in one window takes one pass, scattered straight
    into ``out``; a larger one takes ceil(size / window) sequential passes over ``source``, each window filled
    in a RAM buffer and then written once, in order (scattered into a memory map over a whole pass, its pages
    would be written back and dirtied again: 104 GB written for a 26 GB table).
    ``progress`` reports the stage ``description`` (rows streamed, over all passes).
    """
    num_rows = perm.shape[0]
    if num_rows == 0 or source.shape[1] == 0:
        return
    raw_dtype = np.uint16 if source.dtype.itemsize == 2 else np.uint32 if source.dtype.itemsize == 4 else None
    src = np.asarray(source)
    dst = np.asarray(out)
    if raw_dtype is not None:
        src, dst = src.view(raw_dtype), dst.view(raw_dtype)
    row_bytes = max(1, source.shape[1] * source.dtype.itemsize)
    if window_bytes is None:
        window_bytes = max(chunk_bytes, available_memory() // 3)
    rows_per_chunk = max(1, chunk_bytes // row_bytes)
    rows_per_window = min(num_rows, max(1, window_bytes // row_bytes))
    windows = range(0, num_rows, rows_per_window)
    targets = kernels.inverse_permutation(perm)
    buffer = np.empty((rows_per_window, dst.shape[1]), dtype=dst.dtype) if len(windows) > 1 else None
    with progress.stage(description, total=num_rows * len(windows), unit="rows") as bar:
        for first in windows:
            stop = min(num_rows, first + rows_per_window)
            window = dst[first:stop] if buffer is None else buffer[: stop - first]
            for start in range(0, num_rows, rows_per_chunk):
                end = min(num_rows, start + rows_per_chunk)
                kernels.scatter_rows_into_window(src[start:end], targets[start:end], first, stop, window)
                bar.advance(end - start)
            if buffer is not None:
                dst[first:stop] = window


def permute_link_split(split: LinkSplit, inverse: np.ndarray, schema: Schema | None = None) -> LinkSplit:
    """``split`` with every node id mapped through ``inverse`` (int64 [N], old id -> new id): positive pairs,
    negative pairs and per-positive negative destinations alike (the ``dst_range`` must be all nodes); the pair
    times of a split by time stay as they are (one per pair row, not per node). A typed
    dataset's split of one relation (``schema``; ``split.meta["relation"]``) holds local ids: sources are mapped
    within the source type's range, destinations within the destination type's (each type keeps its range)."""
    src_map = dst_map = inverse
    if schema is not None and "relation" in split.meta:
        src, _, dst = split.meta["relation"]

        def local(name: str) -> np.ndarray:
            node_type = schema.node_type(name)
            return inverse[node_type.offset : node_type.offset + node_type.count] - node_type.offset

        src_map, dst_map = local(src), local(dst)

    def pairs_of(array: np.ndarray) -> np.ndarray:
        array = np.asarray(array, dtype=np.int64)
        return np.stack([src_map[array[:, 0]], dst_map[array[:, 1]]], axis=1) if array.size else array

    pairs = {
        name: LinkPairs(
            pairs_of(p.positives),
            None
            if p.negatives is None
            else dst_map[np.asarray(p.negatives, dtype=np.int64)]
            if p.per_positive
            else pairs_of(p.negatives),
            per_positive=p.per_positive,
            positive_times=p.positive_times,  # per pair, row-aligned: a new node order keeps them
            negative_times=p.negative_times,
        )
        for name, p in split.splits.items()
    }
    return LinkSplit(dict(split.meta), pairs)


def _edge_table_rows(
    writer: DatasetWriter,
    source: Dataset,
    moved: np.ndarray,
    indptr: np.ndarray,
    row_perm: np.ndarray,
    list_reads: np.ndarray | None,
) -> np.ndarray:
    """int64 [E]: the row of ``source``'s edge table to copy to each row of the new one (``moved``: int64 [E], each
    new CSC position's old position; ``indptr``: the new CSC; ``row_perm``: new row -> old row); with
    ``list_reads`` (float64 [old rows]) in read order, its ``edge_row.npy`` written beside."""
    old_map = edge_row_map(source)
    source_row = moved if old_map is None else np.asarray(old_map)[moved].astype(np.int64)
    if list_reads is None:
        return source_row
    lists = read_order(indptr, np.asarray(list_reads, np.float64)[row_perm])
    row_of = writer.open_memmap(EDGE_ROW, (source_row.shape[0],), row_dtype(source_row.shape[0]))
    rows = lay_out(indptr, lists, source_row, row_of)
    row_of.flush()
    return rows


def reorder_dataset(
    source: Dataset,
    output: str | os.PathLike[str],
    scores: np.ndarray,
    *,
    score_label: str,
    score_params: dict[str, Any] | None = None,
    overwrite: bool = False,
    edge_list_reads: np.ndarray | None = None,
    progress: Progress = NO_PROGRESS,
) -> tuple[Dataset, ReorderTimings]:
    """Write ``source`` reordered by descending ``scores`` (float64 [N]) to ``output`` (a typed dataset: each
    type by its own scores, see the module).

    ``score_label`` is the score method name or file recorded in ``meta.json``. Returns the new
    dataset (opened, validated) and the stage timings. ``perm.npy`` maps new ids to the ids of the
    original dataset (composed with the source's own ``perm`` when the source was reordered before).
    ``edge_list_reads`` (float64 [rows], the expected entry reads of each of ``source``'s lists, e.g.
    :func:`graphtier.tiering.hotness.list_reads`): write ``edge_feat.npy`` list by list in descending reads per
    edge, with ``edge_row.npy`` (:mod:`graphtier.dataset.edges.edge_rows`); None: in CSC order, without the map.
    ``progress`` reports the stages (``reorder: relocate edges``, ``reorder: permute features``, ...).
    """
    num_nodes = source.num_nodes
    scores = np.asarray(scores)
    if scores.shape != (num_nodes,):
        raise DatasetError(f"scores: expected shape ({num_nodes},), found {scores.shape}")
    num_lists = int(np.asarray(source.indptr).shape[0]) - 1
    if edge_list_reads is not None and np.shape(edge_list_reads) != (num_lists,):
        raise OptionError.invalid("edge_list_reads", f"one value per list ({num_lists},)", np.shape(edge_list_reads))
    typed_split = source.link is not None and "relation" in source.link.meta  # local ids: each type keeps its range
    if source.link is not None and not typed_split and source.link.dst_range != (0, num_nodes):
        raise DatasetError(
            f"{source.path}: the edge split draws negatives from the node range {list(source.link.dst_range)} "
            f"(meta.json 'link.dst_range'), which a new node order would scatter; expected [0, {num_nodes}] to reorder"
        )
    timings = ReorderTimings(num_edges=source.num_edges)
    started = time.perf_counter()
    schema = source.schema
    with progress.stage("reorder: sort by score", total=num_nodes, unit="nodes") as bar:
        perm = order_by_type(scores, schema)
        inverse = kernels.inverse_permutation(perm)
        row_perm = relation_row_perm(perm, schema)
        bar.advance(num_nodes)
    target = schema.target_type
    target_perm = perm[target.offset : target.stop] - target.offset
    target_inverse = inverse[target.offset : target.stop] - target.offset
    timings.sort_seconds = time.perf_counter() - started
    with DatasetWriter(output, overwrite=overwrite) as writer:
        started = time.perf_counter()
        indices_out = writer.open_memmap("indices", (source.num_edges,), source.indices.dtype)
        new_indptr, _ = reorder_topology(
            source.indptr, source.indices, row_perm, out=indices_out, inverse=inverse, progress=progress
        )
        indices_out.flush()
        del indices_out
        writer.save("indptr", new_indptr)
        per_edge = {EDGE_TIME: source.edge_time, EDGE_FEAT: source.edge_features, EDGE_LABEL: source.edge_label}
        if any(
            a is not None for a in per_edge.values()
        ):  # per-edge rows follow their edges (edge_time_order: at the end)
            moved = np.empty(source.num_edges, np.int64)
            times = np.asarray(source.edge_time) if source.edge_time is not None else np.empty(0, np.int64)
            relocated_positions(
                np.asarray(source.indptr), np.asarray(source.indices), times, row_perm, inverse, new_indptr, moved
            )
            for stem, array in per_edge.items():
                if array is None:
                    continue
                out = writer.open_memmap(stem, array.shape, array.dtype)
                table, target = (array, out) if array.ndim == 2 else (array[:, None], out[:, None])
                rows = _edge_table_rows(writer, source, moved, new_indptr, row_perm, edge_list_reads) if (
                    stem == EDGE_FEAT) else moved  # fmt: skip
                permute_rows(table, rows, target, progress=progress, description=f"reorder: move {stem}")
                out.flush()
                del out, rows
            del moved
        timings.topology_seconds = time.perf_counter() - started

        started = time.perf_counter()
        for t in schema.node_types:
            table = source.type_features.get(t.name)
            if table is None:
                continue
            features_out = writer.open_memmap(schema.feature_file(t.name), table.shape, table.dtype)
            what = f"{t.name} features" if len(schema.node_types) > 1 else "features"
            permute_rows(table, perm[t.offset : t.stop] - t.offset, features_out, progress=progress,
                         description=f"reorder: permute {what}")  # fmt: skip
            features_out.flush()
            timings.feature_bytes += int(features_out.nbytes)
            del features_out
        timings.feature_seconds = time.perf_counter() - started

        started = time.perf_counter()
        if source.labels is not None:
            writer.save("labels", np.asarray(source.labels)[target_perm])
        if source.node_time is not None:  # meta.json's entry (unit, range) is unchanged by a permutation
            writer.save(NODE_TIME, np.asarray(source.node_time)[perm])
        for name in ("train", "valid", "test"):
            split = source.split(name)
            if split is not None:
                writer.save(f"{name}_idx", np.sort(target_inverse[np.asarray(split, dtype=np.int64)]))
        link = source.link
        link_meta = (
            None if link is None else permute_link_split(link, inverse, schema if typed_split else None).save(writer)
        )
        for name in ("train", "valid", "test"):  # edge-level targets stay row-aligned with their pairs
            label_path = Path(source.path) / f"{link_label_file(name)}.npy"
            if label_path.is_file():
                writer.save(link_label_file(name), np.load(label_path, allow_pickle=False))
        original_perm = perm
        for name, array in source.extra.items():
            if name == EDGE_ROW:  # the edge table was read through it
                continue
            if name == "perm" and array.shape == (num_nodes,):
                original_perm = np.asarray(array, dtype=np.int64)[perm]
            elif name == "node_ids" and array.shape[:1] == (num_nodes,):
                writer.save("node_ids", np.asarray(array)[perm])
            else:
                timings.dropped_arrays.append(name)
        writer.save("perm", original_perm)
        names = json_node_ids(source)  # text ids (prepare edgelist): node_ids.json follows the nodes too
        if names is not None and "node_ids" not in source.extra:
            writer.write_text(NODE_IDS_JSON, json.dumps(names[perm].tolist()) + "\n")
        timings.other_seconds = time.perf_counter() - started

        meta = dict(source.meta)
        meta.pop("format_version", None)
        meta["node_order"] = "reordered"
        if link_meta is not None:
            meta[LINK_META_KEY] = link_meta
        source_info = dict(meta.get("source") or {})
        source_info.pop("created", None)
        meta["source"] = source_info
        meta["reorder"] = {
            "score": score_label,
            "params": dict(score_params or {}),
            "source_dataset": str(Path(source.path).resolve()),
            "ties": "old id ascending",
            "perm": "perm.npy maps new id -> original id",
            "dropped_arrays": timings.dropped_arrays,
        }
        meta = finish_edge_time(writer, meta)
        result = writer.finish(meta, progress=progress)
    return result, timings
