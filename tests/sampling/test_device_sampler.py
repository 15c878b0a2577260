"""DeviceNeighborSampler gives NeighborSampler's batches exactly, with Triton (interpreted) and numba picks."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from graphtier.errors import OptionError
from graphtier.sampling import (
    DenseTopology,
    DeviceNeighborSampler,
    MiniBatch,
    NeighborSampler,
    Topology,
)
from graphtier.sampling.device.device_hops import first_seen_relabel
from tests.interpreted import HAS_TRITON, load_interpreted
from tests.sampling.graphs import random_csc, star_in
from tests.sampling.test_neighbor import assert_well_formed

# without triton only the numba picks are checked
interpreted = load_interpreted("sampling/device/_device_kernels.py") if HAS_TRITON else None
PICKS = ["triton", "numba"] if HAS_TRITON else ["numba"]
needs_triton = pytest.mark.skipif(not HAS_TRITON, reason="needs triton")


def device_sampler(topology: Topology, fanouts, seed: int, picks: str) -> DeviceNeighborSampler:
    kernels = interpreted if picks == "triton" else None
    return DeviceNeighborSampler(topology, fanouts, seed=seed, picks=picks, kernels=kernels)


def assert_identical(mb: MiniBatch, expected: MiniBatch) -> None:
    """Every tensor and size of two batches equal (the device batch moved to the CPU first)."""
    mb = mb.to("cpu")
    for name in ("n_id", "seed_index", "seeds"):
        got, want = getattr(mb, name), getattr(expected, name)
        assert got.dtype == torch.int64 and torch.equal(got, want), name
    assert len(mb.blocks) == len(expected.blocks)
    for blk, want in zip(mb.blocks, expected.blocks):
        assert (blk.num_src, blk.num_dst) == (want.num_src, want.num_dst)
        assert blk.edge_index.dtype == torch.int64 and torch.equal(blk.edge_index, want.edge_index)


def with_hub_and_isolated(num_nodes: int, avg_degree: int, graph_seed: int, index_dtype) -> tuple[np.ndarray, ...]:
    """A skewed random graph plus a hub (node 0 gets an in-edge from every node) and isolated nodes."""
    indptr, indices = random_csc(num_nodes, num_nodes * avg_degree, graph_seed, index_dtype=np.int64)
    lists = [indices[indptr[v] : indptr[v + 1]] for v in range(num_nodes)]
    lists[0] = np.sort(np.concatenate([lists[0], np.arange(num_nodes)]))
    for v in range(num_nodes - 1, num_nodes - 1 - num_nodes // 5, -1):  # the last fifth: no in-edges
        if v > 0:
            lists[v] = lists[v][:0]
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([lst.size for lst in lists])
    return indptr, np.concatenate(lists).astype(index_dtype)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    num_nodes=st.integers(1, 60),
    avg_degree=st.integers(0, 10),
    fanouts=st.lists(st.sampled_from([-1, 1, 2, 3, 5, 40]), min_size=1, max_size=3),
    graph_seed=st.integers(0, 2**16),
    batch=st.integers(0, 15),
    seed=st.integers(-(2**40), 2**40),
    batch_id=st.integers(0, 2**40),
    index_dtype=st.sampled_from([np.int32, np.int64]),
    picks=st.sampled_from(PICKS),
)
def test_identical_to_cpu_sampler(
    num_nodes, avg_degree, fanouts, graph_seed, batch, seed, batch_id, index_dtype, picks
):
    indptr, indices = with_hub_and_isolated(num_nodes, avg_degree, graph_seed, index_dtype)
    seeds = np.random.default_rng(graph_seed).integers(0, num_nodes, batch)  # repeats allowed, may be empty
    expected = NeighborSampler(indptr, indices, fanouts, seed=seed, num_threads=1).sample(seeds, batch_id)
    mb = device_sampler(DenseTopology(indptr, indices), fanouts, seed, picks).sample(seeds, batch_id)
    assert_identical(mb, expected)
    assert_well_formed(mb, indptr, indices, fanouts)


@pytest.mark.parametrize("picks", PICKS)
def test_larger_graph_and_seed_inputs(picks: str) -> None:
    indptr, indices = random_csc(3000, 40_000, 5)
    seeds = np.random.default_rng(2).integers(0, 3000, 300)
    fanouts = [10, 5, 3]
    expected = NeighborSampler(indptr, indices, fanouts, seed=9).sample(seeds, batch_id=4)
    sampler = device_sampler(DenseTopology(torch.from_numpy(indptr), torch.from_numpy(indices)), fanouts, 9, picks)
    for given_seeds in (seeds, torch.from_numpy(seeds), torch.from_numpy(seeds.astype(np.int32)), list(seeds)):
        assert_identical(sampler.sample(given_seeds, batch_id=4), expected)


def test_empty_seeds_isolated_nodes_and_repeats() -> None:
    indptr, indices = star_in(4)  # leaves 1..4 have no in-edges
    sampler = DeviceNeighborSampler(DenseTopology(indptr, indices), [2, 2, 2])
    cpu = NeighborSampler(indptr, indices, [2, 2, 2])
    for seeds in (np.array([], dtype=np.int64), [], np.array([3, 1, 3]), np.array([0, 0, 2, 0])):
        assert_identical(sampler.sample(seeds, batch_id=1), cpu.sample(seeds, batch_id=1))
    empty = sampler.sample(torch.empty(0, dtype=torch.int64))
    assert empty.n_id.numel() == 0 and all(b.edge_index.shape == (2, 0) and b.num_src == 0 for b in empty.blocks)


class OffsetTopology:
    """Positions start at 2^31 + 7: ``indptr`` is shifted by that base and ``gather_positions`` takes it off."""

    BASE = 2**31 + 7

    def __init__(self, indptr: np.ndarray, indices: np.ndarray) -> None:
        self.indptr = torch.from_numpy(indptr + self.BASE)
        self.indices = torch.from_numpy(indices)
        self.num_nodes = indptr.shape[0] - 1
        self.num_edges = indices.shape[0]
        self.device = torch.device("cpu")

    def gather_positions(self, positions: torch.Tensor) -> torch.Tensor:
        assert positions.dtype == torch.int64 and int(positions.min()) >= self.BASE
        return self.indices[positions - self.BASE].to(torch.int64)


@pytest.mark.parametrize("picks", PICKS)
def test_positions_beyond_int32(picks: str) -> None:
    indptr, indices = random_csc(400, 6000, 8)
    seeds = np.arange(0, 400, 3)
    fanouts = [4, -1, 2]
    topology = OffsetTopology(indptr, indices)
    assert isinstance(topology, Topology)
    expected = NeighborSampler(indptr, indices, fanouts, seed=3).sample(seeds, batch_id=2)
    assert_identical(device_sampler(topology, fanouts, 3, picks).sample(seeds, batch_id=2), expected)


class HugeListTopology:
    """Node 0 has 2^33 + 5 in-neighbours, node 1 has 3; the id at position p is p mod 2 (no indices array)."""

    def __init__(self) -> None:
        self.indptr = torch.tensor([0, 2**33 + 5, 2**33 + 8], dtype=torch.int64)
        self.num_nodes, self.num_edges, self.device = 2, 2**33 + 8, torch.device("cpu")
        self.gathered: list[torch.Tensor] = []

    def gather_positions(self, positions: torch.Tensor) -> torch.Tensor:
        self.gathered.append(positions.clone())
        return positions % 2


@pytest.mark.parametrize("picks", PICKS)
def test_lists_of_more_than_2_to_the_32_entries(picks: str) -> None:
    """Only the picked positions are read, drawn with the 64-bit modulo stream of floyd_positions_py."""
    from graphtier.sampling.neighbor import _neighbor_kernels as nk

    topology = HugeListTopology()
    mb = device_sampler(topology, [7], 13, picks).sample(np.array([0, 1]), batch_id=2)
    (positions,) = topology.gathered
    key = nk.node_key_py(nk.stream_key(13, 2, 0), 0)
    assert positions[:7].tolist() == nk.floyd_positions_py(key, 2**33 + 5, 7)
    assert positions[7:].tolist() == [2**33 + 5, 2**33 + 6, 2**33 + 7]  # node 1: its whole list
    assert mb.blocks[0].num_edges == 10 and max(positions[:7].tolist()) > 2**32


def test_deterministic_and_batch_ids_differ() -> None:
    indptr, indices = random_csc(500, 5000, 0)
    seeds = np.arange(0, 500, 7)
    a = DeviceNeighborSampler(DenseTopology(indptr, indices), [3, 3], seed=1)
    b = DeviceNeighborSampler(DenseTopology(indptr, indices), [3, 3], seed=1)
    first, second = a.sample(seeds), a.sample(seeds)  # batch ids 0 and 1 from the counter
    assert_identical(b.sample(seeds, batch_id=0), first)
    assert_identical(b.sample(seeds, batch_id=1), second)
    assert not torch.equal(first.blocks[-1].edge_index, second.blocks[-1].edge_index)
    other_seed = DeviceNeighborSampler(DenseTopology(indptr, indices), [3, 3], seed=2).sample(seeds, batch_id=0)
    assert not torch.equal(first.n_id, other_seed.n_id)


def test_hub_draws_are_uniform() -> None:
    """Chi-square over batch ids: a hub of degree 50, 5 draws per batch, every neighbour equally often."""
    degree, fanout, trials = 50, 5, 2000
    indptr, indices = star_in(degree)
    sampler = DeviceNeighborSampler(DenseTopology(indptr, indices), [fanout], seed=11, picks="numba")
    counts = np.zeros(degree + 1, dtype=np.int64)
    for b in range(trials):
        mb = sampler.sample(np.array([0]), batch_id=b)
        counts += np.bincount(mb.n_id[mb.blocks[0].edge_index[0]].numpy(), minlength=degree + 1)
    observed = counts[1:]
    assert observed.sum() == trials * fanout
    assert chisquare(observed).pvalue > 1e-4


@needs_triton
def test_fanouts_above_the_kernel_limit_use_numba_picks() -> None:
    indptr, indices = star_in(30)
    calls = []

    def spy(*args, **kwargs):
        calls.append(args[5])
        return interpreted.floyd_picks_triton(*args, **kwargs)

    kernels = SimpleNamespace(MAX_FANOUT=4, floyd_picks_triton=spy)
    sampler = DeviceNeighborSampler(DenseTopology(indptr, indices), [4, 9], seed=5, picks="triton", kernels=kernels)
    expected = NeighborSampler(indptr, indices, [4, 9], seed=5).sample(np.array([0, 3]), batch_id=6)
    assert_identical(sampler.sample(np.array([0, 3]), batch_id=6), expected)
    assert calls == [4]  # the fanout-9 hop (node 0 drawn again) went to numba


def test_first_seen_relabel() -> None:
    known = torch.tensor([7, 3])
    n_id, local = first_seen_relabel(known, torch.tensor([5, 3, 9, 5, 7, 1]))
    assert n_id.tolist() == [7, 3, 5, 9, 1] and local.tolist() == [2, 1, 3, 2, 0, 4]


def test_dense_topology() -> None:
    indptr, indices = star_in(3)
    topology = DenseTopology(indptr, indices)
    assert (topology.num_nodes, topology.num_edges, topology.device.type) == (4, 3, "cpu")
    gathered = topology.gather_positions(torch.tensor([2, 0]))
    assert gathered.dtype == torch.int64 and gathered.tolist() == [3, 1]
    assert topology.indices.dtype == torch.int32  # kept in its dtype
    with pytest.raises(OptionError, match="indptr"):
        DenseTopology(indptr.astype(np.int32), indices)
    with pytest.raises(OptionError, match="indptr"):
        DenseTopology(torch.from_numpy(indptr), torch.from_numpy(indices[:-1]))
    with pytest.raises(OptionError, match="indices"):
        DenseTopology(indptr, indices.astype(np.float32))


@pytest.mark.parametrize("fanouts", [[0], [-2], [2.5], ["3"], [], [True], 5, "10,10"])
def test_invalid_fanouts(fanouts) -> None:
    indptr, indices = star_in(3)
    with pytest.raises(OptionError, match="fanouts"):
        DeviceNeighborSampler(DenseTopology(indptr, indices), fanouts)


@pytest.mark.parametrize(
    "seeds, match",
    [
        (np.array([0, 9]), r"\[0, 4\)"),
        (np.array([-1]), "seeds"),
        (np.array([0.5]), "integer"),
        (torch.tensor([0.5]), "integer"),
        (np.zeros((2, 2), dtype=np.int64), "1-d"),
    ],
)
def test_invalid_seeds(seeds, match) -> None:
    indptr, indices = star_in(3)
    with pytest.raises(OptionError, match=match):
        DeviceNeighborSampler(DenseTopology(indptr, indices), [2]).sample(seeds)


def test_invalid_options() -> None:
    topology = DenseTopology(*star_in(3))
    with pytest.raises(OptionError, match="picks"):
        DeviceNeighborSampler(topology, [2], picks="cuda")
    with pytest.raises(OptionError, match="picks: 'triton' needs a CUDA"):
        DeviceNeighborSampler(topology, [2], picks="triton")
    with pytest.raises(OptionError, match="topology"):
        DeviceNeighborSampler(object(), [2])  # type: ignore[arg-type]
    with pytest.raises(OptionError, match="seed"):
        DeviceNeighborSampler(topology, [2], seed=1.5)  # type: ignore[arg-type]
    for batch_id in (-1, 1.0, True):
        with pytest.raises(OptionError, match="batch_id"):
            DeviceNeighborSampler(topology, [2]).sample(np.array([0]), batch_id=batch_id)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_compiled_sampler_on_cuda_is_identical() -> None:
    device = torch.device("cuda", torch.cuda.current_device())
    indptr, indices = random_csc(50_000, 1_000_000, 4)
    topology = DenseTopology(indptr, indices, device=device)
    fanouts = [15, 10, 5]
    sampler = DeviceNeighborSampler(topology, fanouts, seed=21)
    assert sampler.picks == "triton"
    cpu = NeighborSampler(indptr, indices, fanouts, seed=21)
    rng = np.random.default_rng(0)
    for batch_id in range(3):
        seeds = rng.integers(0, 50_000, 1024)
        mb = sampler.sample(torch.from_numpy(seeds).to(device), batch_id)
        assert mb.n_id.device == device and all(b.edge_index.device == device for b in mb.blocks)
        assert_identical(mb, cpu.sample(seeds, batch_id))
    # fanout 300: a 512-wide pick tile, 8 destinations per program
    hub = DeviceNeighborSampler(topology, [300, -1], seed=2).sample(np.arange(0, 50_000, 97), 0)
    assert_identical(hub, NeighborSampler(indptr, indices, [300, -1], seed=2).sample(np.arange(0, 50_000, 97), 0))
