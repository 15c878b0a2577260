"""Per-node seed weights of a training epoch: how likely each node is a seed of a batch, how often per epoch.

The seed-driven scores (``fwr``, ``wrpr``: :mod:`graphtier.graph.scores`) start from these weights, so one
recurrence serves every task:

* node classification: the seeds are the training nodes, each once per epoch, shuffled into batches of ``B``;
* link prediction: the seeds of a batch of ``B`` training pairs are both endpoints of every pair plus
  ``num_negatives`` negative destinations per pair, drawn independently from a distribution over the nodes
  (uniform over ``dst_range``, or in-degree^0.75: :mod:`graphtier.sampling.link.sampler`).

All arrays are float64 [N] numpy on the CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.special

from graphtier.errors import OptionError


@dataclass(frozen=True)
class SeedWeights:
    """The seeds of one epoch, per node.

    Attributes:
        batch_chance: float64 [N], the chance that a node is a seed of a given batch (``q_0`` of ``fwr``).
        epoch_count: float64 [N], the expected times a node is a seed in one epoch (``r_0`` of ``fwr-sum``,
            the start of ``wrpr``).
        num_batches: batches per epoch.
    """

    batch_chance: np.ndarray
    epoch_count: np.ndarray
    num_batches: int


def _check_batch_size(batch_size: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise OptionError(f"{{batch_size}}: expected a positive integer, found {batch_size!r}", options=("batch_size",))


def node_seed_weights(num_nodes: int, train_idx: np.ndarray, batch_size: int) -> SeedWeights:
    """Weights of a node-classification epoch over ``train_idx`` (int64 [T], the unique training nodes count).

    ``batch_chance`` is ``min(1, B / T)`` on the training nodes, ``epoch_count`` 1; ``ceil(T / B)`` batches.
    """
    _check_batch_size(batch_size)
    train_idx = np.asarray(train_idx, dtype=np.int64)
    num_train = int(np.unique(train_idx).size)
    chance = np.zeros(num_nodes, dtype=np.float64)
    count = np.zeros(num_nodes, dtype=np.float64)
    if num_train:
        chance[train_idx] = min(1.0, batch_size / num_train)
        count[train_idx] = 1.0
    return SeedWeights(chance, count, -(-num_train // batch_size))


def link_seed_weights(
    num_nodes: int,
    pairs: np.ndarray,
    batch_size: int,
    *,
    num_negatives: int,
    negative_chance: np.ndarray | None,
) -> SeedWeights:
    """Weights of a link-prediction epoch over the training pairs ``pairs`` (int64 [P, 2] ``(src, dst)``).

    A node in ``c`` pairs (as source or destination) misses a batch of ``b = min(B, P)`` pairs drawn
    without replacement with the hypergeometric chance ``C(P - c, b) / C(P, b)``; it misses all ``b * k``
    negative draws (``k = num_negatives``, each landing on it with ``negative_chance`` float64 [N], summing to
    1 over the nodes; None when ``k == 0``) with ``(1 - negative_chance) ** (b * k)``, independently. So
    ``batch_chance = 1 - miss_pairs * miss_negatives`` and ``epoch_count`` = the node's endpoint slots
    ``+ P * k * negative_chance``;
    ``ceil(P / B)`` batches.
    """
    _check_batch_size(batch_size)
    pairs = np.asarray(pairs)
    num_pairs = int(pairs.shape[0])
    flat = pairs.reshape(-1).astype(np.int64)
    slots = np.bincount(flat, minlength=num_nodes).astype(np.float64)
    count = slots.copy()
    self_pairs = flat[0::2][flat[0::2] == flat[1::2]]
    slots -= np.bincount(self_pairs, minlength=num_nodes)  # a pair (u, u) is one pair holding u
    chance = np.zeros(num_nodes, dtype=np.float64)
    if num_pairs == 0:
        return SeedWeights(chance, count, 0)
    drawn = min(batch_size, num_pairs)
    kept = num_pairs - slots  # pairs that do not hold the node
    with np.errstate(invalid="ignore"):
        log_miss = (
            scipy.special.gammaln(kept + 1)
            - scipy.special.gammaln(kept - drawn + 1)
            - scipy.special.gammaln(num_pairs + 1)
            + scipy.special.gammaln(num_pairs - drawn + 1)
        )
    miss = np.where(kept >= drawn, np.exp(np.minimum(log_miss, 0.0)), 0.0)
    miss[slots == 0] = 1.0  # exactly: the log-gamma terms cancel only to rounding
    if num_negatives:
        if negative_chance is None:
            raise ValueError("negatives need their per-node chance")
        negative_chance = np.asarray(negative_chance, dtype=np.float64)
        with np.errstate(divide="ignore"):  # a node every draw lands on: log1p(-1) = -inf, never missed
            miss = miss * np.exp(drawn * num_negatives * np.log1p(-np.minimum(negative_chance, 1.0)))
        count += num_pairs * num_negatives * negative_chance
    chance[:] = 1.0 - miss
    return SeedWeights(chance, count, -(-num_pairs // batch_size))
