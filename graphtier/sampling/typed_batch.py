"""Mini-batches of a typed (heterogeneous) graph: per node type its nodes, per layer and relation a bipartite CSR.

The typed twin of :class:`graphtier.sampling.batch.MiniBatch`, with the same :class:`~graphtier.sampling.batch.Block`
per relation. Node ids are LOCAL ids of their type (the rows of that type's feature table). In every layer the
destination nodes of a type are a prefix of that type's source nodes, and
``blocks[i].num_dst[t] == blocks[i + 1].num_src[t]``. A model runs::

    x = {t: features[t][mb.n_id[t]] for t in mb.n_id}
    for blk in mb.blocks:
        out = {t: self_term(x[t][: blk.num_dst[t]]) for t in blk.num_dst}
        for (s, name, d), rel in blk.relations.items():
            out[d] += conv_r(x[s][: blk.num_src[s]], rel)     # rel.rowptr / rel.col: CSR [num_dst[d], num_src[s]]
        x = out
    logits = x[mb.target][mb.seed_index]
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from graphtier.dataset.schema import RelationType
from graphtier.sampling.batch import Block


@dataclass
class TypedBlock:
    """One layer: sources and destinations per node type, and one :class:`~graphtier.sampling.batch.Block` per relation.

    Attributes:
        num_src: rows of the layer's input, per node type (every type of the batch, 0 allowed).
        num_dst: rows of the layer's output, per node type (``num_dst[t] <= num_src[t]``).
        relations: per relation type ``(src, name, dst)`` its :class:`~graphtier.sampling.batch.Block` (a CSR
            [num_dst[dst], num_src[src]]); relations with no sampled edge may be absent.
    """

    num_src: dict[str, int]
    num_dst: dict[str, int]
    relations: dict[RelationType, Block]

    @property
    def num_edges(self) -> int:
        return sum(rel.num_edges for rel in self.relations.values())

    def to(self, device: torch.device | str, non_blocking: bool = False) -> TypedBlock:
        return TypedBlock(
            dict(self.num_src),
            dict(self.num_dst),
            {key: rel.to(device, non_blocking) for key, rel in self.relations.items()},
        )


@dataclass
class TypedMiniBatch:
    """A sampled mini-batch of a typed graph.

    Attributes:
        n_id: per node type, int64 [blocks[0].num_src[t]] local ids of that type; the target type's unique seeds
            come first in ``n_id[target]``.
        blocks: input layer first (see the module).
        seed_index: int64 [B], the output row (of the target type) of each requested seed, in request order.
        seeds: int64 [B], the requested seeds (local ids of the target type).
        target: the seeds' node type.
        n_time: per node type, int64 [len(n_id[t])] the time bound of each row (a temporal batch: a row is a
            (node, bound) pair, so a node may be several rows; the last hop's sources are one row per node, at the
            bound of the first edge that reached it); None for a batch sampled without time.
    """

    n_id: dict[str, torch.Tensor]
    blocks: list[TypedBlock]
    seed_index: torch.Tensor
    seeds: torch.Tensor
    target: str
    n_time: dict[str, torch.Tensor] | None = None

    @property
    def num_nodes(self) -> int:
        """Distinct nodes of every type."""
        return sum(int(ids.shape[0]) for ids in self.n_id.values())

    @property
    def num_sampled_edges(self) -> int:
        return sum(blk.num_edges for blk in self.blocks)

    def to(self, device: torch.device | str, non_blocking: bool = False) -> TypedMiniBatch:
        """A copy with every tensor on ``device``."""
        return TypedMiniBatch(
            n_id={t: ids.to(device, non_blocking=non_blocking) for t, ids in self.n_id.items()},
            blocks=[blk.to(device, non_blocking) for blk in self.blocks],
            seed_index=self.seed_index.to(device, non_blocking=non_blocking),
            seeds=self.seeds.to(device, non_blocking=non_blocking),
            target=self.target,
            n_time=None
            if self.n_time is None
            else {t: times.to(device, non_blocking=non_blocking) for t, times in self.n_time.items()},
        )
