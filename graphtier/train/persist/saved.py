"""Saved models: the trained weights, the model's configuration and the fingerprint of the dataset.

``graphtier train --save-model model.pt`` writes one file with :func:`save_model`;
:func:`load_model` rebuilds the model from it, and :func:`check_fingerprint` refuses a dataset
other than the one the model was trained on (another graph, another node order, other features).
A typed model (R-GCN, R-GAT, HeteroSAGE, or any model of a typed dataset) also saves the dataset's schema
(``schema``: its ``meta.json`` ``hetero`` entry), which rebuilds it (:func:`build_typed_model`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from graphtier._choices import LINK_TARGETS
from graphtier.dataset import Dataset
from graphtier.dataset.resources import available_memory, human_bytes
from graphtier.dataset.schema import Schema
from graphtier.errors import DatasetError, OptionError, ResourceError
from graphtier.train.nn.link_model import LinkModel, build_task_model, build_typed_link_model
from graphtier.train.nn.models import GCN_DEGREES
from graphtier.train.nn.tiered_embedding import tiered_embeddings
from graphtier.train.nn.typed_models import build_typed_model
from graphtier.train.options.spec import DECODER_NAMES, TASK_NAMES, TYPED_MODEL_NAMES
from graphtier.train.persist.fingerprint import dataset_fingerprint, fingerprint_mismatch
from graphtier.train.persist.torch_file import load_torch_file, model_file, save_torch_file

SAVED_MODEL_FORMAT = "graphtier-model"
SAVED_MODEL_VERSION = 1
# The TrainConfig fields that rebuild the model (and the sampler it was trained with, for the record).
MODEL_CONFIG_KEYS = (
    "task", "decoder", "model", "num_layers", "hidden", "heads", "norm", "gcn_degrees", "dropout", "sampler", "fanouts",
    "featureless", "num_bases", "link_target", "link_threshold", "edge_dim", "time_encoding", "time_encoding_fixed",
)  # fmt: skip
# What a key missing from an older file (saved model or checkpoint) meant: the behaviour before the option existed.
OLD_FILE_DEFAULTS = {
    "gcn_degrees": "full", "task": "node", "decoder": "dot", "num_negatives": 1, "negative_sampling": "uniform",
    "featureless": "embedding", "num_bases": 0, "link_target": None, "link_threshold": 0.0, "edge_dim": None,
    "time_encoding": 0, "time_encoding_fixed": False,
}  # fmt: skip


@dataclass
class SavedModel:
    """A model read back by :func:`load_model`.

    Attributes:
        model: the rebuilt :class:`~graphtier.train.nn.models.BlockGNN` or ``MLP``, or for ``task`` link a
            :class:`~graphtier.train.nn.link_model.LinkModel` (eval mode, CPU).
        config: the model configuration (``MODEL_CONFIG_KEYS``) it was trained with.
        fingerprint: :func:`dataset_fingerprint` of the training dataset.
        path: the file it was read from (None when built in memory).
        schema: a typed model's schema (its input is a dict per node type), None for a homogeneous model.
        link_relation: a typed link model's relation ``(SRC, REL, DST)``: its encoder returns the embeddings of
            the types SRC and DST (None otherwise).
    """

    model: nn.Module
    config: dict[str, Any]
    fingerprint: dict[str, Any]
    path: Path | None = None
    schema: Schema | None = None
    link_relation: tuple[str, str, str] | None = None

    @property
    def task(self) -> str:
        """``node`` or ``link``: what the model was trained for (older files: ``node``)."""
        return str(self.config.get("task", OLD_FILE_DEFAULTS["task"]))

    @property
    def gcn_degrees(self) -> str:
        """``full`` or ``block``: the GCN normalisation the model was trained with (older files: ``full``)."""
        return str(self.config.get("gcn_degrees", OLD_FILE_DEFAULTS["gcn_degrees"]))


def model_config(config: dict[str, Any]) -> dict[str, Any]:
    """The subset of a ``TrainConfig.to_dict()`` that rebuilds the model."""
    return {key: config[key] if key in config else OLD_FILE_DEFAULTS[key] for key in MODEL_CONFIG_KEYS}


def save_model(path: str | os.PathLike[str], model: nn.Module, config: dict[str, Any], dataset: Dataset) -> Path:
    """Write ``model``'s weights (on the CPU), its configuration and ``dataset``'s fingerprint, atomically.

    ``out_dim`` is the number of classes, or a link model's embedding width (``hidden``). A typed model (a typed
    ``config["model"]`` or a typed dataset) also gets ``dataset``'s schema."""
    out_dim = int(config["hidden"]) if isinstance(model, LinkModel) else dataset.num_classes
    state = {
        "format": SAVED_MODEL_FORMAT,
        "version": SAVED_MODEL_VERSION,
        "config": model_config(config),
        "in_dim": dataset.feature_dim,
        "out_dim": out_dim,
        "fingerprint": dataset_fingerprint(dataset),
        "state_dict": {name: tensor.detach().cpu() for name, tensor in model.state_dict().items()},
    }
    if dataset.is_hetero or config["model"] in TYPED_MODEL_NAMES:
        state["schema"] = dataset.schema.to_meta()
        if isinstance(model, LinkModel) and dataset.link is not None and "relation" in dataset.link.meta:
            state["link_relation"] = [str(t) for t in dataset.link.meta["relation"]]
    return save_torch_file(path, state)


def _field(source: Path, state: dict[str, Any], key: str, kind: type, where: str = "") -> Any:
    """``state[key]`` as ``kind`` (positive for int/float sizes); OptionError naming the field otherwise."""
    name = f"{where}{key}"
    if key not in state:
        raise OptionError(f"--model {source}: field {name!r} missing (not written by 'graphtier train --save-model')")
    value = state[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise OptionError(f"--model {source}: field {name!r} expected a positive integer, found {value!r}")
    if kind is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise OptionError(f"--model {source}: field {name!r} expected a number, found {value!r}")
    if kind in (str, dict) and not isinstance(value, kind):
        raise OptionError(f"--model {source}: field {name!r} expected a {kind.__name__}, found {type(value).__name__}")
    return value


def _builder(
    cfg: dict[str, Any], in_dim: int, out_dim: int, schema: Schema | None, relation: tuple[str, str, str] | None
) -> Any:
    """A function building the model of ``cfg`` (typed with a ``schema``; a typed link model of ``relation``)."""
    if schema is not None:
        options = {"in_dims": {t.name: t.feature_dim for t in schema.node_types}, "hidden": int(cfg["hidden"]),
                   "num_classes": out_dim, "num_layers": int(cfg["num_layers"]), "dropout": float(cfg["dropout"]),
                   "featureless": str(cfg["featureless"]), "num_bases": int(cfg["num_bases"]),
                   "heads": int(cfg["heads"]), "norm": cfg["norm"], "edge_dim": cfg["edge_dim"]}  # fmt: skip
        if relation is not None:
            bias = cfg["link_target"] is not None
            return lambda: build_typed_link_model(str(cfg["model"]), schema, relation, str(cfg["decoder"]), bias,
                                                  **options)  # fmt: skip
        return lambda: build_typed_model(str(cfg["model"]), schema, **options)
    args = (str(cfg["task"]), str(cfg["model"]), in_dim, int(cfg["hidden"]), out_dim, int(cfg["num_layers"]))
    options = {"dropout": float(cfg["dropout"]), "norm": cfg["norm"], "heads": int(cfg["heads"]),
               "decoder": str(cfg["decoder"]), "bias": cfg["link_target"] is not None, "edge_dim": cfg["edge_dim"],
               "time_encoding": cfg["time_encoding"], "time_encoding_fixed": cfg["time_encoding_fixed"]}  # fmt: skip
    return lambda: build_task_model(*args, **options)


def _build_checked(
    source: Path, cfg: dict[str, Any], in_dim: int, out_dim: int, weights: dict[str, Any], schema: Schema | None,
    relation: tuple[str, str, str] | None = None, tables_dir: str | os.PathLike[str] | None = None,
) -> nn.Module:  # fmt: skip
    """Build the model of ``cfg`` after checking, on the meta device (no memory), that ``weights`` fit it; its
    learnable tables in unlinked scratch files in ``tables_dir`` when given (else in RAM)."""
    try:
        build = _builder(cfg, in_dim, out_dim, schema, relation)
        with torch.device("meta"):
            skeleton = build()
    except (OptionError, TypeError, ValueError) as exc:
        raise OptionError(f"--model {source}: field 'config': {exc}") from None
    shapes = {name: tuple(t.shape) for name, t in skeleton.state_dict().items()}
    need = sum(t.numel() * t.element_size() for t in skeleton.state_dict().values())
    sizes = f"in_dim {in_dim}, out_dim {out_dim}, hidden {cfg['hidden']}: {human_bytes(need)} of parameters"
    for name, shape in shapes.items():
        found = weights.get(name)
        found_shape = tuple(found.shape) if isinstance(found, torch.Tensor) else None
        if found_shape != shape:
            raise OptionError(
                f"--model {source}: parameter {name!r} expected shape {shape} from the configuration ({sizes}), "
                f"found {found_shape if found is not None else 'none'}"
            )
    extra = sorted(set(weights) - set(shapes))
    if extra:
        raise OptionError(f"--model {source}: parameter {extra[0]!r} found but not in a {cfg['model']} model ({sizes})")
    on_disk = sum(t.count * t.dim * 4 for _, t in tiered_embeddings(skeleton)) if tables_dir is not None else 0
    if need - on_disk > available_memory():
        raise ResourceError(
            f"--model {source}: the model needs {human_bytes(need - on_disk)} of RAM, "
            f"{human_bytes(available_memory())} available"
        )
    model = build()
    if tables_dir is not None:
        for _, table in tiered_embeddings(model):
            table.place(0, tables_dir, fill=False)  # the saved rows are copied there next, never into RAM
    model.load_state_dict(weights)
    return model


def load_model(path: str | os.PathLike[str], tables_dir: str | os.PathLike[str] | None = None) -> SavedModel:
    """Read a file written by :func:`save_model`; raise OptionError (one line) if it is not one.

    ``tables_dir``: the learnable tables of featureless types (a typed model's; GBs on a MAG-scale graph) go to
    unlinked memory-mapped files in that directory instead of RAM (the file itself is read memory-mapped).

    The file is read without executing code, its CRCs are checked, and its fields and weight shapes
    are checked against each other before the model is built (so a hand-edited size is refused).
    """
    source = model_file(path)
    state = load_torch_file(source, f"--model {source}", "graphtier saved model")
    if not isinstance(state, dict) or state.get("format") != SAVED_MODEL_FORMAT:
        raise OptionError(f"--model {source}: not a graphtier saved model (written by 'graphtier train --save-model')")
    if state.get("version") != SAVED_MODEL_VERSION:
        raise OptionError(
            f"--model {source}: field 'version' expected {SAVED_MODEL_VERSION}, found {state.get('version')!r}"
        )
    cfg = {**OLD_FILE_DEFAULTS, **_field(source, state, "config", dict)}
    for key, kind in (
        ("model", str),
        ("norm", str),
        ("hidden", int),
        ("num_layers", int),
        ("heads", int),
        ("dropout", float),
    ):
        _field(source, cfg, key, kind, "config.")
    for key, names in (("task", TASK_NAMES), ("decoder", DECODER_NAMES), ("link_target", (None, *LINK_TARGETS))):
        if cfg[key] not in names:
            raise OptionError(
                f"--model {source}: field 'config.{key}' expected one of {', '.join(map(str, names))}, found {cfg[key]!r}"
            )
    if cfg["gcn_degrees"] not in GCN_DEGREES:
        raise OptionError(
            f"--model {source}: field 'config.gcn_degrees' expected one of {', '.join(GCN_DEGREES)}, "
            f"found {cfg['gcn_degrees']!r}"
        )
    fingerprint = _field(source, state, "fingerprint", dict)
    weights = _field(source, state, "state_dict", dict)
    schema = None
    if "schema" in state:
        try:
            schema = Schema.from_meta({"hetero": _field(source, state, "schema", dict)}, source)
        except DatasetError as exc:
            raise OptionError(f"--model {source}: field 'schema': {exc}") from None
    relation = None
    if schema is not None and cfg["task"] == "link":
        named = state.get("link_relation")
        if not (isinstance(named, list) and tuple(named) in {r.type for r in schema.relations}):
            raise OptionError(
                f"--model {source}: field 'link_relation' expected a relation [src, name, dst] of the schema, "
                f"found {named!r}"
            )
        relation = (str(named[0]), str(named[1]), str(named[2]))
    in_dim = state.get("in_dim") if schema is not None else _field(source, state, "in_dim", int)
    out_dim = _field(source, state, "out_dim", int)
    model = _build_checked(source, cfg, in_dim, out_dim, weights, schema, relation, tables_dir)
    model.eval()
    return SavedModel(
        model=model, config=dict(cfg), fingerprint=dict(fingerprint), path=source, schema=schema,
        link_relation=relation,
    )  # fmt: skip


def check_fingerprint(saved: SavedModel, dataset: Dataset) -> None:
    """Raise OptionError (one line) when ``dataset`` is not the dataset ``saved`` was trained on."""
    mismatch = fingerprint_mismatch(saved.fingerprint, dataset)
    if mismatch is not None:
        what, expected, found = mismatch
        where = saved.path if saved.path is not None else "model"
        raise OptionError(
            f"--model {where}: trained on another dataset than {dataset.path}: {what} expected {expected!r}, "
            f"found {found!r}"
        )
