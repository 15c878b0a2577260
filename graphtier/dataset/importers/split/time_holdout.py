"""The chronological edge split of ``--edge-split TRAIN,VALID,TEST --split-by time`` (docs/dataset-format.md,
"Edge split by time"): the edges ordered by time (ties by ``(src, dst)``), the earliest ``TRAIN`` share for
training, the next ``VALID`` share for validation, the latest for test, as TGB splits a temporal graph.

Unlike the random split (:mod:`graphtier.dataset.importers.split.holdout`) the held-out edges STAY in the
message-passing graph with their times: a time-aware sampler cuts every edge at or after a query's time, so a
test query sees the validation period's edges and nothing of its own future. With a sampler that ignores time
the split leaks (the held-out edges are in the graph). Every pair gets its time (``link_{split}_time.npy``);
negative pairs take the time of positive ``i % P`` (``link_{split}_neg_time.npy``), per-positive negatives their
positive's time. Negatives are never edges of the graph (:func:`~graphtier.dataset.edges.edge_split.draw_eval_negatives`).

Each stored edge with its time is one candidate (a repeat kept by ``--keep-duplicates`` is an event of its own);
on an undirected graph each event ``{u, v}`` at time ``t`` once, as ``u < v`` (its two stored directions are one
event; copies of one edge at different times are events of their own); self-loops are never candidates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from graphtier.dataset.csc import csc_to_edges, reciprocity
from graphtier.dataset.edges.edge_data import write_link_labels
from graphtier.dataset.edges.edge_split import draw_eval_negatives
from graphtier.dataset.edges.edge_time import EDGE_TIME
from graphtier.dataset.edges.link_split import LINK_META_KEY, LINK_SPLITS, LinkPairs, LinkSplit
from graphtier.dataset.importers.split.holdout import (
    Fractions,
    HeldOut,
    check_eval_negatives,
    check_split_counts,
    derived_seed,
)
from graphtier.dataset.importers.split.splits import split_bounds
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import OptionError


def no_edge_times() -> OptionError:
    """The one-line error of a time split asked of a dataset without edge times."""
    return OptionError(
        "{split_by=time}: the dataset has no edge times (give {time_column})", options=("split_by", "time_column")
    )


def hold_out_edges_by_time(
    indptr: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
    fractions: Fractions,
    *,
    seed: int,
    eval_negatives: int = 0,
    undirected: bool | None = None,
    dst_range: tuple[int, int] | None = None,
    src_range: tuple[int, int] | None = None,
) -> HeldOut:
    """A split by time of the CSC graph ``(indptr, indices)`` (ascending lists) whose edges have the times
    ``edge_time``; the graph is unchanged (the held-out edges stay in it: ``removed`` 0).

    Args:
        indptr: int64 [N + 1]; indices: int32/int64 [E]; edge_time: int64 [E], the time of each edge in CSC order.
        fractions: ``(train, valid, test)`` shares of the candidate edges, cut in time order
            (:func:`~graphtier.dataset.importers.split.splits.split_bounds`).
        seed: seeds the negatives (the split itself is deterministic).
        eval_negatives: K: 0 = negative pairs (as many as positives), K > 0 = K destinations per positive.
        undirected: None: whether the graph is symmetric (computed).
        dst_range, src_range: ``[lo, hi)`` of the negatives' destinations and of negative pairs' sources (default
            every node; a typed relation's pair space narrows them).

    Returns:
        :class:`~graphtier.dataset.importers.split.holdout.HeldOut` whose split has ``split_by`` ``time``, the boundaries
        ``valid_from``/``test_from`` (first valid/test time, None when empty) and int64 pair times.

    Raises:
        OptionError: a split with a nonzero fraction gets no edge; too few non-edges for the negatives.
    """
    indptr = np.asarray(indptr, np.int64)
    n = indptr.shape[0] - 1
    k = check_eval_negatives(eval_negatives)
    times = np.asarray(edge_time, np.int64)
    if times.shape != (int(indptr[-1]),):
        raise OptionError(
            f"edge_time: expected shape {[int(indptr[-1])]} (one time per edge), found {list(times.shape)}"
        )
    if undirected is None:
        undirected = reciprocity(indptr, indices)[2]
    src, dst = csc_to_edges(indptr, indices)
    keep = src != dst
    src, dst, times = src[keep], dst[keep], times[keep]
    if undirected:
        src, dst, order = _undirected_events(src, dst, times)
    else:
        order = np.lexsort((dst, src, times))  # by time, ties by (src, dst); stable for equal events
    bounds = split_bounds(order.shape[0], fractions)
    check_split_counts([bounds[i + 1] - bounds[i] for i in range(3)], fractions, order.shape[0], undirected)
    splits: dict[str, LinkPairs] = {}
    boundaries: dict[str, int | None] = {}
    for stream, name in enumerate(LINK_SPLITS):
        rows = order[bounds[stream] : bounds[stream + 1]]
        positives, pair_times = np.stack([src[rows], dst[rows]], axis=1), times[rows]
        if name == "train":
            splits[name] = LinkPairs(positives, positive_times=pair_times)
            continue
        boundaries[f"{name}_from"] = int(pair_times[0]) if rows.shape[0] else None
        negatives = draw_eval_negatives(
            indptr, indices, positives, k=k, dst_range=dst_range or (0, n), src_range=src_range,
            seed=derived_seed(seed, stream), undirected=undirected,
        )  # fmt: skip
        negative_times = None
        if k == 0:
            negative_times = pair_times[np.arange(negatives.shape[0]) % max(rows.shape[0], 1)]
        splits[name] = LinkPairs(positives, negatives, k > 0, pair_times, negative_times)
    meta = {
        "method": "time",
        "split_by": "time",
        "fractions": [float(f) for f in fractions],
        "seed": int(seed),
        "eval_negatives": k,
        "dst_range": list(dst_range or (0, n)),
        "undirected": bool(undirected),
        "held_out_edges": 0,
        **boundaries,
    }
    return HeldOut(indptr, np.asarray(indices), LinkSplit(meta, splits), 0)


def _undirected_events(
    src: np.ndarray, dst: np.ndarray, times: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The events of an undirected graph's edges ``src -> dst`` at ``times`` (int64 [E'], no self-loops): every
    edge as ``(min, max)``, and of the copies of one ``(time, u, v)`` as many as the direction that stores more of
    them (a symmetric graph stores each event once per direction). Returns the canonical ``(src, dst)`` and the
    kept edge ids in (time, u, v) order."""
    forward = (src < dst).astype(np.int64)
    src, dst = np.minimum(src, dst), np.maximum(src, dst)
    order = np.lexsort((dst, src, times))
    t, s, d = times[order], src[order], dst[order]
    starts = np.flatnonzero(np.r_[True, (t[1:] != t[:-1]) | (s[1:] != s[:-1]) | (d[1:] != d[:-1])])
    sizes = np.diff(np.r_[starts, order.shape[0]])
    fwd = np.add.reduceat(forward[order], starts) if starts.size else np.empty(0, np.int64)
    copies = np.maximum(fwd, sizes - fwd)  # per event group: the larger direction's count
    rank = np.arange(order.shape[0]) - np.repeat(starts, sizes)  # position within its group
    return src, dst, order[rank < np.repeat(copies, sizes)]


def split_written_graph_by_time(
    writer: DatasetWriter,
    meta: dict[str, Any],
    fractions: Fractions | None,
    *,
    seed: int,
    eval_negatives: int = 0,
    dst_range: tuple[int, int] | None = None,
    src_range: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """Apply ``--edge-split`` with ``--split-by time`` to the dataset ``writer`` is writing, before
    ``writer.finish``: the pair files and their times (and, with ``edge_label.npy``, their edges' labels:
    :func:`~graphtier.dataset.edges.edge_data.write_link_labels`) are written, the graph (and ``edge_time.npy``) stays as
    it is; returns a copy of ``meta`` with ``"link"``. ``fractions`` None returns ``meta``. ``dst_range`` /
    ``src_range``: where negatives are drawn (a bipartite graph's items and users; default every node).

    Raises:
        OptionError: the dataset has no edge times (``--time-column``), or as :func:`hold_out_edges_by_time`.
    """
    if fractions is None:
        return meta
    if not writer.path(EDGE_TIME).is_file():
        raise no_edge_times()
    indptr = np.load(writer.path("indptr"), allow_pickle=False)
    indices = np.load(writer.path("indices"), allow_pickle=False)
    times = np.load(writer.path(EDGE_TIME), allow_pickle=False)
    symmetric = meta.get("symmetric")
    undirected = bool(symmetric) if isinstance(symmetric, bool) else None
    held = hold_out_edges_by_time(
        indptr, indices, times, fractions, seed=seed, eval_negatives=eval_negatives, undirected=undirected,
        dst_range=dst_range, src_range=src_range,
    )  # fmt: skip
    return {**meta, LINK_META_KEY: write_link_labels(writer, held.split.save(writer), indptr, indices, meta)}
