"""remove_pairs and draw_eval_negatives (graphtier/dataset/edges/edge_split.py) and their kernels against the references."""

from __future__ import annotations

import numpy as np
import pytest

from graphtier.dataset.csc import csc_to_edges, edges_to_csc
from graphtier.dataset.edges import _edge_split_kernels as kernels
from graphtier.dataset.edges.edge_split import draw_eval_negatives, pair_keys, remove_pairs
from graphtier.errors import OptionError


def random_graph(n: int, m: int, seed: int, *, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return edges_to_csc(src, dst, n, dedup=True, drop_self_loops=True)


def edge_set(indptr: np.ndarray, indices: np.ndarray) -> set[tuple[int, int]]:
    src, dst = csc_to_edges(indptr, indices)
    return set(zip(src.tolist(), dst.tolist()))


@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_remove_pairs_matches_reference(undirected: bool, seed: int) -> None:
    indptr, indices = random_graph(60, 400, seed, symmetric=undirected)
    edges = np.stack(csc_to_edges(indptr, indices), axis=1)
    rng = np.random.default_rng(seed)
    pairs = np.concatenate([edges[rng.choice(len(edges), 40, replace=False)], rng.integers(0, 60, (5, 2))])
    new_indptr, new_indices, removed = remove_pairs(indptr, indices, pairs, undirected=undirected)
    ref_indptr, ref_indices = kernels.remove_keys_reference(
        indptr, indices, pair_keys(pairs, 60, undirected=undirected)
    )
    np.testing.assert_array_equal(new_indptr, ref_indptr)
    np.testing.assert_array_equal(new_indices, ref_indices)
    assert new_indices.dtype == indices.dtype
    assert removed == indices.shape[0] - new_indices.shape[0]
    left = edge_set(new_indptr, new_indices)
    for s, d in pairs.tolist():
        assert (s, d) not in left
        assert not undirected or (d, s) not in left
    assert left == edge_set(indptr, indices) - {(s, d) for s, d in pairs.tolist()} - (
        {(d, s) for s, d in pairs.tolist()} if undirected else set()
    )


def test_remove_pairs_removes_every_copy_of_a_repeated_edge() -> None:
    indptr, indices = edges_to_csc(np.array([0, 0, 1, 2]), np.array([1, 1, 2, 0]), 3, dedup=False)
    new_indptr, new_indices, removed = remove_pairs(indptr, indices, np.array([[0, 1]]), undirected=False)
    assert removed == 2 and edge_set(new_indptr, new_indices) == {(1, 2), (2, 0)}


def test_pairs_excluded_matches_reference() -> None:
    indptr, indices = random_graph(50, 300, 3, symmetric=False)
    rng = np.random.default_rng(0)
    forbidden = pair_keys(rng.integers(0, 50, (30, 2)), 50, undirected=False)
    src, dst = rng.integers(0, 50, 2000), rng.integers(0, 50, 2000)
    for undirected in (False, True):
        got = kernels.pairs_excluded(indptr, indices, forbidden, src, dst, undirected)
        np.testing.assert_array_equal(
            got, kernels.pairs_excluded_reference(indptr, indices, forbidden, src, dst, undirected)
        )


def test_edge_pairs_matches_reference() -> None:
    rng = np.random.default_rng(1)
    indptr, indices = edges_to_csc(rng.integers(0, 50, 300), rng.integers(0, 50, 300), 50, dedup=True)  # loops kept
    src, dst = rng.integers(0, 50, 3000), rng.integers(0, 50, 3000)
    for undirected in (False, True):
        got = kernels.edge_pairs(indptr, indices, src, dst, undirected)
        assert got.any() and not got.all()
        np.testing.assert_array_equal(got, kernels.edge_pairs_reference(indptr, indices, src, dst, undirected))
    edges = edge_set(indptr, indices)
    want = np.array([(s, d) in edges for s, d in zip(src.tolist(), dst.tolist())])
    np.testing.assert_array_equal(kernels.edge_pairs(indptr, indices, src, dst, False), want)


def test_draw_destinations_matches_reference() -> None:
    indptr, indices = random_graph(40, 300, 4, symmetric=True)
    forbidden = pair_keys(np.array([[0, 5], [3, 7]]), 40, undirected=False)
    sources = np.array([0, 3, 9, 12, 0], np.int64)
    for undirected in (False, True):
        out = np.zeros((5, 6), np.int64)
        filled = kernels.draw_destinations(
            indptr, indices, forbidden, sources, 6, 2, 38, np.uint64(11), undirected, 200, out
        )
        ref, ref_filled = kernels.draw_destinations_reference(
            indptr, indices, forbidden, sources, 6, 2, 38, 11, undirected, 200
        )
        np.testing.assert_array_equal(filled, ref_filled)
        np.testing.assert_array_equal(out, ref)


def check_negative_destinations(indptr, indices, positives, negatives, k, lo, hi, undirected, forbidden=()) -> None:
    edges = edge_set(indptr, indices) | {tuple(p) for p in np.asarray(forbidden).reshape(-1, 2).tolist()}
    assert negatives.dtype == np.int64 and negatives.shape == (positives.shape[0], k)
    for (s, _), row in zip(positives.tolist(), negatives.tolist()):
        assert len(set(row)) == k
        for d in row:
            assert lo <= d < hi and d != s and (s, d) not in edges
            assert not undirected or (d, s) not in edges


@pytest.mark.parametrize("undirected", [False, True])
def test_negative_destinations_are_distinct_non_edges_and_seeded(undirected: bool) -> None:
    indptr, indices = random_graph(80, 800, 5, symmetric=undirected)
    positives = np.stack(csc_to_edges(indptr, indices), axis=1)[:50]
    forbidden = np.array([[positives[0, 0], 3], [positives[1, 0], 4]])
    negatives = draw_eval_negatives(
        indptr, indices, positives, k=20, dst_range=(0, 80), seed=7, undirected=undirected, forbidden=forbidden
    )
    check_negative_destinations(indptr, indices, positives, negatives, 20, 0, 80, undirected, forbidden)
    again = draw_eval_negatives(
        indptr, indices, positives, k=20, dst_range=(0, 80), seed=7, undirected=undirected, forbidden=forbidden
    )
    np.testing.assert_array_equal(negatives, again)
    other = draw_eval_negatives(indptr, indices, positives, k=20, dst_range=(0, 80), seed=8, undirected=undirected)
    assert not np.array_equal(negatives, other)


def test_negative_destinations_of_a_dense_neighbourhood_are_enumerated() -> None:
    # node 0 points to every node but 7 and 9: the only two negative destinations, beyond the rejection draws
    n = 2000
    keep = np.setdiff1d(np.arange(1, n), [7, 9])
    indptr, indices = edges_to_csc(np.zeros(keep.shape[0], np.int64), keep, n)
    negatives = draw_eval_negatives(
        indptr, indices, np.array([[0, 1]]), k=2, dst_range=(0, n), seed=0, undirected=False
    )
    assert sorted(negatives[0].tolist()) == [7, 9]
    with pytest.raises(OptionError, match=r"eval_negatives=: expected 3 negative destinations .* found only 2"):
        draw_eval_negatives(indptr, indices, np.array([[0, 1]]), k=3, dst_range=(0, n), seed=0, undirected=False)


@pytest.mark.parametrize("undirected", [False, True])
def test_negative_pairs_are_distinct_non_edges_in_range(undirected: bool) -> None:
    indptr, indices = random_graph(100, 600, 6, symmetric=undirected)
    positives = np.stack(csc_to_edges(indptr, indices), axis=1)[:300]
    negatives = draw_eval_negatives(indptr, indices, positives, k=0, dst_range=(20, 100), seed=1, undirected=undirected)
    assert negatives.shape == (300, 2) and negatives.dtype == np.int64
    edges = edge_set(indptr, indices)
    canonical = {(min(s, d), max(s, d)) if undirected else (s, d) for s, d in negatives.tolist()}
    assert len(canonical) == 300
    for s, d in negatives.tolist():
        assert s != d and 20 <= d < 100 and (s, d) not in edges
        assert not undirected or (d, s) not in edges
    again = draw_eval_negatives(indptr, indices, positives, k=0, dst_range=(20, 100), seed=1, undirected=undirected)
    np.testing.assert_array_equal(negatives, again)


def test_negative_pairs_of_a_near_complete_graph() -> None:
    n = 30
    src, dst = np.meshgrid(np.arange(n), np.arange(n))
    src, dst = src.reshape(-1), dst.reshape(-1)
    missing = {(2, 5), (5, 2), (7, 8), (8, 7), (1, 9), (9, 1)}
    keep = np.array([(s, d) not in missing for s, d in zip(src.tolist(), dst.tolist())])
    indptr, indices = edges_to_csc(src[keep], dst[keep], n, drop_self_loops=True)
    negatives = draw_eval_negatives(
        indptr, indices, np.zeros((3, 2), np.int64), k=0, dst_range=(0, n), seed=0, undirected=True
    )
    assert {(min(s, d), max(s, d)) for s, d in negatives.tolist()} == {(2, 5), (7, 8), (1, 9)}
    with pytest.raises(OptionError, match=r"expected 4 negative pairs .* found only 3 .*too dense"):
        draw_eval_negatives(indptr, indices, np.zeros((4, 2), np.int64), k=0, dst_range=(0, n), seed=0, undirected=True)
