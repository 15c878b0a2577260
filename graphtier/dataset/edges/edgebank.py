"""EdgeBank (Poursafaei et al., NeurIPS 2022, "Towards Better Evaluation for Dynamic Link Prediction"), the
memory baseline of temporal link prediction, in its "unlimited memory" variant: a pair ``(s, d)`` queried at
time ``t`` scores 1 if the edge ``s -> d`` is in the graph with a time ``< t``, else 0. It learns nothing, so a
model that does not beat it on a split by time (docs/guide/link-prediction.md) has learned little beyond "edges
repeat".

The lookup is a numba kernel over the CSC graph and its edge times
(:func:`graphtier.dataset.edges._edge_time_kernels.edgebank`: a binary search of ``s`` in ``d``'s ascending list,
then the earliest time among equal sources); on an undirected dataset (``--undirected``) an edge stored in
either direction counts (both directions are in the CSC; with ``--keep-duplicates`` they may carry different
times).
"""

from __future__ import annotations

import numpy as np

from graphtier.dataset.edges._edge_time_kernels import edgebank
from graphtier.dataset.edges.edge_split import as_pairs
from graphtier.dataset.edges.link_split import LINK_SPLITS
from graphtier.dataset.format import Dataset
from graphtier.errors import DatasetError, OptionError

PAIR_CHUNK = 1 << 22
"""Pairs scored per kernel call (bounds the int64 copies of the pairs and times)."""


def edgebank_scores_csc(
    indptr: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
    pairs: np.ndarray,
    times: np.ndarray,
    *,
    undirected: bool = False,
) -> np.ndarray:
    """EdgeBank scores of ``pairs`` queried at ``times`` on the CSC graph ``(indptr, indices)`` with ``edge_time``.

    Args:
        indptr: int64 [N + 1]; indices: int32/int64 [E], the sources of each list, ascending.
        edge_time: int64 [E], the time of each edge in CSC order.
        pairs: int [P, 2] ``(src, dst)`` node ids in ``[0, N)``.
        times: int [P], the query time of each pair.
        undirected: the reverse edge ``dst -> src`` counts too.

    Returns:
        float32 [P]: 1.0 where ``src -> dst`` is an edge with a time strictly before the pair's time, else 0.0.

    Raises:
        OptionError: ``pairs`` or ``times`` of the wrong shape, dtype or id range.
    """
    indptr = np.asarray(indptr, np.int64)
    pairs = as_pairs(pairs, indptr.shape[0] - 1, "pairs")
    query = _query_times(times, pairs.shape[0])
    return _lookup(indptr, indices, edge_time, pairs[:, 0], pairs[:, 1], query, undirected)


def _query_times(times: np.ndarray, count: int) -> np.ndarray:
    """``times`` as int64 [count] (one per pair); OptionError (one line) for another shape or dtype."""
    query = np.asarray(times)
    if query.shape != (count,) or (query.size and not np.issubdtype(query.dtype, np.integer)):
        raise OptionError(
            f"times: expected integer times of shape [{count}] (one per pair), found {query.dtype} {list(query.shape)}"
        )
    return np.ascontiguousarray(query, dtype=np.int64)


def _lookup(
    indptr: np.ndarray, indices: np.ndarray, edge_time: np.ndarray, src: np.ndarray, dst: np.ndarray,
    query: np.ndarray, undirected: bool,
) -> np.ndarray:  # fmt: skip
    """The kernel over checked inputs (``src`` ids as ``indices`` holds them, ``dst`` rows of ``indptr``), in chunks
    of :data:`PAIR_CHUNK` pairs: float32 [P]."""
    out = np.empty(src.shape[0], np.float32)
    for start in range(0, src.shape[0], PAIR_CHUNK):
        stop = min(src.shape[0], start + PAIR_CHUNK)
        out[start:stop] = edgebank(
            indptr,
            indices,
            edge_time,
            np.ascontiguousarray(src[start:stop], dtype=np.int64),
            np.ascontiguousarray(dst[start:stop], dtype=np.int64),
            query[start:stop],
            bool(undirected),
        )
    return out


def edgebank_scores(dataset: Dataset, pairs: np.ndarray, times: np.ndarray) -> np.ndarray:
    """EdgeBank scores of ``pairs`` (int [P, 2] ``(src, dst)``) queried at ``times`` (int [P]) on ``dataset``'s
    graph: float32 [P], 1.0 where ``src -> dst`` (either direction on an undirected dataset) is an edge with a time
    before the pair's time. On a typed dataset the pairs are local ids of the edge split's relation ``(SRC, REL,
    DST)`` (``meta.json`` ``link.relation``) and an edge of that relation counts.

    On a split by time (``--split-by time``) the held-out edges are in the graph, so a test pair scores 1 when
    its edge also happened earlier (in training or validation), as in TGB's EdgeBank.

    Raises:
        DatasetError: the dataset has no edge times (``prepare edgelist --time-column``), or is typed without the
            edge split of a relation.
        OptionError: ``pairs`` or ``times`` malformed (:func:`edgebank_scores_csc`).
    """
    _check_scorable(dataset)
    if not dataset.is_hetero:
        undirected = not dataset.directed
        return edgebank_scores_csc(
            dataset.indptr, dataset.indices, dataset.edge_time, pairs, times, undirected=undirected
        )
    schema = dataset.schema
    rel = schema.relation(tuple(dataset.link.meta["relation"]))  # type: ignore[union-attr, arg-type]
    count_src, count_dst = schema.node_type(rel.src).count, schema.node_type(rel.dst).count
    shaped = as_pairs(pairs, max(count_src, count_dst), "pairs")
    for column, count, name in ((0, count_src, rel.src), (1, count_dst, rel.dst)):
        ids = shaped[:, column]
        if ids.size and int(ids.max()) >= count:
            raise OptionError(f"pairs: expected local ids of {name} in [0, {count}), found up to {int(ids.max())}")
    query = _query_times(times, shaped.shape[0])
    rows = np.asarray(dataset.indptr[rel.row_offset : rel.row_offset + count_dst + 1], dtype=np.int64)
    src = shaped[:, 0].astype(np.int64) + int(schema.node_type(rel.src).offset)
    return _lookup(rows, dataset.indices, dataset.edge_time, src, shaped[:, 1], query, False)


def _check_scorable(dataset: Dataset) -> None:
    """:class:`DatasetError` unless ``dataset`` has edge times (and, typed, the edge split of a relation)."""
    if dataset.is_hetero and (dataset.link is None or "relation" not in dataset.link.meta):
        raise DatasetError(f"{dataset.path}: EdgeBank on a typed dataset expected the edge split of a relation "
                           "(prepare --edge-split ... --split-relation SRC,REL,DST), found none")  # fmt: skip
    if dataset.edge_time is None:
        raise DatasetError(
            f"{dataset.path}: EdgeBank expected edge times (edge_time.npy; prepare edgelist --time-column), found none"
        )


def edgebank_split_scores(dataset: Dataset, split: str = "test") -> tuple[np.ndarray, np.ndarray]:
    """EdgeBank scores of the positives and the negatives of ``split`` of ``dataset``'s split by time, each
    queried at its pair time (``link_{split}_time.npy``; a negative at its positive's time).

    Returns:
        ``(positive float32 [P], negative float32 [Q])``, or negative float32 [P, K] with K negatives per positive
        (``eval_negatives``), ready for AUC/AP or MRR/Hits@K.

    Raises:
        DatasetError: no edge split, or not one by time (``--split-by time``); as :func:`edgebank_scores`.
        OptionError: an unknown ``split``.
    """
    if split not in LINK_SPLITS:
        raise OptionError.invalid("split", f"one of {', '.join(LINK_SPLITS)}", split)
    _check_scorable(dataset)
    link = dataset.link
    if link is None or not link.by_time:
        found = "none" if link is None else f"one by {link.split_by}"
        raise DatasetError(
            f"{dataset.path}: EdgeBank expected an edge split by time (prepare --split-by time), found {found}"
        )
    pairs = link.pairs(split)
    positive_times = np.asarray(pairs.positive_times if pairs.positive_times is not None else np.empty(0, np.int64))
    positive = edgebank_scores(dataset, np.asarray(pairs.positives), positive_times)
    negative_times = pairs.negative_pair_times()
    if negative_times is None:
        return positive, np.empty(0, np.float32)
    negative = edgebank_scores(dataset, pairs.negative_pairs(), negative_times)
    if pairs.per_positive and pairs.negatives is not None:
        negative = negative.reshape(pairs.num_positives, int(pairs.negatives.shape[1]))
    return positive, negative
