"""One GPU budget across the feature tables of several node types and the lists of several relations."""

from __future__ import annotations

import numpy as np
import pytest

from graphtier.errors import OptionError
from graphtier.memory.plan._budget_kernels import prefix_hull_density, prefix_hull_density_reference
from graphtier.memory.plan.typed_budget import RelationTable, TypeTable, split_feature_budget, split_topology_budget


def _merge_reference(tables: dict[str, TypeTable], budget: int) -> dict[str, int]:
    """Rows in descending reads per byte over all tables, taken until the first that does not fit."""
    order = sorted(
        ((float(t.reads_per_row[i]) / t.row_bytes, name, i) for name, t in tables.items() for i in range(t.rows)),
        key=lambda item: -item[0],
    )
    rows = {name: 0 for name in tables}
    used = 0
    for _, name, _ in order:
        if used + tables[name].row_bytes > budget:
            break
        used += tables[name].row_bytes
        rows[name] += 1
    return rows


def test_type_read_more_per_byte_is_filled_first() -> None:
    tables = {
        "paper": TypeTable(row_bytes=400, rows=100, reads_per_row=np.full(100, 40.0)),  # 0.1 reads/byte
        "author": TypeTable(row_bytes=40, rows=100, reads_per_row=np.full(100, 20.0)),  # 0.5 reads/byte
    }
    rows = split_feature_budget(tables, 40 * 100 + 400 * 10)
    assert rows == {"author": 100, "paper": 10}
    assert split_feature_budget(tables, 40 * 50) == {"author": 50, "paper": 0}


def test_matches_the_merge_of_sorted_lists_and_stays_within_budget() -> None:
    rng = np.random.default_rng(3)
    for trial in range(30):
        tables = {}
        for name in ("a", "b", "c"):
            rows = int(rng.integers(0, 40))
            tables[name] = TypeTable(int(rng.integers(1, 50)), rows, -np.sort(-rng.random(rows) * 100))
        total = sum(t.row_bytes * t.rows for t in tables.values())
        budget = int(rng.integers(0, total + 10))
        rows = split_feature_budget(tables, budget)
        assert sum(rows[n] * t.row_bytes for n, t in tables.items()) <= budget
        assert rows == _merge_reference(tables, budget), trial


def test_uniform_reads_split_in_proportion() -> None:
    tables = {"a": TypeTable(64, 1000, None), "b": TypeTable(64, 3000, None)}
    rows = split_feature_budget(tables, 64 * 2000)
    assert rows == {"a": 500, "b": 1500}
    # equal reads per byte at different widths: the same share of each table's bytes
    tables = {"a": TypeTable(10, 100, np.full(100, 1.0)), "b": TypeTable(40, 100, np.full(100, 4.0))}
    rows = split_feature_budget(tables, 2500)
    assert rows == {"a": 50, "b": 50}


def test_featureless_type_gets_nothing_and_everything_fits() -> None:
    tables = {"paper": TypeTable(16, 10, np.arange(10, 0, -1.0)), "subject": TypeTable(0, 60, np.full(60, 1e9))}
    assert split_feature_budget(tables, 10**6) == {"paper": 10, "subject": 0}
    assert split_feature_budget(tables, 0) == {"paper": 0, "subject": 0}


def test_unsorted_reads_take_the_best_prefix() -> None:
    # a cold first row in front of hot rows: the prefix of 3 rows (reads 1+9+9 over 3 rows) beats the other table
    tables = {"a": TypeTable(10, 3, np.array([1.0, 9.0, 9.0])), "b": TypeTable(10, 3, np.full(3, 5.0))}
    assert split_feature_budget(tables, 30) == {"a": 3, "b": 0}


def test_bad_arguments_are_one_line_errors() -> None:
    with pytest.raises(OptionError, match="budget_bytes"):
        split_feature_budget({"a": TypeTable(4, 2)}, -1)
    with pytest.raises(OptionError, match=r"expected shape \(2,\)"):
        split_feature_budget({"a": TypeTable(4, 2, np.ones(3))}, 10)


def test_topology_fills_lists_by_reads_per_byte() -> None:
    cites = ("paper", "cites", "paper")
    writes = ("author", "writes", "paper")
    relations = {
        # 4 lists of 10 entries, each read 10 times: 0.25 reads per byte
        cites: RelationTable(np.arange(0, 50, 10), 4, np.full(4, 10.0)),
        # 4 lists of 2 entries, each read 8 times: 1 read per byte
        writes: RelationTable(np.arange(0, 10, 2), 4, np.full(4, 8.0)),
    }
    assert split_topology_budget(relations, 4 * 8 + 2 * 40) == {cites: 2, writes: 4}
    rows = split_topology_budget(relations, 10**6)
    assert rows == {cites: 4, writes: 4}


def test_prefix_hull_density_matches_reference() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 30))
        reads = rng.random(n) * rng.integers(1, 5, n)
        sizes = rng.integers(1, 10, n).astype(np.float64)
        got = prefix_hull_density(reads, sizes)
        np.testing.assert_allclose(got, prefix_hull_density_reference(reads, sizes), rtol=1e-12)
        assert np.all(np.diff(got) <= 1e-12)
