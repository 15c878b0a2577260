"""Exact layer-wise inference of a typed R-GCN, HeteroSAGE or R-GAT on the CPU, relation by relation, without blocks.

The typed twin of the homogeneous table layers (:class:`~graphtier.train.infer.inference.BlockGNNLayers` on the CPU).
Before its activation, every layer of these models is a sum of linear maps of the destination's own input, of one
neighbour mean per relation (R-GCN, HeteroSAGE) or of one GAT per relation (R-GAT), each read from whole tables
(:class:`~graphtier.train.nn.typed_layers.LayerTerms`); a linear map commutes with a mean, ``W_r mean(x_u) =
mean(W_r x_u)``, and GAT projects its sources before it attends. So each output type's table is built in passes,
each reading one table in row order or one table at random that is at most the layer's width:

1. the root terms: the type's own input read in order, in blocks of :data:`~graphtier.train.infer.layerwise.ROW_BLOCK` rows (with each attention
   relation's destination scores);
2. per relation into the type: the source type's input read in order and, where the relation's weight narrows it
   (``out < in``), projected into a ``[count(source), out]`` table; the per-destination means are then read straight
   from that table by source id (:func:`~graphtier.train.infer.layerwise.neighbour_aggregate`) and added. An
   attention relation always projects (``[count(source), heads * channels + heads]``: the heads and the source
   scores) and adds each destination's attention-weighted sum (:func:`~graphtier.train.infer._attention_kernels.
   attention_rows`);
3. the layer's normalisation and activation, in order.

A feature table larger than RAM is thus read sequentially, once per relation that reads it, instead of one random
row per edge (the driver's block path, :func:`~graphtier.train.infer.layerwise.layer_tables`), and each random pass reads a
projected table that the page cache can hold. The floats equal the block path's up to rounding.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import torch
from torch import Tensor, nn

from graphtier._progress import Stage
from graphtier.dataset.schema import Schema
from graphtier.train.infer._attention_kernels import attention_rows
from graphtier.train.infer.layerwise import RowReader, chunk_bounds, layer_output, neighbour_aggregate, row_blocks
from graphtier.train.nn.typed_layers import AttentionTerm, LinearTerm
from graphtier.train.nn.typed_models import TypedGNN

TypedGather = Callable[[str, Tensor], Tensor]
"""``gather(node_type, local_ids int64 CPU) -> features [len(ids), dim]`` of a featured type."""


def reads_by_tables(model: nn.Module, device: torch.device | str) -> bool:
    """Whether :func:`type_output` computes ``model``'s layers on ``device``: a :class:`TypedGNN` without edge inputs
    (R-GCN, HeteroSAGE, R-GAT), on the CPU."""
    if not isinstance(model, TypedGNN) or model.edge_input_dim or torch.device(device).type != "cpu":
        return False
    return all(layer.terms(t) is not None for layer in model.layers for t in layer.out_types)


def input_reader(model: TypedGNN, gather: TypedGather, dtype: torch.dtype) -> RowReader:
    """The first layer's input rows of a type: its features, learnable table rows or zeros (``model.inputs``)."""

    def read(t: str, start: int, stop: int) -> Tensor:
        ids = torch.arange(start, stop)
        features = {t: gather(t, ids)} if t in model.inputs.featured else {}
        return model.inputs(features, {t: ids}, {t: stop - start}, dtype, [t])[t].float()

    return read


def _apply(term: LinearTerm, x: Tensor) -> Tensor:
    """``x W^T + b`` of ``term`` in float32 (a copy of ``x`` for the identity)."""
    h = x.clone() if term.weight is None else x @ term.weight.detach().float().t()
    if term.bias is not None:
        h += term.bias.detach().float()
    return h


def _table(
    read: RowReader,
    t: str,
    rows: int,
    width: int,
    weight: Tensor | None,
    name: str,
    scratch_dir: str | os.PathLike[str] | None,
) -> Tensor:
    """float32 [rows, width or weight's out]: type ``t``'s input rows read in order, projected by ``weight`` [out,
    width] when given."""
    out_width = width if weight is None else int(weight.shape[0])
    table = layer_output(rows, out_width, name, scratch_dir)
    for start, stop in row_blocks(rows):
        x = read(t, start, stop)
        table[start:stop] = x if weight is None else x @ weight.detach().float().t()
    return table


def _head_scores(h: Tensor, att: Tensor, heads: int) -> Tensor:
    """float32 [n, heads]: each head's attention score ``<h_head, att_head>`` of the rows ``h`` [n, heads * C]."""
    return (h.view(h.shape[0], heads, -1) * att.detach().float().view(1, heads, -1)).sum(dim=-1)


def _attention_table(
    read: RowReader, t: str, rows: int, att: AttentionTerm, name: str, scratch_dir: str | os.PathLike[str] | None
) -> Tensor:
    """float32 [rows, heads * channels + heads]: type ``t``'s input rows read in order, projected by ``att.src``, and
    each row's source scores (the table :func:`~graphtier.train.infer._attention_kernels.attention_rows` reads)."""
    width = att.heads * att.channels
    table = layer_output(rows, width + att.heads, name, scratch_dir)
    for start, stop in row_blocks(rows):
        h = _apply(att.src, read(t, start, stop))
        table[start:stop, :width] = h
        table[start:stop, width:] = _head_scores(h, att.att_src, att.heads)
    return table


def _chunks(
    indptr: np.ndarray, row_offset: int, rows: int, chunk_size: int, bar: Stage
) -> Iterator[tuple[np.ndarray, int, int]]:
    """The aggregation steps of one relation (rows ``[row_offset, row_offset + rows)`` of the typed CSC): ``(its
    indptr [rows + 1], first, stop)`` destinations of at most ``chunk_size`` nodes and
    :data:`~graphtier.train.infer.layerwise.MAX_CHUNK_EDGES` in-edges; ``bar`` advanced by each step's in-edges."""
    rel_indptr = np.asarray(indptr[row_offset : row_offset + rows + 1])
    bounds = chunk_bounds(rel_indptr, rows, chunk_size)
    for first, stop in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        yield rel_indptr, first, stop
        bar.advance(int(rel_indptr[stop] - rel_indptr[first]))


def type_output(
    model: TypedGNN,
    layer: int,
    t: str,
    read: RowReader,
    previous: Mapping[str, Tensor] | None,
    indptr: np.ndarray,
    indices: np.ndarray,
    schema: Schema,
    chunk_size: int,
    bar: Stage,
    scratch_dir: str | os.PathLike[str] | None,
) -> Tensor:
    """Layer ``layer``'s output of every node of type ``t``, float32 [count(t), out] (see the module)."""
    module = model.layers[layer]
    terms = module.terms(t)
    assert terms is not None, "reads_by_tables decides which models come here"
    rows = schema.node_type(t).count
    name = f"layer {layer + 1}"
    out = layer_output(rows, module.out_dim, f"{name} outputs of {t}", scratch_dir)
    scores = {i: layer_output(rows, att.heads, f"{name} attention scores of {t}", scratch_dir)
              for i, att in terms.attention}  # fmt: skip
    for start, stop in row_blocks(rows):
        h = torch.zeros((stop - start, module.out_dim), dtype=torch.float32)
        x = read(t, start, stop) if terms.root or terms.attention else None
        for term in terms.root:
            h += _apply(term, x)
        out[start:stop] = h
        for index, att in terms.attention:
            scores[index][start:stop] = _head_scores(_apply(att.dst, x), att.att_dst, att.heads)
    for index, term in terms.means:
        rel = schema.relations[index]
        projects = term.weight is not None and int(term.weight.shape[0]) < int(term.weight.shape[1])
        if previous is not None and not projects:
            table = previous[rel.src]
        else:
            table = _table(
                read, rel.src, schema.node_type(rel.src).count, module.in_dims[rel.src],
                term.weight if projects else None, f"{name} inputs of {rel}", scratch_dir,
            )  # fmt: skip
        linear = LinearTerm(None if projects else term.weight, term.bias)
        base = int(schema.node_type(rel.src).offset)
        for rel_indptr, first, stop in _chunks(indptr, rel.row_offset, rows, chunk_size, bar):
            mean = neighbour_aggregate(table, rel_indptr, indices, first, stop, mean=True, base=base)
            out[first:stop] += _apply(linear, mean)
        del table
    for index, att in terms.attention:
        rel = schema.relations[index]
        table = _attention_table(read, rel.src, schema.node_type(rel.src).count, att, f"{name} heads of {rel}",
                                 scratch_dir)  # fmt: skip
        base = int(schema.node_type(rel.src).offset)
        for rel_indptr, first, stop in _chunks(indptr, rel.row_offset, rows, chunk_size, bar):
            summed = torch.empty((stop - first, att.heads * att.channels), dtype=torch.float32)
            dst_scores = np.ascontiguousarray(scores[index][first:stop].numpy())
            bad = attention_rows(table.numpy(), rel_indptr, indices, first, stop, dst_scores, att.heads, base,
                                 summed.numpy())  # fmt: skip
            if bad:
                raise IndexError(f"{rel}: {bad} in-edges of nodes [{first}, {stop}) from ids outside its source type")
            out[first:stop] += summed if att.concat else summed.view(-1, att.heads, att.channels).mean(dim=1)
        del table
    if layer < model.num_layers - 1:
        dtype = next(model.parameters()).dtype
        for start, stop in row_blocks(rows):
            out[start:stop] = model.finish_layer(layer, t, out[start:stop].to(dtype)).float()
    return out
