"""The pair table of a link sampler: its pairs, their labels or negatives, their times, and batches of its rows.

:class:`PairTable` is what :class:`~graphtier.sampling.link.sampler.LinkSampler` keeps of its pairs, whatever the schema:
the table, the labels (evaluation) or ``num_negatives`` negatives per positive (training), drawn by
:class:`NegativeDestinations` from one random stream per (seed, batch id), and the pairs' times (a split by time);
it turns a batch of pairs into the seeds of one neighbour-sampler call (:meth:`PairTable.pair_seeds`) and the
sampled rows back into scored pairs (:meth:`PairTable.pair_rows`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from graphtier._choices import NEGATIVE_SAMPLING
from graphtier.errors import OptionError

DEGREE_EXPONENT = 0.75


class NegativeDestinations:
    """Draws negative destinations from ``[lo, hi)``: uniformly, or by in-degree^0.75 (``degree``).

    ``in_degrees``: int [N] in-degrees of the message-passing graph (used by ``degree`` only). A degree draw
    is a binary search of a uniform number in the weights' prefix sums: O(log n) per draw; nodes of
    degree 0 are never drawn.
    """

    def __init__(self, how: str, dst_range: tuple[int, int], in_degrees: np.ndarray | None = None) -> None:
        if how not in NEGATIVE_SAMPLING:
            raise OptionError.invalid("negative_sampling", f"one of {', '.join(NEGATIVE_SAMPLING)}", how)
        self.how = how
        self.lo, self.hi = int(dst_range[0]), int(dst_range[1])
        self._cumulative: np.ndarray | None = None
        if how == "degree":
            if in_degrees is None:
                raise ValueError("degree negatives need the in-degrees")
            weights = np.asarray(in_degrees[self.lo : self.hi], dtype=np.float64) ** DEGREE_EXPONENT
            cumulative = np.cumsum(weights)
            if cumulative.size and cumulative[-1] > 0:  # no edges at all: uniform
                self._cumulative = cumulative
                self._last_drawable = int(np.flatnonzero(weights)[-1])

    def probabilities(self, num_nodes: int) -> np.ndarray:
        """float64 [num_nodes]: the chance one draw lands on each node (0 outside ``[lo, hi)``)."""
        chances = np.zeros(num_nodes, dtype=np.float64)
        if self._cumulative is None:
            chances[self.lo : self.hi] = 1.0 / (self.hi - self.lo)
        else:
            chances[self.lo : self.hi] = np.diff(self._cumulative, prepend=0.0) / self._cumulative[-1]
        return chances

    def draw(self, rng: np.random.Generator, count: int) -> np.ndarray:
        """int64 [count] destination ids in ``[lo, hi)``."""
        if self._cumulative is None:
            return rng.integers(self.lo, self.hi, size=count, dtype=np.int64)
        targets = rng.random(count) * self._cumulative[-1]
        picks = np.searchsorted(self._cumulative, targets, side="right")
        # a product rounded up to the total would pick past the last node of positive weight
        return self.lo + np.minimum(picks, self._last_drawable).astype(np.int64)


class PairTable:
    """What the link samplers share: the pair table (int64 [P, 2]) with its labels (float32 [P], evaluation) or
    ``num_negatives`` negatives per positive (training), its times (int64 [P], a split by time), the batches of rows
    of the table (:meth:`sample`), the negatives' random stream and the seeds' times."""

    pairs: np.ndarray
    labels: np.ndarray | None
    times: np.ndarray | None
    num_negatives: int
    negatives: NegativeDestinations | None
    exclude: bool
    seed: int

    def _set_pairs(
        self,
        pairs: np.ndarray,
        labels: np.ndarray | None,
        times: np.ndarray | None,
        num_negatives: int,
        negatives: NegativeDestinations | None,
        dst_range: tuple[int, int],
        exclude: bool,
        seed: int,
    ) -> None:
        """Check and keep the table; uniform negatives over ``dst_range`` when none are given."""
        self.pairs = np.asarray(pairs)
        self.labels = None if labels is None else np.asarray(labels, dtype=np.float32)
        self.num_negatives = int(num_negatives) if labels is None else 0
        if self.num_negatives and negatives is None:
            negatives = NegativeDestinations("uniform", dst_range)
        self.negatives = negatives
        self.times = None if times is None else np.asarray(times, dtype=np.int64)
        if self.times is not None and self.times.shape != (self.pairs.shape[0],):
            raise OptionError(
                f"times: expected one time per pair ({self.pairs.shape[0]}), found shape {self.times.shape}"
            )
        self.exclude = exclude and labels is None
        self.seed = int(seed)

    def sample(self, pair_ids: np.ndarray | torch.Tensor, batch_id: int) -> Any:
        """The batch of pair rows ``pair_ids`` (int [B]); ``batch_id`` picks the random streams."""
        ids = np.asarray(pair_ids.cpu() if isinstance(pair_ids, torch.Tensor) else pair_ids, dtype=np.int64)
        labels = None if self.labels is None else self.labels[ids]
        times = None if self.times is None else self.times[ids]
        return self.sample_pairs(self.pairs[ids], batch_id, pair_ids=ids, labels=labels, times=times)

    def sample_pairs(
        self, chosen: np.ndarray, batch_id: int, *, pair_ids: np.ndarray | None = None,
        labels: np.ndarray | None = None, times: np.ndarray | None = None,
    ) -> Any:  # fmt: skip
        raise NotImplementedError

    def pair_seeds(
        self, chosen: np.ndarray, batch_id: int, pair_ids: np.ndarray | None, times: np.ndarray | None,
        src_offset: int = 0, dst_offset: int = 0,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:  # fmt: skip
        """The seeds of the pairs ``chosen`` (int [B, 2]): ``(ids int64 [B]`` (``pair_ids``, default ``arange(B)``),
        ``seeds int64 [2B + B * k]`` (the sources, the destinations, then each pair's negatives; ``src_offset`` /
        ``dst_offset`` added: a typed graph's global ids), ``seed times`` (:meth:`seed_times`) or None)."""
        chosen = np.asarray(chosen)
        ids = np.arange(chosen.shape[0], dtype=np.int64) if pair_ids is None else np.asarray(pair_ids, np.int64)
        src, dst = chosen[:, 0].astype(np.int64), chosen[:, 1].astype(np.int64)
        b = ids.shape[0]
        negatives = self.draw_negatives(batch_id, b * self.num_negatives)
        seeds = np.concatenate([src + src_offset, dst + dst_offset, negatives + dst_offset])
        return ids, seeds, self.seed_times(times, b)

    def pair_rows(
        self, rows: torch.Tensor, count: int, labels: np.ndarray | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """From ``rows`` (int64 [2B + B * k], each seed's output row, in :meth:`pair_seeds` order) of ``count`` (B)
        pairs: ``(src_rows [B], dst_rows [B], src_index [M], dst_index [M], label float32 [M])`` on ``rows``' device,
        M = B (1 + k): each positive, then its negatives (the source kept; label 0), or the pairs as given with
        ``labels`` (default 1)."""
        b, k, device = count, self.num_negatives, rows.device
        src_rows, dst_rows = rows[:b], rows[b : 2 * b]
        if k:
            src_index = torch.cat([src_rows, src_rows.repeat_interleave(k)])
            dst_index = torch.cat([dst_rows, rows[2 * b :]])
            label = torch.cat([torch.ones(b, device=device), torch.zeros(b * k, device=device)])
        else:
            src_index, dst_index = src_rows, dst_rows
            label = torch.ones(b) if labels is None else torch.from_numpy(np.asarray(labels, dtype=np.float32))
        return src_rows, dst_rows, src_index, dst_index, label.to(device=device, dtype=torch.float32)

    def draw_negatives(self, batch_id: int, count: int) -> np.ndarray:
        """int64 [count] negative destinations of batch ``batch_id`` (the same stream on every device)."""
        if not count:
            return np.empty(0, np.int64)
        assert self.negatives is not None
        return self.negatives.draw(np.random.default_rng([self.seed, int(batch_id), 0x4E45]), count)

    def seed_times(self, times: np.ndarray | None, count: int) -> np.ndarray | None:
        """int64 [2B + B * k] the time of every seed of ``count`` pairs at ``times`` (sources, destinations, then
        each pair's negatives); None without times. OptionError when ``times`` is given and the sampler has none,
        or the reverse."""
        if (times is None) != (self.times is None):
            raise OptionError("times: expected pair times exactly when the sampler was made with times")
        if times is None:
            return None
        times = np.asarray(times, dtype=np.int64)
        return np.concatenate([times, times, np.repeat(times, self.num_negatives)])
