"""Checkpoints of a training run: write atomically every epoch, resume from the last one.

A checkpoint holds tensors and plain values only, read back with ``weights_only=True`` on the CPU
(see :mod:`graphtier.train.persist.torch_file`); it records the dataset's fingerprint, the CPU RNG state and,
where CUDA is available, every GPU's RNG state, so a resumed run repeats an uninterrupted one. A run
takes :class:`~graphtier.train.options.output_files.DirectoryLock` on its checkpoint directory while it trains.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.sampling.relation_fanouts import hop_text, parse_relation_fanouts, relation_label
from graphtier.train.options.output_files import CHECKPOINT_FILE, DirectoryLock
from graphtier.train.persist.fingerprint import dataset_fingerprint, fingerprint_mismatch
from graphtier.train.persist.saved import OLD_FILE_DEFAULTS
from graphtier.train.persist.torch_file import load_torch_file, save_torch_file

# Options that must match for a checkpoint to be resumed.
CHECKPOINT_KEYS = (
    "task",
    "decoder",
    "link_target",
    "link_threshold",
    "num_negatives",
    "negative_sampling",
    "model",
    "sampler",
    "fanouts",
    "num_layers",
    "hidden",
    "heads",
    "norm",
    "gcn_degrees",
    "edge_dim",
    "time_encoding",
    "time_encoding_fixed",
    "batch_size",
    "seed",
)
# Options a resumed run may change: applied from the resumed epoch on, printed and recorded in resumed_from.changed.
RESUME_CHANGEABLE_KEYS = ("lr", "weight_decay", "dropout")
# Fields every checkpoint has, with their types.
_REQUIRED = {
    "epoch": int,
    "config": dict,
    "dataset": dict,
    "model": dict,
    "optimizer": dict,
    "best_valid": (int, float),
    "best_epoch": int,
    "epochs": list,
    "torch_rng": torch.Tensor,
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
        raise OptionError(
            f"{path}: field 'torch_rng' is not a valid RNG state ({' '.join(str(exc).split())[:120]})"
        ) from None


@dataclass
class RunProgress:
    """What a run has done so far, saved with each checkpoint and restored on resume.

    Attributes:
        epochs: the epoch records of the run report.
        best_valid: the best model-selection score so far (validation accuracy, minus the RMSE of an edge-level
            regression, or minus the loss); -inf before any (minus an RMSE or a loss can be below -1).
        best_epoch: the epoch of that score (0 before any).
        best_state: the model's state dict at that epoch (None before any).
        start_epoch: the first epoch still to train.
        resumed_from: ``{"path", "epoch", "changed"}`` when resumed from a checkpoint, else None.
    """

    epochs: list[dict[str, Any]] = field(default_factory=list)
    best_valid: float = float("-inf")
    best_epoch: int = 0
    best_state: dict[str, torch.Tensor] | None = None
    start_epoch: int = 1
    resumed_from: dict[str, Any] | None = None


class Checkpointer:
    """Save a run to ``directory/checkpoint.pt`` after each epoch and resume from it.

    Args:
        directory: the ``--checkpoint`` directory.
        dataset: the dataset trained on (its fingerprint is saved and checked on resume).
        writes: whether this process writes the checkpoint and holds the directory's lock (rank 0 only).
        log: prints one informational line (changed options on resume).
    """

    def __init__(self, directory: str | Path, dataset: Dataset, *, writes: bool = True,
                 log: Callable[[str], None] = print) -> None:  # fmt: skip
        self.directory = Path(directory)
        self.path = self.directory / CHECKPOINT_FILE
        self.dataset = dataset
        self.writes = writes
        self.log = log
        self.lock: DirectoryLock | None = DirectoryLock(self.directory) if writes else None
        self._fingerprint: dict[str, Any] | None = None

    def _dataset_fingerprint(self) -> dict[str, Any]:
        if self._fingerprint is None:
            self._fingerprint = dataset_fingerprint(self.dataset)
        return self._fingerprint

    def state(
        self,
        epoch: int,
        config: dict[str, Any],
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        progress: RunProgress,
    ) -> dict[str, Any]:
        """The checkpoint of ``epoch``: options, dataset identity, model, optimizer, progress and RNG states."""
        state = {
            "epoch": epoch,
            "config": config,
            "dataset": {
                "num_nodes": self.dataset.num_nodes,
                "num_edges": self.dataset.num_edges,
                "fingerprint": self._dataset_fingerprint(),
            },
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "best_valid": progress.best_valid,
            "best_epoch": progress.best_epoch,
            "best_state": progress.best_state,
            "epochs": progress.epochs,
            "torch_rng": torch.get_rng_state(),
        }
        if torch.cuda.is_available():
            state["cuda_rng"] = [t.cpu() for t in torch.cuda.get_rng_state_all()]
        return state

    def save(self, state: dict[str, Any]) -> Path:
        """Write ``state`` (from :meth:`state`) atomically to ``checkpoint.pt``; only where this process writes."""
        if not self.writes:
            return self.path
        return save_torch_file(self.path, state)

    def _check_dataset(self, recorded: dict[str, Any]) -> None:
        path, dataset = self.path, self.dataset
        counts = {"num_nodes": dataset.num_nodes, "num_edges": dataset.num_edges}
        fingerprint = recorded.get("fingerprint")
        if isinstance(fingerprint, dict):
            mismatch = fingerprint_mismatch(fingerprint, dataset)
            if mismatch is not None:
                what, expected, found = mismatch
                raise OptionError(
                    f"{path}: checkpoint was made on another dataset than {dataset.path}: {what} expected "
                    f"{expected!r}, found {found!r}"
                )
        elif {key: recorded.get(key) for key in counts} != counts:  # older checkpoints: the counts only
            raise OptionError(f"{path}: checkpoint was made on another dataset ({recorded})")

    def _check_relation_fanouts(self, saved: dict[str, Any], config: dict[str, Any]) -> None:
        """OptionError unless every relation samples the same fanouts in the checkpoint and in this run
        (``fanouts`` resolved with ``fanouts_per_relation`` against the dataset's relations, so the order of
        the entries and ``5`` for ``5/5`` do not matter); a typed dataset only."""
        if not self.dataset.is_hetero:
            return
        schema = self.dataset.schema
        try:
            before = parse_relation_fanouts(saved.get("fanouts_per_relation"), schema, saved["fanouts"])
        except OptionError:
            before = None  # names another dataset's relations: the dataset check reports it
        after = parse_relation_fanouts(config.get("fanouts_per_relation"), schema, config["fanouts"])
        if before is None or before == after:
            return
        rel = schema.relation(next(rel_type for rel_type in after if before.get(rel_type) != after[rel_type]))
        raise OptionError(
            f"{self.path}: field 'fanouts_per_relation' gives relation {relation_label(schema, rel)!r} fanouts "
            f"{hop_text(before[rel.type])} in the checkpoint but {hop_text(after[rel.type])} "
            "in this run (use another --checkpoint directory)"
        )

    def resume(self, config: dict[str, Any], model: nn.Module, optimizer: torch.optim.Optimizer) -> RunProgress | None:
        """Load ``checkpoint.pt`` into ``model`` and ``optimizer`` and restore the RNG states.

        ``config`` is this run's :meth:`TrainConfig.to_dict`: the options of :data:`CHECKPOINT_KEYS` must
        match the checkpoint's; those of :data:`RESUME_CHANGEABLE_KEYS` may differ and are applied (the
        optimizer's lr and weight decay), logged and recorded in ``resumed_from["changed"]``. Returns the
        run's progress, or None when the directory holds no checkpoint yet. Raises :class:`OptionError` (one
        line) for a damaged or foreign file, other options or another dataset, and
        :class:`~graphtier.errors.ResourceError` when another run holds the directory.
        """
        if self.lock is not None:
            self.lock.check()  # refuse now, before any work, when another run trains into this directory
        path = self.path
        if not path.is_file():
            return None
        state = load_torch_file(path, str(path), "graphtier checkpoint")
        _check_layout(path, state)
        # a key missing from an older checkpoint means what it meant before the option existed
        saved = {**OLD_FILE_DEFAULTS, **state["config"]}
        for key in CHECKPOINT_KEYS:
            if saved.get(key) != config.get(key):
                raise OptionError(
                    f"{path}: field {key!r} is {saved.get(key)!r} in the checkpoint but {config.get(key)!r} in "
                    "this run (use another --checkpoint directory)"
                )
        self._check_relation_fanouts(saved, config)
        self._check_dataset(state["dataset"])
        try:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            if state.get("best_state") is not None:
                model.load_state_dict(state["best_state"])  # checked here, not after the last epoch
                model.load_state_dict(state["model"])
        except (RuntimeError, KeyError, ValueError, TypeError) as exc:
            raise OptionError(
                f"{path}: model or optimizer state does not fit this model ({' '.join(str(exc).split())[:160]})"
            ) from None
        changed = {
            key: {"checkpoint": saved[key], "run": config[key]}
            for key in RESUME_CHANGEABLE_KEYS
            if key in saved and saved[key] != config[key]
        }
        for group in optimizer.param_groups:  # the optimizer state restored the checkpoint's values
            group["lr"] = config["lr"]
            group["weight_decay"] = config["weight_decay"]
        restore_rng(path, state)
        progress = RunProgress(
            epochs=list(state["epochs"]),
            best_valid=float(state["best_valid"]),
            best_epoch=state["best_epoch"],
            best_state=state.get("best_state"),
            start_epoch=state["epoch"] + 1,
            resumed_from={"path": str(path), "epoch": state["epoch"], "changed": changed},
        )
        if changed:
            self.log(
                f"resuming {path} with changed options (applied from epoch {progress.start_epoch}): "
                + ", ".join(f"{key} {c['checkpoint']} -> {c['run']}" for key, c in changed.items())
            )
        return progress
