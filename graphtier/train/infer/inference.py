"""Exact layer-wise full-neighbour inference (as in DGL's and PyG's GraphSAGE examples).

Instead of sampling an L-hop tree per node, every layer is computed for all nodes from the previous
layer's output over all in-neighbours, one chunk of destination nodes at a time. The result is the
model's exact output on the full graph, at the cost of one pass over the edges per layer.

GCN: both ``--gcn-degrees`` choices normalise by every node's full-graph in-degree here. With
``full`` that is the definition; with ``block`` (a block normalised by its own in-degrees) it is what
the block of a layer-wise pass is: the whole graph, every node a destination with all its neighbours,
so every node's block in-degree is its full in-degree. Per-chunk blocks would instead give the
sources outside a chunk in-degree 0 and make the output depend on the chunk size; they are never
used for the degrees.

On the CPU, GraphSAGE and GCN layers build no blocks: each reads its neighbours' rows straight from a table by
global id (the previous layer's output; GCN first scales every row by its normalisation), and a layer whose
output is narrower than its input projects first, so a feature table larger than RAM is read once, in order,
instead of a random row per edge. GAT, and every model on CUDA, take one-hop blocks per step.

A model with edge inputs (GAT or GINE built with edge features or a time encoding) is refused
(:func:`check_layerwise`): the one-hop blocks here carry no edge inputs, and a time encoding needs a time per
query, which a full-graph pass has not. Such models are evaluated by sampling.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Callable

import numpy as np
import torch
from torch import nn

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.scratch import scratch_array
from graphtier.errors import OptionError
from graphtier.sampling import NeighborSampler
from graphtier.train.infer._inference_kernels import neighbour_rows
from graphtier.train.nn.models import MLP, BlockGNN, _linear

MAX_CHUNK_EDGES = 1 << 20
"""In-edges of one step of layer-wise inference at most (a node with more: a step of its own)."""


def check_layerwise(model: nn.Module, where: str = "model") -> None:
    """OptionError (one line, prefixed ``where``) when ``model`` reads edge inputs: layer-wise inference has none."""
    if getattr(model, "edge_input_dim", 0):
        raise OptionError(
            f"{where}: {getattr(model, 'kind', 'the model')} reads edge inputs (edge features or a time encoding), "
            "which exact layer-wise inference does not feed; evaluate it by sampling"
        )


@torch.no_grad()
def layerwise_outputs(
    model: nn.Module,
    gather: Callable[[torch.Tensor], torch.Tensor],
    indptr: np.ndarray,
    indices: np.ndarray,
    *,
    num_nodes: int,
    device: torch.device,
    degree: torch.Tensor | None = None,
    chunk_size: int = 4096,
    progress: Progress = NO_PROGRESS,
    keep_embeddings: bool = False,
    scratch_dir: str | os.PathLike[str] | None = None,
    max_chunk_edges: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Logits of every node, float32 [N, C] on the CPU, and with ``keep_embeddings`` the node embeddings.

    The embeddings are the input of the last layer, float32 [N, H] on the CPU (the input features
    of a one-layer model), or None without ``keep_embeddings``.

    Args:
        model: a :class:`BlockGNN` or :class:`MLP` (put in eval mode by this function).
        gather: ``gather(ids) -> features`` [len(ids), D] for int64 CPU ids (the input layer).
        indptr, indices: the CSC graph.
        num_nodes: N.
        device: where the model runs.
        degree: float32 [N] full-graph in-degrees on ``device`` (GCN; None: computed from ``indptr``).
            The same for ``--gcn-degrees full`` and ``block`` (see the module docstring); the output
            does not depend on ``chunk_size``.
        chunk_size: destination nodes per step.
        max_chunk_edges: in-edges per step (default :data:`MAX_CHUNK_EDGES`): a chunk of ``chunk_size`` nodes with
            more edges is split (a node with more is a step of its own), which bounds a step's memory (its
            distinct sources' rows and its block) however the degrees are skewed: the hottest nodes of a
            reordered power-law graph come first, and 4096 of them can hold a fifth of the edges.
        progress: reports the stage ``inference: layer-wise`` (nodes done over all layers).
        scratch_dir: None keeps every layer's output [N, H] in RAM; a directory holds them in unlinked
            memory-mapped files there instead (:func:`~graphtier.dataset.scratch.scratch_array`: page cache,
            not anonymous memory; at most three [N, H] tables exist at once: a layer's input, its output and a GCN
            layer's scaled inputs or a narrowing layer's projected ones), so N x H may exceed RAM.
            The returned tensors are then views of such maps. The values are the same either way.
    """
    check_layerwise(model)
    model.eval()
    chunks = NodeChunks(chunk_bounds(indptr, num_nodes, chunk_size, max_chunk_edges))
    if isinstance(model, MLP):
        outputs, hidden = [], []
        with progress.stage("inference: layer-wise", total=num_nodes, unit="nodes") as bar:
            for chunk in chunks:
                x = gather(chunk).to(device).float()
                if keep_embeddings:
                    h = model.net[:-1](x)
                    hidden.append(h.cpu())
                    outputs.append(model.net[-1](h).cpu())
                else:
                    outputs.append(model(x).cpu())
                bar.advance(int(chunk.shape[0]))
        logits = torch.cat(outputs) if outputs else torch.empty(0)
        return logits, (torch.cat(hidden) if hidden else torch.empty(0)) if keep_embeddings else None
    assert isinstance(model, BlockGNN)
    if degree is None and model.kind == "gcn":
        degree = full_in_degree(indptr, device)
    one_hop = NeighborSampler(indptr, indices, [-1], seed=0)
    previous: torch.Tensor | None = None
    embeddings: torch.Tensor | None = None
    graph = np.asarray(indices)
    with progress.stage("inference: layer-wise", total=num_nodes * model.num_layers, unit="nodes") as bar:
        for layer in range(model.num_layers):
            if keep_embeddings and layer == model.num_layers - 1:
                embeddings = previous if previous is not None else _all_rows(gather, chunks, num_nodes, scratch_dir)
            if model.kind == "gcn" and model.use_csr and device.type == "cpu":
                assert degree is not None
                previous = _gcn_layer(model, layer, gather, previous, degree, indptr, graph, chunks, scratch_dir)
                bar.advance(num_nodes)
                continue
            if model.kind == "sage" and model.use_csr and device.type == "cpu":
                projects = _sage_projects_first(model, layer)
                if previous is not None or projects:
                    previous = _sage_layer(
                        model, layer, gather, previous, projects, indptr, graph, chunks, num_nodes, scratch_dir
                    )
                    bar.advance(num_nodes)
                    continue
            out: torch.Tensor | None = None
            for chunk in chunks:
                batch = one_hop.sample(chunk.numpy(), batch_id=0)
                block = batch.blocks[0].to(device)
                n_id = batch.n_id
                x = gather(n_id) if previous is None else previous[n_id]
                x = x.to(device).float()
                deg = degree[n_id.to(device)] if degree is not None else None
                h = model.layer(layer, x, block, deg)[: chunk.shape[0]].cpu()
                if out is None:
                    out = layer_output(num_nodes, h.shape[1], f"layer {layer + 1} outputs", scratch_dir)
                out[chunk] = h
                bar.advance(int(chunk.shape[0]))
            previous = out
    assert previous is not None
    return previous, embeddings


ROW_BLOCK = 1 << 16
"""Consecutive rows projected per step of a layer that projects before aggregating."""


def row_blocks(rows: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive runs of at most :data:`ROW_BLOCK` rows covering ``[0, rows)``, in order: the
    steps of a pass that reads a table in row order."""
    for start in range(0, rows, ROW_BLOCK):
        yield start, min(rows, start + ROW_BLOCK)


def reads_features_in_order(model: nn.Module, device: torch.device) -> bool:
    """Whether :func:`layerwise_outputs` of ``model`` on ``device`` reads the feature table in row order (an MLP; on
    the CPU a GCN, or a GraphSAGE whose first layer projects first) rather than a random row per edge."""
    if isinstance(model, MLP):
        return True
    if not isinstance(model, BlockGNN) or not model.use_csr or device.type != "cpu":
        return False
    return model.kind == "gcn" or (model.kind == "sage" and _sage_projects_first(model, 0))


def _sage_projects_first(model: BlockGNN, layer: int) -> bool:
    """Whether GraphSAGE layer ``layer`` is cheaper projected first: its output narrower than its input."""
    weight = model.convs[layer].lin_l.weight
    return int(weight.shape[0]) < int(weight.shape[1])


def _sage_layer(
    model: BlockGNN,
    layer: int,
    gather: Callable[[torch.Tensor], torch.Tensor],
    previous: torch.Tensor | None,
    projects: bool,
    indptr: np.ndarray,
    indices: np.ndarray,
    chunks: NodeChunks,
    num_nodes: int,
    scratch_dir: str | os.PathLike[str] | None,
) -> torch.Tensor:
    """GraphSAGE layer ``layer`` (mean) of every node on the CPU, float32 [N, d'], from its input rows.

    The layer's input is ``previous`` (float32 [N, d], the previous layer's output) or, for the first layer,
    which must then project, the feature table read through ``gather(ids)``. Each neighbour mean is read straight
    from a table by the neighbours' global ids (:func:`neighbour_rows`): no block is built. With ``projects`` (d' < d) the layer is linear before its
    activation, so ``lin_l(mean x) = mean(lin_l x)``: every node's input is first read in order, in blocks of
    :data:`ROW_BLOCK` rows, and projected (``p = x W_l^T``, and the root part ``x W_r^T + b`` into the output);
    the means are then taken over the narrower ``p``. On a feature table larger than RAM this reads the table
    once, sequentially, where the means would read a random row per edge; the floats differ by rounding only.
    """
    conv = model.convs[layer]
    weight_l, bias_l, weight_r = conv.lin_l.weight, conv.lin_l.bias, conv.lin_r.weight
    width = int(weight_l.shape[0])
    if projects:
        table = layer_output(num_nodes, width, f"layer {layer + 1} projected inputs", scratch_dir)
    out = layer_output(num_nodes, width, f"layer {layer + 1} outputs", scratch_dir)
    if projects:
        for start, stop in row_blocks(num_nodes):
            x = gather(torch.arange(start, stop)) if previous is None else previous[start:stop]
            x = x.float()
            torch.matmul(x, weight_l.t(), out=table[start:stop])
            out[start:stop] = _linear(x, weight_r, bias_l)
    else:
        assert previous is not None, "the first layer reads the feature table only to project it"
        table = previous
    for chunk in chunks:
        first, stop = int(chunk[0]), int(chunk[-1]) + 1
        agg = neighbour_aggregate(table, indptr, indices, first, stop, mean=True)
        if projects:
            h = out[first:stop] + agg
        else:
            h = _linear(agg, weight_l, bias_l).addmm_(table[first:stop], weight_r.t())
        out[first:stop] = model.finish_layer(layer, h)
    return out


def _gcn_layer(
    model: BlockGNN,
    layer: int,
    gather: Callable[[torch.Tensor], torch.Tensor],
    previous: torch.Tensor | None,
    degree: torch.Tensor,
    indptr: np.ndarray,
    indices: np.ndarray,
    chunks: NodeChunks,
    scratch_dir: str | os.PathLike[str] | None,
) -> torch.Tensor:
    """GCN layer ``layer`` of every node on the CPU, float32 [N, d'], without building blocks.

    With every neighbour, node i's output is ``s_i (sum_j s_j x_j + s_i x_i) W^T + b`` where ``s = (degree +
    1)^-1/2`` (``degree`` float32 [N] full-graph in-degrees; see :class:`~graphtier.train.nn.models.BlockGCNConv`).
    So every node's input (``previous`` [N, d], or for the first layer the feature table through
    ``gather(ids)``) is read once, in order, in blocks of :data:`ROW_BLOCK` rows, projected first when the
    layer narrows (d' < d: ``W`` commutes with the sum), and scaled by ``s``; the sums are then read straight
    from that table by the neighbours' global ids (:func:`neighbour_rows`). Equal to the block path up to
    float rounding.
    """
    conv = model.convs[layer].conv
    weight, bias = conv.lin.weight, conv.bias
    num_nodes = int(degree.shape[0])
    projects = int(weight.shape[0]) < int(weight.shape[1])
    scale = (degree.float().cpu() + 1.0).rsqrt().unsqueeze(1)
    width = int(weight.shape[0]) if projects else int(weight.shape[1])
    table = layer_output(num_nodes, width, f"layer {layer + 1} scaled inputs", scratch_dir)
    for start, stop in row_blocks(num_nodes):
        x = (gather(torch.arange(start, stop)) if previous is None else previous[start:stop]).float()
        table[start:stop] = (x @ weight.t() if projects else x) * scale[start:stop]
    out = layer_output(num_nodes, int(weight.shape[0]), f"layer {layer + 1} outputs", scratch_dir)
    for chunk in chunks:
        first, stop = int(chunk[0]), int(chunk[-1]) + 1
        summed = neighbour_aggregate(table, indptr, indices, first, stop, mean=False).add_(table[first:stop])
        summed.mul_(scale[first:stop])
        h = summed if projects else summed @ weight.t()
        if bias is not None:
            h = h + bias
        out[first:stop] = model.finish_layer(layer, h)
    return out


def neighbour_aggregate(
    table: torch.Tensor, indptr: np.ndarray, indices: np.ndarray, first: int, stop: int, *, mean: bool, base: int = 0
) -> torch.Tensor:
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


class NodeChunks:
    """The steps of layer-wise inference: ``len()`` of them, iterated as int64 CPU tensors of consecutive node ids
    (made one at a time, not held)."""

    def __init__(self, bounds: np.ndarray) -> None:
        self.bounds = bounds

    def __len__(self) -> int:
        return int(self.bounds.shape[0]) - 1

    def __iter__(self) -> Iterator[torch.Tensor]:
        for start, stop in zip(self.bounds[:-1].tolist(), self.bounds[1:].tolist()):
            yield torch.arange(start, stop)


def full_in_degree(indptr: np.ndarray, device: torch.device | str = "cpu") -> torch.Tensor:
    """float32 [N] in-degree of every node of the CSC graph ``indptr`` [N + 1], on ``device``."""
    return torch.from_numpy(np.diff(np.asarray(indptr)).astype(np.float32)).to(device)


def layer_output(num_nodes: int, width: int, name: str, scratch_dir: str | os.PathLike[str] | None) -> torch.Tensor:
    """float32 [num_nodes, width] for the rows ``name`` (e.g. ``layer 2 outputs``): in RAM, or a memory map in
    ``scratch_dir``."""
    if scratch_dir is None:
        return torch.empty((num_nodes, width), dtype=torch.float32)
    what = f"{name} [{num_nodes:,}, {width}] float32 of layer-wise inference"
    return torch.from_numpy(scratch_array(scratch_dir, (num_nodes, width), np.float32, what))


def _all_rows(
    gather: Callable[[torch.Tensor], torch.Tensor],
    chunks: NodeChunks,
    num_nodes: int,
    scratch_dir: str | os.PathLike[str] | None,
) -> torch.Tensor:
    """The input features of every node, float32 [N, D] on the CPU (a one-layer model's embeddings): in RAM,
    or a memory map in ``scratch_dir``, filled chunk by chunk."""
    out: torch.Tensor | None = None
    for chunk in chunks:
        rows = gather(chunk).cpu().float()
        if out is None:
            out = layer_output(num_nodes, rows.shape[1], "input features", scratch_dir)
        out[chunk] = rows
    return out if out is not None else torch.empty(0)
