"""What a training run does differently on a typed (heterogeneous) dataset, in one place.

* :func:`check_typed_run`: the options that cannot work with the dataset's kind, refused with one line each (a
  homogeneous GNN on a typed dataset, a typed model with an option of the homogeneous path only, ...);
* :func:`relation_fanouts`: ``--fanouts`` and ``--fanouts-per-relation`` resolved against the dataset's relations;
* :func:`build_run_model`: the model of the run (:func:`~graphtier.train.typed_models.build_typed_model` for a typed
  dataset or a typed model, :func:`~graphtier.train.link_model.build_task_model` otherwise);
* :func:`learnable_tables` / :func:`place_learnable_tables` / :func:`learnable_bytes_read`: the featureless types'
  learnable tables (:class:`~graphtier.train.tiered_embedding.TieredEmbedding`): their device bytes per row for the
  GPU budget split, their hot prefix once split, their rows read per tier for the run report;
* :func:`as_typed_batch`: a homogeneous :class:`MiniBatch` seen as the one-type, one-relation
  :class:`TypedMiniBatch` (typed models on a homogeneous dataset).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from graphtier.dataset import Dataset
from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling import MiniBatch
from graphtier.sampling.fanouts import Fanouts
from graphtier.sampling.relation_fanouts import parse_relation_fanouts, relation_label
from graphtier.sampling.typed_batch import RelationBlock, TypedBlock, TypedMiniBatch
from graphtier.train.aggregate import block_csr
from graphtier.train.link_model import build_task_model
from graphtier.train.spec import HOMOGENEOUS_MODEL_NAMES, TYPED_MODEL_NAMES
from graphtier.train.tiered_embedding import learnable_row_bytes
from graphtier.train.typed_layers import type_key
from graphtier.train.typed_models import build_typed_model, learnable_widths

if TYPE_CHECKING:
    from graphtier.train.config import TrainConfig


def _types_of(dataset: Dataset) -> str:
    return ", ".join(dataset.schema.type_names)


def check_typed_run(config: TrainConfig, dataset: Dataset) -> None:
    """Raise :class:`OptionError` (one line naming the option) for a combination of ``config`` and the dataset's
    kind that cannot run: on a typed dataset a homogeneous GNN, link prediction, ShaDow, several processes,
    or an MLP without target features; with a typed model a homogeneous-only option; typed
    options (``fanouts_per_relation``, ``num_bases``) with a homogeneous model."""
    network, sampling = config.network, config.sampling
    model = network.model
    typed_run = dataset.is_hetero or network.typed
    if dataset.is_hetero:
        where = f"{dataset.path} has node types {_types_of(dataset)}"
        if model in HOMOGENEOUS_MODEL_NAMES:
            raise OptionError(
                f"{{model={model}}}: a model of one node type and one relation, and {where}; "
                f"use {', '.join(TYPED_MODEL_NAMES)} or mlp",
                options=("model",),
            )
        if config.objective.task != "node":
            raise OptionError(f"{{task={config.objective.task}}}: not available yet on a typed dataset ({where})",
                              options=("task",))  # fmt: skip
        if model == "mlp" and dataset.schema.target_type.feature_dim == 0:
            raise OptionError(
                f"{{model=mlp}}: reads the features of the target type {dataset.schema.target!r}, which has none "
                f"({dataset.path})",
                options=("model",),
            )
    if typed_run and model != "mlp":
        refused = (
            ("sampler", sampling.sampler != "neighbor", f"{{sampler={sampling.sampler}}}"),
            ("gcn_degrees", network.gcn_degrees != "auto", f"{{gcn_degrees={network.gcn_degrees}}}"),
            ("devices", config.distributed.devices is not None and len(config.distributed.devices) > 1, "{devices}"),
        )
        for option, given, spelled in refused:
            if given:
                raise OptionError(
                    f"{spelled}: not available with the typed model {{model={model}}} (typed runs sample with the "
                    "neighbour sampler in one process)",
                    options=(option, "model"),
                )
    if not typed_run and sampling.fanouts_per_relation is not None:
        raise OptionError(
            f"{{fanouts_per_relation}}: applies to typed datasets and typed models ({', '.join(TYPED_MODEL_NAMES)}), "
            f"found {{model={model}}} on {dataset.path} (one relation)",
            options=("fanouts_per_relation", "model"),
        )
    if typed_run:
        relation_fanouts(config, dataset.schema, sampling.fanouts)  # a bad relation name fails before training


def relation_fanouts(config: TrainConfig, schema: Schema, fanouts: Sequence[int]) -> dict[RelationType, Fanouts]:
    """Fanouts of every relation of ``schema``: ``fanouts`` overridden by the run's ``fanouts_per_relation``."""
    return parse_relation_fanouts(config.sampling.fanouts_per_relation, schema, tuple(fanouts))


DENSE_RELATION_DEGREE = 100
"""Mean in-degree above which ``-1`` (every neighbour) on a relation gets a note at the start of training."""


def dense_relation_notes(config: TrainConfig, schema: Schema) -> list[str]:
    """One note per relation whose fanout is ``-1`` at some hop while its destinations have more than
    :data:`DENSE_RELATION_DEGREE` in-neighbours on average (a metapath graph such as ACM's PSP, 1,079 per paper):
    every seed then pulls them all, hop after hop; the note names the ``--fanouts-per-relation`` that caps it."""
    notes = []
    for rel_type, fanouts in relation_fanouts(config, schema, config.sampling.fanouts).items():
        rel = next(r for r in schema.relations if r.type == rel_type)
        mean = rel.num_edges / max(1, schema.node_type(rel.dst).count)
        if -1 in tuple(fanouts) and mean > DENSE_RELATION_DEGREE:
            label = relation_label(schema, rel)
            capped = "/".join(str(f) for f in (10, 5, 5, 5, 5)[: len(tuple(fanouts))])
            notes.append(
                f"note: relation {label} has {mean:,.1f} in-neighbours per {rel.dst} on average and fanout -1 takes "
                f"them all at every hop (an epoch grows with their product); --fanouts-per-relation {label}={capped} "
                "caps it (docs/guide/heterogeneous.md)"
            )
    return notes


def build_run_model(config: TrainConfig, dataset: Dataset) -> nn.Module:
    """The run's model (not yet on its device): a typed model for a typed dataset or a typed ``model``, called
    ``model(x: dict, blocks: list[TypedBlock], n_id: dict)``; else the homogeneous one, ``model(x, blocks,
    degree)``."""
    network = config.network
    if dataset.is_hetero or network.typed:
        schema = dataset.schema
        return build_typed_model(
            network.model, schema, in_dims={t.name: t.feature_dim for t in schema.node_types}, hidden=network.hidden,
            num_classes=dataset.num_classes, num_layers=config.num_layers, dropout=network.dropout,
            featureless=network.featureless, num_bases=network.num_bases, heads=network.heads, norm=network.norm,
        )  # fmt: skip
    return build_task_model(
        config.objective.task, network.model, dataset.feature_dim, network.hidden, dataset.num_classes,
        config.num_layers, decoder=config.objective.decoder, dropout=network.dropout, norm=network.norm,
        heads=network.heads,
    )  # fmt: skip


def learnable_tables(config: TrainConfig, dataset: Dataset) -> dict[str, int]:
    """Device bytes of a row (with its Adam state) of the learnable table of every featureless type the run's
    model reads (``--featureless embedding`` / ``onehot`` of a typed model); empty otherwise."""
    network = config.network
    if not (dataset.is_hetero or network.typed) or network.model == "mlp":
        return {}
    schema = dataset.schema
    widths = learnable_widths(schema, {t.name: t.feature_dim for t in schema.node_types}, network.featureless,
                              network.hidden, dataset.num_classes, config.num_layers)  # fmt: skip
    return {name: learnable_row_bytes(width) for name, width in widths.items()}


def place_learnable_tables(
    model: nn.Module, schema: Schema, hot_rows: dict[str, int], log: Callable[[str], None]
) -> None:
    """Split every learnable table of ``model`` (before ``model.to(device)``): ``hot_rows[type]`` rows on the
    compute device, the rest in host memory; one log line per table."""
    tables = getattr(getattr(model, "inputs", None), "tables", {})
    for name, rows in hot_rows.items():
        key = type_key(schema, name)
        if key in tables:
            table = tables[key]
            table.place(rows)
            tiers = table.tier_bytes()
            log(f"learnable table of {name}: {table.hot_rows} of {table.count} rows on the device "
                f"({tiers['device']} B with Adam state), {tiers['host']} B in host memory")  # fmt: skip


def learnable_bytes_read(model: nn.Module, schema: Schema) -> dict[str, dict[str, int]]:
    """Cumulative bytes of rows the learnable tables of ``model`` gathered, per featureless type and tier
    (``device``: the hot prefix, ``host``: the rest)."""
    tables = getattr(getattr(model, "inputs", None), "tables", {})
    out = {}
    for t in schema.type_names:
        table = tables[type_key(schema, t)] if type_key(schema, t) in tables else None
        if table is not None:
            row = table.dim * table.hot["weight"].element_size()
            out[t] = {tier: rows * row for tier, rows in table.rows_read.items()}
    return out


def as_typed_batch(batch: MiniBatch, schema: Schema) -> TypedMiniBatch:
    """``batch`` of a homogeneous dataset as the :class:`TypedMiniBatch` of its one type and one relation (the
    blocks' CSR of :func:`graphtier.train.aggregate.block_csr`; the same tensors' devices)."""
    (node_type,) = schema.node_types
    (relation,) = schema.relations
    name = node_type.name
    blocks = []
    for blk in batch.blocks:
        csr = block_csr(blk)
        blocks.append(
            TypedBlock({name: blk.num_src}, {name: blk.num_dst}, {relation.type: RelationBlock(csr.rowptr, csr.col)})
        )
    return TypedMiniBatch({name: batch.n_id}, blocks, batch.seed_index, batch.seeds, name)


def typed_inputs(x: Any, schema: Schema) -> dict[str, torch.Tensor]:
    """Gathered features as a dict per type: a homogeneous dataset's [N, D] tensor becomes ``{type: x}``."""
    return x if isinstance(x, dict) else {schema.target: x}
