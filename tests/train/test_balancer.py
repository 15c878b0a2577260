"""Workload-aware splits, the load balancer's updates, and the expected-workload kernel."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier import OptionError
from graphtier.dataset.csc import edges_to_csc
from graphtier.sampling import NeighborSampler
from graphtier.train.dist._workload_kernels import expected_tree_edges, expected_tree_edges_reference
from graphtier.train.dist.balancer import LoadBalancer, initial_shares, split_by_workload


@settings(max_examples=80, deadline=None)
@given(
    count=st.integers(0, 60),
    world=st.integers(1, 5),
    seed=st.integers(0, 10**6),
    weighted=st.booleans(),
)
def test_split_partitions_the_batch(count: int, world: int, seed: int, weighted: bool) -> None:
    rng = np.random.default_rng(seed)
    seeds = rng.permutation(1000)[:count]
    shares = rng.random(world) + 0.05
    workload = rng.random(count) * 10 + 1 if weighted else None
    parts = split_by_workload(seeds, workload, shares)
    assert len(parts) == world
    np.testing.assert_array_equal(np.concatenate(parts) if parts else seeds, seeds)
    if workload is not None and count:
        total = workload.sum()
        cumulative = 0.0
        for part, share in zip(parts, shares / shares.sum()):
            got = workload[np.isin(seeds, part)].sum()
            cumulative += got
            # each cut lands within one seed's workload of its target
            assert abs(got - share * total) <= 2 * workload.max() + 1e-9


def test_split_by_workload_not_by_count() -> None:
    seeds = np.arange(10)
    workload = np.array([10.0] + [1.0] * 9)  # the first seed is as heavy as all others together
    first, second = split_by_workload(seeds, workload, np.array([0.5, 0.5]))
    assert first.tolist() == [0] and second.shape[0] == 9
    first, second = split_by_workload(seeds, None, np.array([0.5, 0.5]))
    assert first.shape[0] == second.shape[0] == 5


def test_initial_shares() -> None:
    np.testing.assert_allclose(initial_shares(["cpu", "cpu"], None), [0.5, 0.5])
    np.testing.assert_allclose(initial_shares(["cpu", "cuda:0", "cuda:1"], 0.4), [0.4, 0.3, 0.3])
    np.testing.assert_allclose(initial_shares(["cpu", "cpu"], None, [1, 3]), [0.25, 0.75])
    with pytest.raises(OptionError, match="cpu_share="):
        initial_shares(["cpu", "cuda:0"], 1.5)


def test_dynamic_update_moves_towards_equal_times_with_hysteresis() -> None:
    balancer = LoadBalancer(["cpu", "cpu"], "dynamic", damping=1.0)
    # rank 1 is three times slower: equal work took it three times as long
    assert balancer.update(10, np.array([1.0, 3.0]), np.array([100.0, 100.0]))
    np.testing.assert_allclose(balancer.shares, [0.75, 0.25])
    # within the tolerance band nothing changes
    assert not balancer.update(20, np.array([1.0, 1.03]), np.array([75.0, 25.0]))
    np.testing.assert_allclose(balancer.shares, [0.75, 0.25])
    assert [entry["iteration"] for entry in balancer.ratio_history] == [0, 10, 20]
    static = LoadBalancer(["cpu", "cpu"], "static")
    assert not static.update(10, np.array([1.0, 3.0]), np.array([1.0, 1.0]))
    with pytest.raises(OptionError, match="balance="):
        LoadBalancer(["cpu"], "sometimes")


def test_min_share_keeps_every_rank_busy() -> None:
    balancer = LoadBalancer(["cpu", "cpu"], "dynamic", damping=1.0, min_share=0.05)
    balancer.update(1, np.array([1.0, 1000.0]), np.array([1.0, 1.0]))
    assert balancer.shares.min() >= 0.05 - 1e-12


def _graph(seed: int, n: int = 50, e: int = 300) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return edges_to_csc(rng.integers(0, n, e), rng.integers(0, n, e), n, dedup=True)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10**6), fanouts=st.lists(st.sampled_from([-1, 1, 2, 5]), min_size=1, max_size=3))
def test_expected_tree_edges_matches_reference(seed: int, fanouts: list[int]) -> None:
    indptr, indices = _graph(seed)
    np.testing.assert_allclose(
        expected_tree_edges(indptr, indices, fanouts), expected_tree_edges_reference(indptr, indices, fanouts)
    )


def test_expected_tree_edges_matches_the_sampler_on_average() -> None:
    """The estimate is what the sampler really draws: compare with the mean over many samples."""
    rng = np.random.default_rng(5)
    n = 30
    # a tree-like graph (no shared neighbours below a node), so the sampler's deduplication does not interfere
    src = np.arange(1, n)
    dst = (src - 1) // 3
    indptr, indices = edges_to_csc(src, dst, n)
    fanouts = [2, 2]
    expected = expected_tree_edges(indptr, indices, fanouts)
    sampler = NeighborSampler(indptr, indices, fanouts, seed=1)
    for node in (0, 1, 4):
        draws = [sampler.sample(np.array([node]), batch_id=b).num_sampled_edges for b in range(300)]
        assert abs(np.mean(draws) - expected[node]) < 0.05 * max(expected[node], 1)
    del rng
