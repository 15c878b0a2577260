"""An edge split from given pairs (split files, OGB's link split, MovieLens' folds) instead of fractions.

:func:`split_from_pairs` takes the positive pairs of train/valid/test (dense node ids) and optional
negatives, checks them (disjoint splits, negatives that are not edges, train pairs that are edges), removes
the held-out positives from the message-passing graph and draws the negatives not given. The result is the
graph to write and the :class:`~graphtier.dataset.edges.link_split.LinkSplit` to save beside it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from graphtier.dataset.edges import _edge_split_kernels as edge_kernels
from graphtier.dataset.edges.edge_data import write_link_labels
from graphtier.dataset.edges.edge_split import (
    canonical_pair_keys,
    draw_eval_negatives,
    edge_keys,
    graph_pairs,
    pair_keys,
    remove_pairs,
)
from graphtier.dataset.edges.edge_time import carry_edge_time
from graphtier.dataset.edges.link_split import EVAL_SPLITS, LINK_META_KEY, LinkPairs, LinkSplit
from graphtier.dataset.importers.split.pair_files import (
    POSITIVE_KEYS,
    EdgeSplitFiles,
    IdLookup,
    read_pair_file,
    row_location,
)
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError


@dataclass
class GivenPairs:
    """The pairs of an edge split as given: ``positives[split]`` int64 [P, 2] for ``train`` (optional),
    ``valid``, ``test``; ``negatives[split]`` for ``valid``/``test`` (optional): int64 [Q, 2] pairs, or
    [P, K] destinations when ``eval_negatives`` K > 0. ``sources[split]`` / ``sources[split + "_neg"]`` name
    where each came from in errors (a file, an OGB ``.pt`` key)."""

    positives: dict[str, np.ndarray]
    negatives: dict[str, np.ndarray] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    locate: Any = None
    """``locate(key, row) -> str`` ("line 7"), or None: rows are named "row R"."""

    def where(self, key: str, row: int) -> str:
        """``"<source>: <location>"`` of row ``row`` of ``key``."""
        location = self.locate(key, row) if self.locate is not None else f"row {row}"
        return f"{self.sources.get(key, key)}: {location}"


def read_split_files(
    files: EdgeSplitFiles, *, num_nodes: int, lookup: IdLookup | None, eval_negatives: int
) -> GivenPairs:
    """Read every file of ``files`` through the id map ``lookup`` (None: ids are node ids in ``[0, num_nodes)``).

    Negatives are [Q, 2] pairs, or [P, K] destinations with ``eval_negatives`` K > 0 (one line per positive).
    """
    files.check_exist()
    given = GivenPairs({}, locate=lambda key, row: row_location(files.get(key), row))  # type: ignore[arg-type]
    for key, path in files.entries:
        given.sources[key] = str(path)
        if key in POSITIVE_KEYS:
            given.positives[key] = read_pair_file(path, 2, num_nodes=num_nodes, lookup=lookup)
        else:
            columns = eval_negatives if eval_negatives > 0 else 2
            given.negatives[key.removesuffix("_neg")] = read_pair_file(
                path, columns, num_nodes=num_nodes, lookup=lookup, allow_extra_columns=eval_negatives == 0
            )
    return given


def contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """bool [K]: which ``keys`` are in ``sorted_keys``."""
    if sorted_keys.size == 0:
        return np.zeros(keys.shape, bool)
    pos = np.minimum(np.searchsorted(sorted_keys, keys), sorted_keys.size - 1)
    return sorted_keys[pos] == keys


def check_disjoint(given: GivenPairs, num_nodes: int, undirected: bool) -> None:
    """No pair in two of train/valid/test (both directions count as one pair on an undirected graph)."""
    names = [s for s in POSITIVE_KEYS if s in given.positives]
    keys = {
        s: canonical_pair_keys(given.positives[s][:, 0], given.positives[s][:, 1], num_nodes, undirected) for s in names
    }
    for i, first in enumerate(names):
        for second in names[i + 1 :]:
            both = np.isin(keys[first], keys[second])
            count = int(np.count_nonzero(both))
            if count:
                row = int(np.flatnonzero(both)[0])
                raise DatasetError(
                    f"{given.where(first, row)}: expected {first} and {second} pairs to be disjoint, found {count:,} "
                    f"{first} pair(s) also in {given.sources.get(second, second)} (the first one here)"
                )


def negative_pairs(negatives: np.ndarray, positives: np.ndarray, eval_negatives: int) -> np.ndarray:
    """int64 [Q, 2] pairs of [Q, 2] negatives, or of [P, K] destinations (each positive's source repeated)."""
    if eval_negatives == 0:
        return negatives
    return LinkPairs(positives, negatives, per_positive=True).negative_pairs()


def check_negatives(
    given: GivenPairs,
    indptr: np.ndarray,
    indices: np.ndarray,
    forbidden_keys: np.ndarray,
    *,
    undirected: bool,
    eval_negatives: int,
    dst_range: tuple[int, int],
) -> None:
    """Given negatives: [P, K] rows match the positives, destinations in ``dst_range``, none a self-loop, an edge
    of the full graph (``indptr``, ``indices``) or a positive (``forbidden_keys``, sorted ``dst * N + src``), in
    either direction when ``undirected``."""
    for split, negatives in given.negatives.items():
        key = f"{split}_neg"
        positives = given.positives[split]
        if eval_negatives > 0 and negatives.shape[0] != positives.shape[0]:
            raise DatasetError(
                f"{given.sources.get(key, key)}: expected {positives.shape[0]:,} rows of {eval_negatives} negative "
                f"destinations (one per {split} positive, --eval-negatives {eval_negatives}), found {negatives.shape[0]:,}"
            )
        pairs = negative_pairs(negatives, positives, eval_negatives)
        lo, hi = dst_range
        outside = np.flatnonzero((pairs[:, 1] < lo) | (pairs[:, 1] >= hi))
        bad = edge_kernels.pairs_excluded(indptr, indices, forbidden_keys, pairs[:, 0], pairs[:, 1], undirected)
        rows = np.flatnonzero(bad)
        columns = max(eval_negatives, 1)
        if outside.size:
            row = int(outside[0]) // columns
            raise DatasetError(
                f"{given.where(key, row)}: expected negative destinations in [{lo}, {hi}), found node "
                f"{int(pairs[outside[0], 1])}"
            )
        if rows.size:
            row = int(rows[0]) // columns
            raise DatasetError(
                f"{given.where(key, row)}: expected negatives that are not edges, found {rows.size:,} edge(s) of the "
                "graph, positive pair(s) or self-loop(s) (the first one here)"
            )


@dataclass
class SplitGraph:
    """The result of :func:`split_from_pairs`: the message-passing graph and the split to save beside it."""

    indptr: np.ndarray
    indices: np.ndarray
    split: LinkSplit
    removed_edges: int
    """Edges (directed entries) removed from the graph: the held-out positives that were edges."""


def split_from_pairs(
    given: GivenPairs,
    indptr: np.ndarray,
    indices: np.ndarray,
    *,
    undirected: bool,
    eval_negatives: int = 0,
    dst_range: tuple[int, int] | None = None,
    src_range: tuple[int, int] | None = None,
    seed: int = 0,
    meta: dict[str, Any] | None = None,
) -> SplitGraph:
    """Check the given pairs against the graph, hold the valid/test positives out and draw missing negatives.

    Args:
        given: the pairs (dense node ids); ``train`` defaults to every edge left in the graph.
        indptr, indices: the full graph (CSC; int64 [N + 1], int32/int64 [E]).
        undirected: a pair and its reverse are one edge (both directions are removed).
        eval_negatives: K negative destinations per evaluation positive (0: [Q = P, 2] negative pairs).
        dst_range: ``[lo, hi)`` negative destinations come from (default all nodes); src_range: the sources of
            drawn negative pairs (``eval_negatives == 0``; default all nodes).
        seed: seed of the drawn negatives.
        meta: provenance for ``meta.json`` ``"link"`` (``method``, ``files`` ...).

    Returns:
        :class:`SplitGraph`: the graph without the held-out positives and the :class:`LinkSplit`.
    """
    n = indptr.shape[0] - 1
    lo, hi = dst_range if dst_range is not None else (0, n)
    check_disjoint(given, n, undirected)
    held_out = np.concatenate([given.positives[s] for s in EVAL_SPLITS if s in given.positives] or [np.empty((0, 2))])
    held_out = held_out.astype(np.int64, copy=False)
    all_positives = np.concatenate([held_out, given.positives.get("train", np.empty((0, 2), np.int64))])
    forbidden_keys = pair_keys(all_positives, n, undirected=False)
    check_negatives(
        given, indptr, indices, forbidden_keys, undirected=undirected, eval_negatives=eval_negatives, dst_range=(lo, hi)
    )
    new_indptr, new_indices, removed = remove_pairs(indptr, indices, held_out, undirected=undirected)
    train = given.positives.get("train")
    if train is None:
        train = graph_pairs(new_indptr, new_indices, undirected=undirected)
    else:
        missing = ~contains(edge_keys(new_indptr, new_indices), train[:, 1] * np.int64(max(n, 1)) + train[:, 0])
        if np.any(missing):
            row = int(np.flatnonzero(missing)[0])
            raise DatasetError(
                f"{given.where('train', row)}: expected train pairs that are edges of the graph, found "
                f"{int(np.count_nonzero(missing)):,} that are not (the first one here)"
            )
    splits = {"train": LinkPairs(train)}
    for split in EVAL_SPLITS:
        positives = given.positives[split]
        negatives = given.negatives.get(split)
        if negatives is None:
            negatives = draw_eval_negatives(
                indptr,
                indices,
                positives,
                k=eval_negatives,
                dst_range=(lo, hi),
                seed=seed + EVAL_SPLITS.index(split),
                undirected=undirected,
                forbidden=all_positives,
                src_range=src_range,
            )
        splits[split] = LinkPairs(positives, negatives, per_positive=eval_negatives > 0)
    link_meta = {
        **(meta or {}),
        "eval_negatives": int(eval_negatives),
        "dst_range": [int(lo), int(hi)],
        "undirected": bool(undirected),
        "seed": int(seed),
        "drawn_negatives": [s for s in EVAL_SPLITS if s not in given.negatives],
    }
    return SplitGraph(new_indptr, new_indices, LinkSplit(link_meta, splits), int(removed))


def split_written_graph_from_files(
    writer: DatasetWriter,
    meta: dict[str, Any],
    files: EdgeSplitFiles | None,
    *,
    lookup: IdLookup | None,
    eval_negatives: int = 0,
    seed: int = 0,
) -> dict[str, Any]:
    """Apply ``--edge-split-files`` to the dataset ``writer`` is writing, before ``writer.finish``: the files are
    read through the importer's id map ``lookup`` (None: ids are node ids), checked, the held-out positives leave
    the written graph (``indptr.npy``, ``indices.npy``), missing negatives are drawn, the pair files written; the
    returned copy of ``meta`` has the new ``num_edges`` and ``"link"``. ``files`` None returns ``meta``.

    The graph is undirected when ``meta["symmetric"]`` says so (a pair and its reverse are one edge).
    """
    if files is None:
        return meta

    def read(num_nodes: int) -> tuple[GivenPairs, int]:
        return read_split_files(
            files, num_nodes=num_nodes, lookup=lookup, eval_negatives=eval_negatives
        ), eval_negatives

    return split_written_graph_with(
        writer, meta, read, seed=seed, provenance={"method": "files", "files": files.to_meta()}
    )


def split_written_graph_with(
    writer: DatasetWriter,
    meta: dict[str, Any],
    read: Callable[[int], tuple[GivenPairs, int]],
    *,
    seed: int,
    provenance: dict[str, Any],
) -> dict[str, Any]:
    """The given pairs ``read(num_nodes) -> (pairs, K negatives per positive)`` applied to the graph ``writer``
    wrote (:func:`split_from_pairs`: held-out positives leave it, missing negatives are drawn), the pair files
    written; returns ``meta`` with the new ``num_edges`` and ``"link"`` (``provenance`` added to it)."""
    indptr = np.load(writer.path("indptr"), allow_pickle=False)
    indices = np.load(writer.path("indices"), allow_pickle=False)
    given, k = read(indptr.shape[0] - 1)
    result = split_from_pairs(
        given,
        indptr,
        indices,
        undirected=bool(meta.get("symmetric", False)),
        eval_negatives=k,
        seed=seed,
        meta=provenance,
    )
    updated = save_split_graph(writer, meta, result)
    updated[LINK_META_KEY] = write_link_labels(writer, updated[LINK_META_KEY], indptr, indices, meta)
    carry_edge_time(writer, indptr, indices, result.indptr, result.indices)  # after the labels of the full graph
    del indptr, indices
    return updated


def save_split_graph(writer: DatasetWriter, meta: dict[str, Any], result: SplitGraph) -> dict[str, Any]:
    """Write ``result``'s graph and pair files through ``writer``; returns ``meta`` with ``num_edges`` and
    ``"link"`` set."""
    writer.save("indptr", result.indptr)
    writer.save("indices", result.indices)
    updated = dict(meta)
    updated["num_edges"] = int(result.indptr[-1])
    updated[LINK_META_KEY] = {**result.split.save(writer), "held_out_edges": result.removed_edges}
    return updated
