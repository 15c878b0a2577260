"""Training configuration and its validation (done before any work starts)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphtier.dataset import Dataset
from graphtier.dataset.outputs import check_outputs
from graphtier.dataset.resources import human_bytes, require_memory
from graphtier.errors import OptionError, ResourceError
from graphtier.memory import check_sample_on
from graphtier.sampling.neighbor import DEFAULT_FANOUTS, MAX_FANOUT, check_fanouts
from graphtier.store import FEATURE_MODES
from graphtier.train.balancer import BALANCE_MODES
from graphtier.train.checkpoint import CHECKPOINT_FILE
from graphtier.train.models import GCN_DEGREES, MODEL_NAMES, NORM_NAMES, gat_training_bytes

SAMPLER_NAMES = ("neighbor", "shadow")
# --gcn-degrees: "auto" picks one of GCN_DEGREES by how the final accuracy is measured (gcn_degrees_used)
GCN_DEGREES_OPTIONS = ("auto", *GCN_DEGREES)


def check_fanout(value: int, option: str = "--fanouts") -> int:
    """``value`` if it is -1 (all neighbours) or in [1, :data:`MAX_FANOUT`], else a one-line OptionError naming ``option``."""
    return check_fanouts([value], option)[0]


def parse_fanouts(text: str, option: str = "--fanouts") -> tuple[int, ...]:
    """Parse ``"25,10"`` into ``(25, 10)``; each entry -1 (all neighbours) or an integer in [1, 2^31 - 1].

    The first entry is the number of neighbours sampled for the seeds (PyG order).
    """
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    if not parts:
        raise OptionError(f"{option} expected a comma-separated list like 25,10, found {text!r}")
    fanouts = []
    for part in parts:
        try:
            value = int(part)
        except ValueError:
            raise OptionError(f"{option} expected integers in 1..{MAX_FANOUT} or -1, found {part!r}") from None
        fanouts.append(check_fanout(value, option))
    return tuple(fanouts)


SHARES_SUM_TOLERANCE = 1e-6


def check_shares_sum(values: tuple[float, ...] | list[float]) -> None:
    """Raise OptionError unless the shares sum to 1 (within 1e-6): they are not silently rescaled."""
    total = float(sum(values))
    if abs(total - 1.0) > SHARES_SUM_TOLERANCE:
        raise OptionError(
            f"--shares expected values summing to 1, found {','.join(f'{v:g}' for v in values)} (sum {total:g})"
        )


@dataclass
class TrainConfig:
    """Everything that defines a training run (recorded in the run report and the checkpoint).

    ``fanouts`` lists the first hop from the seeds first (PyG order). ``layers`` is the model depth:
    for the neighbour sampler it must equal ``len(fanouts)`` (None means that); the ShaDow sampler
    and the MLP accept any depth. ``gcn_degrees`` (``auto``, ``full`` or ``block``) picks the GCN's
    normalisation of sampled blocks (:class:`graphtier.train.models.BlockGCNConv`, :attr:`gcn_degrees_used`);
    other models ignore it, as they ignore ``heads``.
    """

    model: str = "sage"
    sampler: str = "neighbor"
    fanouts: tuple[int, ...] = DEFAULT_FANOUTS
    layers: int | None = None
    batch_size: int = 1024
    hidden: int = 256
    heads: int = 4
    norm: str = "none"
    gcn_degrees: str = "auto"
    dropout: float = 0.5
    epochs: int = 10
    lr: float = 0.003
    weight_decay: float = 0.0
    seed: int = 0
    device: str = "cpu"
    eval_every: int = 1
    eval_fanouts: tuple[int, ...] | None = None
    eval_batch_size: int = 4096
    full_inference: bool = False
    num_threads: int | None = None
    prefetch: int = 4
    checkpoint: str | None = None
    report: str | None = None
    save_model: str | None = None
    quiet: bool = False
    features_on: str = "cpu-gather"
    gpu_budget: str | None = None
    cache_budget: str | None = None
    ram_budget: str | None = None
    peer_partitions: int = 1
    sample_on: str = "cpu"
    topology_budget: str | None = None
    devices: tuple[str, ...] | None = None
    balance: str = "dynamic"
    cpu_share: float | None = None
    shares: tuple[float, ...] | None = None
    rebalance_every: int = 10
    cpu_threads: int | None = None
    workload_samples: int = 3

    @property
    def num_layers(self) -> int:
        return self.layers if self.layers is not None else len(self.fanouts)

    @property
    def gcn_degrees_used(self) -> str:
        """``full`` or ``block``: the GCN normalisation this run trains with.

        ``auto`` means ``full`` with ``--full-inference`` and ``block`` otherwise: measured
        (docs/decisions.md), a model trained with full-graph degrees is the better one under exact
        inference (+0.6 points on Cora, +1 on the bench graph), while under sampled evaluation its
        estimate is noisy and block degrees won by 5-11 points on the bench graph.
        """
        if self.gcn_degrees != "auto":
            return self.gcn_degrees
        return "full" if self.full_inference else "block"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["gcn_degrees"] = self.gcn_degrees_used  # the record says what ran, never "auto"
        out["fanouts"] = list(self.fanouts)
        out["eval_fanouts"] = list(self.eval_fanouts) if self.eval_fanouts is not None else None
        out["devices"] = list(self.devices) if self.devices is not None else None
        out["shares"] = list(self.shares) if self.shares is not None else None
        out["num_layers"] = self.num_layers
        return out

    def validate(self, dataset: Dataset) -> None:
        """Raise :class:`OptionError` (one line) for any option that cannot work with ``dataset``."""
        if self.model not in MODEL_NAMES:
            raise OptionError(f"--model expected one of {', '.join(MODEL_NAMES)}, found {self.model!r}")
        if self.sampler not in SAMPLER_NAMES:
            raise OptionError(f"--sampler expected one of {', '.join(SAMPLER_NAMES)}, found {self.sampler!r}")
        if self.norm not in NORM_NAMES:
            raise OptionError(f"--norm expected one of {', '.join(NORM_NAMES)}, found {self.norm!r}")
        if self.gcn_degrees not in GCN_DEGREES_OPTIONS:
            raise OptionError(
                f"--gcn-degrees expected one of {', '.join(GCN_DEGREES_OPTIONS)}, found {self.gcn_degrees!r}"
            )
        if not self.fanouts:
            raise OptionError("--fanouts expected at least one fanout, found none")
        for fanout in self.fanouts:
            check_fanout(fanout, "--fanouts")
        for fanout in self.eval_fanouts or ():
            check_fanout(fanout, "--eval-fanouts")
        if self.sampler == "neighbor" and self.model != "mlp" and self.layers not in (None, len(self.fanouts)):
            raise OptionError(
                f"--layers {self.layers} must equal the number of fanouts ({len(self.fanouts)}) "
                "with the neighbour sampler"
            )
        if self.eval_fanouts is not None and self.sampler == "neighbor" and len(self.eval_fanouts) != len(self.fanouts):
            raise OptionError(
                f"--eval-fanouts expected {len(self.fanouts)} entries like --fanouts, found {len(self.eval_fanouts)}"
            )
        if self.num_layers < 1:
            raise OptionError(f"--layers expected a positive integer, found {self.num_layers}")
        if self.features_on not in FEATURE_MODES:
            raise OptionError(f"--features-on expected one of {', '.join(FEATURE_MODES)}, found {self.features_on!r}")
        if self.sample_on == "gpu" and self.sampler != "neighbor":
            raise OptionError(f"--sample-on gpu: runs the neighbour sampler only, found --sampler {self.sampler}")
        if self.sample_on == "gpu" and self.devices is not None:
            raise OptionError("--sample-on gpu: not available with --devices (multi-process runs sample on the CPU)")
        if self.balance not in BALANCE_MODES:
            raise OptionError(f"--balance expected one of {', '.join(BALANCE_MODES)}, found {self.balance!r}")
        if self.cpu_share is not None and not 0.0 < self.cpu_share < 1.0:
            raise OptionError(f"--cpu-share expected a value in (0, 1), found {self.cpu_share}")
        if self.shares is not None:
            if self.devices is None or len(self.shares) != len(self.devices):
                raise OptionError(
                    f"--shares expected one value per --devices entry ({len(self.devices or ())}), "
                    f"found {len(self.shares)}"
                )
            if any(not share > 0 for share in self.shares):
                raise OptionError(f"--shares expected positive values, found {list(self.shares)}")
            check_shares_sum(self.shares)
        for name in (
            "batch_size", "hidden", "epochs", "eval_every", "eval_batch_size", "heads",
            "rebalance_every", "workload_samples", "peer_partitions",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise OptionError(f"--{name.replace('_', '-')} expected a positive integer, found {value!r}")
        if not isinstance(self.prefetch, int) or self.prefetch < 0:
            raise OptionError(f"--prefetch expected a non-negative integer, found {self.prefetch!r}")
        for name in ("num_threads", "cpu_threads"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise OptionError(f"--{name.replace('_', '-')} expected a positive integer, found {value}")
        if not 0.0 <= self.dropout < 1.0:
            raise OptionError(f"--dropout expected a value in [0, 1), found {self.dropout}")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise OptionError(f"--lr expected a finite number > 0, found {self.lr}")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise OptionError(f"--weight-decay expected a finite number >= 0, found {self.weight_decay}")
        if self.model == "gat" and self.hidden % self.heads:
            raise OptionError(f"--hidden {self.hidden} must be a multiple of --heads {self.heads} for GAT")
        device = self.device
        if device != "cpu" and not device.startswith("cuda"):
            raise OptionError(f"--device expected cpu or cuda[:N], found {device!r}")
        if device.startswith("cuda"):
            if not torch.cuda.is_available():
                raise OptionError(f"--device {device}: CUDA is not available on this machine (use --device cpu)")
            index = torch.device(device).index or 0
            if index >= torch.cuda.device_count():
                raise OptionError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s) present")
        check_sample_on(self.sample_on, torch.device(device), self.topology_budget)
        path = dataset.path
        if dataset.num_classes == 0 or dataset.labels is None:
            raise OptionError(f"{path}: dataset has no labels (num_classes 0); training needs labels")
        if dataset.features is None:
            raise OptionError(
                f"{path}: dataset has no features (feature_dim 0); re-import it with --synthetic-features DIM"
            )
        train_idx = dataset.train_idx
        if train_idx is None or len(train_idx) == 0:
            raise OptionError(f"{path}: dataset has no train split (train_idx.npy); re-import it with --split")
        if dataset.labels is not None and (dataset.labels[train_idx] < 0).any():
            raise OptionError(f"{path}/labels.npy: expected labels >= 0 for every train node, found -1")
        self.check_outputs(dataset)
        if self.model == "gat" and self.sampler == "neighbor":
            self.check_gat_memory(dataset)

    def check_gat_memory(self, dataset: Dataset) -> None:
        """Raise :class:`ResourceError` when GAT's per-edge attention tensors of the largest mini-batch that
        ``--batch-size`` and ``--fanouts`` can draw on ``dataset`` (:func:`gat_training_bytes`) exceed the
        memory of ``--device`` (available RAM on the CPU, free memory on a GPU)."""
        needed = gat_training_bytes(
            self.batch_size, self.fanouts, dataset.in_degrees(), self.hidden, self.heads, dataset.num_classes
        )
        what = (
            f"--model gat with --batch-size {self.batch_size} --fanouts {','.join(map(str, self.fanouts))} "
            f"--hidden {self.hidden} --heads {self.heads} (attention tensors of the largest mini-batch these can "
            "sample; lower the fanouts or the batch size)"
        )
        device = torch.device(self.device)
        if device.type != "cuda":
            require_memory(needed, what)
            return
        free = int(torch.cuda.mem_get_info(device)[0])
        if needed > free:
            raise ResourceError(
                f"{what}: needs about {human_bytes(needed)} ({needed:,} bytes) of GPU memory, "
                f"only {human_bytes(free)} free on {device}"
            )

    def check_outputs(self, dataset: Dataset) -> None:
        """Raise :class:`OptionError` unless ``--checkpoint``, ``--report`` and ``--save-model`` can be written
        (distinct paths, none of them a file of ``dataset``): checked before training, not after it."""
        checkpoint_file = None if self.checkpoint is None else Path(self.checkpoint) / CHECKPOINT_FILE
        check_outputs(
            [
                ("--checkpoint", self.checkpoint, "dir"),
                ("--checkpoint", checkpoint_file, "file"),
                ("--report", self.report, "file"),
                ("--save-model", self.save_model, "file"),
            ],
            dataset=dataset.path,
        )
