"""One GPU budget shared by the tables of several node types (features) or relations (topology).

A typed dataset has one feature table per node type and one neighbour-list table (CSC rows) per relation,
each reordered hottest first by its own score (``graphtier reorder``), so each table's GPU tier is a prefix
of its rows. One budget covers them all: rows of every table are ranked by expected reads per byte and the
budget is filled in that order (a merge of the per-table sorted lists), so a type that is read more per byte
is filled first, whatever its width. Where a table's reads per byte do not fall along its rows, the prefix
is valued by its concave hull (:mod:`graphtier.memory.plan._budget_kernels`), so a prefix stays the best choice.
Rows of equal value across tables share what is left of the budget in proportion to their bytes.

* :func:`split_feature_budget`: ``{type: TypeTable(row_bytes, rows, reads_per_row)}`` -> GPU rows per type.
* :func:`split_topology_budget`: ``{relation: RelationTable(indptr, itemsize, reads_per_row)}`` -> GPU rows
  (destination lists) per relation.
* :func:`split_relation_rows` does it for a typed dataset's back-to-back CSC (``plan`` and the store's
  topology both call it, so they agree) and :func:`relation_gpu_ranges` turns the rows into the positions
  of ``indices`` the GPU tier holds.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

import numpy as np

from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.memory.plan._budget_kernels import prefix_hull_density

BISECTION_STEPS = 200


@dataclass(frozen=True)
class TypeTable:
    """One node type's feature table: ``rows`` rows of ``row_bytes`` bytes (0: featureless, never placed).

    ``reads_per_row``: float [rows], expected reads per epoch of each row in the table's row order (after a
    reorder: descending), or None for "every row read equally often" (one read each).
    """

    row_bytes: int
    rows: int
    reads_per_row: np.ndarray | None = None


@dataclass(frozen=True)
class RelationTable:
    """One relation's CSC rows: ``indptr`` int64 [rows + 1] (its slice of the dataset's ``indptr``; only the
    differences matter), ``itemsize`` bytes per ``indices`` entry, ``reads_per_row`` float [rows] expected
    reads per epoch of each destination's list (None: every list read equally often)."""

    indptr: np.ndarray
    itemsize: int
    reads_per_row: np.ndarray | None = None


@dataclass
class _Prefixes:
    """A table as cumulative bytes along its rows and the hull density of each row (non-increasing)."""

    cum_bytes: np.ndarray  # int64 [rows + 1]
    density: np.ndarray  # float64 [rows], non-increasing
    ascending: np.ndarray  # density[::-1] (a view), for searchsorted

    def rows_above(self, threshold: float) -> int:
        """Rows whose density is > ``threshold`` (a prefix)."""
        return self.density.shape[0] - int(np.searchsorted(self.ascending, threshold, side="right"))


def _check_budget(budget_bytes: int, option: str) -> int:
    if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, (int, np.integer)) or budget_bytes < 0:
        raise OptionError(
            f"{{{option}}}: expected a non-negative number of bytes, found {budget_bytes!r}", options=(option,)
        )
    return int(budget_bytes)


def _reads(key: Hashable, reads: np.ndarray | None, rows: int) -> np.ndarray:
    if reads is None:
        return np.ones(rows, dtype=np.float64)
    reads = np.asarray(reads, dtype=np.float64)
    if reads.shape != (rows,):
        raise OptionError(
            f"{{reads_per_row}}: table {key}: expected shape ({rows},), found {reads.shape}", options=("reads_per_row",)
        )
    if not np.all(np.isfinite(reads)) or (reads.size and reads.min() < 0):
        raise OptionError(
            f"{{reads_per_row}}: table {key}: expected finite non-negative reads", options=("reads_per_row",)
        )
    return reads


def _prefixes(row_bytes: np.ndarray, reads: np.ndarray) -> _Prefixes:
    cum_bytes = np.zeros(row_bytes.shape[0] + 1, dtype=np.int64)
    np.cumsum(row_bytes, out=cum_bytes[1:])
    positive = row_bytes > 0
    if positive.all():
        density = prefix_hull_density(reads, row_bytes.astype(np.float64))
    else:  # empty lists cost nothing: value them with their neighbours by giving them a tiny size
        density = prefix_hull_density(reads, np.where(positive, row_bytes, 1e-9).astype(np.float64))
    return _Prefixes(cum_bytes, density, density[::-1])


def _fill(tables: dict[Hashable, _Prefixes], budget: int) -> dict[Hashable, int]:
    """Rows per table: every row of density above a threshold, the threshold as low as the budget allows,
    then the rows at the threshold in proportion to their bytes."""

    def taken(threshold: float) -> dict[Hashable, int]:
        return {key: table.rows_above(threshold) for key, table in tables.items()}

    def size(rows: dict[Hashable, int]) -> int:
        return sum(int(tables[key].cum_bytes[n]) for key, n in rows.items())

    if size(taken(-1.0)) <= budget:
        return taken(-1.0)
    lo, hi = -1.0, max(float(t.density[0]) for t in tables.values() if t.density.size)  # size(>hi) == 0
    for _ in range(BISECTION_STEPS):
        mid = (lo + hi) / 2
        if mid <= lo or mid >= hi:
            break
        if size(taken(mid)) <= budget:
            hi = mid
        else:
            lo = mid
    rows = taken(hi)  # fits; the rows with density in (lo, hi] share the rest
    rest = budget - size(rows)
    boundary = {key: table.rows_above(lo) for key, table in tables.items()}
    group = {key: int(tables[key].cum_bytes[boundary[key]] - tables[key].cum_bytes[rows[key]]) for key in tables}
    total = sum(group.values())
    for key, table in tables.items():
        if group[key]:
            share = rest * group[key] // total
            limit = int(table.cum_bytes[rows[key]]) + share
            rows[key] = max(rows[key], int(np.searchsorted(table.cum_bytes, limit, side="right")) - 1)
    rest = budget - size(rows)
    for key, table in tables.items():  # whole rows the proportional shares left over
        while rows[key] < boundary[key] and int(table.cum_bytes[rows[key] + 1] - table.cum_bytes[rows[key]]) <= rest:
            rest -= int(table.cum_bytes[rows[key] + 1] - table.cum_bytes[rows[key]])
            rows[key] += 1
    return rows


def split_feature_budget(tables: Mapping[str, TypeTable], budget_bytes: int) -> dict[str, int]:
    """GPU rows per node type: one ``budget_bytes`` filled across every type's feature table by expected
    reads per byte (``reads_per_row / row_bytes``), each type's rows a prefix of its table.

    ``tables``: per type, a :class:`TypeTable`. A featureless type (``row_bytes == 0``) gets 0 rows. The
    rows returned hold at most ``budget_bytes`` bytes in all. Raises :class:`OptionError` on a negative
    budget or a ``reads_per_row`` of the wrong shape.
    """
    budget = _check_budget(budget_bytes, "budget_bytes")
    prefixes: dict[Hashable, _Prefixes] = {}
    out = {name: 0 for name in tables}
    for name, table in tables.items():
        if table.row_bytes <= 0 or table.rows <= 0:
            continue
        reads = _reads(name, table.reads_per_row, table.rows)
        prefixes[name] = _prefixes(np.full(table.rows, table.row_bytes, dtype=np.int64), reads)
    if prefixes:
        out.update(_fill(prefixes, budget))  # type: ignore[arg-type]
    return out


def split_topology_budget(relations: Mapping[tuple[str, str, str], RelationTable], budget_bytes: int) -> dict:
    """GPU rows (destination lists, a prefix of each relation's CSC rows) per relation: one ``budget_bytes``
    of ``indices`` entries filled across every relation by expected reads per byte of each list
    (``reads_per_row / (degree * itemsize)``).

    Returns ``{relation: rows}``; the lists taken hold at most ``budget_bytes`` bytes of entries in all
    (``indptr`` is not counted: it lives whole on the GPU). Empty lists cost nothing and ride with their
    neighbours.
    """
    budget = _check_budget(budget_bytes, "budget_bytes")
    prefixes: dict[Hashable, _Prefixes] = {}
    out = {rel: 0 for rel in relations}
    for rel, table in relations.items():
        indptr = np.asarray(table.indptr, dtype=np.int64)
        rows = indptr.shape[0] - 1
        if rows <= 0:
            continue
        reads = _reads(rel, table.reads_per_row, rows)
        prefixes[rel] = _prefixes(np.diff(indptr) * int(table.itemsize), reads)
    if prefixes:
        out.update(_fill(prefixes, budget))
    return out


def relation_tables(
    indptr: np.ndarray, schema: Schema, itemsize: int, list_entries: np.ndarray | None
) -> dict[RelationType, RelationTable]:
    """Each relation's :class:`RelationTable` of a typed dataset's back-to-back CSC: ``indptr`` int64
    [num_rows + 1] (the dataset's), ``list_entries`` float [num_rows] expected ``indices`` entries read per
    epoch of each CSC row (``TypedReads.list_entries``), None: every list read equally often."""
    indptr = np.asarray(indptr)
    tables = {}
    for rel in schema.relations:
        lo, hi = rel.row_offset, rel.row_offset + schema.node_type(rel.dst).count
        reads = None if list_entries is None else np.asarray(list_entries[lo:hi], dtype=np.float64)
        tables[rel.type] = RelationTable(indptr[lo : hi + 1], int(itemsize), reads)
    return tables


def split_relation_rows(
    indptr: np.ndarray, schema: Schema, itemsize: int, list_entries: np.ndarray | None, budget_bytes: int
) -> dict[RelationType, int]:
    """GPU rows per relation of a typed dataset's CSC out of ``budget_bytes`` of ``indices`` entries
    (:func:`split_topology_budget` over :func:`relation_tables`), in schema order."""
    return split_topology_budget(relation_tables(indptr, schema, itemsize, list_entries), budget_bytes)


def relation_gpu_ranges(indptr: np.ndarray, schema: Schema, rows: dict[RelationType, int]) -> list[tuple[int, int]]:
    """Positions of ``indices`` held by the first ``rows[relation]`` CSC rows of every relation: one range
    ``[indptr[row_offset], indptr[row_offset + rows])`` per relation, ascending (relations lie in schema order)."""
    indptr = np.asarray(indptr)
    return [
        (int(indptr[rel.row_offset]), int(indptr[rel.row_offset + rows.get(rel.type, 0)])) for rel in schema.relations
    ]
