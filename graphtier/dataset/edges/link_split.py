"""The edge split of a link-prediction dataset: positive and negative node pairs per split, on disk.

A dataset prepared with ``--edge-split`` (or split files) holds, beside its graph, the pairs that link
prediction trains and evaluates on (docs/dataset-format.md, "Edge split"):

- ``link_train.npy``: int64 [P, 2] ``(src, dst)`` supervision pairs. Each is an edge of the dataset's graph,
  which is the message-passing graph: the held-out validation and test edges (both directions of each on an
  undirected graph) are not in ``indptr``/``indices``. On an undirected graph each edge is listed once.
- ``link_valid.npy``, ``link_test.npy``: int64 [P, 2] held-out positive pairs.
- ``link_valid_neg.npy``, ``link_test_neg.npy``: the negatives, never edges of the full graph. With
  ``eval_negatives == 0`` (the GAE protocol): int64 [Q, 2] negative pairs. With ``eval_negatives == K > 0``
  (the OGB ranking protocol, ogbl-citation2's ``target_node_neg``): int64 [P, K] negative destinations of
  each positive, whose source is that positive's source.

``meta.json`` holds ``"link"``: the pair counts, ``eval_negatives``, ``dst_range`` (``[lo, hi)``: the node ids a
negative destination is drawn from; all nodes, or a bipartite graph's item range) and ``undirected`` (reverse
edges of the targets are excluded from message passing too).

A split by time (``"split_by": "time"``, ``--split-by time``; docs/dataset-format.md, "Edge split by time") keeps
its held-out edges IN the graph (a time-aware sampler cuts every edge at or after a query's time) and adds the
time of every pair: ``link_{split}_time.npy`` int64 [P] row-aligned with ``link_{split}.npy``, and for negative
pairs ``link_{split}_neg_time.npy`` int64 [Q] (per-positive negatives take their positive's time: no file).
``"valid_from"``/``"test_from"`` are the first valid and test times (null for an empty split).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset.checks import index_range
from graphtier.dataset.edges._edge_split_kernels import edge_pairs
from graphtier.dataset.schema import Relation, Schema
from graphtier.errors import DatasetError

LINK_META_KEY = "link"
LINK_SPLITS = ("train", "valid", "test")
EVAL_SPLITS = ("valid", "test")


def positives_file(split: str) -> str:
    """File stem of the positive pairs of ``split``: ``link_train`` ..."""
    return f"link_{split}"


def negatives_file(split: str) -> str:
    """File stem of the negatives of evaluation ``split``: ``link_valid_neg``, ``link_test_neg``."""
    return f"link_{split}_neg"


def positive_times_file(split: str) -> str:
    """File stem of the pair times of ``split`` (a time split): ``link_train_time`` ..."""
    return f"link_{split}_time"


def negative_times_file(split: str) -> str:
    """File stem of the negative pair times of evaluation ``split`` (a time split): ``link_valid_neg_time`` ..."""
    return f"link_{split}_neg_time"


def label_file(split: str) -> str:
    """File stem of the edge-level targets (float32 [P]) of ``split``'s pairs: ``link_train_label`` ..."""
    return f"link_{split}_label"


SPLIT_BY = ("random", "time")
"""How an edge split chose its held-out edges (``meta.json`` ``link.split_by``; absent means ``random``)."""


HELD_OUT_CHUNK = 1 << 22
"""Held-out pairs tested against the graph per kernel call (bounds the copies of a memory-mapped file)."""
HELD_OUT_SAMPLE = 1 << 18
"""Held-out pairs of each split :func:`check_held_out` looks up when a dataset is opened (evenly spaced rows)."""

LINK_FILE_STEMS = frozenset(
    [positives_file(s) for s in LINK_SPLITS]
    + [label_file(s) for s in LINK_SPLITS]
    + [negatives_file(s) for s in EVAL_SPLITS]
    + [positive_times_file(s) for s in LINK_SPLITS]
    + [negative_times_file(s) for s in EVAL_SPLITS]
)
"""Every file stem of an edge split (not listed in ``Dataset.extra``)."""


@dataclass(frozen=True)
class LinkPairs:
    """The pairs of one split.

    Attributes:
        positives: int64 [P, 2] ``(src, dst)`` pairs (numpy, possibly memory-mapped).
        negatives: None (the train split: negatives are drawn while training), int64 [Q, 2] negative pairs,
            or int64 [P, K] negative destinations per positive (``per_positive``).
        per_positive: whether ``negatives`` is [P, K] destinations (ranking metrics: MRR, Hits@K).
        positive_times: a time split: int64 [P], the query time of each positive (its edge's time); else None.
        negative_times: a time split with negative pairs: int64 [Q], negative ``i`` at the time of positive
            ``i % P``; None otherwise (per-positive negatives take their positive's time:
            :meth:`negative_pair_times`).
    """

    positives: np.ndarray
    negatives: np.ndarray | None = None
    per_positive: bool = False
    positive_times: np.ndarray | None = None
    negative_times: np.ndarray | None = None

    @property
    def num_positives(self) -> int:
        return int(self.positives.shape[0])

    def negative_pairs(self) -> np.ndarray:
        """int64 [Q, 2] negative pairs; [P * K, 2] (each positive's source repeated) when per-positive."""
        if self.negatives is None:
            return np.empty((0, 2), np.int64)
        if not self.per_positive:
            return np.asarray(self.negatives)
        k = int(self.negatives.shape[1])
        src = np.repeat(np.asarray(self.positives[:, 0]), k)
        return np.stack([src, np.asarray(self.negatives).reshape(-1)], axis=1)

    def negative_pair_times(self) -> np.ndarray | None:
        """int64 [Q] (or [P * K]): the query time of each row of :meth:`negative_pairs`; None without pair times."""
        if self.positive_times is None or self.negatives is None:
            return None
        if self.per_positive:
            return np.repeat(np.asarray(self.positive_times, np.int64), int(self.negatives.shape[1]))
        return None if self.negative_times is None else np.asarray(self.negative_times)


@dataclass(frozen=True)
class LinkSplit:
    """A dataset's whole edge split: ``meta`` (``meta.json`` ``"link"``) and the pairs of every split."""

    meta: dict[str, Any]
    splits: dict[str, LinkPairs]

    @property
    def eval_negatives(self) -> int:
        """K negatives per evaluation positive (0: negative pairs, the GAE protocol)."""
        return int(self.meta.get("eval_negatives", 0))

    @property
    def undirected(self) -> bool:
        """Whether a target edge's reverse is an edge too (and leaves message passing with it)."""
        return bool(self.meta.get("undirected", False))

    @property
    def dst_range(self) -> tuple[int, int]:
        """``[lo, hi)``: the node ids negative destinations are drawn from."""
        lo, hi = self.meta["dst_range"]
        return int(lo), int(hi)

    @property
    def split_by(self) -> str:
        """``random`` (held-out edges left the graph) or ``time`` (they stay, every pair has a time)."""
        return str(self.meta.get("split_by", "random"))

    @property
    def by_time(self) -> bool:
        """Whether this is a split by time (pairs carry times; a time-aware sampler is needed: no leak)."""
        return self.split_by == "time"

    def boundary(self, split: str) -> int | None:
        """The first time of ``split`` (``valid`` or ``test``) of a time split (``link.valid_from``,
        ``link.test_from``); None for an empty split or a random split."""
        value = self.meta.get(f"{split}_from")
        return None if value is None else int(value)

    def pairs(self, split: str) -> LinkPairs:
        """The pairs of ``split`` (``train``, ``valid``, ``test``); empty positives when the split has none."""
        if split not in LINK_SPLITS:
            raise DatasetError(f"link split: unknown split {split!r}, expected one of {', '.join(LINK_SPLITS)}")
        return self.splits.get(split) or LinkPairs(np.empty((0, 2), np.int64))

    def save(self, writer: Any) -> dict[str, Any]:
        """Write every split's arrays through ``writer`` (a :class:`~graphtier.dataset.DatasetWriter`); returns
        the ``meta.json`` ``"link"`` entry (counts filled in)."""
        meta = dict(self.meta)
        for split in LINK_SPLITS:
            pairs = self.splits.get(split)
            if pairs is None:
                continue
            writer.save(positives_file(split), np.asarray(pairs.positives, dtype=np.int64))
            meta[split] = pairs.num_positives
            if split in EVAL_SPLITS and pairs.negatives is not None:
                writer.save(negatives_file(split), np.asarray(pairs.negatives, dtype=np.int64))
                meta[f"{split}_negatives"] = int(pairs.negatives.shape[0])
            if pairs.positive_times is not None:
                writer.save(positive_times_file(split), np.asarray(pairs.positive_times, dtype=np.int64))
            if pairs.negative_times is not None:
                writer.save(negative_times_file(split), np.asarray(pairs.negative_times, dtype=np.int64))
        return meta


def read_link_split(root: Path, meta: dict[str, Any], load: Any) -> LinkSplit | None:
    """The edge split of the dataset at ``root`` (None when ``meta`` has no ``"link"`` entry).

    ``load(path)`` reads one ``.npy`` (the dataset's loader: memory map or RAM). Files are checked by
    :func:`validate_link_split`, not here.
    """
    link = meta.get(LINK_META_KEY)
    if link is None:
        return None
    where = root / "meta.json"
    if not isinstance(link, dict):
        raise DatasetError(f"{where}: field 'link' expected an object, found {type(link).__name__}")
    k = link.get("eval_negatives", 0)
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise DatasetError(f"{where}: field 'link.eval_negatives' expected an integer >= 0, found {k!r}")
    dst_range = link.get("dst_range")
    if not (isinstance(dst_range, list) and len(dst_range) == 2 and all(isinstance(v, int) for v in dst_range)):
        raise DatasetError(f"{where}: field 'link.dst_range' expected [lo, hi] integers, found {dst_range!r}")
    by_time = _read_split_by(where, link)
    splits: dict[str, LinkPairs] = {}
    for split in LINK_SPLITS:
        pos_path = root / f"{positives_file(split)}.npy"
        if not pos_path.is_file():
            if split in link:
                raise DatasetError(f"{pos_path}: file missing (meta.json 'link' lists {link[split]} {split} pairs)")
            continue
        neg_path = root / f"{negatives_file(split)}.npy"
        negatives = load(neg_path) if split in EVAL_SPLITS and neg_path.is_file() else None
        per_positive = negatives is not None and k > 0
        random = "meta.json 'link.split_by' is not 'time'"
        times = _time_file(root, positives_file(split), positive_times_file(split), by_time, load, random)
        neg_times = None
        if negatives is not None:
            why = "per-positive negatives take their positive's time" if by_time else random
            neg_stem = negative_times_file(split)
            neg_times = _time_file(root, negatives_file(split), neg_stem, by_time and not per_positive, load, why)
        splits[split] = LinkPairs(load(pos_path), negatives, per_positive, times, neg_times)
    return LinkSplit(dict(link), splits)


def _read_split_by(where: Path, link: dict[str, Any]) -> bool:
    """Whether ``meta.json`` ``link`` is a time split; its ``split_by`` and boundaries checked."""
    split_by = link.get("split_by", "random")
    if split_by not in SPLIT_BY:
        raise DatasetError(f"{where}: field 'link.split_by' expected one of {', '.join(SPLIT_BY)}, found {split_by!r}")
    for key in ("valid_from", "test_from"):
        value = link.get(key)
        if split_by == "time" and value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise DatasetError(f"{where}: field 'link.{key}' expected an integer time or null, found {value!r}")
    return split_by == "time"


def _time_file(root: Path, pairs_stem: str, stem: str, wanted: bool, load: Any, why_not: str) -> np.ndarray | None:
    """The times file ``stem`` of the pair file ``pairs_stem``: loaded when ``wanted`` (a time split), else it must
    not exist (``why_not`` says why; :class:`DatasetError` either way)."""
    path = root / f"{stem}.npy"
    if wanted and not path.is_file():
        raise DatasetError(f"{path}: file missing (meta.json 'link.split_by' is 'time': {pairs_stem}.npy needs times)")
    if not wanted and path.is_file():
        raise DatasetError(f"{path}: unexpected file (expected no pair times: {why_not})")
    return load(path) if wanted else None


def validate_link_split(root: Path, split: LinkSplit, num_nodes: int) -> None:
    """Check shapes, dtypes and id ranges of every pair file; :class:`DatasetError` names the file."""
    lo_dst, hi_dst = split.dst_range
    if not 0 <= lo_dst < hi_dst <= num_nodes:
        raise DatasetError(
            f"{root / 'meta.json'}: field 'link.dst_range' expected 0 <= lo < hi <= {num_nodes}, found {[lo_dst, hi_dst]}"
        )
    k = split.eval_negatives
    for name, pairs in split.splits.items():
        path = root / f"{positives_file(name)}.npy"
        _check_ids(path, pairs.positives, (None, 2), num_nodes)
        expected = split.meta.get(name)
        if expected is not None and expected != pairs.num_positives:
            raise DatasetError(f"{path}: expected {expected} pairs (meta.json 'link'), found {pairs.num_positives}")
        if pairs.negatives is None:
            continue
        path = root / f"{negatives_file(name)}.npy"
        if pairs.per_positive:
            _check_ids(path, pairs.negatives, (pairs.num_positives, k), num_nodes)
        else:
            _check_ids(path, pairs.negatives, (None, 2), num_nodes)
    if split.by_time:
        _check_times(root, split)


def split_period(split: LinkSplit, name: str) -> tuple[int | None, int | None]:
    """``(lo, hi)``: the times the pairs of ``name`` of a time split lie in, both inclusive (None: unbounded):
    from its own first time (``link.{name}_from``; train: none) to the first time of the next non-empty split
    (a tie at a boundary is cut by ``(src, dst)``, so the boundary time may be on both sides)."""
    order = list(LINK_SPLITS)
    lo = None if name == "train" else split.boundary(name)
    later = [split.boundary(s) for s in order[order.index(name) + 1 :]]
    hi = next((b for b in later if b is not None), None)
    return lo, hi


def _check_times(root: Path, split: LinkSplit) -> None:
    """The pair time files of a time split: dtype int64, shape row-aligned with their pairs, a valid/test split's
    first time its boundary (``link.{split}_from``), every time inside its split's period (:func:`split_period`)."""
    files = []
    for name, pairs in split.splits.items():
        files.append((name, positive_times_file(name), pairs.positive_times, pairs.num_positives))
        if pairs.negative_times is not None and pairs.negatives is not None:
            files.append((name, negative_times_file(name), pairs.negative_times, int(pairs.negatives.shape[0])))
    for _, stem, times, rows in files:
        path = root / f"{stem}.npy"
        assert times is not None  # read_link_split loads every times file of a time split
        if str(times.dtype) != "int64":
            raise DatasetError(f"{path}: expected dtype int64, found {times.dtype}")
        if tuple(times.shape) != (rows,):
            raise DatasetError(f"{path}: expected shape {[rows]} (one time per pair), found {list(times.shape)}")
    for name in EVAL_SPLITS:
        pairs = split.pairs(name)
        first = None if pairs.positive_times is None or not pairs.num_positives else int(np.min(pairs.positive_times))
        if name in split.splits and split.boundary(name) != first:
            raise DatasetError(
                f"{root / 'meta.json'}: field 'link.{name}_from' expected {first} (the first time in "
                f"{positive_times_file(name)}.npy), found {split.meta.get(f'{name}_from')!r}"
            )
    for name, stem, times, rows in files:
        lo, hi = split_period(split, name)
        if rows == 0:
            continue
        t_lo, t_hi = index_range(np.asarray(times))
        if (lo is not None and t_lo < lo) or (hi is not None and t_hi > hi):
            period = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
            raise DatasetError(
                f"{root / (stem + '.npy')}: expected times in the {name} period {period} (meta.json 'link' "
                f"valid_from/test_from), found values in [{t_lo}, {t_hi}]"
            )


def check_held_out(
    root: Path, split: LinkSplit, indptr: np.ndarray, indices: np.ndarray, *, limit: int | None = HELD_OUT_SAMPLE
) -> None:
    """:class:`DatasetError` naming the file and the pair when a held-out positive (``link_valid.npy``,
    ``link_test.npy``) is an edge of the message-passing graph ``indptr``/``indices`` (or, on an undirected
    split, its reverse is): a leak of the evaluation edges into training. Ids must be in range
    (:func:`validate_link_split` first). One binary search per pair in the destination's sorted neighbour list
    (:func:`~graphtier.dataset.edges._edge_split_kernels.edge_pairs`), in chunks of :data:`HELD_OUT_CHUNK` pairs.

    ``limit``: at most this many pairs of each split, evenly spaced over its rows (``Dataset.open`` checks
    :data:`HELD_OUT_SAMPLE`: a split whose held-out edges were left in the graph is caught at once, and opening
    a graph with tens of millions of held-out pairs stays fast; graphtier's own splits hold none by
    construction); None checks every pair.

    A time split (``link.split_by`` ``time``) keeps its held-out edges in the graph: there, a held-out pair that
    is NOT an edge is the error (the split and the graph do not belong together)."""
    for name in EVAL_SPLITS:
        pairs = split.splits.get(name)
        if pairs is None or pairs.num_positives == 0:
            continue
        rows = None
        if limit is not None and pairs.num_positives > limit:
            rows = np.unique(np.linspace(0, pairs.num_positives - 1, limit).astype(np.int64))
        total = pairs.num_positives if rows is None else int(rows.shape[0])
        for start in range(0, total, HELD_OUT_CHUNK):
            at = None if rows is None else rows[start : start + HELD_OUT_CHUNK]
            chunk = np.asarray(pairs.positives[start : start + HELD_OUT_CHUNK] if at is None else pairs.positives[at])
            found = edge_pairs(indptr, indices, chunk[:, 0], chunk[:, 1], split.undirected)
            hits = np.flatnonzero(~found if split.by_time else found)
            if hits.size:
                row = start + int(hits[0]) if at is None else int(at[hits[0]])
                src, dst = (int(v) for v in chunk[hits[0]])
                if split.by_time:
                    raise DatasetError(
                        f"{root / (positives_file(name) + '.npy')}: row {row}, pair ({src}, {dst}) is not an edge of "
                        "the graph; a split by time keeps its held-out edges in it (docs/dataset-format.md, Edge split "
                        "by time)"
                    )
                reverse = " (or its reverse: the split is undirected)" if split.undirected else ""
                raise DatasetError(
                    f"{root / (positives_file(name) + '.npy')}: row {row}, pair ({src}, {dst}) is an edge of the "
                    f"message-passing graph{reverse}; held-out pairs must be removed from indptr.npy/indices.npy "
                    "(docs/dataset-format.md, Edge split)"
                )


def _check_ids(path: Path, array: np.ndarray, shape: tuple[int | None, int], num_nodes: int) -> None:
    if str(array.dtype) != "int64":
        raise DatasetError(f"{path}: expected dtype int64, found {array.dtype}")
    if array.ndim != 2 or array.shape[1] != shape[1] or (shape[0] is not None and array.shape[0] != shape[0]):
        want = f"[{'P' if shape[0] is None else shape[0]}, {shape[1]}]"
        raise DatasetError(f"{path}: expected shape {want}, found {list(array.shape)}")
    if array.size:
        lo, hi = index_range(np.asarray(array).reshape(-1))
        if lo < 0 or hi >= num_nodes:
            raise DatasetError(f"{path}: expected node ids in [0, {num_nodes}), found values in [{lo}, {hi}]")


def relation_pair_csc(
    schema: Schema, indptr: np.ndarray, indices: np.ndarray, rel: Relation
) -> tuple[np.ndarray, np.ndarray, int]:
    """Relation ``rel`` of the typed graph ``(indptr, indices)`` (back-to-back CSCs, global source ids) as a CSC
    over its pair space: ``(indptr int64 [shift + count(DST) + 1] from 0, indices int64 [E_r], shift)``, where the
    sources keep their local ids ``[0, count(SRC))`` and destination ``j`` is ``shift + j`` (``shift``
    ``count(SRC)``, or 0 when SRC == DST), so that a source and a destination of equal local id are no self-loop."""
    rows = schema.node_type(rel.dst).count
    ptr = np.asarray(indptr[rel.row_offset : rel.row_offset + rows + 1], dtype=np.int64)
    local = np.asarray(indices[ptr[0] : ptr[-1]], dtype=np.int64) - schema.node_type(rel.src).offset
    shift = 0 if rel.src == rel.dst else schema.node_type(rel.src).count
    return np.concatenate([np.zeros(shift, np.int64), ptr - ptr[0]]), local, shift


def validate_typed_link_split(
    root: Path, split: LinkSplit, schema: Schema, indptr: np.ndarray, indices: np.ndarray
) -> None:
    """Check a typed dataset's edge split: its relation is one of the schema, ids are local ids of their types
    (sources of SRC, destinations of DST), held-out positives are no edges of the relation. :class:`DatasetError`
    names the file."""
    where = root / "meta.json"
    named = split.meta.get("relation")
    try:
        rel = schema.relation(tuple(named))  # type: ignore[arg-type]
    except (KeyError, TypeError):
        raise DatasetError(f"{where}: field 'link.relation' expected a relation [src, name, dst] of the schema, "
                           f"found {named!r}") from None  # fmt: skip
    count_src, count_dst = schema.node_type(rel.src).count, schema.node_type(rel.dst).count
    if tuple(split.dst_range) != (0, count_dst):
        raise DatasetError(f"{where}: field 'link.dst_range' expected [0, {count_dst}], found {list(split.dst_range)}")
    for name, pairs in split.splits.items():
        columns = [(f"link_{name}", np.asarray(pairs.positives)[:, 0], count_src, rel.src),
                   (f"link_{name}", np.asarray(pairs.positives)[:, 1], count_dst, rel.dst)]  # fmt: skip
        if pairs.negatives is not None:
            neg = np.asarray(pairs.negatives)
            columns.append((f"link_{name}_neg", neg if pairs.per_positive else neg[:, 1], count_dst, rel.dst))
            if not pairs.per_positive:
                columns.append((f"link_{name}_neg", neg[:, 0], count_src, rel.src))
        for stem, ids, count, type_name in columns:
            if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= count):
                raise DatasetError(
                    f"{root / (stem + '.npy')}: expected local ids of {type_name} in [0, {count}), found values in "
                    f"[{int(ids.min())}, {int(ids.max())}]"
                )
    space_ptr, space_idx, shift = relation_pair_csc(schema, indptr, indices, rel)
    shifted = {name: LinkPairs(np.asarray(p.positives) + np.array([0, shift])) for name, p in split.splits.items()}
    check_held_out(root, LinkSplit(split.meta, shifted), space_ptr, space_idx)
