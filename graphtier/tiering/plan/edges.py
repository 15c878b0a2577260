"""Edge-feature tiers in the capacity plan: how much of ``edge_feat.npy`` each GPU budget holds and the share of the
epoch's edge-row reads it serves.

A sampled edge reads its row of ``edge_feat.npy`` (position ``p`` of the CSC, :mod:`graphtier.graphstore.
edge_features`) exactly when the sampler reads its ``indices`` entry, so the replay's per-list entry reads
(:class:`~graphtier.tiering.reads.SampledReads`) are the edge-row reads per destination. The edge table's hot tier is
a prefix of the CSC order (the in-edges of the lowest ids, the hottest after ``graphtier reorder``), as the
topology's is, so the reads a prefix serves come from :func:`~graphtier.tiering.plan.topology.entries_before`.
Beside it the plan shows what the same number of rows would serve in the best order (:func:`best_rows_shares`: the
lists of most reads per edge first): how far the node order, which ``reorder`` sets by feature reads, is from the
order that edge-row reads alone would ask for.
A budget of the plan (``10%``, ``2GiB``) is applied to the edge table: a fraction of its rows, or bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from graphtier.dataset import Dataset
from graphtier.dataset.edges.edge_rows import edge_row_map, read_order
from graphtier.memory.plan.placement import format_bytes, parse_budget
from graphtier.tiering.plan.topology import entries_before


@dataclass(frozen=True)
class EdgeBudgetRow:
    """One budget applied to the edge table: ``gpu_rows`` (a CSC prefix) and their bytes, the edge-row reads per
    epoch they serve and their share of all edge-row reads (``auto``, which sizes node features only, has none);
    ``best_share``: the share the same number of rows would serve in the best order (:func:`best_rows_shares`)."""

    budget: str
    gpu_rows: int
    gpu_bytes: int
    reads_per_epoch: float
    read_share: float
    best_share: float


@dataclass(frozen=True)
class EdgeFeaturePlan:
    """The edge-feature part of a capacity plan: the table's ``num_rows`` x ``row_bytes``, the edge-row reads per
    epoch, and one :class:`EdgeBudgetRow` per budget."""

    num_rows: int
    row_bytes: int
    reads_per_epoch: float
    rows: list[EdgeBudgetRow]
    read_order: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "num_rows": self.num_rows,
            "row_bytes": self.row_bytes,
            "reads_per_epoch": self.reads_per_epoch,
            "budgets": [asdict(row) for row in self.rows],
            "read_order": self.read_order,
        }


def best_rows_shares(indptr: np.ndarray, entries: np.ndarray, rows: Sequence[int]) -> list[float]:
    """For each count of ``rows``, the largest share of the edge-row reads that many rows of the edge table can
    serve: every list's reads spread evenly over its edges, so the best rows are those of the lists of most reads
    per edge (:func:`~graphtier.dataset.edges.edge_rows.read_order`, the order ``reorder`` writes), whole, then part of
    the next. ``indptr`` int64 [N + 1] (the CSC), ``entries`` [N] reads per destination list (the replay's). The
    order is sorted once for every count."""
    entries = np.asarray(entries, np.float64)
    total = float(entries.sum())
    lists = read_order(indptr, entries)
    if total <= 0 or lists.size == 0:
        return [0.0 for _ in rows]
    reads, sizes = entries[lists], np.diff(np.asarray(indptr))[lists].astype(np.float64)
    served = np.concatenate(([0.0], np.cumsum(reads)))
    held = np.concatenate(([0.0], np.cumsum(sizes)))
    shares = []
    for count in rows:
        whole = int(np.searchsorted(held, count, side="right")) - 1  # lists[:whole] fit whole
        best = served[whole] if count > 0 else 0.0
        if 0 < count and whole < lists.shape[0]:
            best += reads[whole] * (count - held[whole]) / sizes[whole]
        shares.append(float(best / total))
    return shares


def mapped_entries_before(indptr: np.ndarray, entries: np.ndarray, row_map: np.ndarray, boundary: int) -> float:
    """Reads of the edge rows below ``boundary`` when the edge at CSC position ``p`` is row ``row_map[p]`` (int [E],
    ``edge_row.npy``): each list's reads (``entries`` [N]) shared evenly by its edges, as :func:`entries_before`
    shares a straddling list's. Chunked over the positions (``indptr`` int64 [N + 1])."""
    indptr = np.asarray(indptr)
    below_at = np.zeros(indptr.shape[0], np.int64)  # rows below the boundary among positions [0, indptr[v])
    running, chunk = 0, 1 << 24
    for start in range(0, int(indptr[-1]), chunk):
        stop = min(int(indptr[-1]), start + chunk)
        counts = np.concatenate(([0], np.cumsum(np.asarray(row_map[start:stop]) < boundary)))
        inside = (indptr >= start) & (indptr <= stop)
        below_at[inside] = running + counts[indptr[inside] - start]
        running += int(counts[-1])
    degrees = np.diff(indptr)
    listed = degrees > 0
    share = np.diff(below_at)[listed] / degrees[listed]
    return float(np.dot(np.asarray(entries, np.float64)[listed], share))


def plan_edge_features(
    dataset: Dataset, entries: np.ndarray, budgets: list[str], epochs: int
) -> EdgeFeaturePlan | None:
    """Size the edge table of ``dataset`` (``edge_feat.npy`` [E, d]; None when it has none) for each of ``budgets``
    from ``entries`` (float/int [rows], the entry reads of each CSC list, homogeneous or typed, in the replay of
    ``epochs`` epochs); ``auto`` budgets are left out. With ``edge_row.npy`` the hot rows are the table's first rows
    in read order, not a CSC prefix."""
    table, row_map = dataset.edge_features, edge_row_map(dataset)
    if table is None:
        return None
    indptr = np.asarray(dataset.indptr)
    entries = np.asarray(entries, np.float64)
    cumulative = np.concatenate(([0.0], np.cumsum(entries)))
    num_rows = int(table.shape[0])
    row_bytes = int(table.shape[1]) * int(np.dtype(table.dtype).itemsize)
    total = float(cumulative[-1])
    sized = []  # (budget, rows) of every budget but auto
    for text in budgets:
        wanted = parse_budget(text, "budgets")
        if not wanted.auto:
            sized.append((text, min(num_rows, wanted.rows(num_rows, row_bytes))))
    best = best_rows_shares(indptr, entries, [gpu_rows for _, gpu_rows in sized])
    rows = []
    for (text, gpu_rows), best_share in zip(sized, best):
        served = (
            entries_before(indptr, cumulative, entries, gpu_rows)
            if row_map is None
            else mapped_entries_before(indptr, entries, row_map, gpu_rows)
        )
        share = served / total if total else 0.0
        rows.append(EdgeBudgetRow(text, gpu_rows, gpu_rows * row_bytes, served / epochs, share, best_share))
    return EdgeFeaturePlan(num_rows, row_bytes, total / epochs, rows, row_map is not None)


def format_edge_plan(plan: EdgeFeaturePlan | None) -> list[str]:
    """The plan's lines for the edge table (``graphtier plan`` prints them after the node-feature table); none
    without edge features."""
    if plan is None:
        return []
    lines = [
        f"edge features: {plan.num_rows:,} rows x {plan.row_bytes} B = {format_bytes(plan.num_rows * plan.row_bytes)}, "
        f"{plan.reads_per_epoch:,.0f} edge-row reads/epoch; the hot rows are the table's first rows ("
        f"{'in read order, edge_row.npy' if plan.read_order else 'a prefix of the CSC order'})"
    ]
    for row in plan.rows:
        lines.append(
            f"  budget {row.budget:>6}: {row.gpu_rows:,} edge rows ({format_bytes(row.gpu_bytes)}) serve "
            f"{100 * row.read_share:.1f}% of the edge-row reads (the best {row.gpu_rows:,} rows: "
            f"{100 * row.best_share:.1f}%)"
        )
    if not plan.read_order and any(row.best_share > row.read_share + 0.05 for row in plan.rows):
        lines.append("  note: `graphtier reorder` lays the edge table out in read order (the most-read edges first)")
    return lines
