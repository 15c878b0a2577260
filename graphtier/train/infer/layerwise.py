"""Exact layer-wise full-neighbour inference of any model on any schema: one driver (as in DGL's and PyG's examples).

Instead of sampling an L-hop tree per node, every layer is computed for all nodes of the types it outputs from the
previous layer's output tables over ALL in-neighbours of every relation, one chunk of destination nodes at a time.
The result is the model's exact output on the whole graph, at the cost of one pass over the edges per layer. A
homogeneous graph is the one-type case (:meth:`~graphtier.dataset.schema.Schema.homogeneous`).

A model comes as a :class:`LayerwiseModel`, chosen once by the caller: the homogeneous GNNs'
(:mod:`graphtier.train.infer.inference`) or the typed ones' (:mod:`graphtier.train.infer.typed_inference`). Per
layer, a model may compute its outputs from whole tables read in order (:meth:`LayerwiseModel.table_layer`: the CPU
fast path of GraphSAGE, GCN, R-GCN, HeteroSAGE and R-GAT, which builds no blocks); otherwise :func:`layer_tables`
takes one chunk of destinations of one type at a time with all their in-neighbours (:class:`FullNeighbourhood`, the
neighbour sampler with fanout -1) and runs :meth:`LayerwiseModel.step` on that one-hop block. Every layer's output
table lives in RAM or in an unlinked memory-mapped file of ``scratch_dir`` (:func:`layer_output`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

import numpy as np
import torch
from torch import Tensor

from graphtier._progress import Stage
from graphtier.dataset.schema import Schema
from graphtier.dataset.scratch import scratch_array
from graphtier.sampling import NeighborSampler
from graphtier.sampling.typed_batch import TypedBlock
from graphtier.train.infer._inference_kernels import neighbour_rows

MAX_CHUNK_EDGES = 1 << 20
"""In-edges of one step of layer-wise inference at most (a node with more: a step of its own)."""

ROW_BLOCK = 1 << 16
"""Consecutive rows read per step of a pass that reads a table in row order."""

RowReader = Callable[[str, int, int], Tensor]
"""``read(node_type, start, stop) -> float32 [stop - start, d]`` on the CPU: a layer's input rows [start, stop) of a
type."""


class LayerwiseModel(Protocol):
    """What :func:`layer_tables` needs of a model: its layers, per layer and type, as a strategy chosen once."""

    num_layers: int
    target: str
    dtype: torch.dtype

    def out_types(self, layer: int) -> Sequence[str]:
        """The node types whose rows layer ``layer`` computes (the last layer: those the caller reads)."""
        ...

    def read_inputs(self, node_type: str, start: int, stop: int) -> Tensor:
        """The first layer's input rows [start, stop) of ``node_type``, float32 [stop - start, d] on the CPU."""
        ...

    def block_inputs(self, n_id: dict[str, Tensor], block: TypedBlock, device: torch.device) -> dict[str, Tensor]:
        """The first layer's input rows of a one-hop block's sources ``n_id`` (local ids per type), on ``device``."""
        ...

    def step(self, layer: int, x: dict[str, Tensor], block: TypedBlock, n_id: dict[str, Tensor]) -> dict[str, Tensor]:
        """Layer ``layer`` on one block: its destinations' output rows per type, from the sources' rows ``x``."""
        ...

    def table_layer(self, layer: int, previous: dict[str, Tensor] | None, bar: Stage) -> dict[str, Tensor] | None:
        """Layer ``layer``'s output tables computed from whole tables (``previous``, or the inputs when None), with
        ``bar`` advanced by the in-edges read; None when this layer takes the block path."""
        ...


class FullNeighbourhood:
    """One-hop blocks with ALL in-neighbours of any destinations, of any schema: the neighbour sampler with fanout -1
    (built once, its workspaces reused)."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, schema: Schema) -> None:
        self.schema = schema
        self._offsets = dict(zip(schema.type_names, schema.offsets()[:-1].tolist()))
        self._sampler = NeighborSampler(indptr, indices, [-1], schema=schema, seed=0)

    def block(self, dst_type: str, dst_ids: np.ndarray) -> tuple[dict[str, Tensor], TypedBlock]:
        """``(n_id, block)`` of the destinations ``dst_ids`` (distinct local ids of ``dst_type``): int64 local ids per
        type (the destinations first in ``n_id[dst_type]``, the sources in first-seen order) and the CPU
        :class:`TypedBlock`; other types have no destination."""
        global_ids = np.asarray(dst_ids, dtype=np.int64) + self._offsets[dst_type]
        batch, _ = self._sampler.sample_global(global_ids, 0)
        return batch.n_id, batch.blocks[0]


def layer_tables(
    model: LayerwiseModel,
    schema: Schema,
    indptr: np.ndarray,
    indices: np.ndarray,
    *,
    device: torch.device,
    chunk_size: int,
    bar: Stage,
    keep_embeddings: bool,
    scratch_dir: str | os.PathLike[str] | None,
    max_chunk_edges: int | None = None,
) -> tuple[dict[str, Tensor], Tensor | None]:
    """The last layer's output tables ``{type: float32 [count(type), width]}`` (CPU; memory maps in ``scratch_dir``
    when given) of the types it outputs, and with ``keep_embeddings`` the target's input of the last layer, float32
    [count(target), H] on the CPU (else None).

    ``indptr`` / ``indices``: the dataset's (typed) CSC. ``chunk_size`` destinations per step, with at most
    ``max_chunk_edges`` (default :data:`MAX_CHUNK_EDGES`) in-edges over all relations into them (a node with more
    alone); the output does not depend on either. ``bar`` advances by each step's in-edges.
    """
    neighbourhood: FullNeighbourhood | None = None
    previous: dict[str, Tensor] | None = None
    embeddings: Tensor | None = None
    for layer in range(model.num_layers):
        if keep_embeddings and layer == model.num_layers - 1:
            embeddings = previous[model.target] if previous is not None else input_table(
                model.read_inputs, model.target, schema.node_type(model.target).count, "input features", scratch_dir
            )  # fmt: skip
        tables = model.table_layer(layer, previous, bar)
        if tables is not None:
            previous = tables
            continue
        if neighbourhood is None:
            neighbourhood = FullNeighbourhood(indptr, indices, schema)
        out: dict[str, Tensor] = {}
        for t in model.out_types(layer):
            rows = schema.node_type(t).count
            in_edges = type_in_edges_indptr(indptr, schema, t)
            bounds = chunk_bounds(in_edges, rows, chunk_size, max_chunk_edges)
            table: Tensor | None = None
            for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                n_id, block = neighbourhood.block(t, np.arange(start, stop, dtype=np.int64))
                on_device = block.to(device)
                if previous is None:
                    x = model.block_inputs(n_id, on_device, device)
                else:
                    x = {s: previous[s][ids].to(device, model.dtype) for s, ids in n_id.items() if s in previous}
                h = model.step(layer, x, on_device, n_id)[t].float().cpu()
                if table is None:
                    table = layer_output(rows, h.shape[1], f"layer {layer + 1} outputs of {t}", scratch_dir)
                table[start:stop] = h
                bar.advance(int(in_edges[stop] - in_edges[start]))
            out[t] = table if table is not None else torch.empty((0, 0))
        previous = out
    assert previous is not None
    return previous, embeddings


def total_in_edges(model: LayerwiseModel, schema: Schema, indptr: np.ndarray) -> int:
    """The in-edges :func:`layer_tables` reads over all layers and the types they output (its progress total: the
    hubs of a reordered graph come first, so nodes would mislead the ETA)."""
    return sum(
        int(type_in_edges_indptr(indptr, schema, t)[-1])
        for layer in range(model.num_layers)
        for t in model.out_types(layer)
    )


def row_outputs(
    rows: Callable[[Tensor], tuple[Tensor, Tensor | None]],
    count: int,
    chunk_size: int,
    bar: Stage,
    keep_embeddings: bool,
) -> tuple[Tensor, Tensor | None]:
    """A model without neighbours (an MLP) on every node of its type: ``rows(ids)`` (int64 CPU ids of at most
    ``chunk_size`` consecutive nodes) gives float32 CPU logits and, with ``keep_embeddings``, the last layer's inputs
    (else None), each concatenated over ``[0, count)``; ``bar`` advances by nodes."""
    logits, hidden = [], []
    for start in range(0, count, chunk_size):
        stop = min(count, start + chunk_size)
        out, h = rows(torch.arange(start, stop))
        logits.append(out)
        if h is not None:
            hidden.append(h)
        bar.advance(stop - start)
    out_all = torch.cat(logits) if logits else torch.empty(0)
    return out_all, (torch.cat(hidden) if hidden else torch.empty(0)) if keep_embeddings else None


def input_table(
    read: RowReader, node_type: str, rows: int, name: str, scratch_dir: str | os.PathLike[str] | None
) -> Tensor:
    """float32 [rows, d]: ``node_type``'s rows through ``read``, in order (in RAM, or a memory map in
    ``scratch_dir``)."""
    table: Tensor | None = None
    for start, stop in row_blocks(rows):
        x = read(node_type, start, stop)
        if table is None:
            table = layer_output(rows, int(x.shape[1]), name, scratch_dir)
        table[start:stop] = x
    return table if table is not None else torch.empty(0)


def row_blocks(rows: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive runs of at most :data:`ROW_BLOCK` rows covering ``[0, rows)``, in order: the
    steps of a pass that reads a table in row order."""
    for start in range(0, rows, ROW_BLOCK):
        yield start, min(rows, start + ROW_BLOCK)


def neighbour_aggregate(
    table: Tensor, indptr: np.ndarray, indices: np.ndarray, first: int, stop: int, *, mean: bool, base: int = 0
) -> Tensor:
    """float32 [stop - first, d]: the sum (``mean``: the mean) of each node's in-neighbours' rows of ``table``
    [N, d] (float32, CPU; row i holds source id ``base + i``) for the nodes [first, stop) of the CSC ``indptr`` /
    ``indices``; IndexError for a neighbour id outside the table."""
    table_np = table.numpy()
    agg = torch.empty((stop - first, table_np.shape[1]), dtype=torch.float32)
    bad = neighbour_rows(table_np, indptr, indices, first, stop, agg.numpy(), mean, base)
    if bad:
        raise IndexError(
            f"the graph has {bad} in-edges of nodes [{first}, {stop}) from ids outside [{base}, "
            f"{base + table_np.shape[0]})"
        )
    return agg


def chunk_bounds(indptr: np.ndarray, num_nodes: int, chunk_size: int, max_chunk_edges: int | None = None) -> np.ndarray:
    """int64 [steps + 1] first node of every step of layer-wise inference, then ``num_nodes``: consecutive runs
    of at most ``chunk_size`` nodes and at most ``max_chunk_edges`` in-edges (``indptr`` int64 [N + 1]; default
    :data:`MAX_CHUNK_EDGES`), except a node with more in-edges alone."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be positive, got {chunk_size}")
    max_edges = MAX_CHUNK_EDGES if max_chunk_edges is None else max_chunk_edges
    indptr = np.asarray(indptr)
    bounds = [0]
    start = 0
    while start < num_nodes:
        stop = min(num_nodes, start + chunk_size)
        if int(indptr[stop]) - int(indptr[start]) > max_edges:
            # the last node whose list ends within the budget, and at least one node
            fits = int(np.searchsorted(indptr[start + 1 : stop + 1], int(indptr[start]) + max_edges, side="right"))
            stop = start + max(1, fits)
        bounds.append(stop)
        start = stop
    return np.asarray(bounds, dtype=np.int64)


def type_in_edges_indptr(indptr: np.ndarray, schema: Schema, node_type: str) -> np.ndarray:
    """int64 [count(node_type) + 1]: a CSC pointer array of each node's in-edges summed over every relation into
    ``node_type`` (the chunk bound of layer-wise inference)."""
    if len(schema.relations) == 1 and len(schema.node_types) == 1:
        return np.asarray(indptr)  # a homogeneous graph: its own CSC
    kind = schema.node_type(node_type)
    out = np.zeros(kind.count + 1, dtype=np.int64)
    np.cumsum(schema.in_degrees(indptr)[kind.offset : kind.stop], out=out[1:])
    return out


def layer_output(num_nodes: int, width: int, name: str, scratch_dir: str | os.PathLike[str] | None) -> Tensor:
    """float32 [num_nodes, width] for the rows ``name`` (e.g. ``layer 2 outputs``): in RAM, or a memory map in
    ``scratch_dir``."""
    if scratch_dir is None:
        return torch.empty((num_nodes, width), dtype=torch.float32)
    what = f"{name} [{num_nodes:,}, {width}] float32 of layer-wise inference"
    return torch.from_numpy(scratch_array(scratch_dir, (num_nodes, width), np.float32, what))
