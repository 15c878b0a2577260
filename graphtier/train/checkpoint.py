"""Checkpoints of a training run: write atomically every epoch, resume from the last one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from graphtier.errors import OptionError
from graphtier.train.saved import OLD_FILE_DEFAULTS

CHECKPOINT_FILE = "checkpoint.pt"
# Options that must match for a checkpoint to be resumed.
CHECKPOINT_KEYS = (
    "model", "sampler", "fanouts", "num_layers", "hidden", "heads", "norm", "gcn_degrees", "batch_size", "seed",
)


class Checkpointing:
    """Save and resume the model, optimizer, best state, epoch records and RNG state.

    Mixed into :class:`graphtier.train.trainer.Trainer`; uses its ``config``, ``model``, ``dataset``, ``dist``,
    samplers, producer and feature store.
    """

    def _checkpoint_state(self, epoch: int) -> dict[str, Any]:
        return {
            "epoch": epoch,
            "config": self.config.to_dict(),
            "dataset": {"num_nodes": self.dataset.num_nodes, "num_edges": self.dataset.num_edges},
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "best_valid": self.best_valid,
            "best_epoch": self.best_epoch,
            "best_state": self.best_state,
            "epochs": self.report.epochs,
            "torch_rng": torch.get_rng_state(),
        }

    def save_checkpoint(self, epoch: int) -> Path:
        """Write ``checkpoint.pt`` atomically into the checkpoint directory; returns its path."""
        assert self.config.checkpoint is not None
        directory = Path(self.config.checkpoint)
        if self.dist is not None and not self.dist.is_main:
            return directory / CHECKPOINT_FILE
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / CHECKPOINT_FILE
        tmp = directory / f".{CHECKPOINT_FILE}.tmp-{os.getpid()}"
        torch.save(self._checkpoint_state(epoch), tmp)
        os.replace(tmp, target)
        return target

    def _maybe_resume(self, directory: Path) -> None:
        path = directory / CHECKPOINT_FILE
        if not path.is_file():
            return
        try:
            state = torch.load(path, map_location=self.device, weights_only=False)
        except Exception as exc:
            raise OptionError(f"{path}: not a readable graphtier checkpoint ({exc})") from None
        # a key missing from an older checkpoint means what it meant before the option existed
        saved = {**OLD_FILE_DEFAULTS, **state.get("config", {})}
        current = self.config.to_dict()
        for key in CHECKPOINT_KEYS:
            if saved.get(key) != current.get(key):
                raise OptionError(
                    f"{path}: field {key!r} is {saved.get(key)!r} in the checkpoint but {current.get(key)!r} in "
                    "this run (use another --checkpoint directory)"
                )
        if state.get("dataset") != {"num_nodes": self.dataset.num_nodes, "num_edges": self.dataset.num_edges}:
            raise OptionError(f"{path}: checkpoint was made on another dataset ({state.get('dataset')})")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.best_valid = state["best_valid"]
        self.best_epoch = state["best_epoch"]
        self.best_state = state["best_state"]
        self.report.epochs = list(state["epochs"])
        self.report.resumed_from = {"path": str(path), "epoch": int(state["epoch"])}
        torch.set_rng_state(state["torch_rng"])
        self.start_epoch = int(state["epoch"]) + 1
