"""Saved models: the trained weights, the model's configuration and the fingerprint of the dataset.

``graphtier train --save-model model.pt`` writes one file with :func:`save_model`;
:func:`load_model` rebuilds the model from it, and :func:`check_fingerprint` refuses a dataset
other than the one the model was trained on (another graph, another node order, other features).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.train.models import GCN_DEGREES, build_model

SAVED_MODEL_FORMAT = "graphtier-model"
SAVED_MODEL_VERSION = 1
# The TrainConfig fields that rebuild the model (and the sampler it was trained with, for the record).
MODEL_CONFIG_KEYS = ("model", "num_layers", "hidden", "heads", "norm", "gcn_degrees", "dropout", "sampler", "fanouts")
# What a key missing from an older file (saved model or checkpoint) meant: the behaviour before the option existed.
OLD_FILE_DEFAULTS = {"gcn_degrees": "full"}
# Entries of an array hashed into the fingerprint at most (evenly spaced, first and last included).
_HASH_SAMPLES = 1 << 20


def _sampled_digest(digest: Any, array: np.ndarray) -> None:
    """Feed ``array``'s length and up to ``_HASH_SAMPLES`` evenly spaced entries (as int64/float32) to ``digest``."""
    flat = np.asarray(array).reshape(-1)
    digest.update(np.int64(flat.shape[0]).tobytes())
    if flat.shape[0] == 0:
        return
    if flat.shape[0] > _HASH_SAMPLES:
        flat = flat[np.linspace(0, flat.shape[0] - 1, _HASH_SAMPLES).astype(np.int64)]
    kind = np.float32 if np.issubdtype(flat.dtype, np.floating) else np.int64
    digest.update(np.ascontiguousarray(flat, dtype=kind).tobytes())


def dataset_fingerprint(dataset: Dataset) -> dict[str, Any]:
    """What identifies ``dataset`` for a saved model: sizes, node order and a hash of graph and features.

    The hash covers ``indptr``, ``indices`` and the first feature column (sampled evenly at most
    2^20 entries each), so a renumbered (reordered) copy of the same graph has another fingerprint.
    """
    digest = hashlib.blake2b(digest_size=16)
    _sampled_digest(digest, dataset.indptr)
    _sampled_digest(digest, dataset.indices)
    if dataset.features is not None and dataset.feature_dim > 0:
        _sampled_digest(digest, np.asarray(dataset.features)[:, 0])
    return {
        "num_nodes": dataset.num_nodes,
        "num_edges": dataset.num_edges,
        "feature_dim": dataset.feature_dim,
        "num_classes": dataset.num_classes,
        "node_order": dataset.meta.get("node_order"),
        "hash": digest.hexdigest(),
    }


@dataclass
class SavedModel:
    """A model read back by :func:`load_model`.

    Attributes:
        model: the rebuilt :class:`~graphtier.train.models.BlockGNN` or ``MLP`` (eval mode, CPU).
        config: the model configuration (``MODEL_CONFIG_KEYS``) it was trained with.
        fingerprint: :func:`dataset_fingerprint` of the training dataset.
        path: the file it was read from (None when built in memory).
    """

    model: nn.Module
    config: dict[str, Any]
    fingerprint: dict[str, Any]
    path: Path | None = None

    @property
    def gcn_degrees(self) -> str:
        """``full`` or ``block``: the GCN normalisation the model was trained with (older files: ``full``)."""
        return str(self.config.get("gcn_degrees", OLD_FILE_DEFAULTS["gcn_degrees"]))


def model_config(config: dict[str, Any]) -> dict[str, Any]:
    """The subset of a ``TrainConfig.to_dict()`` that rebuilds the model."""
    return {key: config[key] if key in config else OLD_FILE_DEFAULTS[key] for key in MODEL_CONFIG_KEYS}


def save_model(path: str | os.PathLike[str], model: nn.Module, config: dict[str, Any], dataset: Dataset) -> Path:
    """Write ``model``'s weights (on the CPU), its configuration and ``dataset``'s fingerprint, atomically."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    state = {
        "format": SAVED_MODEL_FORMAT,
        "version": SAVED_MODEL_VERSION,
        "config": model_config(config),
        "in_dim": dataset.feature_dim,
        "out_dim": dataset.num_classes,
        "fingerprint": dataset_fingerprint(dataset),
        "state_dict": {name: tensor.detach().cpu() for name, tensor in model.state_dict().items()},
    }
    tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
    try:
        torch.save(state, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def load_model(path: str | os.PathLike[str]) -> SavedModel:
    """Read a file written by :func:`save_model`; raise OptionError (one line) if it is not one."""
    source = Path(path)
    if not source.is_file():
        raise OptionError(f"--model {source}: file not found")
    try:
        state = torch.load(source, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user mistake
        reason = " ".join(str(exc).split())[:160]
        raise OptionError(f"--model {source}: not a graphtier saved model ({type(exc).__name__}: {reason})") from None
    if not isinstance(state, dict) or state.get("format") != SAVED_MODEL_FORMAT:
        raise OptionError(f"--model {source}: not a graphtier saved model (written by 'graphtier train --save-model')")
    if state.get("version") != SAVED_MODEL_VERSION:
        raise OptionError(
            f"--model {source}: field 'version' expected {SAVED_MODEL_VERSION}, found {state.get('version')!r}"
        )
    cfg = {**OLD_FILE_DEFAULTS, **state["config"]}
    if cfg["gcn_degrees"] not in GCN_DEGREES:
        raise OptionError(
            f"--model {source}: field 'config.gcn_degrees' expected one of {', '.join(GCN_DEGREES)}, "
            f"found {cfg['gcn_degrees']!r}"
        )
    model = build_model(
        cfg["model"], int(state["in_dim"]), int(cfg["hidden"]), int(state["out_dim"]), int(cfg["num_layers"]),
        dropout=float(cfg["dropout"]), norm=cfg["norm"], heads=int(cfg["heads"]),
    )  # fmt: skip
    model.load_state_dict(state["state_dict"])
    model.eval()
    return SavedModel(model=model, config=dict(cfg), fingerprint=dict(state["fingerprint"]), path=source)


def check_fingerprint(saved: SavedModel, dataset: Dataset) -> None:
    """Raise OptionError (one line) when ``dataset`` is not the dataset ``saved`` was trained on."""
    found = dataset_fingerprint(dataset)
    where = saved.path if saved.path is not None else "model"
    for key, expected in saved.fingerprint.items():
        if found.get(key) != expected:
            what = "graph/feature hash" if key == "hash" else key
            raise OptionError(
                f"--model {where}: trained on another dataset than {dataset.path}: {what} expected {expected!r}, "
                f"found {found.get(key)!r}"
            )
