"""Mini-batch types produced by the samplers.

A :class:`MiniBatch` lists its nodes once (``n_id``, global ids, the unique seeds first) and holds one
bipartite :class:`Block` per model layer, input layer first. A model runs::

    x = features[mb.n_id]
    for blk in mb.blocks:               # blk.rowptr / blk.col: CSR [num_dst, num_src]
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


@dataclass(eq=False)
class Block:
    """One layer of a mini-batch (or one relation of a typed layer): a bipartite graph as a CSR over its destinations.

    The one block layout of every sampler and model. A homogeneous batch's destination nodes are a prefix of its
    sources; a typed batch's relation block maps the layer's sources of the relation's source type to its
    destinations of the destination type (:class:`~graphtier.sampling.typed_batch.TypedBlock`).

    Attributes:
        rowptr: int64 [num_dst + 1]; the edges of destination ``r`` are ``rowptr[r] <= e < rowptr[r + 1]``.
        col: int64 [E], the source of each edge: a local id (< num_src; local id ``i`` is global node ``n_id[i]`` of
            the owning mini-batch).
        num_src: number of source nodes (rows of the layer's input).
        edge_id: int64 [E], the dataset's id (CSC position) of each edge, which reads its time and features;
            None when the sampler does not record it (``with_edge_ids``, and the temporal samplers).
        edge_attr: float [E, d_e], the input features of each edge (row ``i`` belongs to edge ``i``), on the model's
            device; None when the run has no edge inputs. Filled by the feed from ``edge_id`` (the store gathers the
            rows); models read it as PyG's ``edge_attr``.
        edge_age: float32 [E], temporal batches only: the time from each edge to its destination row's time
            bound (``n_time[dst] - edge_time[edge_id]``, > 0 with a strict cut), the input of a time
            encoding; None otherwise.

    PyG's ``edge_index`` (int64 [2, E]: row 0 source, row 1 destination, edges in CSR order) is derived on first use
    and cached (:attr:`edge_index`); :meth:`from_edge_index` builds a block from one.
    """

    rowptr: torch.Tensor
    col: torch.Tensor
    num_src: int
    edge_id: torch.Tensor | None = None
    edge_attr: torch.Tensor | None = None
    edge_age: torch.Tensor | None = None
    _edge_index: torch.Tensor | None = field(default=None, repr=False)

    @classmethod
    def from_grouped(
        cls, rowptr: torch.Tensor, edge_index: torch.Tensor, num_src: int, edge_id: torch.Tensor | None = None
    ) -> "Block":
        """A block whose int64 ``edge_index`` [2, E] is already in CSR order (its destinations grouped, non-decreasing,
        as ``rowptr`` [num_dst + 1] counts them): the samplers' blocks, which write both; the edge index is kept as
        :attr:`edge_index` (nothing checks that the two agree)."""
        return cls(rowptr, edge_index[0], int(num_src), edge_id, _edge_index=edge_index)

    @classmethod
    def from_edge_index(
        cls,
        edge_index: torch.Tensor,
        num_src: int,
        num_dst: int,
        *,
        edge_id: torch.Tensor | None = None,
        edge_attr: torch.Tensor | None = None,
        edge_age: torch.Tensor | None = None,
    ) -> "Block":
        """The block of PyG's int64 ``edge_index`` [2, E] (row 0 source < ``num_src``, row 1 destination <
        ``num_dst``), on its device. Edges not grouped by destination are put in CSR order by a stable sort, and
        ``edge_id`` [E], ``edge_attr`` [E, d_e] and ``edge_age`` [E] with them; grouped edges keep their order.
        ValueError for a destination outside ``[0, num_dst)``."""
        dst = edge_index[1]
        num_edges = int(dst.shape[0])
        if num_edges and (int(dst.min()) < 0 or int(dst.max()) >= num_dst):
            raise ValueError(
                f"edge_index: destinations must lie in [0, {num_dst}), found [{int(dst.min())}, {int(dst.max())}]"
            )
        if num_edges > 1 and not bool((dst[1:] >= dst[:-1]).all()):
            order = torch.argsort(dst, stable=True)
            edge_index = edge_index[:, order]
            edge_id, edge_attr, edge_age = (None if t is None else t[order] for t in (edge_id, edge_attr, edge_age))
        edge_index = edge_index.contiguous()
        rowptr = grouped_rowptr(edge_index[1], num_dst)
        return cls(rowptr, edge_index[0], int(num_src), edge_id, edge_attr, edge_age, _edge_index=edge_index)

    @property
    def num_dst(self) -> int:
        """Number of destination nodes (rows of the layer's output)."""
        return int(self.rowptr.shape[0]) - 1

    @property
    def num_edges(self) -> int:
        """E, the number of edges of this block."""
        return int(self.col.shape[0])

    @property
    def edge_index(self) -> torch.Tensor:
        """int64 [2, E] on the block's device: row 0 each edge's source, row 1 its destination (PyG's convention),
        edges in CSR order; derived from ``rowptr`` on first use and cached."""
        if self._edge_index is None:
            self._edge_index = torch.stack([self.col, self.destinations()])
        return self._edge_index

    def destinations(self) -> torch.Tensor:
        """int64 [E]: each edge's destination (non-decreasing), on the block's device."""
        if self._edge_index is not None:
            return self._edge_index[1]
        counts = self.rowptr[1:] - self.rowptr[:-1]
        return torch.repeat_interleave(
            torch.arange(counts.shape[0], device=self.col.device), counts, output_size=self.num_edges
        )

    def to(self, device: torch.device | str, non_blocking: bool = False) -> "Block":
        """On ``device``: this block itself when all its tensors are there already (with whatever was cached on it),
        else a copy with every tensor moved."""
        target = torch.device(device)
        tensors = [t for t in (self.rowptr, self.col, self.edge_id, self.edge_attr, self.edge_age) if t is not None]
        if all(_same_device(t.device, target) for t in tensors):
            return self

        def move(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t.to(device, non_blocking=non_blocking)

        edge_index = move(self._edge_index)  # its row 0 is the column: moved once
        col = move(self.col) if edge_index is None else edge_index[0]
        return Block(
            move(self.rowptr), col, self.num_src, move(self.edge_id), move(self.edge_attr), move(self.edge_age),
            _edge_index=edge_index,
        )  # fmt: skip


def grouped_rowptr(destinations: torch.Tensor, num_dst: int) -> torch.Tensor:
    """int64 [num_dst + 1] on the device of ``destinations`` (int64 [E], non-decreasing, each < ``num_dst``): the CSR
    row pointer of edges grouped by destination, each row's first edge found by a search (no device sync)."""
    rows = torch.arange(num_dst + 1, dtype=torch.int64, device=destinations.device)
    return torch.searchsorted(destinations.contiguous(), rows)


def _same_device(have: torch.device, want: torch.device) -> bool:
    """Whether a tensor on ``have`` is on ``want`` (``cuda`` without an index: the current device)."""
    if have.type != want.type:
        return False
    if want.index is None:
        return have.type != "cuda" or have.index == torch.cuda.current_device()
    return have.index == want.index


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
