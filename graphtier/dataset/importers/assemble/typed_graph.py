"""Writing a typed (heterogeneous) graph: per-relation edge lists -> the back-to-back CSCs of the format.

See :mod:`graphtier.dataset.schema` for the layout. Every importer of typed data (the manifest, OGB's
heterogeneous layout, the MAG-like generator) ends here::

    schema = write_typed_graph(writer, types, relations, target="paper", add_reverse=True)
    # then labels.npy / <split>_idx.npy (local ids of the target type) and meta["hetero"] = schema.to_meta()
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources
from graphtier.dataset.edges.edge_data import EdgeColumns, write_edge_columns
from graphtier.dataset.edges.edge_time import EDGE_TIME
from graphtier.dataset.format import index_dtype
from graphtier.dataset.importers.common.edges import EdgeSpill, array_edge_chunks, build_csc
from graphtier.dataset.schema import RelationType, Schema, reverse_name
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError


@dataclass
class TypedNodes:
    """One node type to write: ``count`` nodes, ``features`` [count, dim] float32/float16 or None (featureless)."""

    name: str
    count: int
    features: np.ndarray | None = None


@dataclass
class TypedEdges:
    """One relation's edges in LOCAL ids: ``src`` [E] of type ``type[0]``, ``dst`` [E] of type ``type[2]``
    (integer arrays), or ``spill``, an :class:`~graphtier.dataset.importers.common.edges.EdgeSpill` holding them on disk
    (``src``/``dst`` None; ``swapped``: its chunks are read as ``(dst, src)``, the reverse relation);
    ``where`` names their origin (a file) in errors; ``shape``: ``(source count, destination count)`` when they
    came from an adjacency matrix (checked against the node types' counts), else None. A ``timed`` spill carries
    each edge's int64 time (a manifest relation's ``time`` column), which the reverse relation shares; ``columns``
    its edges' features and label in input order (a manifest relation's ``features``/``label``), shared likewise."""

    type: RelationType
    src: np.ndarray | None = None
    dst: np.ndarray | None = None
    where: str = ""
    shape: tuple[int, int] | None = None
    spill: EdgeSpill | None = None
    swapped: bool = False
    columns: EdgeColumns | None = None

    @property
    def timed(self) -> bool:
        """Whether the edges carry times (their chunks are ``(src, dst, time)``)."""
        return self.spill is not None and bool(self.spill.timed)

    @property
    def num_edges(self) -> int:
        """E, the edges of the relation (repeats included)."""
        return self.spill.num_edges if self.spill is not None else int(np.asarray(self.src).shape[0])

    def id_ranges(self) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """``((min, max) of the sources, (min, max) of the destinations)``; None without edges."""
        if self.spill is not None:
            if not self.spill.num_edges:
                return None
            ranges = (self.spill.src_range, self.spill.dst_range)
            return ranges[::-1] if self.swapped else ranges  # type: ignore[return-value]
        src, dst = np.asarray(self.src), np.asarray(self.dst)
        if not src.size:
            return None
        return (int(src.min()), int(src.max())), (int(dst.min()), int(dst.max()))

    def chunks(self) -> Iterator[tuple[np.ndarray, ...]]:
        """The edges as ``(src, dst)`` integer chunks [K], in order, ``(src, dst, time)`` when :attr:`timed`
        (:data:`~graphtier.dataset.importers.common.edges.EdgeChunks`)."""
        if self.spill is None:
            yield from array_edge_chunks(np.asarray(self.src), np.asarray(self.dst))()
            return
        if self.timed:
            for src, dst, time in self.spill.timed_chunks():
                yield (dst, src, time) if self.swapped else (src, dst, time)
            return
        for src, dst in self.spill:
            yield (dst, src) if self.swapped else (src, dst)

    def reverse(self, name: str) -> "TypedEdges":
        """The relation ``(dst type, name, src type)`` of the same edges turned around (no copy)."""
        src_type, _, dst_type = self.type
        return TypedEdges(
            (dst_type, name, src_type), self.dst, self.src, self.where, spill=self.spill, swapped=not self.swapped,
            columns=self.columns,
        )  # fmt: skip

    def remove(self) -> None:
        """Delete the spill file, if any (idempotent)."""
        if self.spill is not None:
            self.spill.remove()
        if self.columns is not None:
            self.columns.remove()


def spill_relation(
    relation: RelationType, blocks: Iterable[tuple[np.ndarray, ...]], scratch: Path, where: str
) -> TypedEdges:
    """A :class:`TypedEdges` of ``relation`` whose edges (``(src, dst)`` integer blocks [K], local ids, or
    ``(src, dst, time)`` with int64 times) are spilled to a scratch file in the folder ``scratch`` as they come,
    so no relation is held in memory whole."""
    spill = EdgeSpill(scratch, f"relation-{uuid.uuid4().hex}.spill")
    try:
        for block in blocks:
            spill.append(*block)
    except BaseException:
        spill.remove()
        raise
    return TypedEdges(relation, where=where, spill=spill)


def with_reverse(relations: Sequence[TypedEdges]) -> list[TypedEdges]:
    """``relations`` followed by ``(dst, rev_<name>, src)`` for each (``--add-reverse``)."""
    names = {r.type for r in relations}
    out = list(relations)
    for rel in relations:
        src, name, dst = rel.type
        reverse = (dst, reverse_name(name), src)
        if reverse in names:
            raise DatasetError(
                f"{rel.where or rel.type}: reverse relation {reverse} already exists; drop --add-reverse"
            )
        out.append(rel.reverse(reverse_name(name)))
    return out


def _offsets(counts: dict[str, int]) -> tuple[dict[str, int], int]:
    offsets: dict[str, int] = {}
    total = 0
    for name, count in counts.items():
        offsets[name] = total
        total += int(count)
    return offsets, total


def require_typed_csc_memory(
    counts: dict[str, int], relations: Sequence[tuple[RelationType, int, str]], what: str, extra: int = 0
) -> None:
    """Refuse (one-line :class:`~graphtier.errors.ResourceError`) a typed CSC whose build cannot fit in the available
    memory, before anything of its size is allocated: the relations' ``(type, edges, origin)`` need their
    ``indices`` (int32 below 2^31 nodes in all) and ``indptr`` (int64 [count(dst) + 1]) each, plus the build's
    degree counts and cursors of the largest destination type (:func:`~graphtier.dataset.importers.common.edges.build_csc`);
    ``extra`` bytes are added (a generator's own tables). The error names the largest relation and its origin."""
    _, total = _offsets(counts)
    itemsize = index_dtype(total).itemsize
    edges = sum(int(e) for _, e, _ in relations)
    rows = [int(counts.get(rel[2], 0)) + 1 for rel, _, _ in relations]
    needed = itemsize * edges + 8 * sum(rows) + 4 * 8 * max(rows, default=0) + extra
    largest = max(relations, key=lambda r: r[1], default=None)
    of = f" (largest: relation {largest[0]} of {largest[2] or 'the input'}, {largest[1]:,} edges)" if largest else ""
    resources.require_memory(
        needed, f"{what}: the typed CSC of {total:,} nodes and {edges:,} typed edges in {len(relations)} relations{of}"
    )


def typed_csc_parts(
    counts: dict[str, int],
    relations: Sequence[TypedEdges],
    *,
    dedup: bool = True,
    progress: Progress = NO_PROGRESS,
    time_parts: list[np.ndarray] | None = None,
    row_parts: list[tuple[EdgeColumns, np.ndarray]] | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray], list[int]]:
    """The format's ``indptr`` and ``indices`` of typed edges as per-relation parts (their concatenations are
    the arrays, see :func:`build_typed_csc`) and each relation's edge count after ``dedup``.

    When the relations carry times (:attr:`TypedEdges.timed`: all of them or none, else :class:`DatasetError`),
    each relation's ``edge_time`` part (int64, CSC order; a merged repeat keeps its earliest time) is appended
    to ``time_parts`` (required then). Likewise relations with per-edge columns (``columns``: all or none)
    append ``(columns, edge_row)`` (each stored edge's input row, CSC order) to ``row_parts``.

    Each relation is built by :func:`~graphtier.dataset.importers.common.edges.build_csc` from its edge chunks
    (the homogeneous importer's two passes, count and scatter, with its memory checks naming the relation), so
    memory holds the parts built so far and one relation's build, never the input edges whole.
    """
    offsets, total = _offsets(counts)
    out_dtype = index_dtype(total)
    indptr_parts = [np.zeros(1, dtype=np.int64)]
    index_parts: list[np.ndarray] = []
    edge_counts: list[int] = []
    edge_base = 0
    timed = [r for r in relations if r.timed]
    if timed and time_parts is None:
        raise ValueError("typed_csc_parts: relations with edge times need time_parts")
    if timed and len(timed) != len(relations):
        untimed = next(r for r in relations if not r.timed)
        raise DatasetError(
            f"{untimed.where or untimed.type}: relation {untimed.type}: expected edge times like relation "
            f"{timed[0].type} ({timed[0].where}), found none: give every relation a time column or none"
        )
    with_columns = [r for r in relations if r.columns is not None]
    if with_columns and row_parts is None:
        raise ValueError("typed_csc_parts: relations with edge columns need row_parts")
    if with_columns and len(with_columns) != len(relations):
        plain = next(r for r in relations if r.columns is None)
        raise DatasetError(
            f"{plain.where or plain.type}: relation {plain.type}: expected edge features or a label like relation "
            f"{with_columns[0].type} ({with_columns[0].where}), found none: give every relation the same or none"
        )
    with progress.stage("build the typed CSC", total=sum(r.num_edges for r in relations), unit="edges") as bar:
        for rel in relations:
            where = f"{rel.where or rel.type}: relation {rel.type}"
            src_type, _, dst_type = rel.type
            ranges = rel.id_ranges()
            for end, bounds in ((src_type, ranges and ranges[0]), (dst_type, ranges and ranges[1])):
                if end not in counts:
                    raise DatasetError(f"{where}: unknown node type {end!r}")
                if bounds and (bounds[0] < 0 or bounds[1] >= counts[end]):
                    raise DatasetError(
                        f"{where}: expected {end} ids in [0, {counts[end]}), found values in [{bounds[0]}, {bounds[1]}]"
                    )
            offset = out_dtype.type(offsets[src_type])

            def global_chunks(rel: TypedEdges = rel, offset: np.integer = offset) -> Iterator[tuple[np.ndarray, ...]]:
                for chunk in rel.chunks():
                    yield (chunk[0].astype(out_dtype) + offset, *chunk[1:])

            built = build_csc(
                global_chunks, counts[dst_type], keep_duplicates=not dedup, num_sources=total, what=where,
                timed=bool(timed), rows=bool(with_columns),
            )  # fmt: skip
            indptr_parts.append(built.indptr[1:] + edge_base)
            index_parts.append(built.indices)
            if built.edge_time is not None and time_parts is not None:
                time_parts.append(built.edge_time)
            if built.edge_row is not None and row_parts is not None and rel.columns is not None:
                row_parts.append((rel.columns, built.edge_row))
            edge_counts.append(int(built.indices.size))
            edge_base += int(built.indices.size)
            bar.advance(rel.num_edges)
    return indptr_parts, index_parts, edge_counts


def build_typed_csc(
    counts: dict[str, int],
    relations: Sequence[TypedEdges],
    *,
    dedup: bool = True,
    progress: Progress = NO_PROGRESS,
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The format's ``(indptr, indices, edges per relation)`` of typed edges.

    ``counts``: nodes per type, in global-id order. Returns int64 [sum over relations of count(dst) + 1],
    int32/int64 [E] GLOBAL source ids (sorted within each row), and each relation's edge count after
    ``dedup`` (repeated edges kept once). Raises :class:`DatasetError` naming the relation and its origin
    when an id exceeds its type's count. ``progress`` reports the stage ``build the typed CSC``
    relation by relation (input edges). :func:`write_typed_graph` writes the parts of :func:`typed_csc_parts`
    without this concatenation.
    """
    indptr_parts, index_parts, edge_counts = typed_csc_parts(counts, relations, dedup=dedup, progress=progress)
    dtype = index_dtype(sum(int(c) for c in counts.values()))
    indices = np.concatenate(index_parts) if index_parts else np.zeros(0, dtype=dtype)
    return np.concatenate(indptr_parts), indices.astype(dtype, copy=False), edge_counts


def write_typed_graph(
    writer: DatasetWriter,
    types: Sequence[TypedNodes],
    relations: Sequence[TypedEdges],
    *,
    target: str,
    add_reverse: bool = False,
    progress: Progress = NO_PROGRESS,
    edge_meta: dict[str, Any] | None = None,
) -> Schema:
    """Write ``indptr.npy``, ``indices.npy`` and ``features_<type>.npy`` of a typed graph; return its schema.

    The caller writes labels and splits (local ids of ``target``) and puts ``schema.to_meta()`` under
    ``meta["hetero"]`` with ``num_nodes = schema.num_nodes``, ``num_edges = schema.num_edges`` and
    ``feature_dim = 0``. ``progress`` reports building the CSC (:func:`build_typed_csc`). Relations with per-edge
    columns write ``edge_feat.npy``/``edge_label.npy``, whose ``meta.json`` entries go into ``edge_meta``.
    """
    if add_reverse:
        relations = with_reverse(relations)
    counts = {t.name: int(t.count) for t in types}
    resources.require_type_capacity(counts, f"{writer.output}: node types")
    if len(counts) != len(types):
        raise DatasetError(f"{writer.output}: node types must be distinct, found {[t.name for t in types]}")
    for rel in relations:
        expected = (counts.get(rel.type[0]), counts.get(rel.type[2]))
        if rel.shape is not None and tuple(rel.shape) != expected:
            raise DatasetError(
                f"{rel.where}: relation {rel.type}: expected an adjacency of shape {expected} "
                f"({rel.type[0]} x {rel.type[2]} nodes), found {tuple(rel.shape)}"
            )
    require_typed_csc_memory(counts, [(r.type, r.num_edges, r.where) for r in relations], str(writer.output))
    time_parts: list[np.ndarray] = []
    row_parts: list[tuple[EdgeColumns, np.ndarray]] = []
    indptr_parts, index_parts, edge_counts = typed_csc_parts(
        counts, relations, progress=progress, time_parts=time_parts, row_parts=row_parts
    )
    entries = write_edge_columns(writer, row_parts, str(writer.output))
    if edge_meta is not None:
        edge_meta.update(entries)
    del row_parts
    for rel in relations:
        rel.remove()
    schema = Schema.build(
        [
            (
                t.name,
                t.count,
                0 if t.features is None else int(t.features.shape[1]),
                "float32" if t.features is None else str(t.features.dtype),
            )
            for t in types
        ],
        [(rel.type, count) for rel, count in zip(relations, edge_counts, strict=True)],
        target,
    )
    writer.save_parts("indptr", indptr_parts)
    writer.save_parts("indices", index_parts)
    if any(r.timed for r in relations):
        writer.save_parts(EDGE_TIME, time_parts)
    del indptr_parts, index_parts, time_parts
    for t in types:
        if t.features is not None:
            writer.save(schema.feature_file(t.name), t.features)
    return schema
