"""Link-prediction mini-batches of a typed graph: pairs of one relation ``(SRC, REL, DST)``.

The typed strategy of :class:`graphtier.sampling.link.sampler.LinkSampler`, chosen once when it is built with a
``schema`` and a ``relation`` (:func:`typed_pairs`): negatives are destinations of type DST drawn by
:class:`~graphtier.sampling.link.pairs.NegativeDestinations` (local ids ``[0, count(DST))``; ``degree``: by in-degree
in REL), from the same random stream per (seed, batch id); the neighbourhoods of the sources (type SRC) and of the
destinations and negatives (type DST) come from one call of :meth:`~graphtier.sampling.NeighborSampler.sample_global`
(the pairs' local ids moved to global ids by the types' offsets); in training the batch's positive edges leave REL's
blocks and, turned around, the blocks of its reverse relation (``--add-reverse``).

On a split by time every pair carries a time: its endpoints and negatives are sampled at that time by
:meth:`~graphtier.sampling.TemporalNeighborSampler.sample_global` (no hop reads an edge at or
after it, so a positive's own edge is never read and nothing needs excluding).

``src_index[i]`` is a row of the model's output of type SRC, ``dst_index[i]`` a row of type DST.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from graphtier.dataset.schema import Relation, RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling.batch import Block, grouped_rowptr
from graphtier.sampling.link.pairs import PairTable
from graphtier.sampling.typed_batch import TypedBlock, TypedMiniBatch

SampleGlobal = Callable[[np.ndarray, int], tuple[TypedMiniBatch, np.ndarray | torch.Tensor]]
"""``(global seeds, batch id) -> (batch, rows per type)``: :meth:`NeighborSampler.sample_global` (numpy rows),
or :meth:`DeviceNeighborSampler.sample_global` (rows on its device, as every tensor of its batch)."""

TimedSampleGlobal = Callable[[np.ndarray, int, np.ndarray], tuple[TypedMiniBatch, np.ndarray]]
"""``(global seeds, batch id, seed times int64 [B]) -> (batch, rows per type)``:
:meth:`TemporalNeighborSampler.sample_global`."""


@dataclass
class TypedLinkMiniBatch(TypedMiniBatch):
    """A :class:`TypedMiniBatch` of pairs of one relation (``seeds``: the endpoints' global ids).

    Attributes (besides :class:`TypedMiniBatch`'s):
        src_index: int64 [M], each pair's source row among the output rows of type ``src_type``.
        dst_index: int64 [M], each pair's destination row among the output rows of type ``dst_type``.
        label: float32 [M], 1.0 for a positive pair, 0.0 for a negative.
        pair_ids: int64 [B], the requested rows of the pair table.
        src_type, dst_type: the relation's endpoint types.
        excluded_edges: sampled edges removed because they were target edges (or their reverse).
    """

    src_index: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.int64))
    dst_index: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.int64))
    label: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.float32))
    pair_ids: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.int64))
    src_type: str = ""
    dst_type: str = ""
    excluded_edges: int = 0

    def to(self, device: torch.device | str, non_blocking: bool = False) -> TypedLinkMiniBatch:
        """A copy with every tensor on ``device``."""
        moved = TypedMiniBatch.to(self, device, non_blocking)
        return TypedLinkMiniBatch(
            moved.n_id, moved.blocks, moved.seed_index, moved.seeds, moved.target, moved.n_time,
            src_index=self.src_index.to(device, non_blocking=non_blocking),
            dst_index=self.dst_index.to(device, non_blocking=non_blocking),
            label=self.label.to(device, non_blocking=non_blocking),
            pair_ids=self.pair_ids.to(device, non_blocking=non_blocking),
            src_type=self.src_type, dst_type=self.dst_type, excluded_edges=self.excluded_edges,
        )  # fmt: skip


def without_pairs(rel: Block, dst_rows: torch.Tensor, src_rows: torch.Tensor, num_rows: int) -> Block:
    """``rel`` without its edges ``src_rows[i] -> dst_rows[i]`` (int64 [T] rows; both < ``num_rows``, the seeds'
    rows, which are the first rows of every layer)."""
    dst = rel.destinations()
    candidates = torch.nonzero((dst < num_rows) & (rel.col < num_rows)).flatten()
    hits = torch.isin(dst[candidates] * num_rows + rel.col[candidates], dst_rows * num_rows + src_rows)
    if not bool(hits.any()):
        return rel
    keep = torch.ones(rel.col.shape[0], dtype=torch.bool, device=rel.col.device)
    keep[candidates[hits]] = False
    rowptr = grouped_rowptr(dst[keep], rel.num_dst)  # the kept edges keep their order: still grouped by destination
    return Block(rowptr, rel.col[keep], rel.num_src, None if rel.edge_id is None else rel.edge_id[keep])


def typed_pairs(
    schema: Schema | None, relation: RelationType | None, reverse: RelationType | None, num_nodes: int | None
) -> TypedPairs | None:
    """The typed strategy of a link sampler's arguments (``schema`` and ``relation``, maybe ``reverse``), or None for
    homogeneous pairs (``num_nodes``, no schema). OptionError (one line, naming the argument) for any other mix."""
    if schema is None:
        for name, value in (("relation", relation), ("reverse", reverse)):
            if value is not None:
                raise OptionError(f"{name}: the pairs of a relation need the schema= of their graph; found no schema")
        if num_nodes is None:
            raise OptionError(
                "num_nodes: homogeneous pairs need num_nodes= (a relation's pairs: schema= and relation=)"
            )
        return None
    if num_nodes is not None:
        raise OptionError("num_nodes: a link sampler with a schema= counts its nodes there; pass num_nodes= or schema=")
    if relation is None:
        raise OptionError("relation: a link sampler with a schema= needs the relation (SRC, REL, DST) of its pairs")
    return TypedPairs(schema, relation, reverse)


def schema_relation(schema: Schema, name: str, key: RelationType, expected: str = "") -> Relation:
    """The relation ``key`` of ``schema`` (of endpoints ``expected`` ``(SRC, DST)`` when given); OptionError naming
    the argument ``name`` otherwise."""
    try:
        relation = schema.relation(tuple(key))
    except (KeyError, TypeError):
        relation = None
    if relation is None or (expected and (relation.src, relation.dst) != expected):
        known = ", ".join(str(r) for r in schema.relations)
        wanted = f"a relation {expected[0]} -> {expected[1]}" if expected else "a relation"
        raise OptionError(f"{name}: expected {wanted} of the schema ({known}), found {key!r}")
    return relation


class TypedPairs:
    """What a :class:`~graphtier.sampling.link.sampler.LinkSampler` built with a schema does per batch: its pairs are
    ``(src of SRC, dst of DST)`` local ids of ``relation``; they are seeds at the types' offsets of
    :meth:`~graphtier.sampling.NeighborSampler.sample_global` (or its temporal or device twins), their rows the
    rows of their own type, and the targets leave REL's blocks and, turned around, those of ``reverse`` (a
    relation ``(DST, name, SRC)``, or None).

    Attributes: ``relation``, ``reverse``, ``src_type``, ``dst_type``, ``src_offset`` / ``dst_offset`` (the
    types' first global ids), ``dst_range`` (``(0, count(DST))``: the negatives' local ids), ``num_nodes``.
    """

    def __init__(self, schema: Schema, relation: RelationType, reverse: RelationType | None) -> None:
        rel = schema_relation(schema, "relation", relation)
        self.relation: RelationType = rel.type
        self.src_type, self.dst_type = rel.src, rel.dst
        self.reverse = None if reverse is None else schema_relation(schema, "reverse", reverse, (rel.dst, rel.src)).type
        self.src_offset = schema.node_type(rel.src).offset
        self.dst_offset = schema.node_type(rel.dst).offset
        self.dst_range = (0, schema.node_type(rel.dst).count)
        self.num_nodes = schema.num_nodes

    def sample_pairs(
        self, table: PairTable, sample_global: SampleGlobal | TimedSampleGlobal, chosen: np.ndarray, batch_id: int,
        pair_ids: np.ndarray | None, labels: np.ndarray | None, times: np.ndarray | None,
    ) -> TypedLinkMiniBatch:  # fmt: skip
        """The batch of the pairs ``chosen`` (int [B, 2] LOCAL ids ``(src of SRC, dst of DST)``) of ``table``
        (its negatives, exclusion and times), the neighbourhoods from ``sample_global``: as
        :meth:`~graphtier.sampling.link.sampler.LinkSampler.sample_pairs`."""
        ids, seeds, seed_time = table.pair_seeds(chosen, batch_id, pair_ids, times, self.src_offset, self.dst_offset)
        if seed_time is None:
            batch, rows_np = sample_global(seeds, batch_id)  # type: ignore[call-arg]
        else:
            batch, rows_np = sample_global(seeds, batch_id, seed_time)  # type: ignore[call-arg]
        rows = rows_np if isinstance(rows_np, torch.Tensor) else torch.from_numpy(rows_np)  # a device sampler's rows
        b = ids.shape[0]
        src_rows, dst_rows, src_index, dst_index, label = table.pair_rows(rows, b, labels)
        blocks, removed = batch.blocks, 0
        if table.exclude and b and blocks:
            blocks, removed = self.without_targets(blocks, src_rows, dst_rows)
        return TypedLinkMiniBatch(
            batch.n_id, blocks, batch.seed_index, batch.seeds, batch.target, batch.n_time,
            src_index=src_index, dst_index=dst_index, label=label,
            pair_ids=torch.from_numpy(ids.copy()).to(rows.device), src_type=self.src_type, dst_type=self.dst_type,
            excluded_edges=removed,
        )  # fmt: skip

    def without_targets(
        self, blocks: list[TypedBlock], src_rows: torch.Tensor, dst_rows: torch.Tensor
    ) -> tuple[list[TypedBlock], int]:
        """The blocks without the target edges (REL: ``src -> dst``; its reverse: ``dst -> src``; ``src_rows``,
        ``dst_rows`` int64 [T] rows of their types) and how many edges left. Seeds are the first rows of their type in
        every layer: rows below the last block's num_dst."""
        last = blocks[-1].num_dst
        num_rows = max(last.get(self.src_type, 0), last.get(self.dst_type, 0))
        kept, removed = [], 0
        for block in blocks:
            relations = dict(block.relations)
            for key, dst, src in ((self.relation, dst_rows, src_rows), (self.reverse, src_rows, dst_rows)):
                if key is None or key not in relations:
                    continue
                before = relations[key]
                relations[key] = without_pairs(before, dst, src, num_rows)
                removed += before.num_edges - relations[key].num_edges
            kept.append(TypedBlock(block.num_src, block.num_dst, relations))
        return kept, removed
