"""Exact layer-wise full-neighbour inference of a homogeneous model: its :class:`~graphtier.train.infer.layerwise.
LayerwiseModel` on the one driver :func:`~graphtier.train.infer.layerwise.layer_tables`, the graph's one type.

Instead of sampling an L-hop tree per node, every layer is computed for all nodes from the previous
layer's output over all in-neighbours, one chunk of destination nodes at a time. The result is the
model's exact output on the full graph, at the cost of one pass over the edges per layer.

GCN: both ``--gcn-degrees`` choices normalise by every node's full-graph in-degree here. With
``full`` that is the definition; with ``block`` (a block normalised by its own in-degrees) it is what
the block of a layer-wise pass is: the whole graph, every node a destination with all its neighbours,
so every node's block in-degree is its full in-degree. Per-chunk blocks would instead give the
sources outside a chunk in-degree 0 and make the output depend on the chunk size; they are never
used for the degrees.

On the CPU, GraphSAGE and GCN layers build no blocks (:meth:`BlockGNNLayers.table_layer`): each reads its
neighbours' rows straight from a table by global id (the previous layer's output; GCN first scales every row by its
normalisation), and a layer whose output is narrower than its input projects first, so a feature table larger than
RAM is read once, in order, instead of a random row per edge. GAT, and every model on CUDA, take one-hop blocks per
step.

A model with edge inputs (GAT or GINE built with edge features or a time encoding) is refused
(:func:`check_layerwise`): the one-hop blocks here carry no edge inputs, and a time encoding needs a time per
query, which a full-graph pass has not. Such models are evaluated by sampling.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import Tensor, nn

from graphtier._progress import NO_PROGRESS, Progress, Stage
from graphtier.dataset.schema import HOMOGENEOUS_RELATION, HOMOGENEOUS_TYPE, Schema
from graphtier.errors import OptionError
from graphtier.sampling.batch import Block
from graphtier.sampling.typed_batch import TypedBlock
from graphtier.train.infer.layerwise import (
    chunk_bounds,
    layer_output,
    layer_tables,
    neighbour_aggregate,
    row_blocks,
    row_outputs,
    total_in_edges,
)
from graphtier.train.nn.models import MLP, BlockGNN, _linear

RELATION = (HOMOGENEOUS_TYPE, HOMOGENEOUS_RELATION, HOMOGENEOUS_TYPE)
"""The one relation of a homogeneous graph's schema."""


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
        max_chunk_edges: in-edges per step (default :data:`~graphtier.train.infer.layerwise.MAX_CHUNK_EDGES`): a
            chunk of ``chunk_size`` nodes with more edges is split (a node with more is a step of its own), which
            bounds a step's memory (its distinct sources' rows and its block) however the degrees are skewed: the
            hottest nodes of a reordered power-law graph come first, and 4096 of them can hold a fifth of the edges.
        progress: reports the stage ``inference: layer-wise`` (in-edges read over all layers; an MLP: nodes).
        scratch_dir: None keeps every layer's output [N, H] in RAM; a directory holds them in unlinked
            memory-mapped files there instead (:func:`~graphtier.dataset.scratch.scratch_array`: page cache,
            not anonymous memory; at most three [N, H] tables exist at once: a layer's input, its output and a GCN
            layer's scaled inputs or a narrowing layer's projected ones), so N x H may exceed RAM.
            The returned tensors are then views of such maps. The values are the same either way.
    """
    check_layerwise(model)
    model.eval()
    if isinstance(model, MLP):

        def rows(ids: Tensor) -> tuple[Tensor, Tensor | None]:
            x = gather(ids).to(device).float()
            if not keep_embeddings:
                return model(x).cpu(), None
            h = model.net[:-1](x)
            return model.net[-1](h).cpu(), h.cpu()

        with progress.stage("inference: layer-wise", total=num_nodes, unit="nodes") as bar:
            return row_outputs(rows, num_nodes, chunk_size, bar, keep_embeddings)
    assert isinstance(model, BlockGNN)
    if degree is None and model.kind == "gcn":
        degree = full_in_degree(indptr, device)
    layers = BlockGNNLayers(
        model, gather, indptr, indices, num_nodes, device, degree, chunk_size, scratch_dir, max_chunk_edges
    )  # fmt: skip
    schema = Schema.homogeneous(num_nodes, int(np.asarray(indices).shape[0]))
    with progress.stage("inference: layer-wise", total=total_in_edges(layers, schema, indptr), unit="edges") as bar:
        tables, embeddings = layer_tables(
            layers, schema, indptr, indices, device=device, chunk_size=chunk_size, bar=bar,
            keep_embeddings=keep_embeddings, scratch_dir=scratch_dir, max_chunk_edges=max_chunk_edges,
        )  # fmt: skip
    return tables[HOMOGENEOUS_TYPE], embeddings


class BlockGNNLayers:
    """A :class:`~graphtier.train.nn.models.BlockGNN` as the driver's
    :class:`~graphtier.train.infer.layerwise.LayerwiseModel`: one type, one relation; on the CPU the GraphSAGE and GCN
    layers from whole tables (:func:`_sage_layer`, :func:`_gcn_layer`), chosen once per layer."""

    target = HOMOGENEOUS_TYPE
    dtype = torch.float32

    def __init__(
        self,
        model: BlockGNN,
        gather: Callable[[Tensor], Tensor],
        indptr: np.ndarray,
        indices: np.ndarray,
        num_nodes: int,
        device: torch.device,
        degree: Tensor | None,
        chunk_size: int,
        scratch_dir: str | os.PathLike[str] | None,
        max_chunk_edges: int | None,
    ) -> None:
        self.model, self.gather, self.degree = model, gather, degree
        self.indptr, self.indices, self.num_nodes = indptr, np.asarray(indices), num_nodes
        self.scratch_dir = scratch_dir
        self.num_layers = model.num_layers
        self.tables = model.use_csr and device.type == "cpu" and model.kind in ("sage", "gcn")
        # the table layers' aggregation steps, the same for every layer
        self.bounds = chunk_bounds(indptr, num_nodes, chunk_size, max_chunk_edges) if self.tables else None

    def out_types(self, layer: int) -> Sequence[str]:
        return (HOMOGENEOUS_TYPE,)

    def read_inputs(self, node_type: str, start: int, stop: int) -> Tensor:
        return self.gather(torch.arange(start, stop)).cpu().float()

    def block_inputs(self, n_id: dict[str, Tensor], block: TypedBlock, device: torch.device) -> dict[str, Tensor]:
        return {HOMOGENEOUS_TYPE: self.gather(n_id[HOMOGENEOUS_TYPE]).to(device).float()}

    def step(self, layer: int, x: dict[str, Tensor], block: TypedBlock, n_id: dict[str, Tensor]) -> dict[str, Tensor]:
        num_dst = block.num_dst[HOMOGENEOUS_TYPE]
        rel = block.relations.get(RELATION)
        if rel is None:  # no destination of the chunk has an in-edge
            rowptr = torch.zeros(num_dst + 1, dtype=torch.int64, device=x[HOMOGENEOUS_TYPE].device)
            rel = Block(rowptr, rowptr[:0], block.num_src[HOMOGENEOUS_TYPE])
        ids = n_id[HOMOGENEOUS_TYPE]
        deg = self.degree[ids.to(self.degree.device)] if self.degree is not None else None
        return {HOMOGENEOUS_TYPE: self.model.layer(layer, x[HOMOGENEOUS_TYPE], rel, deg)}

    def table_layer(self, layer: int, previous: dict[str, Tensor] | None, bar: Stage) -> dict[str, Tensor] | None:
        if not self.tables:
            return None
        before = None if previous is None else previous[HOMOGENEOUS_TYPE]
        bounds = self.bounds
        assert bounds is not None
        if self.model.kind == "gcn":
            assert self.degree is not None
            out = _gcn_layer(
                self.model, layer, self.gather, before, self.degree, self.indptr, self.indices, bounds, self.scratch_dir
            )  # fmt: skip
        else:
            projects = _sage_projects_first(self.model, layer)
            if before is None and not projects:
                return None  # the first layer reads a random feature row per edge: the block path
            out = _sage_layer(
                self.model, layer, self.gather, before, projects, self.indptr, self.indices, bounds, self.num_nodes,
                self.scratch_dir,
            )  # fmt: skip
        bar.advance(int(np.asarray(self.indptr)[-1]))
        return {HOMOGENEOUS_TYPE: out}


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
    bounds: np.ndarray,
    num_nodes: int,
    scratch_dir: str | os.PathLike[str] | None,
) -> torch.Tensor:
    """GraphSAGE layer ``layer`` (mean) of every node on the CPU, float32 [N, d'], from its input rows.

    The layer's input is ``previous`` (float32 [N, d], the previous layer's output) or, for the first layer,
    which must then project, the feature table read through ``gather(ids)``. Each neighbour mean is read straight
    from a table by the neighbours' global ids (:func:`neighbour_rows`): no block is built. With ``projects``
    (d' < d) the layer is linear before its activation, so ``lin_l(mean x) = mean(lin_l x)``: every node's input is
    first read in order, in blocks of :data:`ROW_BLOCK` rows, and projected (``p = x W_l^T``, and the root part
    ``x W_r^T + b`` into the output); the means are then taken over the narrower ``p``. On a feature table larger
    than RAM this reads the table once, sequentially, where the means would read a random row per edge; the floats
    differ by rounding only.
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
    for first, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
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
    bounds: np.ndarray,
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
    for first, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        summed = neighbour_aggregate(table, indptr, indices, first, stop, mean=False).add_(table[first:stop])
        summed.mul_(scale[first:stop])
        h = summed if projects else summed @ weight.t()
        if bias is not None:
            h = h + bias
        out[first:stop] = model.finish_layer(layer, h)
    return out


def full_in_degree(indptr: np.ndarray, device: torch.device | str = "cpu") -> torch.Tensor:
    """float32 [N] in-degree of every node of the CSC graph ``indptr`` [N + 1], on ``device``."""
    return torch.from_numpy(np.diff(np.asarray(indptr)).astype(np.float32)).to(device)
