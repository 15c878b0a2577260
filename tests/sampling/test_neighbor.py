"""NeighborSampler against the plain reference, and the sampling invariants on random graphs."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from graphtier.errors import OptionError
from graphtier.sampling import MiniBatch, NeighborSampler
from graphtier.sampling.neighbor.reference import neighbor_sample_reference
from tests.sampling.graphs import random_csc, star_in


def assert_matches_reference(mb: MiniBatch, indptr, indices, fanouts, seeds, seed, batch_id) -> None:
    n_id, blocks, seed_index = neighbor_sample_reference(indptr, indices, fanouts, seeds, seed, batch_id)
    assert np.array_equal(mb.n_id.numpy(), n_id)
    assert np.array_equal(mb.seed_index.numpy(), seed_index)
    assert len(mb.blocks) == len(blocks)
    for blk, (edge_index, num_src, num_dst) in zip(mb.blocks, blocks):
        assert (blk.num_src, blk.num_dst) == (num_src, num_dst)
        assert np.array_equal(blk.edge_index.numpy(), edge_index)


def assert_well_formed(mb: MiniBatch, indptr: np.ndarray, indices: np.ndarray, fanouts: list[int]) -> None:
    """Structure of a batch plus: every edge exists, no neighbour position drawn twice, degree <= fanout -> all."""
    n_id = mb.n_id.numpy()
    assert mb.n_id.dtype == torch.int64 and mb.seed_index.dtype == torch.int64
    assert np.unique(n_id).size == n_id.size
    assert np.array_equal(n_id[mb.seed_index.numpy()], mb.seeds.numpy())
    num_unique_seeds = np.unique(mb.seeds.numpy()).size
    assert mb.blocks[-1].num_dst == num_unique_seeds
    assert mb.blocks[0].num_src == n_id.size
    for lower, upper in zip(mb.blocks[:-1], mb.blocks[1:]):
        assert lower.num_dst == upper.num_src
    for hop, blk in enumerate(reversed(mb.blocks)):
        fanout = fanouts[hop]
        ei = blk.edge_index.numpy()
        assert ei.dtype == np.int64 and ei.shape[0] == 2
        assert blk.num_dst <= blk.num_src
        if ei.shape[1]:
            assert ei[0].max() < blk.num_src and ei[1].max() < blk.num_dst and ei.min() >= 0
        per_dst = np.bincount(ei[1], minlength=blk.num_dst)
        for j in range(blk.num_dst):
            v = n_id[j]
            neighbours = indices[indptr[v] : indptr[v + 1]].astype(np.int64)
            drawn = np.sort(n_id[ei[0][ei[1] == j]])
            deg = neighbours.size
            if fanout == -1 or deg <= fanout:
                assert np.array_equal(drawn, neighbours)  # lists are sorted, so all neighbours in order
            else:
                assert per_dst[j] == fanout
                # a multiset subset of the neighbour list: no list position is drawn twice
                values, counts = np.unique(drawn, return_counts=True)
                avail = dict(zip(*np.unique(neighbours, return_counts=True)))
                assert all(avail.get(u, 0) >= c for u, c in zip(values, counts))
    assert mb.num_sampled_edges == sum(b.num_edges for b in mb.blocks)


fanout_lists = st.lists(st.sampled_from([-1, 1, 2, 3, 5, 40]), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_nodes=st.integers(1, 80),
    avg_degree=st.integers(0, 12),
    fanouts=fanout_lists,
    graph_seed=st.integers(0, 2**16),
    batch=st.integers(0, 20),
    seed=st.integers(-(2**40), 2**40),
    batch_id=st.integers(0, 2**40),
    index_dtype=st.sampled_from([np.int32, np.int64]),
)
def test_matches_reference_and_invariants(
    num_nodes, avg_degree, fanouts, graph_seed, batch, seed, batch_id, index_dtype
):
    indptr, indices = random_csc(num_nodes, num_nodes * avg_degree, graph_seed, index_dtype=index_dtype)
    rng = np.random.default_rng(graph_seed)
    seeds = rng.integers(0, num_nodes, batch)  # repeats allowed
    sampler = NeighborSampler(indptr, indices, fanouts, seed=seed, num_threads=1)
    mb = sampler.sample(seeds, batch_id=batch_id)
    assert_matches_reference(mb, indptr, indices, fanouts, seeds, seed, batch_id)
    assert_well_formed(mb, indptr, indices, fanouts)


def test_large_graph_parallel_matches_reference_and_threads_agree():
    """Big enough hops to run the parallel loops; 1 and 2 threads give identical batches."""
    indptr, indices = random_csc(20_000, 300_000, 3)
    seeds = np.random.default_rng(1).integers(0, 20_000, 3000)
    fanouts = [10, 4]
    one = NeighborSampler(indptr, indices, fanouts, seed=5, num_threads=1).sample(seeds, batch_id=9)
    two_sampler = NeighborSampler(indptr, indices, fanouts, seed=5, num_threads=2)
    two = two_sampler.sample(seeds, batch_id=9)
    two_sampler.parallel_relabel_min_threads = 2  # also through the parallel relabel
    two_parallel_relabel = two_sampler.sample(seeds, batch_id=9)
    for other in (two, two_parallel_relabel):
        assert torch.equal(one.n_id, other.n_id) and torch.equal(one.seed_index, other.seed_index)
        for a, b in zip(one.blocks, other.blocks):
            assert torch.equal(a.edge_index, b.edge_index)
    assert_matches_reference(two, indptr, indices, fanouts, seeds, 5, 9)
    assert_well_formed(two, indptr, indices, fanouts)


def test_high_fanout_hash_path_matches_reference():
    """Fanouts above the linear-scan limit use the hash-set path of Floyd's algorithm."""
    indptr, indices = star_in(500, np.int64)
    for fanout in (33, 100, 499):
        mb = NeighborSampler(indptr, indices, [fanout], seed=2).sample(np.array([0]), batch_id=fanout)
        assert_matches_reference(mb, indptr, indices, [fanout], np.array([0]), 2, fanout)
        assert_well_formed(mb, indptr, indices, [fanout])


def test_the_largest_fanout_allocates_by_degree_not_by_fanout():
    """A fanout of 2^31 - 1 takes every neighbour at once; the Floyd table is sized by the lists, not the fanout."""
    indptr, indices = random_csc(300, 3000, 4)
    seeds = np.arange(0, 300, 7)
    everything = NeighborSampler(indptr, indices, [-1, -1], seed=1).sample(seeds, batch_id=3)
    largest = NeighborSampler(indptr, indices, [2**31 - 1, 2**31 - 1], seed=1).sample(seeds, batch_id=3)
    assert torch.equal(everything.n_id, largest.n_id)
    for a, b in zip(everything.blocks, largest.blocks):
        assert torch.equal(a.edge_index, b.edge_index)
    # a hub with more in-neighbours than a large fanout still draws from a table of its own size
    star_indptr, star_indices = star_in(3000, np.int64)
    mb = NeighborSampler(star_indptr, star_indices, [2999, 10**8], seed=2).sample(np.array([0]), batch_id=1)
    assert_well_formed(mb, star_indptr, star_indices, [2999, 10**8])


@pytest.mark.parametrize("fanout, degree", [(5, 20), (40, 100)])
def test_draws_are_uniform(fanout: int, degree: int):
    """Chi-square: over many batches, every neighbour of a node is drawn equally often."""
    indptr, indices = star_in(degree)
    sampler = NeighborSampler(indptr, indices, [fanout], seed=11, num_threads=1)
    counts = np.zeros(degree + 1, dtype=np.int64)
    trials = 3000
    for b in range(trials):
        mb = sampler.sample(np.array([0]), batch_id=b)
        counts += np.bincount(mb.n_id.numpy()[mb.blocks[0].edge_index[0].numpy()], minlength=degree + 1)
    observed = counts[1:]
    assert observed.sum() == trials * fanout
    assert chisquare(observed).pvalue > 1e-4


def test_drawn_subsets_are_uniform():
    """Chi-square over whole subsets: each of the C(6, 2) = 15 pairs is drawn equally often."""
    indptr, indices = star_in(6)
    sampler = NeighborSampler(indptr, indices, [2], seed=4, num_threads=1)
    pair_counts: dict[tuple[int, ...], int] = {}
    for b in range(3000):
        mb = sampler.sample(np.array([0]), batch_id=b)
        pair = tuple(sorted(mb.n_id.numpy()[mb.blocks[0].edge_index[0].numpy()].tolist()))
        pair_counts[pair] = pair_counts.get(pair, 0) + 1
    assert len(pair_counts) == 15
    assert chisquare(np.array(list(pair_counts.values()))).pvalue > 1e-4


def test_reproducible_and_batch_id_counter():
    indptr, indices = random_csc(500, 5000, 0)
    seeds = np.arange(0, 500, 7)
    a = NeighborSampler(indptr, indices, [3, 3], seed=1)
    b = NeighborSampler(indptr, indices, [3, 3], seed=1)
    first_a, second_a = a.sample(seeds), a.sample(seeds)
    assert torch.equal(first_a.blocks[0].edge_index, b.sample(seeds, batch_id=0).blocks[0].edge_index)
    assert torch.equal(second_a.blocks[0].edge_index, b.sample(seeds, batch_id=1).blocks[0].edge_index)
    assert not torch.equal(first_a.n_id, second_a.n_id)
    other_seed = NeighborSampler(indptr, indices, [3, 3], seed=2).sample(seeds, batch_id=0)
    assert not torch.equal(first_a.n_id, other_seed.n_id)


def test_edge_cases_empty_batch_isolated_nodes_deep_fanouts():
    indptr, indices = star_in(4)  # leaves 1..4 have no in-edges
    sampler = NeighborSampler(indptr, indices, [2, 2, 2, 2])
    empty = sampler.sample(np.array([], dtype=np.int64))
    assert empty.n_id.numel() == 0 and empty.seed_index.numel() == 0 and len(empty.blocks) == 4
    assert all(b.num_src == 0 and b.num_dst == 0 and b.edge_index.shape == (2, 0) for b in empty.blocks)
    assert empty.num_sampled_edges == 0
    leaves = sampler.sample(torch.tensor([3, 1, 3]))
    assert leaves.n_id.tolist() == [3, 1] and leaves.seed_index.tolist() == [0, 1, 0]
    assert all(b.num_edges == 0 and b.num_src == b.num_dst == 2 for b in leaves.blocks)
    deep = sampler.sample(np.array([0]))  # depth 1 graph, 4 hops
    assert deep.blocks[-1].num_dst == 1 and deep.blocks[-1].num_src == 3
    assert all(b.num_edges == 2 for b in deep.blocks)  # only node 0 has in-edges; re-drawn at every hop
    assert all(b.num_src <= 5 for b in deep.blocks)


@pytest.mark.parametrize("fanouts", [[0], [-2], [2.5], ["3"], [], [True], 5, "10,10", [2**31], [5, 2**62]])
def test_invalid_fanouts(fanouts):
    indptr, indices = star_in(3)
    with pytest.raises(OptionError, match="fanouts"):
        NeighborSampler(indptr, indices, fanouts)


@pytest.mark.parametrize(
    "seeds, match",
    [
        (np.array([0, 9]), r"\[0, 4\)"),
        (np.array([-1]), "seeds"),
        (np.array([0.5]), "integer"),
        (np.zeros((2, 2), dtype=np.int64), "1-d"),
    ],
)
def test_invalid_seeds(seeds, match):
    indptr, indices = star_in(3)
    with pytest.raises(OptionError, match=match):
        NeighborSampler(indptr, indices, [2]).sample(seeds)


def test_invalid_graph_and_options():
    indptr, indices = star_in(3)
    with pytest.raises(OptionError, match="indptr"):
        NeighborSampler(indptr.astype(np.int32), indices, [2])
    with pytest.raises(OptionError, match="indptr"):
        NeighborSampler(indptr, indices[:-1], [2])
    with pytest.raises(OptionError, match="indices"):
        NeighborSampler(indptr, indices.astype(np.float32), [2])
    with pytest.raises(OptionError, match="num_threads"):
        NeighborSampler(indptr, indices, [2], num_threads=0)
    with pytest.raises(OptionError, match="batch_id"):
        NeighborSampler(indptr, indices, [2]).sample(np.array([0]), batch_id=-1)


def test_concurrent_use_from_threads_is_safe():
    indptr, indices = random_csc(5000, 60_000, 4)
    sampler = NeighborSampler(indptr, indices, [5, 5], seed=3)
    batches = [np.random.default_rng(i).integers(0, 5000, 300) for i in range(16)]
    expected = [sampler.sample(s, batch_id=i) for i, s in enumerate(batches)]
    results: dict[int, MiniBatch] = {}

    def work(start: int) -> None:
        for i in range(start, 16, 4):
            results[i] = sampler.sample(batches[i], batch_id=i)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(16):
        assert torch.equal(results[i].n_id, expected[i].n_id)
        assert torch.equal(results[i].blocks[0].edge_index, expected[i].blocks[0].edge_index)


def test_blocks_drive_a_pyg_bipartite_model():
    from torch_geometric.nn import SAGEConv

    indptr, indices = random_csc(300, 3000, 5)
    mb = NeighborSampler(indptr, indices, [4, 3]).sample(np.array([5, 6, 5, 7]))
    features = torch.randn(300, 8)
    convs = [SAGEConv(8, 16), SAGEConv(16, 3)]
    x = features[mb.n_id]
    for conv, blk in zip(convs, mb.blocks):
        x = conv((x, x[: blk.num_dst]), blk.edge_index)
    out = x[mb.seed_index]
    assert out.shape == (4, 3) and torch.equal(out[0], out[2])
