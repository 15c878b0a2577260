"""What :func:`graphtier.train.train` returns: the trained model together with the run report."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import torch

from graphtier.train.options.config import TrainConfig

__all__ = ["TrainResult"]


class TrainResult(Mapping[str, Any]):
    """What :func:`train` returns: the trained model and the run report.

    ``result.model`` is the best-validation model (eval mode), ``result.report`` the run report dict;
    the result also reads like that report (``result["final"]["test_acc"]``, ``result.keys()``).
    """

    def __init__(self, model: torch.nn.Module, report: dict[str, Any], config: TrainConfig) -> None:
        self.model = model
        self.report = report
        self.config = config

    def __getitem__(self, key: str) -> Any:
        return self.report[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.report)

    def __len__(self) -> int:
        return len(self.report)

    def __repr__(self) -> str:
        final = self.report.get("final", {})
        key = "test_auc" if "test_auc" in final else "test_acc"
        return f"TrainResult(model={type(self.model).__name__}, {key}={final.get(key)})"
