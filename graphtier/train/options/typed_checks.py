"""The options a training run cannot take on a typed (heterogeneous) dataset or with a typed model, refused with one
line each before the run (:meth:`graphtier.train.TrainConfig.validate`).

* :func:`check_typed_run`: a homogeneous GNN on a typed dataset, a typed model with an option of the homogeneous
  path only, ...;
* :func:`relation_fanouts`: ``--fanouts`` and ``--fanouts-per-relation`` resolved against the dataset's relations;
* :func:`dense_relation_notes`: a note for each dense relation taken whole (``-1``).

Apart from :mod:`graphtier.train.nn.run_model`, which builds the models (and so imports PyG).
"""

from __future__ import annotations

from collections.abc import Sequence

from graphtier.dataset import Dataset
from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling.fanouts import Fanouts
from graphtier.sampling.relation_fanouts import hop_text, parse_relation_fanouts, relation_label
from graphtier.train.options.spec import HOMOGENEOUS_MODEL_NAMES, TYPED_MODEL_NAMES, RunParts


def _types_of(dataset: Dataset) -> str:
    return ", ".join(dataset.schema.type_names)


def check_typed_run(config: RunParts, dataset: Dataset) -> None:
    """Raise :class:`OptionError` (one line naming the option) for a combination of ``config`` and the dataset's
    kind that cannot run: on a typed dataset a homogeneous GNN, link prediction without a relation's edge split
    (:func:`check_typed_link`), ShaDow, or an MLP without target features; with a typed model a homogeneous-only option; typed
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
        if config.objective.task == "link":
            check_typed_link(config, dataset)
        if model == "mlp" and dataset.schema.target_type.feature_dim == 0:
            raise OptionError(
                f"{{model=mlp}}: reads the features of the target type {dataset.schema.target!r}, which has none "
                f"({dataset.path})",
                options=("model",),
            )
    if typed_run and model != "mlp" and sampling.sampler == "shadow":
        raise OptionError(
            f"{{sampler=shadow}}: not available with the typed model {{model={model}}}: ShaDow extracts one induced "
            "subgraph per seed from a graph with one list of neighbours per node, and a typed dataset keeps one per "
            "relation (its per-relation induced subgraphs are not built); use {sampler=neighbor}",
            options=("sampler", "model"),
        )
    if typed_run and model != "mlp":
        refused = (
            ("sampler", sampling.sampler != "neighbor", f"{{sampler={sampling.sampler}}}"),
            ("gcn_degrees", network.gcn_degrees != "auto", f"{{gcn_degrees={network.gcn_degrees}}}"),
        )
        for option, given, spelled in refused:
            if given:
                raise OptionError(
                    f"{spelled}: not available with the typed model {{model={model}}} (typed runs sample with the "
                    "neighbour sampler)",
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


def check_typed_link(config: RunParts, dataset: Dataset) -> None:
    """Raise :class:`OptionError` when link prediction cannot run on the typed ``dataset``: no edge split of a
    relation, or the features-only ``mlp``."""
    link = dataset.link
    if link is None or "relation" not in link.meta:
        raise OptionError(
            f"{{task=link}}: expected an edge split of one relation in {dataset.path} (graphtier prepare manifest "
            "... --edge-split 0.85,0.05,0.1 --split-relation SRC,REL,DST), found none",
            options=("task",),
        )
    if config.network.model == "mlp":
        raise OptionError(
            f"{{model=mlp}}: link prediction on a typed dataset needs a typed encoder ({', '.join(TYPED_MODEL_NAMES)})",
            options=("model", "task"),
        )


def relation_fanouts(config: RunParts, schema: Schema, fanouts: Sequence[int]) -> dict[RelationType, Fanouts]:
    """Fanouts of every relation of ``schema``: ``fanouts`` overridden by the run's ``fanouts_per_relation``."""
    return parse_relation_fanouts(config.sampling.fanouts_per_relation, schema, tuple(fanouts))


DENSE_RELATION_DEGREE = 100
"""Mean in-degree above which ``-1`` (every neighbour) on a relation gets a note at the start of training."""


def dense_relation_notes(config: RunParts, schema: Schema) -> list[str]:
    """One note per relation whose fanout is ``-1`` at some hop while its destinations have more than
    :data:`DENSE_RELATION_DEGREE` in-neighbours on average (a metapath graph such as ACM's PSP, 1,079 per paper):
    every seed then pulls them all, hop after hop; the note names the ``--fanouts-per-relation`` that caps it."""
    notes = []
    for rel_type, fanouts in relation_fanouts(config, schema, config.sampling.fanouts).items():
        rel = schema.relation(rel_type)
        mean = rel.num_edges / max(1, schema.node_type(rel.dst).count)
        if -1 in tuple(fanouts) and mean > DENSE_RELATION_DEGREE:
            label = relation_label(schema, rel)
            capped = hop_text((10, 5, 5, 5, 5)[: len(tuple(fanouts))])
            notes.append(
                f"note: relation {label} has {mean:,.1f} in-neighbours per {rel.dst} on average and fanout -1 takes "
                f"them all at every hop (an epoch grows with their product); --fanouts-per-relation {label}={capped} "
                "caps it (docs/guide/heterogeneous.md)"
            )
    return notes
