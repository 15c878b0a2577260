"""Tests for graphtier.graph.scores and its kernels, against numpy / scipy.sparse references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import edge_balanced_bounds, edges_to_csc
from graphtier.errors import OptionError
from graphtier.graph import _score_kernels as kernels
from graphtier.graph.scores import (
    degree_scores,
    reverse_pagerank,
    reverse_pagerank_reference,
    weighted_initial_scores,
    weighted_reverse_pagerank,
)


def random_csc(num_nodes: int, num_edges: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random multigraph with self-loops and (usually) nodes of in-degree 0."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, num_nodes, num_edges)
    # skewed destinations leave many nodes with an empty list (dangling)
    dst = (rng.power(3.0, num_edges) * num_nodes).astype(np.int64) % num_nodes
    loops = rng.integers(0, num_nodes, max(1, num_edges // 20))
    return edges_to_csc(np.concatenate([src, loops]), np.concatenate([dst, loops]), num_nodes)


graphs = st.tuples(st.integers(1, 60), st.integers(0, 300), st.integers(0, 2**31))


@settings(max_examples=40, deadline=None)
@given(graphs)
def test_count_occurrences_matches_bincount(spec: tuple[int, int, int]) -> None:
    indptr, indices = random_csc(*spec)
    n = indptr.shape[0] - 1
    for parts in (1, 2, 3):
        got = kernels.count_occurrences(indices, n, parts)
        np.testing.assert_array_equal(got, kernels.count_occurrences_reference(indices, n))
    np.testing.assert_array_equal(degree_scores(indptr, indices), np.bincount(indices, minlength=n))


@settings(max_examples=40, deadline=None)
@given(graphs, st.integers(1, 4))
def test_scatter_and_share_match_references(spec: tuple[int, int, int], parts: int) -> None:
    indptr, indices = random_csc(*spec)
    n = indptr.shape[0] - 1
    rng = np.random.default_rng(spec[2])
    scores = rng.random(n)
    shares = np.empty(n)
    dangling = kernels.share_per_neighbour(indptr, scores, shares)
    ref_shares, ref_dangling = kernels.share_per_neighbour_reference(indptr, scores)
    np.testing.assert_allclose(shares, ref_shares, rtol=1e-14)
    assert dangling == pytest.approx(ref_dangling, rel=1e-12, abs=1e-15)
    bounds = edge_balanced_bounds(indptr, parts)
    assert bounds[0] == 0 and bounds[-1] == n and np.all(np.diff(bounds) >= 0)
    partials = np.zeros((parts, n))
    kernels.scatter_to_neighbours(indptr, indices, shares, bounds, partials)
    np.testing.assert_allclose(partials.sum(axis=0), kernels.scatter_reference(indptr, indices, shares), rtol=1e-12)


def test_accumulate_counts_matches_add_at() -> None:
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 50, 1000)
    counts = np.zeros(50, dtype=np.int64)
    kernels.accumulate_counts(counts, ids)
    kernels.accumulate_counts(counts, ids[:10])
    expected = np.zeros(50, dtype=np.int64)
    np.add.at(expected, ids, 1)
    np.add.at(expected, ids[:10], 1)
    np.testing.assert_array_equal(counts, expected)


@pytest.mark.parametrize("seed", range(6))
def test_rpr_matches_scipy_reference(seed: int) -> None:
    n = [1, 7, 100, 1000, 5000, 20000][seed]
    indptr, indices = random_csc(n, 8 * n, seed)
    scores, rounds, change = reverse_pagerank(indptr, indices, damping=0.85, tol=1e-12, max_iterations=200)
    assert change < 1e-12 or rounds == 200
    reference = reverse_pagerank_reference(indptr, indices, np.full(n, 1.0 / n), damping=0.85, iterations=rounds)
    rel = np.abs(scores - reference).max() / np.abs(reference).max()
    assert rel < 1e-6
    assert scores.sum() == pytest.approx(1.0, rel=1e-9)  # dangling mass is redistributed, not lost
    assert np.all(scores > 0)


def test_rpr_on_graph_without_edges_is_uniform() -> None:
    indptr = np.zeros(6, dtype=np.int64)
    indices = np.zeros(0, dtype=np.int32)
    scores, _, _ = reverse_pagerank(indptr, indices)
    np.testing.assert_allclose(scores, np.full(5, 0.2))


def test_rpr_ranks_node_in_many_lists_first() -> None:
    # node 0 is in every list; node 4 is in none
    src = np.array([0, 0, 0, 1, 2, 3])
    dst = np.array([1, 2, 3, 2, 3, 1])
    indptr, indices = edges_to_csc(src, dst, 5)
    scores, _, _ = reverse_pagerank(indptr, indices)
    assert scores.argmax() == 0
    assert scores.argmin() == 4


@settings(max_examples=25, deadline=None)
@given(graphs, st.integers(1, 8), st.floats(0.0, 0.99))
def test_wrpr_matches_reference_rounds(spec: tuple[int, int, int], iterations: int, damping: float) -> None:
    indptr, indices = random_csc(*spec)
    n = indptr.shape[0] - 1
    rng = np.random.default_rng(spec[2])
    train = np.sort(rng.choice(n, size=max(1, n // 10), replace=False))
    scores = weighted_reverse_pagerank(indptr, indices, train, damping=damping, iterations=iterations)
    initial = weighted_initial_scores(n, train)
    assert initial[train] == pytest.approx(1.0 / train.size)
    reference = reverse_pagerank_reference(indptr, indices, initial, damping=damping, iterations=iterations)
    np.testing.assert_allclose(scores, reference, rtol=1e-9, atol=1e-15)


def test_wrpr_moves_training_weight_k_hops_in_k_rounds() -> None:
    # two equal chains 0 <- 1 <- 2 <- 3 and 4 <- 5 <- 6 <- 7 (list(0) = {1}, list(1) = {2}, ...);
    # only node 0 trains, so after k rounds its weight sits k hops up its chain
    src = np.array([1, 2, 3, 5, 6, 7])
    dst = np.array([0, 1, 2, 4, 5, 6])
    indptr, indices = edges_to_csc(src, dst, 8)
    plain, _, _ = reverse_pagerank(indptr, indices)
    np.testing.assert_allclose(plain[:4], plain[4:], rtol=1e-12)
    for rounds in (1, 2, 3):
        weighted = weighted_reverse_pagerank(indptr, indices, np.array([0]), iterations=rounds)
        assert weighted[rounds] > weighted[4 + rounds]
        assert weighted[rounds] == weighted.max()


def test_bad_options_raise_option_error() -> None:
    indptr, indices = random_csc(10, 30, 0)
    with pytest.raises(OptionError, match=r"^damping=: expected a value in \[0, 1\), found 1.5$") as info:
        reverse_pagerank(indptr, indices, damping=1.5)
    assert info.value.render(cli=True) == "--damping: expected a value in [0, 1), found 1.5"
    with pytest.raises(OptionError, match="^iterations=: expected at least 1, found 0$") as info:
        weighted_reverse_pagerank(indptr, indices, np.array([1]), iterations=0)
    assert info.value.render(cli=True) == "--iterations: expected at least 1, found 0"
    with pytest.raises(OptionError, match="^max_iterations=: expected at least 1, found 0$"):
        reverse_pagerank(indptr, indices, max_iterations=0)
    with pytest.raises(OptionError, match="training"):
        weighted_reverse_pagerank(indptr, indices, np.array([], dtype=np.int64))
