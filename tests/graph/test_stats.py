"""In-degree statistics: exact histogram version against the sort-based numpy reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.graph.stats import (
    DENSE_DEGREES,
    DegreeStats,
    in_degree_stats,
    in_degree_stats_reference,
    top_count,
)


def _indptr(degrees: np.ndarray) -> np.ndarray:
    indptr = np.zeros(degrees.size + 1, dtype=np.int64)
    np.cumsum(degrees, out=indptr[1:])
    return indptr


def _assert_same(found: DegreeStats, expected: DegreeStats) -> None:
    for name, value in expected.as_dict().items():
        assert found.as_dict()[name] == pytest.approx(value, rel=1e-12, abs=1e-9), name


degree_lists = st.lists(
    st.one_of(
        st.integers(0, 5),
        st.integers(0, 300),
        st.sampled_from([DENSE_DEGREES - 1, DENSE_DEGREES, DENSE_DEGREES + 7, 10**6]),
    ),
    min_size=1,
    max_size=400,
)


@settings(max_examples=150, deadline=None)
@given(degrees=degree_lists, chunk=st.integers(1, 50))
def test_matches_reference_on_random_degrees(degrees: list[int], chunk: int) -> None:
    indptr = _indptr(np.array(degrees, dtype=np.int64))
    _assert_same(in_degree_stats(indptr, chunk=chunk), in_degree_stats_reference(indptr))


def test_known_values() -> None:
    # degrees 0, 1, 2, ..., 99: top 1% is the node with degree 99, top 10% are degrees 90..99
    degrees = np.arange(100, dtype=np.int64)
    stats = in_degree_stats(_indptr(degrees))
    total = degrees.sum()
    assert (stats.min, stats.max, stats.num_nodes, stats.num_edges) == (0, 99, 100, total)
    assert stats.mean == pytest.approx(49.5)
    assert stats.median == pytest.approx(49.5)
    assert stats.p99 == pytest.approx(np.percentile(degrees, 99))
    assert stats.zero_in_degree_nodes == 1
    assert stats.top1pct_edge_share == pytest.approx(99 / total)
    assert stats.top10pct_edge_share == pytest.approx(sum(range(90, 100)) / total)


def test_star_graph_is_maximally_skewed() -> None:
    degrees = np.zeros(1000, dtype=np.int64)
    degrees[17] = 999
    stats = in_degree_stats(_indptr(degrees))
    assert stats.top1pct_edge_share == 1.0
    assert stats.median == 0.0 and stats.max == 999 and stats.zero_in_degree_nodes == 999


def test_empty_graphs() -> None:
    assert in_degree_stats(np.zeros(1, dtype=np.int64)).num_nodes == 0
    stats = in_degree_stats(np.zeros(11, dtype=np.int64))
    assert stats.top1pct_edge_share == 0.0 and stats.max == 0 and stats.zero_in_degree_nodes == 10


def test_top_count_rounds_up() -> None:
    assert [top_count(n, 1) for n in (0, 1, 99, 100, 101, 300)] == [0, 1, 1, 1, 2, 3]
    assert top_count(300, 10) == 30


def test_works_on_memory_map(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    degrees = rng.zipf(2.0, size=5000).astype(np.int64)
    indptr = _indptr(degrees)
    np.save(tmp_path / "indptr.npy", indptr)
    mapped = np.load(tmp_path / "indptr.npy", mmap_mode="r")
    _assert_same(in_degree_stats(mapped, chunk=777), in_degree_stats_reference(indptr))
