"""Mini-batch types produced by the samplers.

A :class:`MiniBatch` lists its nodes once (``n_id``, global ids, the unique seeds first) and holds one
bipartite :class:`Block` per model layer, input layer first. A model runs::

    x = features[mb.n_id]
    for blk in mb.blocks:
        x = conv((x, x[: blk.num_dst]), blk.edge_index)
    out = x[mb.seed_index]          # one row per requested seed, in request order

All tensors are int64 tensors, on the CPU (``DeviceNeighborSampler``: on its topology's device); move them
with :meth:`MiniBatch.to`. A batch of ``NeighborSampler`` has tensors that are views of one buffer that the
sampler hands out again only once nothing references it (:mod:`graphtier.sampling.buffers`); ``clone()`` a
tensor before pickling it, or the whole buffer is saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Block:
    """One layer of a mini-batch, a bipartite graph whose destination nodes are a prefix of its sources.

    Attributes:
        edge_index: int64 [2, E]; row 0 = source local id (< num_src), row 1 = destination local id
            (< num_dst). Local id ``i`` is global node ``n_id[i]`` of the owning mini-batch.
        num_src: number of source nodes (rows of the layer's input).
        num_dst: number of destination nodes (rows of the layer's output); ``num_dst <= num_src``.
        edge_id: int64 [E], the dataset's id (CSC position) of each edge, which reads its time and features;
            None when the sampler does not record it (only the temporal sampler does today).
        edge_attr: float [E, d_e], the input features of each edge (row ``i`` belongs to edge ``i`` of
            ``edge_index``), on the model's device; None when the run has no edge inputs. Filled by the feed
            from ``edge_id`` (the store gathers the rows); models read it as PyG's ``edge_attr``.
        edge_age: float32 [E], temporal batches only: the time from each edge to its destination row's time
            bound (``n_time[dst] - edge_time[edge_id]``, > 0 with a strict cut), the input of a time
            encoding; None otherwise.
    """

    edge_index: torch.Tensor
    num_src: int
    num_dst: int
    edge_id: torch.Tensor | None = None
    edge_attr: torch.Tensor | None = None
    edge_age: torch.Tensor | None = None

    @property
    def num_edges(self) -> int:
        """E, the number of edges of this block."""
        return int(self.edge_index.shape[1])

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "Block":
        """A copy with ``edge_index`` (and ``edge_id``, ``edge_attr``, ``edge_age`` when set) on ``device``."""

        def move(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t.to(device, non_blocking=non_blocking)

        return Block(
            self.edge_index.to(device, non_blocking=non_blocking),
            self.num_src,
            self.num_dst,
            move(self.edge_id),
            move(self.edge_attr),
            move(self.edge_age),
        )


@dataclass
class MiniBatch:
    """A sampled mini-batch.

    Attributes:
        n_id: int64 [blocks[0].num_src], global node ids; the unique seeds come first.
        blocks: input layer first; ``blocks[i].num_dst == blocks[i + 1].num_src``. The destination rows
            of the last block are the model's output rows. ShaDow batches repeat one square block.
        seed_index: int64 [B], the output row of each requested seed, in request order (a repeated
            seed points at the same row).
        seeds: int64 [B], the requested global seed ids.
        subgraph: ShaDow batches only: int64 [len(n_id)], the index of the root subgraph each node
            belongs to (the unique root ``r`` is ``n_id[r]``); None for neighbour-sampled batches.
        n_time: temporal batches only: int64 [len(n_id)], the time bound of each row (its seed's time; a node
            reached from seeds of two times is two rows, except among the last hop's sources, which are one row per
            node at the bound of the first edge that reached it); None otherwise.
    """

    n_id: torch.Tensor
    blocks: list[Block]
    seed_index: torch.Tensor
    seeds: torch.Tensor
    subgraph: torch.Tensor | None = field(default=None)
    n_time: torch.Tensor | None = field(default=None)

    @property
    def num_nodes(self) -> int:
        """Number of distinct node rows (``len(n_id)``)."""
        return int(self.n_id.shape[0])

    @property
    def num_sampled_edges(self) -> int:
        """Sum of the edge counts of the distinct blocks (a repeated block counts once)."""
        seen: set[int] = set()
        total = 0
        for blk in self.blocks:
            if id(blk) not in seen:
                seen.add(id(blk))
                total += blk.num_edges
        return total

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "MiniBatch":
        """A copy with every tensor on ``device`` (a repeated block stays one shared object)."""
        moved: dict[int, Block] = {}
        blocks = []
        for blk in self.blocks:
            if id(blk) not in moved:
                moved[id(blk)] = blk.to(device, non_blocking)
            blocks.append(moved[id(blk)])
        return MiniBatch(
            n_id=self.n_id.to(device, non_blocking=non_blocking),
            blocks=blocks,
            seed_index=self.seed_index.to(device, non_blocking=non_blocking),
            seeds=self.seeds.to(device, non_blocking=non_blocking),
            subgraph=None if self.subgraph is None else self.subgraph.to(device, non_blocking=non_blocking),
            n_time=None if self.n_time is None else self.n_time.to(device, non_blocking=non_blocking),
        )
