"""Edge-level targets of ``--task link`` (``--link-target``): learn each labelled pair's value, not whether it exists.

A dataset whose edge split has ``link_{split}_label.npy`` (float32 [P], row-aligned with ``link_{split}.npy``;
``meta.json`` ``link.label``; a MovieLens rating, a Bitcoin trust score) can be trained on those labels instead of
on edge existence (PyG's ``edge_label`` for regression, as GC-MC and PyG's MovieLens example do):

- ``regression``: the decoder's output is the predicted value; MSE loss; RMSE and MAE, and the baseline that predicts
  the training pairs' mean (``test_mean_rmse``, ``test_mean_mae``);
- ``binary``: the target is ``label > threshold`` (``--link-threshold``, default 0: a positive trust score); BCE
  with logits; AUC and AP (:mod:`~graphtier.train.loop.link_metrics`), and the majority baseline (one constant
  score for every pair: AUC 0.5, AP the positive share; ``test_majority_auc``, ``test_majority_ap``).

No negatives are sampled: the supervision pairs are the labelled edges, and each batch's target edges are still
excluded from message passing. Evaluation scores each split's positives only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from graphtier.dataset.edges.edge_data import link_labels
from graphtier.dataset.edges.link_split import LINK_SPLITS
from graphtier.dataset.format import Dataset
from graphtier.train.loop.link_metrics import auc, average_precision
from graphtier.train.options.config import require_edge_targets

REGRESSION_METRICS = ("rmse", "mae")
BINARY_METRICS = ("auc", "ap")


def regression_metrics(split: str, predicted: np.ndarray, labels: np.ndarray) -> dict[str, float | None]:
    """``{split}_rmse`` and ``{split}_mae`` of predictions [P] against labels [P] (float64 sums; None when empty)."""
    pred = np.asarray(predicted, dtype=np.float64).reshape(-1)
    true = np.asarray(labels, dtype=np.float64).reshape(-1)
    if pred.size == 0:
        return {f"{split}_rmse": None, f"{split}_mae": None}
    error = pred - true
    return {f"{split}_rmse": float(np.sqrt(np.mean(error * error))), f"{split}_mae": float(np.mean(np.abs(error)))}


def binary_metrics(split: str, scores: np.ndarray, targets: np.ndarray) -> dict[str, float | None]:
    """``{split}_auc`` and ``{split}_ap`` of scores [P] against 0/1 targets [P] (None when a class is missing)."""
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    positive = np.asarray(targets).reshape(-1) > 0.5
    return {f"{split}_auc": auc(scores[positive], scores[~positive]),
            f"{split}_ap": average_precision(scores[positive], scores[~positive])}  # fmt: skip


@dataclass(frozen=True)
class EdgeTarget:
    """The edge-level target of a link run: ``kind`` (``regression`` or ``binary``), the ``threshold`` of
    ``binary``, and ``labels``: float32 [P] per split (``train``, ``valid``, ``test``), row-aligned with its pairs."""

    kind: str
    threshold: float
    labels: dict[str, np.ndarray]

    @classmethod
    def of(cls, dataset: Dataset, kind: str, threshold: float = 0.0) -> EdgeTarget:
        """The target ``kind`` of ``dataset``'s edge split; :class:`OptionError` when it has no edge-level targets."""
        require_edge_targets(dataset, kind)
        labels = {}
        for split in LINK_SPLITS:
            found = link_labels(dataset, split)
            labels[split] = np.asarray(found if found is not None else np.empty(0), dtype=np.float32)
        return cls(kind, float(threshold), labels)

    @property
    def regression(self) -> bool:
        return self.kind == "regression"

    def values(self, split: str, rows: np.ndarray | None = None) -> np.ndarray:
        """float32 [P] (or [len(rows)]): the targets of ``split``'s pairs (``binary``: 1.0 where label > threshold)."""
        labels = self.labels[split] if rows is None else self.labels[split][np.asarray(rows, dtype=np.int64)]
        return labels if self.regression else (labels > self.threshold).astype(np.float32)

    @property
    def score_key(self) -> str:
        """The per-epoch metric that picks the best epoch (see :attr:`higher_is_better`)."""
        return "valid_rmse" if self.regression else "valid_auc"

    @property
    def higher_is_better(self) -> bool:
        return not self.regression

    def epoch_keys(self) -> list[str]:
        """Report keys of the per-epoch validation."""
        return [f"valid_{m}" for m in (REGRESSION_METRICS if self.regression else BINARY_METRICS)]

    def loss(self, outputs: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        """MSE of the predicted values (regression) or BCE with logits (binary) against targets ``y`` [M]."""
        if self.regression:
            return F.mse_loss(outputs, y, reduction=reduction)
        return F.binary_cross_entropy_with_logits(outputs, y, reduction=reduction)

    def correct(self, outputs: torch.Tensor, y: torch.Tensor) -> int:
        """Train accuracy's numerator: predictions within 0.5 of the value (regression: the rounded rating is
        right), or on the right side of the logit 0 (binary)."""
        if self.regression:
            return int(((outputs - y).abs() < 0.5).sum())
        return int(((outputs > 0).to(y.dtype) == y).sum())

    def metrics(self, split: str, outputs: np.ndarray) -> dict[str, float | None]:
        """The metrics of ``split`` from the model's outputs [P] on its pairs (predicted values or logits)."""
        if self.regression:
            return regression_metrics(split, outputs, self.values(split))
        return binary_metrics(split, outputs, self.values(split))

    def baseline(self) -> dict[str, float | None]:
        """The test metrics of the trivial predictor the model must beat: the training pairs' mean value
        (``test_mean_rmse``, ``_mae``), or one constant score for every pair (``test_majority_auc``, ``_ap``)."""
        train, test = self.values("train"), self.values("test")
        if self.regression:
            constant = float(np.mean(train, dtype=np.float64)) if train.size else 0.0
            found = regression_metrics("test", np.full(test.shape[0], constant), test)
            return {key.replace("test_", "test_mean_", 1): value for key, value in found.items()}
        found = binary_metrics("test", np.zeros(test.shape[0]), test)
        return {key.replace("test_", "test_majority_", 1): value for key, value in found.items()}

    def initial_bias(self) -> float:
        """Where the decoder's bias starts: the training mean (regression) or the log-odds of its positive share
        (binary), so that the first epoch starts from the baseline instead of from 0."""
        train = self.values("train").astype(np.float64)
        if train.size == 0:
            return 0.0
        if self.regression:
            return float(train.mean())
        share = float(np.clip(train.mean(), 1e-6, 1 - 1e-6))
        return float(np.log(share / (1.0 - share)))
