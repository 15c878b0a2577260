"""Link-prediction mini-batches of any schema: node pairs, their negatives, and the neighbourhoods of every endpoint.

One :class:`LinkSampler` serves every schema. Without a ``schema`` its pairs are global ids of a homogeneous graph,
sampled on the path below into :class:`LinkMiniBatch` es; with one and a ``relation`` ``(SRC, REL, DST)``, they are
local ids of that relation's endpoint types, sampled by a typed neighbour sampler's ``sample_global`` into
:class:`~graphtier.sampling.link.typed_link.TypedLinkMiniBatch` es (:class:`~graphtier.sampling.link.typed_link.TypedPairs`:
the same steps per relation). Which of the two runs is chosen once, when the sampler is built; the pair table, the
negatives and the pairs' times are the same (:class:`~graphtier.sampling.link.pairs.PairTable`).

A homogeneous :class:`LinkSampler` turns a batch of pair ids (rows of a pair table: the training edges, or an evaluation
split's positives and negatives) into a :class:`LinkMiniBatch`:

1. training: ``num_negatives`` negatives per positive, whose source is the positive's source and whose
   destination is drawn from ``dst_range`` (``uniform``, or ``degree``: proportional to in-degree^0.75, as
   word2vec and PinSAGE draw them), as DGL's ``negative_sampler.Uniform`` corrupts the destination;
2. the k-hop neighbourhood of every endpoint and negative, sampled in one call of the node sampler (the
   endpoints deduplicated: a node in several pairs is one row);
3. training: the batch's own positive edges, and their reverse edges on an undirected graph, removed from
   every block (DGL's ``exclude='reverse_id'``): the model never sees the edge it is asked to predict.

With pair ``times`` (a time-split dataset), the node sampler is a temporal one
(:class:`~graphtier.sampling.temporal.sampler.TemporalNeighborSampler`): both endpoints of a pair, and its negatives, are
seeds at the pair's time, so every hop reads only edges strictly earlier: the target edge (at that time) is never
read, and the caller turns the exclusion off. Pairs scored at one later time (a static snapshot) keep it on; a
block it shortened keeps the ``edge_id`` of the edges it kept.

The batch is a :class:`MiniBatch` (so the producer, the feed and the models take it unchanged) whose pairs are
``(src_index[i], dst_index[i])``: rows of the model's output, with ``label[i]`` 1 for a positive, 0 for a negative.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling.batch import Block, MiniBatch, grouped_rowptr
from graphtier.sampling.link._link_kernels import compact_non_targets, target_key_set
from graphtier.sampling.link.pairs import NegativeDestinations, PairTable
from graphtier.sampling.link.typed_link import SampleGlobal, TimedSampleGlobal, TypedLinkMiniBatch, typed_pairs
from graphtier.sampling.neighbor.hops import NO_EDGE_IDS

NodeSampler = Callable[[np.ndarray, int], MiniBatch]
TimedNodeSampler = Callable[[np.ndarray, int, np.ndarray], MiniBatch]
"""``(seeds int64 [B], batch_id, seed_time int64 [B]) -> MiniBatch``: a temporal node sampler."""


@dataclass
class LinkMiniBatch(MiniBatch):
    """A :class:`MiniBatch` of node pairs.

    Attributes (besides :class:`MiniBatch`'s; ``seeds`` are the sampled endpoint ids, ``seed_index`` their rows):
        src_index: int64 [M], the output row of each pair's source.
        dst_index: int64 [M], the output row of each pair's destination.
        label: float32 [M], 1.0 for a positive pair, 0.0 for a negative.
        pair_ids: int64 [B], the requested pair ids (rows of the pair table), in request order.
        excluded_edges: sampled edges removed because they were target edges (or their reverse).
    """

    src_index: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.int64))
    dst_index: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.int64))
    label: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.float32))
    pair_ids: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.int64))
    excluded_edges: int = 0

    @property
    def num_pairs(self) -> int:
        """M, the number of scored pairs (positives and negatives)."""
        return int(self.label.shape[0])

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "LinkMiniBatch":
        """A copy with every tensor on ``device``."""
        moved = MiniBatch.to(self, device, non_blocking)
        return LinkMiniBatch(
            n_id=moved.n_id,
            blocks=moved.blocks,
            seed_index=moved.seed_index,
            seeds=moved.seeds,
            subgraph=moved.subgraph,
            n_time=moved.n_time,
            src_index=self.src_index.to(device, non_blocking=non_blocking),
            dst_index=self.dst_index.to(device, non_blocking=non_blocking),
            label=self.label.to(device, non_blocking=non_blocking),
            pair_ids=self.pair_ids.to(device, non_blocking=non_blocking),
            excluded_edges=self.excluded_edges,
        )


def exclude_edges_reference(
    n_id: np.ndarray, edge_index: np.ndarray, targets: np.ndarray, num_nodes: int, undirected: bool
) -> np.ndarray:
    """bool [E]: which edges of a block to keep (plain numpy; the reference of the kernels).

    ``n_id`` int64 [S] global ids of the block's local ids; ``edge_index`` int64 [2, E] (row 0 the message
    source, row 1 the destination, local ids); ``targets`` int64 [T, 2] global ``(src, dst)`` edges to
    remove, and their reverse ``(dst, src)`` too with ``undirected``.
    """
    src = n_id[edge_index[0]].astype(np.int64)
    dst = n_id[edge_index[1]].astype(np.int64)
    keys = src * num_nodes + dst
    excluded = targets[:, 0].astype(np.int64) * num_nodes + targets[:, 1]
    if undirected:
        excluded = np.concatenate([excluded, targets[:, 1].astype(np.int64) * num_nodes + targets[:, 0]])
    return ~np.isin(keys, excluded)


EXCLUSIONS = ("numba", "torch")
"""How target edges leave the blocks: the numba kernel (host blocks) or torch ops on the blocks' device."""


def exclude_targets_torch(
    edge_index: torch.Tensor, src_rows: torch.Tensor, dst_rows: torch.Tensor, num_rows: int, undirected: bool
) -> torch.Tensor:
    """int64 [2, K]: the edges of ``edge_index`` (int64 [2, E], local ids, any device) that are no target, in order
    (``edge_index[:, non_target_mask(...)]``)."""
    return edge_index[:, non_target_mask(edge_index, src_rows, dst_rows, num_rows, undirected)]


def non_target_mask(
    edge_index: torch.Tensor, src_rows: torch.Tensor, dst_rows: torch.Tensor, num_rows: int, undirected: bool
) -> torch.Tensor:
    """bool [E]: which edges of ``edge_index`` (int64 [2, E], local ids, any device) are no target.

    ``src_rows``, ``dst_rows``: int64 [T] local rows (< ``num_rows``, the seed rows) of the target edges'
    endpoints, on ``edge_index``'s device; with ``undirected`` their reverse edges are targets too. The torch
    twin of :mod:`graphtier.sampling.link._link_kernels` (same keys), run where the blocks are.
    """
    keys = src_rows * num_rows + dst_rows
    if undirected:
        keys = torch.cat((keys, dst_rows * num_rows + src_rows))
    sources, destinations = edge_index[0], edge_index[1]
    candidates = torch.nonzero((sources < num_rows) & (destinations < num_rows)).flatten()  # seed-to-seed edges
    hits = torch.isin(sources[candidates] * num_rows + destinations[candidates], keys)
    keep = torch.ones(edge_index.shape[1], dtype=torch.bool, device=edge_index.device)
    keep[candidates[hits]] = False
    return keep


class LinkSampler(PairTable):
    """Sample :class:`LinkMiniBatch` es of rows of a pair table (see the module), or with a ``schema``
    :class:`~graphtier.sampling.link.typed_link.TypedLinkMiniBatch` es of pairs of one relation.

    Args:
        sample_nodes: the node sampler ``(seeds, batch_id) -> MiniBatch`` (:meth:`GraphStore.sampler`); with a
            ``schema``, a typed sampler's ``sample_global`` (:data:`~graphtier.sampling.link.typed_link.SampleGlobal`).
        pairs: int64 [P, 2] the pair table (``src``, ``dst``): global ids, or with a ``schema`` local ids of the
            ``relation``'s endpoint types.
        num_nodes: N, nodes of a homogeneous graph (without a ``schema``).
        schema: None (homogeneous pairs: :class:`LinkMiniBatch` es), or the typed graph's schema with the
            ``relation`` ``(SRC, REL, DST)`` of the pairs and maybe its ``reverse`` ``(DST, rev_REL, SRC)``:
            :class:`~graphtier.sampling.link.typed_link.TypedLinkMiniBatch` es, negatives of type DST, the targets
            leaving REL and ``reverse`` (:class:`~graphtier.sampling.link.typed_link.TypedPairs`, chosen once).
        labels: float [P] labels of the pairs (evaluation), or None: every pair is a positive, and
            ``num_negatives`` negatives are drawn per positive (training).
        num_negatives: negatives per positive (training only).
        negatives: how their destinations are drawn (:class:`NegativeDestinations`).
        exclude: remove the batch's positive edges from message passing (training).
        undirected: remove their reverse edges too (homogeneous; a typed sampler removes them from ``reverse``).
        seed: base seed of the negatives (a batch's negatives depend on (seed, batch id) only).
        exclusion: "numba" (the kernel, on host copies of the blocks) or "torch" (torch ops on the blocks'
            device, for :class:`DeviceNeighborSampler` batches); both keep the same edges. A typed sampler's
            blocks always use torch ops.
        times: int64 [P], the time of each pair (a time split), or None. With times, ``sample_nodes`` is a
            :data:`TimedNodeSampler` and every endpoint and negative is sampled at its pair's time.

    Every tensor of a batch is on the node sampler's device (the negatives are drawn on the host, from
    the same random stream on every device, so CPU and GPU sampling give identical batches).
    """

    def __init__(
        self,
        sample_nodes: NodeSampler | TimedNodeSampler | SampleGlobal | TimedSampleGlobal,
        pairs: np.ndarray,
        *,
        num_nodes: int | None = None,
        schema: Schema | None = None,
        relation: RelationType | None = None,
        reverse: RelationType | None = None,
        labels: np.ndarray | None = None,
        num_negatives: int = 1,
        negatives: NegativeDestinations | None = None,
        exclude: bool = True,
        undirected: bool = True,
        seed: int = 0,
        exclusion: str = "numba",
        times: np.ndarray | None = None,
    ) -> None:
        if exclusion not in EXCLUSIONS:
            raise OptionError.invalid("exclusion", f"one of {', '.join(EXCLUSIONS)}", exclusion)
        self.sample_nodes = sample_nodes
        self._typed = typed_pairs(schema, relation, reverse, num_nodes)  # OptionError for a wrong mix
        self.num_nodes = int(num_nodes) if self._typed is None else self._typed.num_nodes  # type: ignore[arg-type]
        dst_range = (0, self.num_nodes) if self._typed is None else self._typed.dst_range
        self._set_pairs(pairs, labels, times, num_negatives, negatives, dst_range, exclude, seed)
        self.undirected = undirected
        self.exclusion = exclusion

    def sample_pairs(
        self,
        chosen: np.ndarray,
        batch_id: int,
        *,
        pair_ids: np.ndarray | None = None,
        labels: np.ndarray | None = None,
        times: np.ndarray | None = None,
    ) -> LinkMiniBatch | TypedLinkMiniBatch:
        """The batch of the pairs ``chosen`` (int [B, 2] global ``(src, dst)``, e.g. PyG's input edges; with a
        ``schema`` local ids of the relation's types) as :meth:`sample` makes it: ``pair_ids`` (int [B], default
        ``arange(B)``) and ``labels`` (float [B], default 1: positives) are recorded in the batch; negatives and
        exclusion as configured. ``times`` (int64 [B], the pairs' times) is required, and only allowed, when the
        sampler was made with ``times``. A :class:`TypedLinkMiniBatch` with a schema."""
        if self._typed is not None:
            return self._typed.sample_pairs(self, self.sample_nodes, chosen, batch_id, pair_ids, labels, times)
        ids, seeds, seed_time = self.pair_seeds(chosen, batch_id, pair_ids, times)
        if seed_time is None:
            batch = self.sample_nodes(seeds, batch_id)
        else:
            batch = self.sample_nodes(seeds, batch_id, seed_time)  # type: ignore[call-arg]
        device = batch.seed_index.device
        b = ids.shape[0]
        src_rows, dst_rows, src_index, dst_index, label = self.pair_rows(batch.seed_index, b, labels)
        blocks, removed = batch.blocks, 0
        if self.exclude and b and blocks:
            blocks, removed = self._without_targets(batch.blocks, src_rows, dst_rows)
        return LinkMiniBatch(
            n_id=batch.n_id,
            blocks=blocks,
            seed_index=batch.seed_index,
            seeds=batch.seeds,
            subgraph=batch.subgraph,
            n_time=batch.n_time,
            src_index=src_index,
            dst_index=dst_index,
            label=label,
            pair_ids=torch.from_numpy(ids.copy()).to(device),
            excluded_edges=removed,
        )

    def _without_targets(
        self, blocks: list[Block], src_rows: torch.Tensor, dst_rows: torch.Tensor
    ) -> tuple[list[Block], int]:
        """The blocks without the target edges ``(src_rows[i], dst_rows[i])`` (local rows; reverse too when
        undirected), and how many edges left. The endpoints are seeds: rows below the last block's ``num_dst``."""
        num_rows = blocks[-1].num_dst
        table = None
        if self.exclusion == "numba":
            table = target_key_set(src_rows.cpu().numpy(), dst_rows.cpu().numpy(), num_rows, self.undirected)
        kept_blocks, removed = [], 0
        for block in blocks:
            edge_id = block.edge_id
            if table is not None:
                kept = block.edge_index.cpu().contiguous()  # the node sampler's fresh batch: compacted in place
                ids = None if edge_id is None else edge_id.cpu().contiguous()
                count = compact_non_targets(kept.numpy(), table, num_rows, NO_EDGE_IDS if ids is None else ids.numpy())
                kept = kept.view(-1)[: 2 * count].view(2, count)
                edge_id = None if ids is None else ids[:count]
            else:
                keep = non_target_mask(block.edge_index, src_rows, dst_rows, num_rows, self.undirected)
                kept = block.edge_index[:, keep]
                edge_id = None if edge_id is None else edge_id[keep]
            if kept.shape[1] < block.num_edges:
                removed += block.num_edges - int(kept.shape[1])
                device = block.edge_index.device
                kept = kept.to(device)  # the kept edges keep their order: still grouped by destination
                edge_id = None if edge_id is None else edge_id.to(device)
                block = Block.from_grouped(grouped_rowptr(kept[1], block.num_dst), kept, block.num_src, edge_id)
            kept_blocks.append(block)
        return kept_blocks, removed
