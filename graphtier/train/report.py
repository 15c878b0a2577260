"""The run report written by ``graphtier train --report run.json`` (fields in docs/report-format.md)."""

from __future__ import annotations

import json
import os
import platform
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numba
import numpy as np
import torch

from graphtier.dataset import Dataset

REPORT_VERSION = 1


def environment_info(device: torch.device) -> dict[str, Any]:
    """Versions, device and thread counts of this process."""
    import torch_geometric

    from graphtier import __version__

    info: dict[str, Any] = {
        "graphtier": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_geometric": torch_geometric.__version__,
        "numba": numba.__version__,
        "numpy": np.__version__,
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "numba_threads": numba.get_num_threads(),
    }
    return info


@dataclass
class RunReport:
    """Accumulates a training run's configuration, per-epoch records and final result."""

    config: dict[str, Any]
    dataset: Dataset
    environment: dict[str, Any]
    epochs: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0
    resumed_from: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        ds = self.dataset

        def split_size(idx: np.ndarray | None) -> int:
            return 0 if idx is None else int(idx.shape[0])

        return {
            "report_version": REPORT_VERSION,
            "config": self.config,
            "dataset": {
                "path": str(ds.path),
                "name": ds.name,
                "num_nodes": ds.num_nodes,
                "num_edges": ds.num_edges,
                "feature_dim": ds.feature_dim,
                "feature_dtype": ds.meta.get("feature_dtype"),
                "num_classes": ds.num_classes,
                "node_order": ds.meta.get("node_order"),
                "train_size": split_size(ds.train_idx),
                "valid_size": split_size(ds.valid_idx),
                "test_size": split_size(ds.test_idx),
            },
            "environment": self.environment,
            "resumed_from": self.resumed_from,
            "epochs": self.epochs,
            "final": self.final,
            "wall_seconds": self.wall_seconds,
        }

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the report as JSON, atomically (temporary file + rename)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.tmp-{os.getpid()}"
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        os.replace(tmp, target)
