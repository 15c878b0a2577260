"""Samplers built ``with_edge_ids`` record each block's ``edge_id``: the CSC position of a real edge from the block's
source row's node into its destination row's node, on every homogeneous path (node sampler, its threaded and
parallel-relabel hops, the device sampler's CPU twin, link batches with the target edges excluded, temporal link
batches) and on the typed samplers (each relation block's positions in the typed CSC), and the batches are otherwise
the ones of a sampler without edge ids."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphtier.sampling import DeviceNeighborSampler, NeighborSampler, TemporalNeighborSampler
from graphtier.sampling.device.device_hops import DenseTopology
from graphtier.sampling.link.sampler import LinkSampler, exclude_edges_reference
from tests.sampling.graphs import random_csc
from tests.sampling.test_typed_device import assert_identical_typed
from tests.sampling.test_typed_neighbor import TYPED_CASES, typed_case

from .test_temporal_kernels import timed_csc


def assert_real_edges(mb, indptr: np.ndarray, indices: np.ndarray) -> None:  # noqa: ANN001
    """Every block's edge_id is the CSC position of its (source, destination) edge."""
    n_id = mb.n_id.cpu().numpy()
    for block in mb.blocks:
        assert block.edge_id is not None and block.edge_id.dtype == torch.int64
        s, d = block.edge_index.cpu().numpy()
        e = block.edge_id.cpu().numpy()
        assert e.shape == s.shape
        assert np.all(indices[e] == n_id[s])  # the edge's source is the source row's node
        assert np.all((e >= indptr[n_id[d]]) & (e < indptr[n_id[d] + 1]))  # it lies in the destination's list
        if e.size:  # an edge is drawn at most once into a destination row
            assert np.unique(e * max(1, block.num_dst) + d).size == e.size


def assert_same_batch(a, b) -> None:  # noqa: ANN001
    assert torch.equal(a.n_id.cpu(), b.n_id.cpu()) and torch.equal(a.seed_index.cpu(), b.seed_index.cpu())
    for x, y in zip(a.blocks, b.blocks, strict=True):
        assert torch.equal(x.edge_index.cpu(), y.edge_index.cpu())
        assert (x.num_src, x.num_dst) == (y.num_src, y.num_dst)


graphs = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**31),
        "n": st.integers(1, 60),
        "e": st.integers(0, 400),
        "fanouts": st.lists(st.sampled_from([-1, 1, 2, 3, 5]), min_size=1, max_size=3),
        "batch": st.integers(1, 20),
    }
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=graphs)
def test_node_and_device_samplers_record_real_edges(g: dict) -> None:
    indptr, indices = random_csc(g["n"], g["e"], g["seed"])
    seeds = np.random.default_rng(g["seed"]).integers(0, g["n"], g["batch"])
    plain = NeighborSampler(indptr, indices, g["fanouts"], seed=4).sample(seeds, batch_id=2)
    assert all(block.edge_id is None for block in plain.blocks)  # chosen once: off by default
    with_ids = NeighborSampler(indptr, indices, g["fanouts"], seed=4, with_edge_ids=True).sample(seeds, batch_id=2)
    assert_real_edges(with_ids, indptr, indices)
    assert_same_batch(plain, with_ids)
    device = DeviceNeighborSampler(DenseTopology(indptr, indices), g["fanouts"], seed=4, picks="numba",
                                   with_edge_ids=True).sample(seeds, batch_id=2)  # fmt: skip
    assert_same_batch(plain, device)
    for a, b in zip(with_ids.blocks, device.blocks, strict=True):
        assert torch.equal(a.edge_id, b.edge_id)


def test_threaded_hops_and_the_parallel_relabel_record_the_same_edge_ids() -> None:
    """Hops large enough for the thread team (the overlapped relabel and the parallel one) record the same ids."""
    indptr, indices = random_csc(20_000, 300_000, 3)
    seeds = np.random.default_rng(1).integers(0, 20_000, 3000)
    one = NeighborSampler(indptr, indices, [10, 4], seed=5, num_threads=1, with_edge_ids=True).sample(seeds, 9)
    assert_real_edges(one, indptr, indices)
    two_sampler = NeighborSampler(indptr, indices, [10, 4], seed=5, num_threads=2, with_edge_ids=True)
    two = two_sampler.sample(seeds, 9)
    two_sampler.parallel_relabel_min_threads = 2
    relabelled = two_sampler.sample(seeds, 9)
    for other in (two, relabelled):
        assert_same_batch(one, other)
        for a, b in zip(one.blocks, other.blocks, strict=True):
            assert torch.equal(a.edge_id, b.edge_id)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(g=graphs, exclusion=st.sampled_from(["numba", "torch"]), undirected=st.booleans())
def test_link_batches_keep_the_edge_ids_of_the_edges_left_after_the_exclusion(
    g: dict, exclusion: str, undirected: bool
) -> None:
    indptr, indices = random_csc(g["n"], g["e"], g["seed"])
    num_edges = int(indptr[-1])
    if num_edges == 0:
        return
    dst = np.repeat(np.arange(g["n"]), np.diff(indptr))
    pairs = np.stack([indices.astype(np.int64), dst], axis=1)  # the graph's own edges: every target is sampled
    fanouts = [-1, *g["fanouts"][1:]]
    nodes = NeighborSampler(indptr, indices, fanouts, seed=1, with_edge_ids=True)
    sampler = LinkSampler(nodes.sample, pairs, num_nodes=g["n"], undirected=undirected, exclusion=exclusion, seed=3)
    chosen = np.random.default_rng(g["seed"]).choice(num_edges, min(num_edges, g["batch"]), replace=False)
    mb = sampler.sample(chosen, batch_id=5)
    assert_real_edges(mb, indptr, indices)
    whole = nodes.sample(mb.seeds.numpy(), batch_id=5)  # the same node batch before the exclusion
    for before, after in zip(whole.blocks, mb.blocks, strict=True):
        keep = exclude_edges_reference(whole.n_id.numpy(), before.edge_index.numpy(), pairs[chosen], g["n"], undirected)
        assert torch.equal(after.edge_id, before.edge_id[torch.from_numpy(keep)])
    assert mb.excluded_edges > 0  # the first hop takes whole lists: the targets were there and left


@pytest.mark.parametrize("strategy", ["uniform", "recent"])
def test_temporal_link_batches_record_real_edges(strategy: str) -> None:
    rng = np.random.default_rng(7)
    indptr, indices, time, order = timed_csc(rng, 40, 300, horizon=50)
    temporal = TemporalNeighborSampler(indptr, indices, time, order, [3, 2], strategy=strategy)
    pairs = rng.integers(0, 40, (30, 2))
    times = rng.integers(1, 60, 30)
    sampler = LinkSampler(lambda s, b, t: temporal.sample(s, t, b), pairs, num_nodes=40, times=times, exclude=False)
    mb = sampler.sample(np.arange(30), batch_id=1)
    assert sum(block.num_edges for block in mb.blocks) > 0
    assert_real_edges(mb, indptr, indices)


def assert_real_typed_edges(mb, indptr: np.ndarray, indices: np.ndarray, schema) -> None:  # noqa: ANN001
    """Every relation block's edge_id is the typed-CSC position of its (source, destination) edge."""
    offsets = dict(zip(schema.type_names, schema.offsets()[:-1].tolist()))
    n_id = {t: ids.cpu().numpy() for t, ids in mb.n_id.items()}
    for block in mb.blocks:
        for key, rel in block.relations.items():
            relation = next(r for r in schema.relations if r.type == key)
            assert rel.edge_id is not None and rel.edge_id.dtype == torch.int64
            src, dst = rel.edge_index.cpu().numpy()
            e = rel.edge_id.cpu().numpy()
            assert e.shape == src.shape
            assert np.all(indices[e] == n_id[relation.src][src] + offsets[relation.src])  # the source's global id
            rows = relation.row_offset + n_id[relation.dst][dst]  # the destination's row of this relation
            assert np.all((e >= indptr[rows]) & (e < indptr[rows + 1]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**TYPED_CASES)
def test_typed_samplers_record_real_edges(
    papers, authors, fields, degree, hops, per_relation, graph_seed, batch, seed, batch_id
) -> None:  # noqa: ANN001
    indptr, indices, schema, fanouts, seeds = typed_case(
        papers, authors, fields, degree, hops, per_relation, graph_seed, batch
    )
    plain = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=seed, num_threads=1).sample(seeds, batch_id)
    assert all(rel.edge_id is None for blk in plain.blocks for rel in blk.relations.values())
    for threads in (1, 2):
        mb = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=seed, num_threads=threads,
                                  with_edge_ids=True).sample(seeds, batch_id)  # fmt: skip
        assert_identical_typed(mb, plain)  # the same batch, with edge ids
        assert_real_typed_edges(mb, indptr, indices, schema)
    on_device = DeviceNeighborSampler(DenseTopology(indptr, indices), fanouts, schema=schema, seed=seed, picks="numba",
                                           with_edge_ids=True).sample(seeds, batch_id)  # fmt: skip
    assert_identical_typed(on_device, plain)
    for blk, want in zip(on_device.blocks, mb.blocks):
        for key, rel in want.relations.items():
            assert torch.equal(blk.relations[key].edge_id.cpu(), rel.edge_id), key
