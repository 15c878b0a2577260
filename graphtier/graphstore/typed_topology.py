"""The GPU tier of a typed dataset's topology: a prefix of each relation's rows, one budget for all relations.

A typed dataset's ``indices`` holds every relation's CSC back to back (:mod:`graphtier.dataset.schema`), each
relation's rows hottest first after ``graphtier reorder``. With ``sample_on="gpu"`` the store's
:class:`~graphtier.memory.topology.topology.TieredTopology` gets one GPU budget, split across the relations by expected
``indices`` entries read per byte (:func:`graphtier.memory.plan.typed_budget.split_relation_rows`, the same split
``graphtier plan`` prints): the run's training seeds give the entries (:class:`ExpectedReads`, shared with the feature budget), and
without seeds every list counts as read equally often. The GPU tier then holds one position range per
relation (:func:`~graphtier.memory.plan.typed_budget.relation_gpu_ranges`).
"""

from __future__ import annotations

from collections.abc import Callable

from graphtier.dataset import Dataset
from graphtier.dataset.schema import RelationType
from graphtier.graphstore.typed_features import ExpectedReads
from graphtier.memory.plan.typed_budget import relation_gpu_ranges, split_relation_rows


def topology_gpu_rows(dataset: Dataset, budget_bytes: int, expected: ExpectedReads | None) -> dict[RelationType, int]:
    """GPU rows (destination lists, a prefix of each relation's rows) per relation out of ``budget_bytes`` of
    ``indices`` entries, by the ``expected`` entry reads of training (None, or no seeds: uniform)."""
    entries = None
    if budget_bytes > 0 and expected is not None:
        reads = expected.typed()
        entries = None if reads is None else reads.list_entries
    itemsize = int(dataset.indices.dtype.itemsize)
    return split_relation_rows(dataset.indptr, dataset.schema, itemsize, entries, max(0, int(budget_bytes)))


def typed_gpu_ranges(
    dataset: Dataset, expected: ExpectedReads | None, *, log: Callable[[str], None] = print
) -> Callable[[int], list[tuple[int, int]]] | None:
    """For a typed dataset, the ``gpu_ranges_for`` of :func:`graphtier.memory.make_topology`: GPU budget bytes
    -> the position ranges of ``indices`` (one per relation) of :func:`topology_gpu_rows`. None for a
    homogeneous dataset (its GPU tier stays a prefix)."""
    if not dataset.is_hetero:
        return None

    def ranges(budget_bytes: int) -> list[tuple[int, int]]:
        rows = topology_gpu_rows(dataset, budget_bytes, expected)
        log("topology GPU lists per relation: " + ", ".join(f"{rel[1]} {count:,}" for rel, count in rows.items()))
        return relation_gpu_ranges(dataset.indptr, dataset.schema, rows)

    return ranges
