"""DeviceNeighborSampler with a schema gives NeighborSampler's typed batches exactly, with Triton (interpreted) and numba picks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphtier.dataset.schema import Schema
from graphtier.errors import OptionError
from graphtier.sampling import DenseTopology, DeviceNeighborSampler, Topology
from graphtier.sampling.neighbor.sampler import NeighborSampler
from graphtier.sampling.relation_fanouts import parse_relation_fanouts
from graphtier.sampling.typed_batch import TypedMiniBatch
from tests.interpreted import HAS_TRITON, load_interpreted
from tests.sampling.graphs import random_csc
from tests.sampling.test_typed_neighbor import TYPED_CASES, assert_well_formed, random_typed_graph, typed_case

interpreted = load_interpreted("sampling/device/_device_kernels.py") if HAS_TRITON else None
PICKS = ["triton", "numba"] if HAS_TRITON else ["numba"]


def device_sampler(topology: Topology, schema: Schema, fanouts, seed: int, picks: str) -> DeviceNeighborSampler:
    kernels = interpreted if picks == "triton" else None
    return DeviceNeighborSampler(topology, fanouts, schema=schema, seed=seed, picks=picks, kernels=kernels)


def assert_identical_typed(mb: TypedMiniBatch, expected: TypedMiniBatch) -> None:
    """Every tensor and size of two typed batches equal (the device batch moved to the CPU first)."""
    mb = mb.to("cpu")
    assert mb.target == expected.target and set(mb.n_id) == set(expected.n_id)
    for t, want in expected.n_id.items():
        assert mb.n_id[t].dtype == torch.int64 and torch.equal(mb.n_id[t], want), t
    for name in ("seed_index", "seeds"):
        got, want = getattr(mb, name), getattr(expected, name)
        assert got.dtype == torch.int64 and torch.equal(got, want), name
    assert len(mb.blocks) == len(expected.blocks)
    for blk, want in zip(mb.blocks, expected.blocks):
        assert (blk.num_src, blk.num_dst) == (want.num_src, want.num_dst)
        assert list(blk.relations) == list(want.relations)
        for key, rel in want.relations.items():
            got = blk.relations[key]
            assert got.rowptr.dtype == got.col.dtype == torch.int64
            assert torch.equal(got.rowptr, rel.rowptr) and torch.equal(got.col, rel.col), key


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**TYPED_CASES, picks=st.sampled_from(PICKS))
def test_identical_to_the_cpu_typed_sampler(
    papers, authors, fields, degree, hops, per_relation, graph_seed, batch, seed, batch_id, picks
):
    indptr, indices, schema, fanouts, seeds = typed_case(
        papers, authors, fields, degree, hops, per_relation, graph_seed, batch
    )
    expected = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=seed, num_threads=1).sample(
        seeds, batch_id
    )
    mb = device_sampler(DenseTopology(indptr, indices), schema, fanouts, seed, picks).sample(seeds, batch_id)
    assert_identical_typed(mb, expected)
    assert_well_formed(mb, indptr, indices, schema, fanouts)


@pytest.mark.parametrize("picks", PICKS)
def test_larger_graph_mixed_fanouts_and_seed_inputs(picks: str) -> None:
    """Relations with different fanouts in one hop (one pick call per fanout), hubs, every seed input kind."""
    indptr, indices, schema = random_typed_graph({"paper": 600, "author": 400, "field": 8}, 6, 3)
    fanouts = parse_relation_fanouts("cites=5/3,writes=2/-1,knows=7", schema, [4, 2])
    seeds = np.random.default_rng(2).integers(0, 600, 150)
    expected = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=9).sample(seeds, batch_id=4)
    topology = DenseTopology(torch.from_numpy(indptr), torch.from_numpy(indices))
    sampler = device_sampler(topology, schema, fanouts, 9, picks)
    for given_seeds in (seeds, torch.from_numpy(seeds), torch.from_numpy(seeds.astype(np.int32)), list(seeds)):
        assert_identical_typed(sampler.sample(given_seeds, batch_id=4), expected)
    assert expected.num_sampled_edges > 300


def test_homogeneous_schema_gives_the_device_neighbor_samplers_batches() -> None:
    indptr, indices = random_csc(300, 3000, 5)
    schema = Schema.homogeneous(300, len(indices))
    seeds = np.random.default_rng(0).integers(0, 300, 50)
    topology = DenseTopology(indptr, indices)
    plain = DeviceNeighborSampler(topology, [5, 3], seed=11).sample(seeds, batch_id=4)
    typed = DeviceNeighborSampler(topology, {("_N", "_E", "_N"): [5, 3]}, schema=schema, seed=11).sample(seeds, 4)
    assert torch.equal(typed.n_id["_N"], plain.n_id) and torch.equal(typed.seed_index, plain.seed_index)
    for a, b in zip(typed.blocks, plain.blocks):
        assert (a.num_src["_N"], a.num_dst["_N"]) == (b.num_src, b.num_dst)
        assert torch.equal(a.relations[("_N", "_E", "_N")].edge_index, b.edge_index)


def test_bad_arguments_are_one_line_option_errors() -> None:
    indptr, indices, schema = random_typed_graph({"paper": 10, "author": 5, "field": 2}, 2, 0)
    good = parse_relation_fanouts(None, schema, [2])
    topology = DenseTopology(indptr, indices)
    with pytest.raises(OptionError, match="topology: expected an object"):
        DeviceNeighborSampler(object(), good, schema=schema)  # type: ignore[arg-type]
    with pytest.raises(OptionError, match=f"topology: expected {schema.num_rows} rows"):
        DeviceNeighborSampler(DenseTopology(indptr[:-1].copy(), indices[: indptr[-2]]), good, schema=schema)
    with pytest.raises(OptionError, match="missing"):
        DeviceNeighborSampler(topology, {k: v for k, v in list(good.items())[1:]}, schema=schema)
    with pytest.raises(OptionError, match="picks"):
        DeviceNeighborSampler(topology, good, schema=schema, picks="triton")  # no CUDA topology, no kernels
    with pytest.raises(OptionError, match="seed"):
        DeviceNeighborSampler(topology, good, schema=schema, seed=1.5)  # type: ignore[arg-type]
    sampler = DeviceNeighborSampler(topology, good, schema=schema)
    with pytest.raises(OptionError, match=r"seeds: expected node ids in \[0, 10\)"):
        sampler.sample([10], 0)
    with pytest.raises(OptionError, match="batch_id"):
        sampler.sample([1], -1)
    assert sampler.sample([1]).blocks[0].num_src["paper"] >= 1  # batch_id None: the internal counter


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_compiled_typed_sampler_on_cuda_is_identical() -> None:
    device = torch.device("cuda", torch.cuda.current_device())
    indptr, indices, schema = random_typed_graph({"paper": 20_000, "author": 15_000, "field": 40}, 12, 4)
    fanouts = parse_relation_fanouts("cites=15/10/5,writes=8/4/-1,has=300/2/2", schema, [10, 5, 3])
    sampler = DeviceNeighborSampler(DenseTopology(indptr, indices, device=device), fanouts, schema=schema, seed=21)
    assert sampler.picks == "triton"
    cpu = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=21)
    rng = np.random.default_rng(0)
    for batch_id in range(3):
        seeds = rng.integers(0, 20_000, 1024)
        mb = sampler.sample(torch.from_numpy(seeds).to(device), batch_id)
        assert all(ids.device == device for ids in mb.n_id.values())
        assert all(rel.col.device == device for blk in mb.blocks for rel in blk.relations.values())
        assert_identical_typed(mb, cpu.sample(seeds, batch_id))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_typed_edge_ids_on_cuda_are_the_cpu_samplers() -> None:
    device = torch.device("cuda", torch.cuda.current_device())
    indptr, indices, schema = random_typed_graph({"paper": 5_000, "author": 4_000, "field": 20}, 8, 7)
    fanouts = parse_relation_fanouts("cites=10/5,writes=4/-1,has=50/2", schema, [10, 5])
    gpu = DeviceNeighborSampler(DenseTopology(indptr, indices, device=device), fanouts, schema=schema, seed=3,
                                     with_edge_ids=True)  # fmt: skip
    cpu = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=3, with_edge_ids=True)
    seeds = np.random.default_rng(1).integers(0, 5_000, 512)
    mb, want = gpu.sample(torch.from_numpy(seeds).to(device), 2), cpu.sample(seeds, 2)
    assert_identical_typed(mb, want)
    for blk, expected in zip(mb.blocks, want.blocks):
        for key, rel in expected.relations.items():
            got = blk.relations[key].edge_id
            assert got.device == device and torch.equal(got.cpu(), rel.edge_id), key


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**TYPED_CASES, picks=st.sampled_from(PICKS))
def test_sample_global_is_the_cpu_samplers(
    papers, authors, fields, degree, hops, per_relation, graph_seed, batch, seed, batch_id, picks
):
    """Seeds of several types (a typed link batch's endpoints): the same batch and the same row of each seed among
    its type's rows as NeighborSampler.sample_global."""
    indptr, indices, schema, fanouts, _ = typed_case(papers, authors, fields, degree, hops, per_relation, graph_seed, 0)
    seeds = np.random.default_rng(graph_seed).integers(0, schema.num_nodes, batch)
    cpu = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=seed, num_threads=1)
    expected, rows = cpu.sample_global(seeds, batch_id)
    mb, got_rows = device_sampler(DenseTopology(indptr, indices), schema, fanouts, seed, picks).sample_global(
        seeds, batch_id
    )
    assert_identical_typed(mb, expected)
    np.testing.assert_array_equal(got_rows.cpu().numpy(), rows)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_sample_global_on_cuda_is_the_cpu_samplers() -> None:
    """Typed link batches on the GPU: seeds of two types, compiled Triton picks, the CPU sampler's batch and rows."""
    device = torch.device("cuda", torch.cuda.current_device())
    indptr, indices, schema = random_typed_graph({"paper": 5_000, "author": 4_000, "field": 20}, 8, 9)
    fanouts = parse_relation_fanouts("cites=10/5,writes=4/-1,has=50/2", schema, [10, 5])
    gpu = DeviceNeighborSampler(DenseTopology(indptr, indices, device=device), fanouts, schema=schema, seed=5)
    cpu = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=5)
    seeds = np.random.default_rng(2).integers(0, 9_000, 768)  # papers and authors
    (mb, rows), (want, want_rows) = gpu.sample_global(seeds, 4), cpu.sample_global(seeds, 4)
    assert rows.device == device and np.array_equal(rows.cpu().numpy(), want_rows)
    assert_identical_typed(mb, want)
