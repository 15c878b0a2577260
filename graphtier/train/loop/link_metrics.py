"""Link-prediction metrics: AUC and AP (the GAE protocol), MRR and Hits@K (the OGB protocol).

Every function takes numpy scores (any float dtype, CPU) and returns a Python float. Ties are handled as
the references do: AUC counts a tied positive/negative pair as half (Mann-Whitney U); AP is scikit-learn's
``average_precision_score`` (one step per distinct score); MRR and Hits@K with K negatives per positive follow
OGB's ``Evaluator`` for ogbl-citation2 (a positive's rank is the mean of its optimistic and pessimistic rank:
``1 + #(neg > pos) + #(neg == pos) / 2``); Hits@K with shared negative pairs follows ogbl-collab (a positive
counts when it scores strictly above the K-th highest negative; 1.0 when there are fewer than K negatives).
"""

from __future__ import annotations

import numpy as np


def _ranks_with_ties(values: np.ndarray) -> np.ndarray:
    """float64 [n]: 1-based ranks of ``values`` in ascending order, tied values sharing their mean rank."""
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], sorted_values.shape[0]]
    mean_rank = (starts + ends + 1) / 2.0  # ranks starts+1 .. ends, averaged
    ranks = np.empty(values.shape[0], dtype=np.float64)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def auc(positive: np.ndarray, negative: np.ndarray) -> float | None:
    """ROC AUC of positive scores [P] against negative scores [Q] (ties count half); None if either is empty."""
    pos = np.asarray(positive, dtype=np.float64).reshape(-1)
    neg = np.asarray(negative, dtype=np.float64).reshape(-1)
    if pos.size == 0 or neg.size == 0:
        return None
    ranks = _ranks_with_ties(np.concatenate([pos, neg]))
    u = float(ranks[: pos.size].sum()) - pos.size * (pos.size + 1) / 2.0
    return u / (pos.size * neg.size)


def average_precision(positive: np.ndarray, negative: np.ndarray) -> float | None:
    """Average precision (scikit-learn's definition: sum over distinct thresholds of recall step x precision)
    of positive scores [P] against negative scores [Q]; None without positives."""
    pos = np.asarray(positive, dtype=np.float64).reshape(-1)
    neg = np.asarray(negative, dtype=np.float64).reshape(-1)
    if pos.size == 0:
        return None
    scores = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(pos.size), np.zeros(neg.size)])
    order = np.argsort(-scores, kind="stable")
    scores, labels = scores[order], labels[order]
    last_of_threshold = np.r_[np.flatnonzero(scores[1:] != scores[:-1]), scores.size - 1]
    true_positives = np.cumsum(labels)[last_of_threshold]
    predicted = last_of_threshold + 1.0
    precision = true_positives / predicted
    recall_step = np.diff(np.r_[0.0, true_positives]) / pos.size
    return float((recall_step * precision).sum())


def positive_ranks(positive: np.ndarray, negatives: np.ndarray) -> np.ndarray:
    """float64 [P]: each positive's rank among its own negatives (OGB: ``1 + #(neg > pos) + #(neg == pos) / 2``).

    ``positive``: [P] scores; ``negatives``: [P, K] scores of each positive's K negatives.
    """
    pos = np.asarray(positive, dtype=np.float64).reshape(-1, 1)
    neg = np.asarray(negatives, dtype=np.float64)
    optimistic = (neg > pos).sum(axis=1)
    pessimistic = (neg >= pos).sum(axis=1)
    return 0.5 * (optimistic + pessimistic) + 1.0


def mrr(positive: np.ndarray, negatives: np.ndarray) -> float | None:
    """Mean reciprocal rank of each positive [P] among its K negatives [P, K] (OGB); None without positives."""
    if np.asarray(positive).size == 0:
        return None
    return float((1.0 / positive_ranks(positive, negatives)).mean())


def hits_at_k(positive: np.ndarray, negatives: np.ndarray, k: int) -> float | None:
    """Hits@K (OGB); None without positives.

    ``negatives`` [P, K'] (each positive's own negatives): the share of positives ranked ``<= k`` by
    :func:`positive_ranks`. ``negatives`` [Q] (negative pairs shared by all positives, ogbl-collab): the share
    of positives scoring strictly above the ``k``-th highest negative (1.0 with fewer than ``k`` negatives).
    """
    pos = np.asarray(positive, dtype=np.float64).reshape(-1)
    if pos.size == 0:
        return None
    neg = np.asarray(negatives, dtype=np.float64)
    if neg.ndim == 2:
        return float((positive_ranks(pos, neg) <= k).mean())
    if neg.size < k:
        return 1.0
    kth = np.partition(neg, neg.size - k)[neg.size - k]
    return float((pos > kth).mean())
