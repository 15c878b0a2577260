"""Exact layer-wise full-neighbour inference of a typed model: its :class:`~graphtier.train.infer.layerwise.
LayerwiseModel` on the one driver :func:`~graphtier.train.infer.layerwise.layer_tables`.

Every layer is computed for all nodes of the types it outputs (:attr:`TypedLayer.out_types`), from the previous
layer's output tables over ALL in-neighbours of every relation; the last layer computes the target type only (a link
encoder: its relation's endpoint types). The result is the model's exact output on the whole graph (no sampling),
with one pass over each relation's edges per layer. On the CPU, R-GCN, HeteroSAGE and R-GAT build no blocks:
:mod:`graphtier.train.infer.typed_tables` computes them relation by relation from tables read in order (a feature
table larger than RAM is read sequentially). On CUDA they take one chunk of destinations of one type at a time with
all their in-neighbours (:class:`~graphtier.train.infer.layerwise.FullNeighbourhood`), reading one input row per edge.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from graphtier._progress import NO_PROGRESS, Progress, Stage
from graphtier.dataset.schema import Schema
from graphtier.sampling.typed_batch import TypedBlock
from graphtier.train.infer.layerwise import layer_tables, row_outputs, total_in_edges
from graphtier.train.infer.typed_tables import TypedGather, input_reader, reads_by_tables, type_output
from graphtier.train.nn.typed_models import TypedGNN, TypedMLP


class TypedLayers:
    """A :class:`~graphtier.train.nn.typed_models.TypedGNN` as the driver's
    :class:`~graphtier.train.infer.layerwise.LayerwiseModel`; on the CPU every layer from whole tables
    (:func:`~graphtier.train.infer.typed_tables.type_output`), chosen once."""

    def __init__(
        self,
        model: TypedGNN,
        gather: TypedGather,
        indptr: np.ndarray,
        indices: np.ndarray,
        schema: Schema,
        device: torch.device,
        chunk_size: int,
        scratch_dir: str | os.PathLike[str] | None,
    ) -> None:
        self.model, self.gather, self.schema = model, gather, schema
        self.indptr, self.indices = indptr, indices
        self.chunk_size, self.scratch_dir = chunk_size, scratch_dir
        self.num_layers, self.target = model.num_layers, schema.target
        self.dtype = next(model.parameters()).dtype
        self.tables = reads_by_tables(model, device)
        self.read_inputs = input_reader(model, gather, self.dtype)

    def out_types(self, layer: int) -> Sequence[str]:
        return self.model.layers[layer].out_types

    def block_inputs(self, n_id: dict[str, Tensor], block: TypedBlock, device: torch.device) -> dict[str, Tensor]:
        features = {s: self.gather(s, n_id[s]).to(device) for s in self.model.inputs.featured}
        ids_on_device = {s: ids.to(device) for s, ids in n_id.items()}
        return self.model.inputs(features, ids_on_device, block.num_src, self.dtype)

    def step(self, layer: int, x: dict[str, Tensor], block: TypedBlock, n_id: dict[str, Tensor]) -> dict[str, Tensor]:
        return self.model.layer(layer, x, block)

    def table_layer(self, layer: int, previous: dict[str, Tensor] | None, bar: Stage) -> dict[str, Tensor] | None:
        if not self.tables:
            return None
        read = self.read_inputs if previous is None else (lambda t, start, stop: previous[t][start:stop])
        return {
            t: type_output(self.model, layer, t, read, previous, self.indptr, self.indices, self.schema,
                           self.chunk_size, bar, self.scratch_dir)
            for t in self.out_types(layer)
        }  # fmt: skip


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
        chunk_size: destination nodes per step, and at most
            :data:`~graphtier.train.infer.layerwise.MAX_CHUNK_EDGES` in-edges over all relations into them (a node
            with more alone); the output does not depend on it.
        progress: reports the stage ``inference: layer-wise`` (in-edges read over all layers and types; an MLP:
            nodes).
        scratch_dir: None keeps every layer's output table of every type in RAM; a directory holds them in unlinked
            memory-mapped files there (as :func:`~graphtier.train.infer.inference.layerwise_outputs`), so the returned
            tables are memory maps.
    """
    model.eval()
    target = schema.target
    if isinstance(model, TypedMLP):
        return _mlp_outputs(model, gather, target, schema.node_type(target).count, device, chunk_size, progress,
                            keep_embeddings)  # fmt: skip
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
    """:func:`~graphtier.train.infer.layerwise.layer_tables` of ``model`` inside the stage ``inference: layer-wise``,
    counted in the in-edges of every layer and type it outputs."""
    on = torch.device(device)
    layers = TypedLayers(model, gather, indptr, indices, schema, on, chunk_size, scratch_dir)
    with progress.stage("inference: layer-wise", total=total_in_edges(layers, schema, indptr), unit="edges") as bar:
        return layer_tables(
            layers, schema, indptr, indices, device=on, chunk_size=chunk_size, bar=bar,
            keep_embeddings=keep_embeddings, scratch_dir=scratch_dir,
        )  # fmt: skip


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
    """:func:`typed_layerwise_outputs` of a :class:`TypedMLP`: the target's own features only."""

    def rows(ids: Tensor) -> tuple[Tensor, Tensor | None]:
        x = {target: gather(target, ids).to(device)}
        if not keep_embeddings:
            return model(x).float().cpu(), None
        h = model.mlp.net[:-1](x[target].to(model.mlp.net[0].weight.dtype))
        return model.mlp.net[-1](h).float().cpu(), h.float().cpu()

    with progress.stage("inference: layer-wise", total=count, unit="nodes") as bar:
        return row_outputs(rows, count, chunk_size, bar, keep_embeddings)
