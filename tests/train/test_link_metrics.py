"""Link metrics against plain references on random inputs with ties, and known values."""

from __future__ import annotations

import numpy as np
import pytest

from graphtier.train.loop.link_metrics import auc, average_precision, hits_at_k, mrr


def auc_reference(pos: np.ndarray, neg: np.ndarray) -> float:
    """Every (positive, negative) pair: 1 when the positive scores higher, 0.5 on a tie."""
    wins = [1.0 if p > q else 0.5 if p == q else 0.0 for p in pos for q in neg]
    return float(np.mean(wins))


def ap_reference(pos: np.ndarray, neg: np.ndarray) -> float:
    """scikit-learn's definition: sum over distinct thresholds (descending) of (R_n - R_{n-1}) * P_n."""
    scores = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    total, previous_recall = 0.0, 0.0
    for threshold in sorted(set(scores.tolist()), reverse=True):
        chosen = scores >= threshold
        precision = labels[chosen].sum() / chosen.sum()
        recall = labels[chosen].sum() / len(pos)
        total += (recall - previous_recall) * precision
        previous_recall = recall
    return total


def mrr_reference(pos: np.ndarray, neg: np.ndarray) -> float:
    ranks = [1 + (row > p).sum() + 0.5 * (row == p).sum() for p, row in zip(pos, neg)]
    return float(np.mean([1.0 / r for r in ranks]))


def hits_reference(pos: np.ndarray, neg: np.ndarray, k: int) -> float:
    if neg.ndim == 2:
        ranks = [1 + (row > p).sum() + 0.5 * (row == p).sum() for p, row in zip(pos, neg)]
        return float(np.mean([r <= k for r in ranks]))
    if len(neg) < k:
        return 1.0
    kth = sorted(neg.tolist(), reverse=True)[k - 1]
    return float(np.mean([p > kth for p in pos]))


@pytest.mark.parametrize("seed", range(8))
def test_metrics_match_the_references_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p, q, k = int(rng.integers(1, 30)), int(rng.integers(1, 40)), int(rng.integers(1, 6))
    pos = rng.integers(0, 6, p).astype(np.float32)  # few distinct values: many ties
    neg = rng.integers(0, 5, q).astype(np.float32)
    per_positive = rng.integers(0, 6, (p, k)).astype(np.float32)
    assert auc(pos, neg) == pytest.approx(auc_reference(pos, neg))
    assert average_precision(pos, neg) == pytest.approx(ap_reference(pos, neg))
    assert mrr(pos, per_positive) == pytest.approx(mrr_reference(pos, per_positive))
    for hits_k in (1, 3, 10, 50):
        assert hits_at_k(pos, per_positive, hits_k) == pytest.approx(hits_reference(pos, per_positive, hits_k))
        assert hits_at_k(pos, neg, hits_k) == pytest.approx(hits_reference(pos, neg, hits_k))


def test_known_values() -> None:
    # scikit-learn's documented example: average_precision_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) = 0.8333
    pos, neg = np.array([0.35, 0.8]), np.array([0.1, 0.4])
    assert average_precision(pos, neg) == pytest.approx(0.833333, abs=1e-6)
    assert auc(pos, neg) == pytest.approx(0.75)
    assert auc(np.array([1.0]), np.array([1.0])) == 0.5
    # one positive tied with both its negatives: rank 1 + 0 + 1 = 2
    assert mrr(np.array([1.0]), np.array([[1.0, 1.0]])) == pytest.approx(0.5)
    # ogbl-collab: strictly above the k-th highest negative
    assert hits_at_k(np.array([3.0, 2.0]), np.array([2.0, 1.0, 0.0]), 1) == 0.5
    assert auc(np.empty(0), neg) is None and average_precision(np.empty(0), neg) is None
