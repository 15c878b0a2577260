"""The best share of edge-row reads a number of rows can serve (the plan's yardstick for the CSC prefix)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.tiering.plan.edges import best_rows_shares


def brute_best(degrees: list[int], reads: list[int], rows: int) -> float:
    """Reads per edge row, every row on its own, the ``rows`` largest summed: the best any order can do."""
    per_row = [r / d for d, r in zip(degrees, reads) for _ in range(d)]
    total = sum(reads)
    return sum(sorted(per_row, reverse=True)[:rows]) / total if total else 0.0


@settings(max_examples=80, deadline=None)
@given(
    degrees=st.lists(st.integers(0, 6), min_size=1, max_size=12),
    data=st.data(),
)
def test_best_rows_shares_equals_the_brute_force_best(degrees: list[int], data: st.DataObject) -> None:
    reads = [data.draw(st.integers(0, 40)) if d else 0 for d in degrees]  # an empty list is never read
    indptr = np.concatenate(([0], np.cumsum(degrees))).astype(np.int64)
    rows = data.draw(st.integers(0, int(indptr[-1]) + 2))
    (got,) = best_rows_shares(indptr, np.array(reads, np.int64), [rows])
    assert got == pytest.approx(brute_best(degrees, reads, rows), abs=1e-12)


def test_best_rows_shares_takes_the_densest_lists_first() -> None:
    indptr = np.array([0, 4, 5, 7], np.int64)  # lists of 4, 1 and 2 edges
    reads = np.array([8, 6, 2], np.int64)  # 2, 6 and 1 reads per edge
    one, three, seven = best_rows_shares(indptr, reads, [1, 3, 7])  # one sort for every count
    assert one == pytest.approx(6 / 16)
    assert three == pytest.approx((6 + 4) / 16)
    assert seven == pytest.approx(1.0)
    assert best_rows_shares(indptr, np.zeros(3, np.int64), [3]) == [0.0]
