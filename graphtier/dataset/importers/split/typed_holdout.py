"""The edge split of one relation of a typed (heterogeneous) graph: ``--edge-split F --split-relation SRC,REL,DST``.

The pair files are those of a homogeneous split (:mod:`graphtier.dataset.edges.link_split`), in LOCAL ids: column 0 a
node of type SRC, column 1 (and every negative destination) a node of type DST. ``meta.json`` ``"link"`` adds
``"relation": [SRC, REL, DST]`` and ``"reverse"`` (the name of the relation ``(DST, rev_REL, SRC)`` of
``--add-reverse`` when the schema has it, else None); ``dst_range`` is ``[0, count(DST)]``.

The split reuses the homogeneous pieces (:func:`~graphtier.dataset.importers.split.holdout.split_pairs`,
:func:`~graphtier.dataset.edges.edge_split.remove_pairs`) on the relation's CSC in a pair space of its own: ids
``[0, count(SRC))`` for the sources and ``count(SRC) + j`` for destination ``j`` when SRC != DST (so a source and
a destination of equal local id are no self-loop), the type's local ids when SRC == DST. A held-out edge leaves the
relation's rows and, reversed, the reverse relation's rows.

A split by time (``--split-by time``, :func:`split_relation_edges_by_time`) orders the relation's edges by their
times as the homogeneous one does (:mod:`~graphtier.dataset.importers.split.time_holdout`): the graph keeps every edge
with its time, the pairs carry times (``link_{split}_time.npy``), and ``meta.json`` ``"link"`` adds ``"split_by":
"time"``, ``"valid_from"`` and ``"test_from"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset.edges.edge_data import write_link_labels
from graphtier.dataset.edges.edge_split import remove_pairs
from graphtier.dataset.edges.edge_time import EDGE_TIME, carry_edge_time
from graphtier.dataset.edges.link_split import (
    EVAL_SPLITS,
    LINK_META_KEY,
    LinkPairs,
    LinkSplit,
    relation_pair_csc,
)
from graphtier.dataset.importers.split.holdout import split_pairs
from graphtier.dataset.importers.split.link_files import GivenPairs, split_from_pairs
from graphtier.dataset.importers.split.time_holdout import hold_out_edges_by_time, no_edge_times
from graphtier.dataset.schema import Relation, Schema, reverse_relation
from graphtier.errors import OptionError

Fractions = tuple[float, float, float]


def parse_split_relation(value: str | tuple[str, str, str] | list[str], schema: Schema) -> Relation:
    """The relation ``value`` names: ``"SRC,REL,DST"`` (or a 3-tuple), or ``"REL"`` when that name is unique.
    :class:`OptionError` naming ``split_relation`` and listing the schema's relations otherwise."""
    parts = tuple(p.strip() for p in value.split(",")) if isinstance(value, str) else tuple(value)
    try:
        if len(parts) == 1:
            return schema.relation(parts[0])
        if len(parts) == 3:
            return schema.relation(parts)  # type: ignore[arg-type]
    except KeyError:
        pass
    known = ", ".join(",".join(r.type) for r in schema.relations)
    raise OptionError(
        f"{{split_relation}}: expected a relation of the schema (one of {known}), found {','.join(parts)!r}",
        options=("split_relation",),
    )


def split_relation_edges(
    schema: Schema,
    indptr: np.ndarray,
    indices: np.ndarray,
    rel: Relation,
    split: Fractions | GivenPairs,
    *,
    seed: int,
    eval_negatives: int = 0,
    given_meta: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, LinkSplit]:
    """An edge split of relation ``rel`` of the typed graph ``(indptr, indices)`` (back-to-back CSCs, global source
    ids): the message-passing graph without the held-out edges (both relations' rows), its new relation edge
    counts in ``split.meta["num_edges"]``, and the :class:`LinkSplit` in local ids.

    Args:
        split: ``(train, valid, test)`` fractions (a random split,
            :func:`~graphtier.dataset.importers.split.holdout.split_pairs`), or the pairs as given (LOCAL ids; checked and
            completed by :func:`~graphtier.dataset.importers.split.link_files.split_from_pairs`, ``given_meta`` its
            provenance).
        seed: seed of the split and of the drawn negatives; eval_negatives: K per evaluation positive (0: pairs).

    Raises:
        OptionError: a split with a nonzero fraction gets no edge; too few non-edges for the negatives.
        DatasetError: given pairs out of range, overlapping, or train pairs that are no edges.
    """
    space_ptr, space_idx, shift = relation_pair_csc(schema, indptr, indices, rel)
    count_src, count_dst = schema.node_type(rel.src).count, schema.node_type(rel.dst).count
    k = int(eval_negatives)
    local = np.array([0, shift], np.int64)  # pair space -> local ids
    if isinstance(split, GivenPairs):
        in_space = GivenPairs(
            {name: np.asarray(p, np.int64) + local for name, p in split.positives.items()},
            {name: np.asarray(p, np.int64) + (shift if k else local) for name, p in split.negatives.items()},
            split.sources, split.locate,
        )  # fmt: skip
        done = split_from_pairs(
            in_space, space_ptr, space_idx, undirected=False, eval_negatives=k, dst_range=(shift, shift + count_dst),
            src_range=(0, count_src), seed=seed, meta=given_meta,
        )  # fmt: skip
        space, link_meta = done.split.splits, done.split.meta
        held = np.concatenate([np.asarray(space[name].positives) for name in EVAL_SPLITS])
    else:
        space, held = split_pairs(
            space_ptr, space_idx, split, seed=seed, eval_negatives=k, undirected=False,
            dst_range=(shift, shift + count_dst), src_range=(0, count_src), what=f" of {','.join(rel.type)}",
        )  # fmt: skip
        link_meta = {"method": "random", "fractions": [float(f) for f in split], "seed": int(seed)}
    splits = _local_pairs(space, shift)
    held = held - local  # local ids
    new = {rel.type: _without(schema, indptr, indices, rel, held)}
    reverse = reverse_relation(schema, rel)
    if reverse is not None and reverse.type != rel.type:
        new[reverse.type] = _without(schema, indptr, indices, reverse, held[:, ::-1])
    new_indptr, new_indices, counts = _reassemble(schema, indptr, indices, new)
    meta = {
        **link_meta,
        "eval_negatives": k,
        "dst_range": [0, count_dst],
        "undirected": False,
        "held_out_edges": int(np.asarray(indptr)[-1] - new_indptr[-1]),
        "relation": list(rel.type),
        "reverse": None if reverse is None else reverse.name,
        "num_edges": counts,
    }
    return new_indptr, new_indices, LinkSplit(meta, splits)


def split_relation_edges_by_time(
    schema: Schema,
    indptr: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
    rel: Relation,
    fractions: Fractions,
    *,
    seed: int,
    eval_negatives: int = 0,
) -> LinkSplit:
    """A split by time of relation ``rel``'s edges of the typed graph ``(indptr, indices)`` whose edges have the
    times ``edge_time`` (int64 [E], CSC order): the earliest ``fractions[0]`` for training, then validation, then
    test (:func:`~graphtier.dataset.importers.split.time_holdout.hold_out_edges_by_time` on the relation's pair space);
    the graph is unchanged. Returns the :class:`LinkSplit` in local ids with pair times.

    Raises:
        OptionError: a split with a nonzero fraction gets no edge; too few non-edges for the negatives.
    """
    space_ptr, space_idx, shift = relation_pair_csc(schema, indptr, indices, rel)
    count_src, count_dst = schema.node_type(rel.src).count, schema.node_type(rel.dst).count
    first = int(np.asarray(indptr)[rel.row_offset])
    times = np.asarray(edge_time[first : first + int(space_idx.shape[0])], dtype=np.int64)
    held = hold_out_edges_by_time(
        space_ptr, space_idx, times, fractions, seed=seed, eval_negatives=eval_negatives, undirected=False,
        dst_range=(shift, shift + count_dst), src_range=(0, count_src),
    )  # fmt: skip
    splits = _local_pairs(held.split.splits, shift)
    reverse = reverse_relation(schema, rel)
    meta = {
        **held.split.meta,
        "dst_range": [0, count_dst],
        "relation": list(rel.type),
        "reverse": None if reverse is None else reverse.name,
    }
    return LinkSplit(meta, splits)


def _local_pairs(space: dict[str, LinkPairs], shift: int) -> dict[str, LinkPairs]:
    """The splits of a relation's pair space (:func:`relation_pair_csc`: destination ``j`` is ``shift + j``) in local
    ids: positives and negative pairs ``(src, dst - shift)``, per-positive negative destinations ``- shift``; the
    pair times as they are."""
    local = np.array([0, shift], np.int64)
    out = {}
    for name, pairs in space.items():
        negatives = pairs.negatives
        if negatives is not None:
            negatives = np.asarray(negatives) - (shift if pairs.per_positive else local)
        out[name] = LinkPairs(np.asarray(pairs.positives) - local, negatives, pairs.per_positive,
                              pairs.positive_times, pairs.negative_times)  # fmt: skip
    return out


def _without(schema: Schema, indptr: np.ndarray, indices: np.ndarray, rel: Relation, pairs: np.ndarray) -> np.ndarray:
    """The relation's CSC (local sources; ``pairs`` in local ids) without ``pairs`` (local ids)."""
    space_ptr, space_idx, shift = relation_pair_csc(schema, indptr, indices, rel)
    new_ptr, new_idx, _ = remove_pairs(space_ptr, space_idx, pairs + np.array([0, shift]), undirected=False)
    return (new_ptr[shift:], new_idx)  # type: ignore[return-value]


def _reassemble(
    schema: Schema, indptr: np.ndarray, indices: np.ndarray, new: dict[Any, tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The back-to-back CSC with the relations of ``new`` (local CSCs) replaced; edge count per relation."""
    ptr_parts, idx_parts, counts = [np.zeros(1, np.int64)], [], []
    end = 0
    for rel in schema.relations:
        if rel.type in new:
            ptr, local = new[rel.type]
            idx = (local + schema.node_type(rel.src).offset).astype(indices.dtype)
        else:  # unchanged: the relation's slice (global source ids)
            rows = schema.node_type(rel.dst).count
            ptr = np.asarray(indptr[rel.row_offset : rel.row_offset + rows + 1], dtype=np.int64)
            idx, ptr = indices[ptr[0] : ptr[-1]], ptr - ptr[0]
        ptr_parts.append(ptr[1:] + end)
        idx_parts.append(idx)
        end += int(ptr[-1])
        counts.append(int(ptr[-1]))
    return np.concatenate(ptr_parts), np.concatenate(idx_parts) if idx_parts else indices[:0], counts


@dataclass(frozen=True)
class TypedSplit:
    """How to split one relation's edges for link prediction: ``how`` ``(train, valid, test)`` fractions or the
    pairs as given (:class:`GivenPairs`, local ids; ``meta`` their provenance), ``relation`` ``"SRC,REL,DST"`` (or
    ``"REL"``; None: refused, naming the schema's relations), ``eval_negatives`` K, ``seed``."""

    how: Fractions | GivenPairs
    relation: str | None
    seed: int = 0
    eval_negatives: int = 0
    meta: dict[str, Any] = field(default_factory=dict)
    split_by: str = "random"


def split_written_typed_graph(writer: Any, meta: dict[str, Any], split: TypedSplit) -> dict[str, Any]:
    """Apply ``split`` to the typed dataset ``writer`` is writing (before ``writer.finish``): the graph it wrote
    becomes the message-passing graph, the pair files are written, and the returned copy of ``meta`` has the new
    edge counts and ``"link"``."""
    schema = Schema.from_meta(meta, Path("meta.json"))
    if split.relation is None:
        known = ", ".join(",".join(r.type) for r in schema.relations)
        raise OptionError(
            f"{{edge_split}}: a typed graph needs {{split_relation}} (one of {known}), found none",
            options=("edge_split", "split_relation"),
        )
    rel = parse_split_relation(split.relation, schema)
    indptr = np.load(writer.path("indptr"), allow_pickle=False)
    indices = np.load(writer.path("indices"), allow_pickle=False)
    if split.split_by == "time":
        if isinstance(split.how, GivenPairs):
            raise OptionError("{split_by=time}: splits the relation's edges by fractions, not given pairs",
                              options=("split_by", "edge_split_files"))  # fmt: skip
        if not writer.path(EDGE_TIME).is_file():
            raise no_edge_times()
        times = np.load(writer.path(EDGE_TIME), mmap_mode="r", allow_pickle=False)
        by_time = split_relation_edges_by_time(
            schema, indptr, indices, times, rel, split.how, seed=split.seed, eval_negatives=split.eval_negatives
        )
        link = write_link_labels(
            writer, by_time.save(writer), indptr, indices, meta,
            src_offset=schema.node_type(rel.src).offset, row_offset=rel.row_offset,
        )  # fmt: skip
        return {**meta, LINK_META_KEY: link}
    new_indptr, new_indices, done = split_relation_edges(
        schema,
        indptr,
        indices,
        rel,
        split.how,
        seed=split.seed,
        eval_negatives=split.eval_negatives,
        given_meta=split.meta,
    )
    counts = done.meta.pop("num_edges")
    link = write_link_labels(  # the pairs' edge labels, from the full graph
        writer, done.save(writer), indptr, indices, meta,
        src_offset=schema.node_type(rel.src).offset, row_offset=rel.row_offset,
    )  # fmt: skip
    carry_edge_time(writer, indptr, indices, new_indptr, new_indices)
    del indptr, indices
    writer.save("indptr", new_indptr)
    writer.save("indices", new_indices)
    updated = dict(meta)
    updated["num_edges"] = int(new_indptr[-1])
    hetero = dict(meta["hetero"])
    hetero["relations"] = [{**entry, "num_edges": n} for entry, n in zip(hetero["relations"], counts)]
    updated["hetero"] = hetero
    updated[LINK_META_KEY] = link
    return updated
