"""LinkSampler: the exclusion kernel and its torch twin against the numpy reference, negatives, no leak, CPU == device."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from graphtier.errors import OptionError
from graphtier.sampling import DenseTopology, DeviceNeighborSampler, NeighborSampler
from graphtier.sampling.link._link_kernels import compact_non_targets, target_key_set
from graphtier.sampling.link.pairs import DEGREE_EXPONENT, NegativeDestinations
from graphtier.sampling.link.sampler import LinkMiniBatch, LinkSampler, exclude_edges_reference, exclude_targets_torch
from tests.interpreted import HAS_TRITON, load_interpreted
from tests.sampling.graphs import random_csc

FANOUTS = [-1, 4]  # the first hop takes whole lists: every target edge is sampled unless excluded


def kernel_kept(edge_index: np.ndarray, src_rows: np.ndarray, dst_rows: np.ndarray, rows: int, undirected: bool):
    table = target_key_set(src_rows, dst_rows, rows, undirected)
    buffer = edge_index.copy()
    count = compact_non_targets(buffer, table, rows, np.empty(0, np.int64))
    return buffer.reshape(-1)[: 2 * count].reshape(2, count)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_nodes=st.integers(1, 60),
    seed_rows=st.integers(1, 60),
    num_edges=st.integers(0, 300),
    num_targets=st.integers(0, 40),
    undirected=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_kernel_and_torch_twin_keep_what_the_reference_keeps(
    num_nodes: int, seed_rows: int, num_edges: int, num_targets: int, undirected: bool, seed: int
) -> None:
    """Targets are pairs of seed rows (the first rows of n_id); edges anywhere, many of them targets."""
    rng = np.random.default_rng(seed)
    seed_rows = min(seed_rows, num_nodes)
    n_id = rng.permutation(10 * num_nodes)[:num_nodes].astype(np.int64)  # distinct global ids
    src_rows = rng.integers(0, seed_rows, num_targets)
    dst_rows = rng.integers(0, seed_rows, num_targets)
    edge_index = rng.integers(0, num_nodes, (2, num_edges))
    # plant targets and reverse targets among the edges
    planted = rng.integers(0, max(num_targets, 1), num_edges // 3) if num_targets else np.empty(0, np.int64)
    edge_index[0, : planted.size], edge_index[1, : planted.size] = src_rows[planted], dst_rows[planted]
    reverse = planted[: planted.size // 2]
    edge_index[0, : reverse.size], edge_index[1, : reverse.size] = dst_rows[reverse], src_rows[reverse]
    targets = np.stack([n_id[src_rows], n_id[dst_rows]], axis=1)
    keep = exclude_edges_reference(n_id, edge_index, targets, 10 * num_nodes, undirected)
    expected = edge_index[:, keep]
    got = kernel_kept(edge_index, src_rows, dst_rows, seed_rows, undirected)
    assert got.dtype == np.int64 and np.array_equal(got, expected)
    twin = exclude_targets_torch(
        torch.from_numpy(edge_index), torch.from_numpy(src_rows), torch.from_numpy(dst_rows), seed_rows, undirected
    )
    assert torch.equal(twin, torch.from_numpy(expected))


def test_degree_negatives_follow_degree_to_the_075_and_stay_in_range() -> None:
    degrees = np.array([0, 1, 2, 5, 40, 0, 300, 7, 0, 1000], dtype=np.int64)
    lo, hi = 2, 9  # a bipartite graph's item range
    negatives = NegativeDestinations("degree", (lo, hi), degrees)
    drawn = negatives.draw(np.random.default_rng(0), 200_000)
    assert drawn.dtype == np.int64 and drawn.min() >= lo and drawn.max() < hi
    counts = np.bincount(drawn - lo, minlength=hi - lo)
    weights = degrees[lo:hi] ** DEGREE_EXPONENT
    assert np.all(counts[weights == 0] == 0)  # degree 0 is never drawn
    expected = weights[weights > 0] / weights.sum() * drawn.size
    assert chisquare(counts[weights > 0], expected).pvalue > 1e-3
    # a weighting without the exponent is rejected by the same test (the test can fail)
    linear = degrees[lo:hi][weights > 0] / degrees[lo:hi].sum() * drawn.size
    assert chisquare(counts[weights > 0], linear).pvalue < 1e-6


def test_uniform_negatives_cover_the_range_and_edgeless_degree_falls_back_to_uniform() -> None:
    drawn = NegativeDestinations("uniform", (5, 15)).draw(np.random.default_rng(1), 50_000)
    assert drawn.min() == 5 and drawn.max() == 14
    assert chisquare(np.bincount(drawn - 5)).pvalue > 1e-3
    edgeless = NegativeDestinations("degree", (0, 4), np.zeros(4, np.int64))
    assert set(edgeless.draw(np.random.default_rng(2), 100).tolist()) <= {0, 1, 2, 3}
    with pytest.raises(OptionError, match="negative_sampling"):
        NegativeDestinations("popular", (0, 4))


def graph_pairs(indptr: np.ndarray, indices: np.ndarray, undirected: bool) -> np.ndarray:
    """int64 [P, 2]: the graph's edges (source, destination); an undirected graph's once (source < destination)."""
    dst = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    pairs = np.stack([indices.astype(np.int64), dst], axis=1)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return np.unique(pairs[pairs[:, 0] < pairs[:, 1]] if undirected else pairs, axis=0)


def symmetric_graph(num_nodes: int, num_edges: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    from graphtier.dataset.csc import edges_to_csc

    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, num_nodes, num_edges), rng.integers(0, num_nodes, num_edges)
    return edges_to_csc(np.concatenate([src, dst]), np.concatenate([dst, src]), num_nodes, dedup=True)


def assert_no_leak_and_well_formed(
    mb: LinkMiniBatch,
    plain_blocks: list,
    pairs: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    k: int,
    undirected: bool = True,
) -> None:
    """No block holds a target edge or (undirected) its reverse; exactly those left the node sampler's blocks; every
    sampled edge is a real edge; endpoints deduplicated; src/dst rows point at the pairs' global ids."""
    mb = mb.to("cpu")
    n_id = mb.n_id.numpy()
    assert np.unique(n_id).size == n_id.size
    targets = pairs[mb.pair_ids.numpy()]
    forbidden = {(int(u), int(v)) for u, v in targets}
    if undirected:
        forbidden |= {(v, u) for u, v in forbidden}
    b = targets.shape[0]
    assert torch.equal(mb.label, torch.cat([torch.ones(b), torch.zeros(b * k)]))
    assert np.array_equal(n_id[mb.src_index.numpy()[:b]], targets[:, 0])
    assert np.array_equal(n_id[mb.dst_index.numpy()[:b]], targets[:, 1])
    assert np.array_equal(n_id[mb.src_index.numpy()[b:]], np.repeat(targets[:, 0], k))
    leaked_before = 0
    for blk, plain in zip(mb.blocks, plain_blocks):
        edges = list(zip(n_id[blk.edge_index[0].numpy()].tolist(), n_id[blk.edge_index[1].numpy()].tolist()))
        assert not forbidden.intersection(edges)
        plain_edges = plain.edge_index.numpy()
        before = list(zip(n_id[plain_edges[0]].tolist(), n_id[plain_edges[1]].tolist()))
        assert [e for e in before if e not in forbidden] == edges  # only targets left, order kept
        leaked_before += len(before) - len(edges)
        for u, v in edges:  # a sampled neighbour is a real neighbour
            assert u in indices[indptr[v] : indptr[v + 1]]
    assert mb.excluded_edges == leaked_before


def cpu_and_device(indptr, indices, pairs, *, seed: int, k: int, undirected: bool, picks: str = "numba"):
    cpu = NeighborSampler(indptr, indices, FANOUTS, seed=seed, num_threads=1)
    kernels = load_interpreted("sampling/device/_device_kernels.py") if picks == "triton" else None
    device = DeviceNeighborSampler(DenseTopology(indptr, indices), FANOUTS, seed=seed, picks=picks, kernels=kernels)
    common = dict(num_nodes=indptr.size - 1, num_negatives=k, undirected=undirected, seed=seed)
    return (
        cpu,
        LinkSampler(cpu.sample, pairs, exclusion="numba", **common),
        LinkSampler(device.sample, pairs, exclusion="torch", **common),
    )


def assert_same_link_batch(got: LinkMiniBatch, expected: LinkMiniBatch) -> None:
    for name in ("n_id", "seed_index", "seeds", "src_index", "dst_index", "label", "pair_ids"):
        assert torch.equal(getattr(got, name).cpu(), getattr(expected, name)), name
    assert got.excluded_edges == expected.excluded_edges
    assert [(b.num_src, b.num_dst) for b in got.blocks] == [(b.num_src, b.num_dst) for b in expected.blocks]
    for a, b in zip(got.blocks, expected.blocks):
        assert torch.equal(a.edge_index.cpu(), b.edge_index)


@pytest.mark.parametrize("undirected", [True, False])
def test_no_target_edge_in_any_block_and_cpu_equals_device_on_cpu(undirected: bool) -> None:
    if undirected:
        indptr, indices = symmetric_graph(300, 1500, 4)
    else:
        indptr, indices = random_csc(300, 3000, 4, dedup=True)
    pairs = graph_pairs(indptr, indices, undirected)
    k = 2
    cpu, on_cpu, on_device = cpu_and_device(indptr, indices, pairs, seed=7, k=k, undirected=undirected)
    order = np.random.default_rng(0).permutation(pairs.shape[0])
    excluded = 0
    for batch_id in range(4):
        ids = order[batch_id * 64 : (batch_id + 1) * 64]
        mb = on_cpu.sample(ids, batch_id)
        chosen = pairs[ids]
        negatives = mb.n_id[mb.dst_index[ids.size :]].numpy()
        plain = cpu.sample(np.concatenate([chosen[:, 0], chosen[:, 1], negatives]), batch_id)
        assert_no_leak_and_well_formed(mb, plain.blocks, pairs, indptr, indices, k, undirected)
        assert_same_link_batch(on_device.sample(torch.from_numpy(ids), batch_id), mb)
        excluded += mb.excluded_edges
    # whole first-hop lists: every target edge (and its reverse) was sampled, and left
    assert excluded >= 4 * 64 * (2 if undirected else 1)


@pytest.mark.skipif(not HAS_TRITON, reason="needs triton")
def test_device_path_with_interpreted_triton_picks_matches_the_cpu_path() -> None:
    indptr, indices = symmetric_graph(200, 2000, 5)
    pairs = graph_pairs(indptr, indices, True)
    _, on_cpu, on_device = cpu_and_device(indptr, indices, pairs, seed=3, k=1, undirected=True, picks="triton")
    ids = np.arange(0, pairs.shape[0], 7)[:50]
    assert_same_link_batch(on_device.sample(ids, 11), on_cpu.sample(ids, 11))


def test_evaluation_batches_keep_every_edge_and_their_labels() -> None:
    indptr, indices = symmetric_graph(100, 400, 6)
    pairs = graph_pairs(indptr, indices, True)[:20]
    labels = np.linspace(0, 1, 20).astype(np.float32)
    cpu = NeighborSampler(indptr, indices, FANOUTS, seed=1, num_threads=1)
    mb = LinkSampler(cpu.sample, pairs, num_nodes=100, labels=labels, seed=1).sample(np.arange(20), 0)
    plain = cpu.sample(pairs.T.reshape(-1), 0)
    assert mb.excluded_edges == 0 and mb.num_pairs == 20
    assert all(torch.equal(a.edge_index, b.edge_index) for a, b in zip(mb.blocks, plain.blocks))
    assert torch.equal(mb.label, torch.from_numpy(labels))
    with pytest.raises(OptionError, match="exclusion"):
        LinkSampler(cpu.sample, pairs, num_nodes=100, exclusion="cuda")
