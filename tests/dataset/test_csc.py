"""edges_to_csc against its numpy reference on random edge lists (property tests)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import csc_to_edges, edges_to_csc, edges_to_csc_reference


@st.composite
def edge_lists(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    num_nodes = draw(st.integers(1, 40))
    num_edges = draw(st.integers(0, 200))
    seed = draw(st.integers(0, 2**31))
    rng = np.random.default_rng(seed)
    return rng.integers(0, num_nodes, num_edges), rng.integers(0, num_nodes, num_edges), num_nodes


@settings(max_examples=60, deadline=None)
@given(edge_lists(), st.booleans(), st.booleans())
def test_matches_reference(edges: tuple[np.ndarray, np.ndarray, int], dedup: bool, drop_loops: bool) -> None:
    src, dst, n = edges
    indptr, indices = edges_to_csc(src, dst, n, dedup=dedup, drop_self_loops=drop_loops)
    ref_indptr, ref_indices = edges_to_csc_reference(src, dst, n, dedup=dedup, drop_self_loops=drop_loops)
    np.testing.assert_array_equal(indptr, ref_indptr)
    np.testing.assert_array_equal(indices, ref_indices)
    assert indices.dtype == np.int32 and indptr.dtype == np.int64
    back_src, back_dst = csc_to_edges(indptr, indices)
    if not dedup and not drop_loops:
        original = sorted(zip(src.tolist(), dst.tolist()))
        assert sorted(zip(back_src.tolist(), back_dst.tolist())) == original
    for v in range(n):
        neighbours = indices[indptr[v] : indptr[v + 1]]
        assert np.all(np.diff(neighbours) >= (1 if dedup else 0))
        if drop_loops:
            assert not np.any(neighbours == v)
