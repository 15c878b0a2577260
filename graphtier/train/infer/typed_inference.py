"""Exact layer-wise full-neighbour inference of a typed model (the typed twin of :mod:`graphtier.train.infer.inference`).

Every layer is computed for all nodes of the types it outputs (:attr:`TypedLayer.out_types`), from the previous
layer's output tables over ALL in-neighbours of every relation; the last layer computes the target type only. The
result is the model's exact output on the whole graph (no sampling), with one pass over each relation's edges per
layer. On the CPU, R-GCN, HeteroSAGE and R-GAT build no blocks: :mod:`graphtier.train.infer.typed_tables` computes
them relation by relation from tables read in order (a feature table larger than RAM is read sequentially). On CUDA
they take one chunk of destinations of one type at a time with all their in-neighbours (:func:`full_neighbour_block`),
reading one input row per edge.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from torch import Tensor, nn

from graphtier._progress import NO_PROGRESS, Progress, Stage
from graphtier.dataset.schema import Schema
from graphtier.sampling.batch import Block
from graphtier.sampling.typed_batch import TypedBlock
from graphtier.train.infer.inference import chunk_bounds, layer_output
from graphtier.train.infer.typed_tables import TypedGather, reads_by_tables, table_outputs
from graphtier.train.nn.typed_models import TypedGNN, TypedMLP


def _edge_positions(indptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """int64 [E]: the positions in ``indices`` of the in-edges of CSC ``rows``, row by row."""
    starts = indptr[rows].astype(np.int64)
    counts = indptr[rows + 1].astype(np.int64) - starts
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    bases = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return bases + np.arange(total, dtype=np.int64)


def full_neighbour_block(
    indptr: np.ndarray, indices: np.ndarray, schema: Schema, dst_type: str, dst_ids: np.ndarray
) -> tuple[dict[str, Tensor], TypedBlock]:
    """One layer's block with destinations ``dst_ids`` (distinct local ids of ``dst_type``) and ALL their in-neighbours.

    ``indptr`` / ``indices``: the dataset's typed CSC (see :mod:`graphtier.dataset.schema`). Returns ``n_id``
    (int64 local ids per type, the destinations first in ``n_id[dst_type]``) and the :class:`TypedBlock` (CPU).
    Other types have no destination.
    """
    offsets = dict(zip(schema.type_names, schema.offsets()[:-1].tolist()))
    dst_ids = np.asarray(dst_ids, dtype=np.int64)
    found: dict[str, list[np.ndarray]] = {t: [] for t in schema.type_names}
    found[dst_type].append(dst_ids)
    sampled: list[tuple[tuple[str, str, str], str, np.ndarray, np.ndarray]] = []
    for rel in schema.relations:
        if rel.dst != dst_type:
            continue
        rows = rel.row_offset + dst_ids
        sources = indices[_edge_positions(indptr, rows)].astype(np.int64) - offsets[rel.src]
        rowptr = np.zeros(dst_ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(indptr[rows + 1].astype(np.int64) - indptr[rows].astype(np.int64), out=rowptr[1:])
        found[rel.src].append(sources)
        sampled.append((rel.type, rel.src, rowptr, sources))
    n_id: dict[str, Tensor] = {}
    rank_of: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for t, parts in found.items():
        combined = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        unique, inverse = np.unique(combined, return_inverse=True)
        first = np.full(unique.shape[0], combined.shape[0], dtype=np.int64)
        np.minimum.at(first, inverse, np.arange(combined.shape[0], dtype=np.int64))
        order = np.argsort(first, kind="stable")  # first-seen order: the destinations stay a prefix
        rank = np.empty_like(order)
        rank[order] = np.arange(order.shape[0], dtype=np.int64)
        n_id[t] = torch.from_numpy(unique[order])
        rank_of[t] = (unique, rank)
    num_src = {t: int(ids.shape[0]) for t, ids in n_id.items()}
    relations = {}
    for key, src, rowptr, sources in sampled:
        unique, rank = rank_of[src]
        col = rank[np.searchsorted(unique, sources)]
        relations[key] = Block(torch.from_numpy(rowptr), torch.from_numpy(col), num_src[src])
    num_dst = {t: (int(dst_ids.shape[0]) if t == dst_type else 0) for t in schema.type_names}
    return n_id, TypedBlock(num_src, num_dst, relations)


@torch.no_grad()
def typed_layerwise_outputs(
    model: nn.Module,
    gather: TypedGather,
    indptr: np.ndarray,
    indices: np.ndarray,
    schema: Schema,
    *,
    device: torch.device | str = "cpu",
    chunk_size: int = 4096,
    progress: Progress = NO_PROGRESS,
    keep_embeddings: bool = False,
    scratch_dir: str | os.PathLike[str] | None = None,
) -> tuple[Tensor, Tensor | None]:
    """Logits of every node of the target type, float32 [count(target), C] on the CPU, and with
    ``keep_embeddings`` the target's input of the last layer, float32 [count(target), H] on the CPU (else None).

    Args:
        model: a :class:`TypedGNN` or :class:`TypedMLP` (put in eval mode here), on ``device``.
        gather: the input features of a featured type's nodes (:data:`TypedGather`); featureless types use the
            model's own inputs.
        indptr, indices, schema: the dataset's typed CSC and schema.
        chunk_size: destination nodes per step, and at most :data:`~graphtier.train.infer.inference.MAX_CHUNK_EDGES`
            in-edges over all relations into them (a node with more alone); the output does not depend on it.
        progress: reports the stage ``inference: layer-wise`` (nodes done over all layers and types).
        scratch_dir: None keeps every layer's output table of every type in RAM; a directory holds them in unlinked
            memory-mapped files there (as :func:`~graphtier.train.infer.inference.layerwise_outputs`), so the returned
            tables are memory maps.
    """
    model.eval()
    target = schema.target
    count = schema.node_type(target).count
    if isinstance(model, TypedMLP):
        return _mlp_outputs(model, gather, target, count, device, chunk_size, progress, keep_embeddings)
    if not isinstance(model, TypedGNN):
        raise TypeError(f"typed_layerwise_outputs: expected a TypedGNN or TypedMLP, found {type(model).__name__}")
    tables, embeddings = _staged_outputs(
        model, gather, indptr, indices, schema, device, chunk_size, progress, keep_embeddings, scratch_dir
    )
    return tables[target], embeddings


@torch.no_grad()
def typed_output_tables(
    model: TypedGNN,
    gather: TypedGather,
    indptr: np.ndarray,
    indices: np.ndarray,
    schema: Schema,
    *,
    device: torch.device | str = "cpu",
    chunk_size: int = 4096,
    progress: Progress = NO_PROGRESS,
    scratch_dir: str | os.PathLike[str] | None = None,
) -> dict[str, Tensor]:
    """The last layer's output of every node of each type the model returns (a link encoder's ``outputs``: the
    endpoint types of its relation; else the target): ``{type: float32 [count(type), width]}`` on the CPU. The
    arguments are those of :func:`typed_layerwise_outputs`."""
    model.eval()
    tables, _ = _staged_outputs(
        model, gather, indptr, indices, schema, device, chunk_size, progress, False, scratch_dir
    )
    return {t: tables[t] for t in (model.outputs or (schema.target,))}


def _staged_outputs(
    model: TypedGNN, gather: TypedGather, indptr: np.ndarray, indices: np.ndarray, schema: Schema,
    device: torch.device | str, chunk_size: int, progress: Progress, keep_embeddings: bool,
    scratch_dir: str | os.PathLike[str] | None,
) -> tuple[dict[str, Tensor], Tensor | None]:  # fmt: skip
    """:func:`_gnn_outputs` inside the stage ``inference: layer-wise``, counted in the in-edges of every layer and
    type it outputs (the work of a chunk: the hubs of a reordered graph come first, so nodes would mislead the ETA)."""
    total = sum(int(type_in_edges_indptr(indptr, schema, t)[-1]) for layer in model.layers for t in layer.out_types)
    with progress.stage("inference: layer-wise", total=total, unit="edges") as bar:
        if reads_by_tables(model, device):
            return table_outputs(
                model, gather, indptr, indices, schema, chunk_size, bar, keep_embeddings, scratch_dir
            )  # fmt: skip
        return _gnn_outputs(
            model, gather, indptr, indices, schema, device, chunk_size, bar, keep_embeddings, scratch_dir
        )


def _gnn_outputs(
    model: TypedGNN, gather: TypedGather, indptr: np.ndarray, indices: np.ndarray, schema: Schema,
    device: torch.device | str, chunk_size: int, bar: Stage, keep_embeddings: bool,
    scratch_dir: str | os.PathLike[str] | None = None,
) -> tuple[dict[str, Tensor], Tensor | None]:  # fmt: skip
    """The last layer's output tables of a :class:`TypedGNN` (each type it outputs) and the target's embeddings of
    :func:`typed_layerwise_outputs`, advancing ``bar`` by each chunk's nodes."""
    target = schema.target
    count = schema.node_type(target).count
    dtype = next(model.parameters()).dtype
    previous: dict[str, Tensor] | None = None
    embeddings: Tensor | None = None
    for layer in range(model.num_layers):
        if keep_embeddings and layer == model.num_layers - 1:
            embeddings = previous[target] if previous is not None else _target_inputs(model, gather, count, chunk_size)
        out: dict[str, Tensor] = {}
        for t in model.layers[layer].out_types:
            rows = schema.node_type(t).count
            table: Tensor | None = None
            in_edges = type_in_edges_indptr(indptr, schema, t)
            bounds = chunk_bounds(in_edges, rows, chunk_size)
            for start, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
                chunk = np.arange(start, stop, dtype=np.int64)
                n_id, block = full_neighbour_block(indptr, indices, schema, t, chunk)
                if previous is None:
                    features = {s: gather(s, n_id[s]).to(device) for s in model.inputs.featured}
                    ids_on_device = {s: ids.to(device) for s, ids in n_id.items()}
                    x = model.inputs(features, ids_on_device, block.num_src, dtype)
                else:
                    x = {s: previous[s][ids].to(device, dtype) for s, ids in n_id.items() if s in previous}
                h = model.layer(layer, x, block.to(device))[t].float().cpu()
                if table is None:
                    table = layer_output(rows, h.shape[1], f"layer {layer + 1} outputs of {t}", scratch_dir)
                table[start : start + chunk.shape[0]] = h
                bar.advance(int(in_edges[stop] - in_edges[start]))
            out[t] = table if table is not None else torch.empty((0, model.layers[layer].out_dim))
        previous = out
    assert previous is not None
    return previous, embeddings


def type_in_edges_indptr(indptr: np.ndarray, schema: Schema, node_type: str) -> np.ndarray:
    """int64 [count(node_type) + 1]: a CSC pointer array of each node's in-edges summed over every relation into
    ``node_type`` (the chunk bound of layer-wise inference)."""
    kind = schema.node_type(node_type)
    out = np.zeros(kind.count + 1, dtype=np.int64)
    np.cumsum(schema.in_degrees(indptr)[kind.offset : kind.stop], out=out[1:])
    return out


def _target_inputs(model: TypedGNN, gather: TypedGather, count: int, chunk_size: int) -> Tensor:
    """The target type's first-layer input of every node, float32 [count, d] on the CPU (a one-layer model)."""
    target = model.target
    param = next(model.parameters())
    parts = []
    for start in range(0, count, chunk_size):
        ids = torch.arange(start, min(count, start + chunk_size))
        features = {target: gather(target, ids).to(param.device)} if target in model.inputs.featured else {}
        x = model.inputs(features, {target: ids.to(param.device)}, {target: int(ids.shape[0])}, param.dtype, [target])
        parts.append(x[target].float().cpu())
    return torch.cat(parts) if parts else torch.empty(0)


def _mlp_outputs(
    model: TypedMLP,
    gather: TypedGather,
    target: str,
    count: int,
    device: torch.device | str,
    chunk_size: int,
    progress: Progress,
    keep_embeddings: bool,
) -> tuple[Tensor, Tensor | None]:
    logits, hidden = [], []
    with progress.stage("inference: layer-wise", total=count, unit="nodes") as bar:
        for start in range(0, count, chunk_size):
            x = {target: gather(target, torch.arange(start, min(count, start + chunk_size))).to(device)}
            if keep_embeddings:
                h = model.mlp.net[:-1](x[target].to(model.mlp.net[0].weight.dtype))
                hidden.append(h.float().cpu())
                logits.append(model.mlp.net[-1](h).float().cpu())
            else:
                logits.append(model(x).float().cpu())
            bar.advance(min(count, start + chunk_size) - start)
    out = torch.cat(logits) if logits else torch.empty(0)
    return out, (torch.cat(hidden) if hidden else torch.empty(0)) if keep_embeddings else None
