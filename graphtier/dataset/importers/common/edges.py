"""Edges of an import: :class:`EdgeSpill` (parsed edge chunks in a scratch file, so an edge list larger than
memory imports; :mod:`~graphtier.dataset.importers.common.spill`), :class:`IdMap` (dense renumbering of node ids), and
:func:`build_csc` (two passes over edge chunks, count and scatter, into the CSC layout), with the memory checks
made before allocating.

Peak memory of an import is about ``indices + 5 * indptr`` plus one chunk, independent of how the input
is spread over lines: repeated edges are dropped and missing reverse edges merged in place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources
from graphtier.dataset.csc import merge_list_halves, reciprocity, sort_list_halves
from graphtier.dataset.edges._edge_time_kernels import scatter_timed_sources, sort_timed_halves
from graphtier.dataset.format import index_dtype
from graphtier.dataset.importers.common import kernels
from graphtier.dataset.importers.common.spill import EdgeSpill  # noqa: F401  (re-exported: importers use edges.EdgeSpill)
from graphtier.errors import DatasetError, OptionError

EDGE_CHUNK = 1 << 23
"""Edges per chunk when edges come from arrays rather than text."""


# ---------------------------------------------------------------------------- id maps


@dataclass
class IdMap:
    """Map original integer node ids to dense ids ``0..num_nodes-1``, keeping their order.

    Exactly one representation is used: identity (``table`` and ``sorted_ids`` are None), a lookup
    ``table`` (int64 [span], -1 for absent ids; new id of ``i`` is ``table[i - offset]``), or the
    ``sorted_ids`` themselves (int64 [N]; mapped with a binary search).
    """

    num_nodes: int
    offset: int = 0
    table: np.ndarray | None = None
    sorted_ids: np.ndarray | None = None
    nodes_only_in_node_data: int = 0
    """Nodes that no edge touches but a features/labels file covers (kept as isolated nodes)."""

    @property
    def is_identity(self) -> bool:
        return self.table is None and self.sorted_ids is None

    def original_ids(self) -> np.ndarray | None:
        """int64 [N]: the original id of every new id, or None for the identity map."""
        if self.sorted_ids is not None:
            return self.sorted_ids
        if self.table is not None:
            return (np.flatnonzero(self.table >= 0) + self.offset).astype(np.int64)
        return None

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """New ids (int64 [K]) of original ``ids`` (int [K]); -1 where an id is unknown."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.is_identity:
            return np.where((ids >= 0) & (ids < self.num_nodes), ids, -1)
        if self.table is not None:
            rel = ids - self.offset
            inside = (rel >= 0) & (rel < self.table.shape[0])
            out = np.full(ids.shape, -1, dtype=np.int64)
            out[inside] = self.table[rel[inside]]
            return out
        assert self.sorted_ids is not None
        pos = np.searchsorted(self.sorted_ids, ids)
        pos_clipped = np.minimum(pos, max(self.sorted_ids.shape[0] - 1, 0))
        found = (
            (pos < self.sorted_ids.shape[0]) & (self.sorted_ids[pos_clipped] == ids)
            if self.sorted_ids.size
            else np.zeros(ids.shape, bool)
        )
        return np.where(found, pos, -1).astype(np.int64)

    def map_known(self, ids: np.ndarray) -> np.ndarray:
        """New ids of ids known to be present (edge endpoints); int32 when N < 2^31, else int64."""
        dtype = index_dtype(self.num_nodes)
        if self.is_identity:
            return ids.astype(dtype, copy=False)
        if self.table is not None:
            return self.table[np.asarray(ids, dtype=np.int64) - self.offset].astype(dtype, copy=False)
        assert self.sorted_ids is not None
        return np.searchsorted(self.sorted_ids, ids).astype(dtype, copy=False)


def build_id_map(spill: EdgeSpill, num_nodes: int | None, source: Path, coverage: Any = None) -> IdMap:
    """The dense id map of the ids in ``spill`` and of the ids node data files cover.

    With ``num_nodes`` the ids must lie in ``[0, num_nodes)`` and are kept. Otherwise ids that
    already are ``0..max`` (every one used) are kept, and anything else (gaps, negative or huge
    ids) is renumbered densely in ascending order of original id. ``coverage`` (a
    :class:`~graphtier.dataset.importers.common.node_data.NodeCoverage`) adds the ids that features or
    labels cover, so a node without edges is never dropped; their count is
    ``nodes_only_in_node_data`` of the result.
    """
    if num_nodes is not None:
        if num_nodes < 0:
            raise OptionError(f"--num-nodes: expected a non-negative integer, found {num_nodes}")
        if spill.num_edges and (spill.min_id < 0 or spill.max_id >= num_nodes):  # type: ignore[operator]
            raise DatasetError(
                f"{source}: expected node ids in [0, {num_nodes}) (--num-nodes), "
                f"found ids in [{spill.min_id}, {spill.max_id}]"
            )
        require_csc_memory(num_nodes, spill.num_edges, f"--num-nodes {num_nodes:,}")
        return IdMap(num_nodes=num_nodes)
    extra = coverage.bounds() if coverage is not None else None
    if spill.num_edges == 0 and extra is None:
        return IdMap(num_nodes=0)
    bounds = [b for b in ((spill.min_id, spill.max_id) if spill.num_edges else None, extra) if b is not None]
    low = int(min(b[0] for b in bounds))
    high = int(max(b[1] for b in bounds))
    span = high - low + 1
    extra_count = 0 if coverage is None else coverage.dense_rows + (0 if coverage.ids is None else coverage.ids.size)
    if span <= spill.num_edges + extra_count + (1 << 22):
        present = np.zeros(span, dtype=np.bool_)
        for src, dst in spill:
            kernels.mark_present(src.astype(np.int64, copy=False), low, present)
            kernels.mark_present(dst.astype(np.int64, copy=False), low, present)
        in_edges = int(np.count_nonzero(present))
        if coverage is not None:
            present[0 - low : coverage.dense_rows - low] = True
            if coverage.ids is not None:
                present[coverage.ids - low] = True
        used = int(np.count_nonzero(present))
        if low == 0 and used == span:
            return IdMap(num_nodes=span, nodes_only_in_node_data=used - in_edges)
        table = np.cumsum(present, dtype=np.int64) - 1
        table[~present] = -1
        return IdMap(num_nodes=used, offset=low, table=table, nodes_only_in_node_data=used - in_edges)
    unique = np.empty(0, dtype=np.int64)
    for src, dst in spill:
        chunk_ids = np.unique(np.concatenate([src, dst]).astype(np.int64, copy=False))
        unique = np.union1d(unique, chunk_ids)
    in_edges = int(unique.shape[0])
    if coverage is not None:
        if coverage.dense_rows:
            unique = np.union1d(unique, np.arange(coverage.dense_rows, dtype=np.int64))
        if coverage.ids is not None:
            unique = np.union1d(unique, coverage.ids.astype(np.int64))
    return IdMap(
        num_nodes=int(unique.shape[0]), sorted_ids=unique, nodes_only_in_node_data=int(unique.shape[0]) - in_edges
    )


# ---------------------------------------------------------------------------- CSC


EdgeChunks = Callable[[], Iterable[tuple[np.ndarray, ...]]]
"""Called for each pass over the edges: ``(src, dst)`` arrays [K] per chunk, or ``(src, dst, time)`` (timed)."""


@dataclass
class EdgeCounts:
    """What :func:`build_csc` did to the input edges (reported by ``prepare`` and kept in ``meta.json``)."""

    input_edges: int
    """Edges read from the input."""
    self_loops_dropped: int
    """``v -> v`` edges dropped (``drop_self_loops``)."""
    duplicates_dropped: int
    """Repeats of an input edge dropped (0 with ``keep_duplicates``)."""
    reverse_present: int
    """Input edges ``u -> v`` (``u != v``) whose reverse ``v -> u`` was in the input too."""
    reverses_added: int
    """Reverse edges added by ``undirected`` (the missing directions only)."""
    symmetric: bool
    """Whether the result stores ``v -> u`` for every ``u -> v`` (as often)."""

    def as_meta(self) -> dict[str, int | bool]:
        """The counts for ``meta.json`` ``source.edges``."""
        return {
            "input_edges": self.input_edges,
            "self_loops_dropped": self.self_loops_dropped,
            "duplicates_dropped": self.duplicates_dropped,
            "reverse_present": self.reverse_present,
            "reverses_added": self.reverses_added,
        }


@dataclass
class BuiltCsc:
    """The result of :func:`build_csc`: CSC arrays and the :class:`EdgeCounts`."""

    indptr: np.ndarray
    indices: np.ndarray
    counts: EdgeCounts
    edge_time: np.ndarray | None = None
    """int64 [E'] in CSC order (``timed`` builds), else None."""
    edge_row: np.ndarray | None = None
    """int64 [E'] in CSC order: the input row (0-based ordinal among the chunks' edges) of every stored edge
    (``rows`` builds; gathers per-edge columns, :mod:`graphtier.dataset.edges.edge_data`), else None."""


def build_csc(
    chunks: EdgeChunks,
    num_nodes: int,
    *,
    undirected: bool = False,
    keep_duplicates: bool = False,
    drop_self_loops: bool = False,
    progress: Progress = NO_PROGRESS,
    num_input_edges: int | None = None,
    num_sources: int | None = None,
    what: str = "",
    timed: bool = False,
    rows: bool = False,
) -> BuiltCsc:
    """Build the CSC arrays from edge chunks in two passes (count, then scatter).

    Args:
        chunks: called twice; each call yields ``(src, dst)`` integer arrays [K] of dense ids in
            ``[0, num_nodes)`` (CPU), the same edges in the same order both times.
        num_nodes: N.
        undirected: add ``v -> u`` for every ``u -> v`` whose reverse is missing (``u != v``), so the
            result is the same whether or not the input already listed both directions.
        keep_duplicates: keep repeated edges (by default one copy is kept and the repeats are
            counted). With ``undirected`` an edge is then stored ``max(m(u, v), m(v, u))`` times.
        drop_self_loops: drop ``v -> v``.
        progress: reports the two passes (``prepare: count edges``, ``prepare: place edges``) chunk by chunk.
        num_input_edges: the number of edges ``chunks`` yields, when known: the first pass's total (its ETA).
        num_sources: sources are other nodes than the destinations (a relation of a typed graph, its sources as
            global ids), with ids in ``[0, num_sources)``: they set the dtype of ``indices``, and the
            reciprocity of ``counts`` is not computed (0, not symmetric). Not with ``undirected``.
        what: names the graph in the memory checks' errors (a typed relation and its file); default: none.
        timed: ``chunks`` yield ``(src, dst, time)`` (time int64 [K]): the times follow their edges (a reverse edge
            added by ``undirected`` gets its edge's time), each list is sorted by (source, time), and a merged
            repeat keeps the earliest time (its copies' earliest ones with ``keep_duplicates``).
        rows: carry every edge's input row (its 0-based ordinal in the chunks, self-loops counted) through the
            build: a reverse edge added by ``undirected`` gets its edge's row, a merged repeat keeps the row of its
            earliest copy (by input row; by (time, input row) when ``timed``), so per-edge columns follow
            their edges (``BuiltCsc.edge_row``).

    Returns:
        :class:`BuiltCsc`: ``indptr`` int64 [N + 1], ``indices`` int32 (N, or ``num_sources``, < 2^31) or
        int64 [E'], lists sorted, the :class:`EdgeCounts`, ``edge_time`` int64 [E'] when ``timed`` and
        ``edge_row`` int64 [E'] when ``rows``.
    """
    if num_sources is not None and undirected:
        raise ValueError("build_csc: undirected needs sources and destinations of one node set (num_sources=None)")
    dtype = index_dtype(num_nodes if num_sources is None else num_sources)
    prefix = f"{what}: " if what else ""
    resources.require_memory(
        5 * 8 * (num_nodes + 1), f"{prefix}building the CSC of {num_nodes:,} nodes (degree counts)"
    )

    no_time = np.zeros(0, dtype=np.int64)
    # rows without times: the input row travels as the "time" (sorted by (source, row), a repeat keeps its first row)
    row_payload = rows and not timed
    keyed = timed or rows
    seen = [0]

    def loop_free(chunk: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        src, dst = chunk[0], chunk[1]
        time = chunk[2] if timed else no_time
        row = np.arange(seen[0], seen[0] + src.shape[0], dtype=np.int64) if rows else no_time
        seen[0] += src.shape[0]
        if row_payload:
            time = row
        loops = src == dst
        if drop_self_loops:
            keep = ~loops
            return src[keep], dst[keep], time[keep] if keyed else time, row[keep] if rows else row, loops[:0]
        return src, dst, time, row, loops

    input_edges = 0
    forward = np.zeros(num_nodes, dtype=np.int64)
    backward = np.zeros(num_nodes if undirected else 0, dtype=np.int64)
    with progress.stage("prepare: count edges", total=num_input_edges, unit="edges") as bar:
        for chunk in chunks():
            input_edges += int(chunk[0].shape[0])
            bar.advance(int(chunk[0].shape[0]))
            src, dst, _, _, loops = loop_free(chunk)
            kernels.count_destinations(dst, forward)
            if undirected:
                kernels.count_destinations(src[~loops] if loops.size else src, backward)
    kept_input = int(forward.sum())
    loops_dropped = input_edges - kept_input
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(forward + backward if undirected else forward, out=indptr[1:])
    middle = indptr[:-1] + forward
    del forward, backward
    num_edges = int(indptr[-1])
    resources.require_memory(
        num_edges * (dtype.itemsize + 8 * keyed + 8 * (timed and rows))
        + 8 * (num_nodes + 1) * (1 + 2 * (timed and rows)),
        f"{prefix}building the CSC of {num_nodes:,} nodes and {num_edges:,} edges",
    )
    indices = np.empty(num_edges, dtype=dtype)
    edge_time = np.empty(num_edges if keyed else 0, dtype=np.int64)
    edge_row = np.empty(num_edges if timed and rows else 0, dtype=np.int64)  # rows next to real times
    cursor = indptr[:-1].copy()
    back_cursor = middle.copy() if undirected else cursor
    # rows next to real times: their own cursors, advancing as the ones of the edges do
    row_cursors = {id(c): c.copy() for c in (cursor, back_cursor)} if edge_row.size else {}
    seen[0] = 0

    def scatter(src: np.ndarray, dst: np.ndarray, time: np.ndarray, row: np.ndarray, at: np.ndarray) -> None:
        if edge_row.size:
            kernels.scatter_sources(row, dst, row_cursors[id(at)], edge_row)
        if keyed:
            scatter_timed_sources(src.astype(dtype, copy=False), dst, time, at, indices, edge_time)
        else:
            kernels.scatter_sources(src.astype(dtype, copy=False), dst, at, indices)

    with progress.stage("prepare: place edges", total=input_edges, unit="edges") as bar:
        for chunk in chunks():
            bar.advance(int(chunk[0].shape[0]))
            src, dst, time, row, loops = loop_free(chunk)
            scatter(src, dst, time, row, cursor)
            if undirected:
                if loops.size:
                    src, dst = src[~loops], dst[~loops]
                    time, row = time[~loops] if keyed else time, row[~loops] if rows else row
                scatter(dst, src, time, row, back_cursor)
    if not (np.array_equal(cursor, middle) and (not undirected or np.array_equal(back_cursor, indptr[1:]))):
        raise DatasetError("edge chunks changed between the two passes (input modified while importing?)")
    del cursor, back_cursor
    row_cursors.clear()
    duplicates = reciprocal = 0
    times = edge_time if keyed else None
    row_times = edge_row if edge_row.size else None
    if undirected:
        if keyed:
            sort_timed_halves(indptr, middle, indices, edge_time, edge_row)
        else:
            sort_list_halves(indptr, middle, indices)
        indptr, indices, duplicates, reciprocal = merge_list_halves(
            indptr, middle, indices, keep_duplicates=keep_duplicates, edge_time=times, edge_row=row_times
        )
        symmetric = True
    else:
        if keyed:
            sort_timed_halves(indptr, indptr[1:], indices, edge_time, edge_row)
        else:
            kernels.sort_neighbour_lists(indptr, indices)
        if not keep_duplicates:
            indptr, indices, duplicates, _ = merge_list_halves(
                indptr, indptr[1:], indices, edge_time=times, edge_row=row_times
            )
        reciprocal, _, symmetric = reciprocity(indptr, indices) if num_sources is None else (0, 0, False)
    added = int(indices.shape[0]) - (kept_input - duplicates) if undirected else 0
    counts = EdgeCounts(input_edges, loops_dropped, duplicates, reciprocal, added, symmetric)
    e = indices.shape[0]
    row_out = (edge_time if row_payload else edge_row)[:e] if rows else None
    return BuiltCsc(indptr, indices, counts, edge_time[:e] if timed else None, row_out)


def require_csc_memory(num_nodes: int, num_edges: int, what: str) -> None:
    """Refuse (:class:`ResourceError`) a graph whose CSC build cannot fit in the available memory.

    The build needs ``indptr``, the split points of the lists, the degree counts and two cursors
    (int64 [N + 1] each) and ``indices`` ([E], int32 below 2^31 nodes; ``--undirected`` adds up to
    E more); checked before anything that large is allocated.
    """
    needed = 5 * 8 * (num_nodes + 1) + num_edges * index_dtype(num_nodes).itemsize
    resources.require_memory(needed, f"{what}: the CSC of {num_nodes:,} nodes and {num_edges:,} edges")


def array_edge_chunks(src: np.ndarray, dst: np.ndarray, chunk: int = EDGE_CHUNK) -> EdgeChunks:
    """An :data:`EdgeChunks` over two in-memory integer arrays [E]."""

    def gen() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, src.shape[0], chunk):
            yield np.asarray(src[start : start + chunk]), np.asarray(dst[start : start + chunk])

    return gen


def gather_rows(path: Path, rows_available: int, idmap: IdMap, what: str) -> np.ndarray | None:
    """The original row of every new id (int64 [N]) when ids were remapped, after a range check."""
    original = idmap.original_ids()
    if original is None:
        if rows_available != idmap.num_nodes:
            raise DatasetError(f"{path}: expected {idmap.num_nodes} {what} rows (one per node), found {rows_available}")
        return None
    if original.size and (int(original[-1]) >= rows_available or int(original[0]) < 0):
        bad = int(original[-1]) if int(original[-1]) >= rows_available else int(original[0])
        raise DatasetError(
            f"{path}: node id {bad} out of range for {what} rows: expected ids in [0, {rows_available}) "
            "(row k holds original node id k)"
        )
    return original
