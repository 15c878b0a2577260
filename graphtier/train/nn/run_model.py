"""What a training run does differently on a typed (heterogeneous) dataset, in one place.

* the options that cannot work with the dataset's kind are refused before the run by
  :func:`graphtier.train.options.typed_checks.check_typed_run` (apart, so that checking options does not load the models);
* :func:`build_run_model`: the model of the run (:func:`~graphtier.train.nn.typed_models.build_typed_model` for a typed
  dataset or a typed model, :func:`~graphtier.train.nn.link_model.build_task_model` otherwise);
* :func:`learnable_tables` / :func:`place_learnable_tables` / :func:`learnable_bytes_read`: the featureless types'
  learnable tables (:class:`~graphtier.train.nn.tiered_embedding.TieredEmbedding`): their device bytes per row for the
  GPU budget split, their hot prefix once split, their rows read per tier for the run report.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import nn

from graphtier.dataset import Dataset
from graphtier.dataset.schema import Schema
from graphtier.train.nn.link_model import build_task_model, build_typed_link_model, encoder_of
from graphtier.train.nn.tiered_embedding import learnable_row_bytes
from graphtier.train.nn.typed_layers import type_key
from graphtier.train.nn.typed_models import build_typed_model, learnable_widths

if TYPE_CHECKING:
    from graphtier.train.options.config import TrainConfig


def build_run_model(config: TrainConfig, dataset: Dataset) -> nn.Module:
    """The run's model (not yet on its device): a typed model for a typed dataset or a typed ``model``, called
    ``model(x: dict, blocks: list[TypedBlock], n_id: dict)``; else the homogeneous one, ``model(x, blocks,
    degree)``. Link prediction on a typed dataset: a :class:`LinkModel` whose encoder is the typed model returning
    ``hidden``-wide embeddings of the split relation's two endpoint types. The edge inputs of GAT and GINE are the
    run's (``edge_dim``, checked against the dataset's ``meta.json`` ``edge_features.dim`` by
    :meth:`~graphtier.train.TrainConfig.validate`, and ``time_encoding``); R-GAT's ``edge_dim`` likewise."""
    network = config.network
    if dataset.is_hetero or network.typed:
        schema = dataset.schema
        options = {
            "in_dims": {t.name: t.feature_dim for t in schema.node_types}, "hidden": network.hidden,
            "num_classes": dataset.num_classes, "num_layers": config.num_layers, "dropout": network.dropout,
            "featureless": network.featureless, "num_bases": network.num_bases, "heads": network.heads,
            "norm": network.norm, "edge_dim": network.edge_dim,
        }  # fmt: skip
        if config.objective.task == "link" and dataset.link is not None and "relation" in dataset.link.meta:
            relation = tuple(str(t) for t in dataset.link.meta["relation"])
            return build_typed_link_model(network.model, schema, relation, config.objective.decoder,  # type: ignore[arg-type]
                                          config.objective.link_target is not None, **options)  # fmt: skip
        return build_typed_model(network.model, schema, **options)
    return build_task_model(
        config.objective.task, network.model, dataset.feature_dim, network.hidden, dataset.num_classes,
        config.num_layers, decoder=config.objective.decoder, dropout=network.dropout, norm=network.norm,
        heads=network.heads, bias=config.objective.link_target is not None, edge_dim=network.edge_dim,
        time_encoding=network.time_encoding, time_encoding_fixed=network.time_encoding_fixed,
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
    model: nn.Module,
    schema: Schema,
    hot_rows: dict[str, int],
    log: Callable[[str], None],
    *,
    cold_dir: str | os.PathLike[str] | None = None,
    device: torch.device | None = None,
) -> None:
    """Split and allocate every learnable table of ``model`` (before ``model.to(device)``): ``hot_rows[type]`` rows
    on the compute device, the rest in host memory, or with ``cold_dir`` (``--tables-on disk``) in unlinked scratch
    files there; a CPU ``device`` with ``cold_dir`` keeps every row on disk (the page cache holds the hot ones).
    One log line per table."""
    tables = getattr(getattr(encoder_of(model), "inputs", None), "tables", {})
    on_cpu = device is None or device.type != "cuda"
    for name, rows in hot_rows.items():
        key = type_key(schema, name)
        if key in tables:
            table = tables[key]
            table.place(0 if cold_dir is not None and on_cpu else rows, cold_dir)
            tiers = table.tier_bytes()
            where = f"on disk in {cold_dir}" if table.cold_on_disk else "in host memory"
            log(f"learnable table of {name}: {table.hot_rows} of {table.count} rows on the device "
                f"({tiers['device']} B with Adam state), {tiers['host']} B {where}")  # fmt: skip


def learnable_bytes_read(model: nn.Module, schema: Schema) -> dict[str, dict[str, int]]:
    """Cumulative bytes of rows the learnable tables of ``model`` gathered, per featureless type and tier
    (``device``: the hot prefix, ``host``: the rest)."""
    tables = getattr(getattr(encoder_of(model), "inputs", None), "tables", {})
    out = {}
    for t in schema.type_names:
        table = tables[type_key(schema, t)] if type_key(schema, t) in tables else None
        if table is not None:
            row = table.dim * table.hot["weight"].element_size()
            out[t] = {tier: rows * row for tier, rows in table.rows_read.items()}
    return out
