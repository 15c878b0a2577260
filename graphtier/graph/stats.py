"""In-degree statistics of a CSC graph, computed in chunks so they work on memory-mapped ``indptr``.

One pass over ``indptr`` builds an exact degree histogram: a dense count per degree below
``DENSE_DEGREES`` plus the (few) larger degrees kept as a list. Quantiles and the share of edges
that point into the top-k nodes by in-degree are then read off the histogram exactly, in memory
independent of N. Reference: :func:`in_degree_stats_reference` (``np.diff``/``np.percentile``/sort).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

CHUNK = 1 << 24
DENSE_DEGREES = 1 << 16


@dataclass(frozen=True)
class DegreeStats:
    """In-degree summary of a graph. Quantiles use linear interpolation (``np.percentile``'s default).

    ``top1pct_edge_share`` / ``top10pct_edge_share``: the fraction of all edges whose destination is
    among the ``ceil(N / 100)`` / ``ceil(N / 10)`` nodes with the largest in-degree (0.0 without edges).
    """

    num_nodes: int
    num_edges: int
    min: int
    mean: float
    median: float
    p99: float
    max: int
    zero_in_degree_nodes: int
    top1pct_edge_share: float
    top10pct_edge_share: float

    def as_dict(self) -> dict[str, int | float]:
        """The fields as a JSON-ready dict (stable names, used by ``graphtier info --json``)."""
        return asdict(self)


@dataclass
class _DegreeHistogram:
    dense: np.ndarray  # int64 [DENSE_DEGREES]: number of nodes with each degree below DENSE_DEGREES
    large: np.ndarray  # int64 [L]: degrees >= DENSE_DEGREES, sorted ascending

    @property
    def num_nodes(self) -> int:
        return int(self.dense.sum()) + int(self.large.size)

    def value_at(self, rank: int) -> int:
        """The degree at 0-based ``rank`` in ascending order."""
        dense_total = int(self.dense.sum())
        if rank >= dense_total:
            return int(self.large[rank - dense_total])
        cumulative = np.cumsum(self.dense)
        return int(np.searchsorted(cumulative, rank, side="right"))

    def quantile(self, fraction: float) -> float:
        """``np.percentile(degrees, 100 * fraction)`` (linear interpolation), exactly."""
        position = fraction * (self.num_nodes - 1)
        low = math.floor(position)
        high = min(low + 1, self.num_nodes - 1)
        low_value, high_value = self.value_at(low), self.value_at(high)
        return float(low_value + (high_value - low_value) * (position - low))

    def top_sum(self, count: int) -> int:
        """The sum of the ``count`` largest degrees."""
        if count <= self.large.size:
            return int(self.large[self.large.size - count :].sum())
        total = int(self.large.sum())
        need = count - int(self.large.size)
        counts = self.dense[::-1]
        values = np.arange(DENSE_DEGREES - 1, -1, -1, dtype=np.int64)
        cumulative = np.cumsum(counts)
        full = int(np.searchsorted(cumulative, need, side="left"))  # bins [0, full) are taken whole
        taken_before = int(cumulative[full - 1]) if full > 0 else 0
        total += int((values[:full] * counts[:full]).sum())
        total += int(values[full]) * (need - taken_before)
        return total


def _degree_histogram(indptr: np.ndarray, chunk: int) -> _DegreeHistogram:
    dense = np.zeros(DENSE_DEGREES, dtype=np.int64)
    large: list[np.ndarray] = []
    nodes = indptr.shape[0] - 1
    for start in range(0, nodes, chunk):
        stop = min(nodes, start + chunk)
        degrees = np.diff(np.asarray(indptr[start : stop + 1], dtype=np.int64))
        is_large = degrees >= DENSE_DEGREES
        if is_large.any():
            large.append(degrees[is_large])
            degrees = degrees[~is_large]
        dense += np.bincount(degrees, minlength=DENSE_DEGREES)
    large_sorted = np.sort(np.concatenate(large)) if large else np.zeros(0, dtype=np.int64)
    return _DegreeHistogram(dense=dense, large=large_sorted)


def top_count(num_nodes: int, percent: int) -> int:
    """``ceil(num_nodes * percent / 100)``, at least 1 when there are nodes (integer arithmetic)."""
    if num_nodes == 0:
        return 0
    return max(1, -(-num_nodes * percent // 100))


def in_degree_stats(indptr: np.ndarray, *, chunk: int = CHUNK) -> DegreeStats:
    """Exact in-degree statistics of a CSC graph.

    Args:
        indptr: int64 [N + 1] CSC pointers (a memory map is fine: read ``chunk`` entries at a time).
        chunk: nodes per chunk.

    Returns:
        :class:`DegreeStats`. A graph without nodes gives zeros.
    """
    if indptr.ndim != 1 or indptr.shape[0] < 1:
        raise ValueError(f"indptr must be a 1-d array of length N + 1 >= 1, got shape {indptr.shape}")
    nodes = indptr.shape[0] - 1
    if nodes == 0:
        return DegreeStats(0, 0, 0, 0.0, 0.0, 0.0, 0, 0, 0.0, 0.0)
    edges = int(indptr[-1]) - int(indptr[0])
    histogram = _degree_histogram(indptr, chunk)
    present = np.flatnonzero(histogram.dense)
    low = int(present[0]) if present.size else int(histogram.large[0])
    high = int(histogram.large[-1]) if histogram.large.size else int(present[-1])

    def share(percent: int) -> float:
        return histogram.top_sum(top_count(nodes, percent)) / edges if edges else 0.0

    return DegreeStats(
        num_nodes=nodes,
        num_edges=edges,
        min=low,
        mean=edges / nodes,
        median=histogram.quantile(0.5),
        p99=histogram.quantile(0.99),
        max=high,
        zero_in_degree_nodes=int(histogram.dense[0]),
        top1pct_edge_share=share(1),
        top10pct_edge_share=share(10),
    )


def in_degree_stats_reference(indptr: np.ndarray) -> DegreeStats:
    """Plain numpy reference of :func:`in_degree_stats` (loads all degrees, sorts them)."""
    degrees = np.diff(np.asarray(indptr, dtype=np.int64))
    nodes = degrees.size
    if nodes == 0:
        return DegreeStats(0, 0, 0, 0.0, 0.0, 0.0, 0, 0, 0.0, 0.0)
    edges = int(degrees.sum())
    descending = np.sort(degrees)[::-1]

    def share(percent: int) -> float:
        return int(descending[: top_count(nodes, percent)].sum()) / edges if edges else 0.0

    return DegreeStats(
        num_nodes=nodes,
        num_edges=edges,
        min=int(degrees.min()),
        mean=edges / nodes,
        median=float(np.percentile(degrees, 50)),
        p99=float(np.percentile(degrees, 99)),
        max=int(degrees.max()),
        zero_in_degree_nodes=int((degrees == 0).sum()),
        top1pct_edge_share=share(1),
        top10pct_edge_share=share(10),
    )
