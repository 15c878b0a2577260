"""ShadowSampler against the plain reference, and the induced-subgraph invariants."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.sampling import ShadowSampler
from graphtier.sampling.neighbor.reference import shadow_sample_reference
from tests.sampling.graphs import random_csc, star_in


def check_against_reference_and_graph(mb, indptr, indices, fanouts, seeds, seed, batch_id, num_layers) -> None:
    n_id, edge_index, seed_index, subgraph = shadow_sample_reference(indptr, indices, fanouts, seeds, seed, batch_id)
    assert np.array_equal(mb.n_id.numpy(), n_id)
    assert np.array_equal(mb.seed_index.numpy(), seed_index)
    assert np.array_equal(mb.subgraph.numpy(), subgraph)
    assert len(mb.blocks) == num_layers and all(b is mb.blocks[0] for b in mb.blocks)
    blk = mb.blocks[0]
    assert blk.num_src == blk.num_dst == n_id.size
    # the block is the CSR of the reference's edges: the same edges, stably grouped by destination
    assert np.array_equal(blk.edge_index.numpy(), edge_index[:, np.argsort(edge_index[1], kind="stable")])
    assert mb.num_sampled_edges == edge_index.shape[1]
    # independent check: the roots come first, and each subgraph is exactly induced
    roots = n_id[: np.unique(seeds).size]
    assert np.array_equal(n_id[seed_index], seeds)
    assert np.array_equal(np.unique(roots), np.unique(seeds))
    graph_edges = {}
    for v in range(indptr.size - 1):
        for u in indices[indptr[v] : indptr[v + 1]]:
            graph_edges[(int(u), v)] = graph_edges.get((int(u), v), 0) + 1
    ei = edge_index
    assert np.array_equal(subgraph[ei[0]], subgraph[ei[1]])  # edges stay inside one subgraph
    for r in range(roots.size):
        members = set(n_id[subgraph == r].tolist())
        assert len(members) == int((subgraph == r).sum())  # no node twice within a subgraph
        expected = sum(c for (u, v), c in graph_edges.items() if u in members and v in members)
        inside = subgraph[ei[0]] == r
        assert int(inside.sum()) == expected
        got = {}
        for u, v in zip(n_id[ei[0][inside]], n_id[ei[1][inside]]):
            got[(int(u), int(v))] = got.get((int(u), int(v)), 0) + 1
        assert all(graph_edges.get(k) == c for k, c in got.items())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_nodes=st.integers(1, 60),
    avg_degree=st.integers(0, 10),
    fanouts=st.lists(st.sampled_from([-1, 1, 2, 3, 40]), min_size=1, max_size=3),
    num_layers=st.integers(1, 4),
    graph_seed=st.integers(0, 2**16),
    batch=st.integers(0, 12),
    batch_id=st.integers(0, 1000),
    index_dtype=st.sampled_from([np.int32, np.int64]),
)
def test_matches_reference_and_is_induced(
    num_nodes, avg_degree, fanouts, num_layers, graph_seed, batch, batch_id, index_dtype
):
    indptr, indices = random_csc(num_nodes, num_nodes * avg_degree, graph_seed, index_dtype=index_dtype)
    seeds = np.random.default_rng(graph_seed).integers(0, num_nodes, batch)
    mb = ShadowSampler(indptr, indices, fanouts, num_layers, seed=3, num_threads=1).sample(seeds, batch_id=batch_id)
    check_against_reference_and_graph(mb, indptr, indices, fanouts, seeds, 3, batch_id, num_layers)


def test_parallel_threads_agree_with_reference():
    indptr, indices = random_csc(5000, 60_000, 8)
    seeds = np.random.default_rng(2).integers(0, 5000, 600)
    one = ShadowSampler(indptr, indices, [5, 3], 3, seed=1, num_threads=1).sample(seeds, batch_id=4)
    two = ShadowSampler(indptr, indices, [5, 3], 3, seed=1, num_threads=2).sample(seeds, batch_id=4)
    assert torch.equal(one.n_id, two.n_id) and torch.equal(one.blocks[0].edge_index, two.blocks[0].edge_index)
    n_id, edge_index, seed_index, subgraph = shadow_sample_reference(indptr, indices, [5, 3], seeds, 1, 4)
    grouped = edge_index[:, np.argsort(edge_index[1], kind="stable")]  # the block: the CSR of the reference's edges
    assert np.array_equal(two.n_id.numpy(), n_id) and np.array_equal(two.blocks[0].edge_index.numpy(), grouped)


def test_long_neighbour_lists_use_binary_search_path():
    """A hub with many in-edges and a small subgraph: the induced edges are found by binary search."""
    indptr, indices = star_in(1000)
    mb = ShadowSampler(indptr, indices, [3], 2, seed=0).sample(np.array([0, 0]))
    assert mb.n_id.numel() == 4 and mb.blocks[0].num_edges == 3
    assert mb.seed_index.tolist() == [0, 0]
    check_against_reference_and_graph(mb, indptr, indices, [3], np.array([0, 0]), 0, 0, 2)


def test_empty_batch_and_isolated_roots():
    indptr, indices = star_in(3)
    sampler = ShadowSampler(indptr, indices, [2, 2], 3)
    empty = sampler.sample(np.array([], dtype=np.int64))
    assert empty.n_id.numel() == 0 and empty.blocks[0].edge_index.shape == (2, 0) and len(empty.blocks) == 3
    lonely = sampler.sample(np.array([2, 1]))
    assert lonely.n_id.tolist() == [2, 1] and lonely.blocks[0].num_edges == 0
    assert lonely.subgraph.tolist() == [0, 1]


@pytest.mark.parametrize("num_layers", [0, -1, 1.5, True])
def test_invalid_num_layers(num_layers):
    indptr, indices = star_in(3)
    with pytest.raises(OptionError, match="num_layers"):
        ShadowSampler(indptr, indices, [2], num_layers)


def test_invalid_fanouts():
    indptr, indices = star_in(3)
    with pytest.raises(OptionError, match="fanouts"):
        ShadowSampler(indptr, indices, [3, 0], 2)


@pytest.mark.parametrize("buffer_per_node", [0, 1, 1000])
def test_buffer_overflow_path_matches_reference(monkeypatch, buffer_per_node):
    """Subgraphs whose edges overflow the first-pass buffer are intersected again, with the same result."""
    import graphtier.sampling.shadow.sampler as shadow_module

    monkeypatch.setattr(shadow_module, "EDGE_BUFFER_PER_NODE", buffer_per_node)
    indptr, indices = random_csc(400, 6000, 12)  # repeated edges: more induced edges than node pairs
    seeds = np.random.default_rng(3).integers(0, 400, 50)
    mb = ShadowSampler(indptr, indices, [4, 4], 2, seed=9).sample(seeds, batch_id=2)
    check_against_reference_and_graph(mb, indptr, indices, [4, 4], seeds, 9, 2, 2)
