"""Checkpoints of a training run: write atomically every epoch, resume from the last one.

A checkpoint holds tensors and plain values only, read back with ``weights_only=True`` on the CPU
(see :mod:`graphtier.train.torch_file`); it records the dataset's fingerprint, the CPU RNG state and,
where CUDA is available, every GPU's RNG state, so a resumed run repeats an uninterrupted one. A run
takes :class:`~graphtier.train.output_files.DirectoryLock` on its checkpoint directory while it trains.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from graphtier.errors import OptionError
from graphtier.train.fingerprint import dataset_fingerprint, fingerprint_mismatch
from graphtier.train.output_files import DirectoryLock
from graphtier.train.saved import OLD_FILE_DEFAULTS
from graphtier.train.torch_file import load_torch_file, save_torch_file

CHECKPOINT_FILE = "checkpoint.pt"
# Options that must match for a checkpoint to be resumed.
CHECKPOINT_KEYS = (
    "model", "sampler", "fanouts", "num_layers", "hidden", "heads", "norm", "gcn_degrees", "batch_size", "seed",
)
# Options a resumed run may change: applied from the resumed epoch on, printed and recorded in resumed_from.changed.
RESUME_CHANGEABLE_KEYS = ("lr", "weight_decay", "dropout")
# Fields every checkpoint has, with their types.
_REQUIRED = {
    "epoch": int, "config": dict, "dataset": dict, "model": dict, "optimizer": dict, "best_valid": (int, float),
    "best_epoch": int, "epochs": list, "torch_rng": torch.Tensor,
}


def _check_layout(path: Path, state: Any) -> None:
    """OptionError (one line) unless ``state`` has the fields and types of a graphtier checkpoint."""
    if not isinstance(state, dict):
        raise OptionError(f"{path}: not a graphtier checkpoint (holds a {type(state).__name__}, not a dict)")
    for key, kind in _REQUIRED.items():
        if key not in state:
            raise OptionError(f"{path}: not a graphtier checkpoint (field {key!r} missing)")
        if not isinstance(state[key], kind) or isinstance(state[key], bool):
            raise OptionError(f"{path}: field {key!r} has the wrong type ({type(state[key]).__name__})")
    if state["epoch"] < 1:
        raise OptionError(f"{path}: field 'epoch' expected a positive integer, found {state['epoch']}")
    if state.get("best_state") is not None and not isinstance(state["best_state"], dict):
        raise OptionError(f"{path}: field 'best_state' has the wrong type ({type(state['best_state']).__name__})")
    rng = state["torch_rng"]
    if rng.dtype != torch.uint8 or rng.dim() != 1:
        raise OptionError(f"{path}: field 'torch_rng' expected a uint8 vector, found {rng.dtype} {tuple(rng.shape)}")
    cuda = state.get("cuda_rng")
    if cuda is not None and not (
        isinstance(cuda, list) and all(isinstance(t, torch.Tensor) and t.dtype == torch.uint8 for t in cuda)
    ):
        raise OptionError(f"{path}: field 'cuda_rng' expected a list of uint8 tensors")


def restore_rng(path: Path, state: dict[str, Any]) -> None:
    """Set the CPU RNG (and the GPUs' where both the checkpoint and this machine have them) from ``state``.

    The states go through ``.cpu()``: ``torch.set_rng_state`` takes CPU ByteTensors only, whatever device
    the checkpoint was mapped to. A checkpoint without ``cuda_rng`` (older, or written without CUDA) leaves
    the GPUs' RNGs as seeded.
    """
    try:
        torch.set_rng_state(state["torch_rng"].cpu())
        cuda = state.get("cuda_rng")
        if cuda and torch.cuda.is_available():
            torch.cuda.set_rng_state_all([t.cpu() for t in cuda[: torch.cuda.device_count()]])
    except (RuntimeError, TypeError, ValueError) as exc:
        raise OptionError(f"{path}: field 'torch_rng' is not a valid RNG state ({' '.join(str(exc).split())[:120]})") from None


class Checkpointing:
    """Save and resume the model, optimizer, best state, epoch records and RNG state.

    Mixed into :class:`graphtier.train.trainer.Trainer`; uses its ``config``, ``model``, ``optimizer``,
    ``dataset``, ``dist``, ``report`` and ``_log``.
    """

    def _dataset_fingerprint(self) -> dict[str, Any]:
        cached = getattr(self, "_fingerprint_cache", None)
        if cached is None:
            cached = self._fingerprint_cache = dataset_fingerprint(self.dataset)
        return cached

    def _checkpoint_state(self, epoch: int) -> dict[str, Any]:
        state = {
            "epoch": epoch,
            "config": self.config.to_dict(),
            "dataset": {
                "num_nodes": self.dataset.num_nodes,
                "num_edges": self.dataset.num_edges,
                "fingerprint": self._dataset_fingerprint(),
            },
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "best_valid": self.best_valid,
            "best_epoch": self.best_epoch,
            "best_state": self.best_state,
            "epochs": self.report.epochs,
            "torch_rng": torch.get_rng_state(),
        }
        if torch.cuda.is_available():
            state["cuda_rng"] = [t.cpu() for t in torch.cuda.get_rng_state_all()]
        return state

    def checkpoint_lock(self) -> DirectoryLock | None:
        """The lock of the checkpoint directory this process writes (None without --checkpoint or on ranks > 0)."""
        if self.config.run.checkpoint is None or (self.dist is not None and not self.dist.is_main):
            return None
        lock = getattr(self, "_checkpoint_lock", None)
        if lock is None:
            lock = self._checkpoint_lock = DirectoryLock(self.config.run.checkpoint)
        return lock

    def save_checkpoint(self, epoch: int) -> Path:
        """Write ``checkpoint.pt`` atomically into the checkpoint directory; returns its path."""
        assert self.config.run.checkpoint is not None
        directory = Path(self.config.run.checkpoint)
        if self.dist is not None and not self.dist.is_main:
            return directory / CHECKPOINT_FILE
        return save_torch_file(directory / CHECKPOINT_FILE, self._checkpoint_state(epoch))

    def _check_dataset(self, path: Path, recorded: dict[str, Any]) -> None:
        counts = {"num_nodes": self.dataset.num_nodes, "num_edges": self.dataset.num_edges}
        fingerprint = recorded.get("fingerprint")
        if isinstance(fingerprint, dict):
            mismatch = fingerprint_mismatch(fingerprint, self.dataset)
            if mismatch is not None:
                what, expected, found = mismatch
                raise OptionError(
                    f"{path}: checkpoint was made on another dataset than {self.dataset.path}: {what} expected "
                    f"{expected!r}, found {found!r}"
                )
        elif {key: recorded.get(key) for key in counts} != counts:  # older checkpoints: the counts only
            raise OptionError(f"{path}: checkpoint was made on another dataset ({recorded})")

    def _maybe_resume(self, directory: Path) -> None:
        lock = self.checkpoint_lock()
        if lock is not None:
            lock.check()  # refuse now, before any work, when another run trains into this directory
        path = directory / CHECKPOINT_FILE
        if not path.is_file():
            return
        state = load_torch_file(path, str(path), "graphtier checkpoint")
        _check_layout(path, state)
        # a key missing from an older checkpoint means what it meant before the option existed
        saved = {**OLD_FILE_DEFAULTS, **state["config"]}
        current = self.config.to_dict()
        for key in CHECKPOINT_KEYS:
            if saved.get(key) != current.get(key):
                raise OptionError(
                    f"{path}: field {key!r} is {saved.get(key)!r} in the checkpoint but {current.get(key)!r} in "
                    "this run (use another --checkpoint directory)"
                )
        self._check_dataset(path, state["dataset"])
        try:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            if state.get("best_state") is not None:
                self.model.load_state_dict(state["best_state"])  # checked here, not after the last epoch
                self.model.load_state_dict(state["model"])
        except (RuntimeError, KeyError, ValueError, TypeError) as exc:
            raise OptionError(f"{path}: model or optimizer state does not fit this model ({' '.join(str(exc).split())[:160]})") from None
        changed = {
            key: {"checkpoint": saved[key], "run": current[key]}
            for key in RESUME_CHANGEABLE_KEYS
            if key in saved and saved[key] != current[key]
        }
        for group in self.optimizer.param_groups:  # the optimizer state restored the checkpoint's values
            group["lr"] = self.config.optim.lr
            group["weight_decay"] = self.config.optim.weight_decay
        restore_rng(path, state)
        self.best_valid = float(state["best_valid"])
        self.best_epoch = state["best_epoch"]
        self.best_state = state.get("best_state")
        self.report.epochs = list(state["epochs"])
        self.report.resumed_from = {"path": str(path), "epoch": state["epoch"], "changed": changed}
        self.start_epoch = state["epoch"] + 1
        if changed:
            self._log(
                f"resuming {path} with changed options (applied from epoch {self.start_epoch}): "
                + ", ".join(f"{key} {c['checkpoint']} -> {c['run']}" for key, c in changed.items())
            )
