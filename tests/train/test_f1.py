"""Macro- and micro-F1 beside accuracy: the counts against scikit-learn (or a plain reference), the report and line."""

from __future__ import annotations

import numpy as np
import pytest

from graphtier.dataset import Dataset
from graphtier.train import train
from graphtier.train.loop.evaluation import split_scores
from graphtier.train.loop.report import final_summary


def _reference_f1(predicted: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Macro- and micro-F1 from precision and recall per class, over the classes predicted or present."""
    scores = []
    for c in np.union1d(predicted, labels):
        tp = np.sum((predicted == c) & (labels == c))
        precision = tp / np.sum(predicted == c) if np.any(predicted == c) else 0.0
        recall = tp / np.sum(labels == c) if np.any(labels == c) else 0.0
        scores.append(0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall))
    return float(np.mean(scores)), float(np.mean(predicted == labels))


CASES = [
    (np.array([0, 1, 2, 2, 1, 0, 0]), np.array([0, 2, 2, 2, 1, 1, 0])),
    (np.array([3, 3, 3, 3]), np.array([0, 1, 3, 3])),  # a constant predictor (the majority baseline)
    (np.random.default_rng(0).integers(0, 7, 500), np.random.default_rng(1).integers(0, 5, 500)),
]


@pytest.mark.parametrize(("predicted", "labels"), CASES)
def test_f1_matches_a_plain_reference(predicted: np.ndarray, labels: np.ndarray) -> None:
    scores = split_scores(predicted, labels, 8, "test")
    macro, micro = _reference_f1(predicted, labels)
    assert scores["test_macro_f1"] == pytest.approx(macro, abs=1e-12)
    assert scores["test_micro_f1"] == pytest.approx(micro, abs=1e-12)
    assert scores["test_acc"] == pytest.approx(micro, abs=1e-12)


@pytest.mark.parametrize(("predicted", "labels"), CASES)
def test_f1_matches_scikit_learn(predicted: np.ndarray, labels: np.ndarray) -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    scores = split_scores(predicted, labels, 8, "test")
    assert scores["test_macro_f1"] == pytest.approx(metrics.f1_score(labels, predicted, average="macro"), abs=1e-12)
    assert scores["test_micro_f1"] == pytest.approx(metrics.f1_score(labels, predicted, average="micro"), abs=1e-12)


def test_unlabelled_nodes_count_nowhere_and_an_empty_split_is_none() -> None:
    scores = split_scores(np.array([0, 1, 1]), np.array([0, -1, 1]), 2, "valid")
    assert scores["valid_macro_f1"] == 1.0 and scores["valid_micro_f1"] == 1.0
    assert split_scores(np.array([]), np.array([]), 2, "valid")["valid_macro_f1"] is None


@pytest.mark.parametrize("full_inference", [False, True])
def test_train_reports_f1_for_the_model_and_the_majority_baseline(tiny_dataset: Dataset, full_inference: bool) -> None:
    result = train(tiny_dataset, model="sage", fanouts=(5, 5), hidden=16, epochs=2, batch_size=64, quiet=True,
                   num_threads=1, prefetch=1, full_inference=full_inference)  # fmt: skip
    final, epoch = result.report["final"], result.report["epochs"][-1]
    for split in ("valid", "test"):
        assert 0.0 <= final[f"{split}_macro_f1"] <= 1.0
        assert final[f"{split}_micro_f1"] == pytest.approx(final[f"{split}_acc"])  # one label per node
        assert epoch[f"{split}_micro_f1"] == pytest.approx(epoch[f"{split}_acc"])
    if not full_inference:  # the best epoch's sampled figures are reused
        assert final["test_macro_f1"] == epoch["test_macro_f1"]
    labels = np.asarray(tiny_dataset.labels)[np.asarray(tiny_dataset.test_idx)]
    majority = np.full(labels.shape, final["majority_class"])
    macro, micro = _reference_f1(majority, labels)
    assert final["test_majority_macro_f1"] == pytest.approx(macro) and final["test_majority_micro_f1"] == pytest.approx(
        micro
    )
    line = final_summary(final, result.report["config"])
    assert f"test_acc {final['test_acc']:.4f}  macro-F1 {final['test_macro_f1']:.4f}  micro-F1" in line
    assert f"majority-class test_acc {final['test_majority_acc']:.4f}  macro-F1 {macro:.4f}" in line
