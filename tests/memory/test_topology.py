"""TieredTopology: gather_positions equals indices[positions] on every plan and path; the accounting adds up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.memory import TieredTopology, make_topology
from graphtier.memory.features import unified as unified_module
from graphtier.memory.features.unified import PAGE_BYTES, REGISTRY
from graphtier.memory.plan.placement import TIER_NAMES, TierPlan
from graphtier.sampling import Topology
from tests.memory.test_unified import FakeRegistrar

triton = pytest.importorskip("triton")

from tests.interpreted import load_interpreted  # noqa: E402 - after the triton skip

kernels = load_interpreted("memory/topology/_topology_kernels.py")
DTYPES = [np.int32, np.int64]
# (topology_budget, ram_budget, share of the entries in the gpu tier, in the host tier (None: the rest))
PLANS = [
    ("0", None, 0.0, None),
    ("10%", None, 0.1, None),
    ("100%", None, 1.0, None),
    ("10%", "30%", 0.1, 0.3),
    ("0", "0", 0.0, 0.0),
]


def random_graph(num_nodes: int, dtype: type, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    degrees = rng.integers(0, 12, num_nodes)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(degrees, out=indptr[1:])
    indices = rng.integers(0, num_nodes, int(indptr[-1])).astype(dtype)
    return indptr, indices


def as_memmaps(tmp_path: Path, indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both arrays written as .npy files and memory-mapped read-only (as Dataset.open does)."""
    np.save(tmp_path / "indptr.npy", indptr)
    np.save(tmp_path / "indices.npy", indices)
    return np.load(tmp_path / "indptr.npy", mmap_mode="r"), np.load(tmp_path / "indices.npy", mmap_mode="r")


def expected_traffic(positions: np.ndarray, local_rows: int, host_end: int, itemsize: int) -> dict[str, int]:
    counts = dict.fromkeys(TIER_NAMES, 0)
    counts["gpu"] = int(np.sum(positions < local_rows)) * itemsize
    counts["host"] = int(np.sum((positions >= local_rows) & (positions < host_end))) * itemsize
    counts["disk"] = int(np.sum(positions >= host_end)) * itemsize
    counts["requested"] = positions.shape[0] * itemsize
    return counts


def build(
    indptr: np.ndarray, indices: np.ndarray, budget: str, ram: str | None, path: str, **kwargs: object
) -> TieredTopology:
    extra: dict[str, object] = {"kernels": kernels, "registrar": kwargs.pop("registrar")} if path == "kernels" else {}
    return make_topology(
        indptr, indices, device="cpu", topology_budget=budget, ram_budget=ram, log=lambda _: None, **extra, **kwargs
    )


@pytest.mark.parametrize("path", ["cpu", "kernels"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("budget", "ram", "gpu_share", "ram_share"), PLANS)
def test_gather_equals_indexing_on_every_plan(
    tmp_path: Path, path: str, dtype: type, budget: str, ram: str | None, gpu_share: float, ram_share: float | None
) -> None:
    indptr, indices = random_graph(3000, dtype, seed=7)
    mapped_indptr, mapped = as_memmaps(tmp_path, indptr, indices)
    num_edges = indices.shape[0]
    fake = FakeRegistrar()
    topology = build(mapped_indptr, mapped, budget, ram, path, registrar=fake)
    local_rows = int(np.floor(gpu_share * num_edges))
    host_end = num_edges if ram_share is None else min(num_edges, local_rows + int(np.floor(ram_share * num_edges)))
    assert (topology.plan.local_rows, topology.plan.host_end) == (local_rows, host_end)
    assert topology.num_nodes == 3000 and topology.num_edges == num_edges
    assert topology.indices_dtype == torch.from_numpy(indices[:0]).dtype
    assert topology.indptr.dtype == torch.int64 and torch.equal(topology.indptr, torch.from_numpy(indptr))
    if path == "kernels":
        assert bool(fake.live) == (host_end > local_rows)
    else:  # a disk tier means the other tiers are copied out of the memory map into RAM
        assert np.shares_memory(topology._ram, mapped) == (host_end == num_edges)
    rng = np.random.default_rng(1)
    expected = dict.fromkeys([*TIER_NAMES, "requested"], 0)
    for size in (1, 517, 4096):
        positions = rng.integers(0, num_edges, size)
        got = topology.gather_positions(torch.from_numpy(positions))
        assert got.dtype == torch.int64 and got.device == topology.device
        np.testing.assert_array_equal(got.numpy(), indices[positions].astype(np.int64))
        for key, value in expected_traffic(positions, local_rows, host_end, indices.itemsize).items():
            expected[key] += value
    traffic = topology.traffic()
    assert traffic == expected
    assert sum(traffic[tier] for tier in TIER_NAMES) == traffic["requested"]
    topology.close()
    topology.close()
    assert fake.live == {}


@pytest.mark.parametrize("path", ["cpu", "kernels"])
def test_sorted_reads_give_the_same_result_and_traffic(path: str) -> None:
    indptr, indices = random_graph(2000, np.int32, seed=3)
    positions = torch.from_numpy(np.random.default_rng(5).integers(0, indices.shape[0], 3000))
    results = []
    for sorted_reads in (False, True):
        with build(
            indptr, indices, "20%", "50%", path, registrar=FakeRegistrar(), sorted_reads=sorted_reads
        ) as topology:
            results.append((topology.gather_positions(positions), topology.traffic()))
    assert torch.equal(results[0][0], results[1][0]) and results[0][1] == results[1][1]
    assert torch.equal(results[0][0], torch.from_numpy(indices[positions.numpy()].astype(np.int64)))


@pytest.mark.parametrize(("budget", "sorts"), [("100%", False), ("0", True), ("20%", True)])
def test_default_reads_sort_when_over_one_in_fifty_positions_are_off_the_gpu(
    budget: str, sorts: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    indptr, indices = random_graph(2000, np.int32, seed=3)
    sorted_calls = []
    original = TieredTopology._gather_sorted
    monkeypatch.setattr(TieredTopology, "_gather_sorted", lambda self, *a: sorted_calls.append(1) or original(self, *a))
    with build(indptr, indices, budget, None, "kernels", registrar=FakeRegistrar()) as topology:
        assert topology.sorted_reads is None
        positions = torch.from_numpy(np.random.default_rng(5).integers(0, indices.shape[0], 3000))
        got = topology.gather_positions(positions)
        assert torch.equal(got, torch.from_numpy(indices[positions.numpy()].astype(np.int64)))
        assert bool(sorted_calls) == sorts
        sorted_calls.clear()
        gpu_only = positions[positions < topology.plan.local_rows][:100]
        if gpu_only.numel():  # a call that reads only the GPU tier is not sorted
            topology.gather_positions(gpu_only)
            assert not sorted_calls


@settings(max_examples=25, deadline=None)
@given(
    num_edges=st.integers(1, 400),
    cuts=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    num_positions=st.integers(0, 300),
    use_kernels=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_any_plan_gathers_like_indexing(
    num_edges: int, cuts: tuple[float, float], num_positions: int, use_kernels: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, 2**31 - 1, num_edges).astype(np.int32)
    indptr = np.array([0, num_edges], dtype=np.int64)
    local_rows, host_end = sorted(int(c * num_edges) for c in cuts)
    plan = TierPlan(num_rows=num_edges, row_bytes=4, local_rows=local_rows, peer_end=local_rows, host_end=host_end)
    fake = FakeRegistrar()
    extra = {"kernels": kernels, "registrar": fake} if use_kernels else {}
    with TieredTopology(indptr, indices, plan, device="cpu", log=lambda _: None, **extra) as topology:
        positions = rng.integers(0, num_edges, num_positions)
        got = topology.gather_positions(torch.from_numpy(positions))
        np.testing.assert_array_equal(got.numpy(), indices[positions].astype(np.int64))
        assert topology.traffic() == expected_traffic(positions, local_rows, host_end, 4)
    assert fake.live == {}


@pytest.mark.parametrize("path", ["cpu", "kernels"])
def test_empty_and_out_of_range_positions(path: str) -> None:
    indptr, indices = random_graph(100, np.int64, seed=2)
    num_edges = indices.shape[0]
    with build(indptr, indices, "10%", "50%", path, registrar=FakeRegistrar()) as topology:
        empty = topology.gather_positions(torch.empty(0, dtype=torch.int64))
        assert empty.shape == (0,) and empty.dtype == torch.int64
        for bad in ([0, num_edges], [-1, 3]):
            with pytest.raises(IndexError, match=rf"\[0, {num_edges}\), found \[{min(bad)}, {max(bad)}\]"):
                topology.gather_positions(torch.tensor(bad))
        with pytest.raises(IndexError, match="integers"):
            topology.gather_positions(torch.tensor([0.5]))
        with pytest.raises(IndexError, match="1-d"):
            topology.gather_positions(torch.zeros(2, 2, dtype=torch.int64))
        assert topology.traffic()["requested"] == 0
        got = topology.gather_positions(torch.tensor([3, 1], dtype=torch.int32))  # narrower ints are widened
        assert got.tolist() == indices[[3, 1]].tolist()
    with pytest.raises(OptionError, match="closed"):
        topology.gather_positions(torch.tensor([0]))


@pytest.mark.parametrize(("path", "tier"), [("cpu", "gpu"), ("kernels", "gpu")])
def test_indptr_reads_are_counted_in_the_tier_indptr_lives_in(path: str, tier: str) -> None:
    """indptr is on the compute device in the plan; the CPU twin counts its reads there too."""
    indptr, indices = random_graph(50, np.int32, seed=4)
    with build(indptr, indices, "0", None, path, registrar=FakeRegistrar()) as topology:
        assert topology.indptr_tier == tier
        topology.count_indptr_reads(10)
        topology.gather_positions(torch.tensor([0, 1, 2]))
        traffic = topology.traffic()
        assert traffic[tier] == 160 and traffic["host"] == 12  # budget 0: the three entries are host reads
        assert sum(traffic[t] for t in TIER_NAMES) == traffic["requested"] == 172
        with pytest.raises(ValueError):
            topology.count_indptr_reads(-1)


def test_host_tier_is_registered_in_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unified_module, "REGISTER_CHUNK_BYTES", 2 * PAGE_BYTES)
    indptr, indices = random_graph(4000, np.int32, seed=9)
    _, mapped = as_memmaps(tmp_path, indptr, indices)
    fake = FakeRegistrar()
    with build(indptr, mapped, "10%", None, "kernels", registrar=fake) as topology:
        host_bytes = topology.plan.host_rows * 4
        assert len(fake.sizes) == -(-host_bytes // (2 * PAGE_BYTES)) > 1
        assert sum(n for _, n in fake.sizes) == host_bytes
        assert all(address % PAGE_BYTES == 0 for address, _ in fake.sizes)  # a copy of the memmap, page-aligned
        first = fake.sizes[0][0]
        assert REGISTRY.is_registered(first)
    assert fake.live == {} and not REGISTRY.is_registered(first)


def test_a_failed_registration_leaves_nothing_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unified_module, "REGISTER_CHUNK_BYTES", PAGE_BYTES)
    indptr, indices = random_graph(4000, np.int64, seed=9)
    fake = FakeRegistrar(fail_on_call=3)
    with pytest.raises(OptionError, match="failed"):
        build(indptr, indices, "0", None, "kernels", registrar=fake)
    assert fake.live == {} and len(fake.sizes) == 2


def test_positions_past_two_to_the_31_in_a_sparse_memmap(tmp_path: Path) -> None:
    num_edges = 2**31 + 3 * PAGE_BYTES  # > 2^31 int32 entries: 8 GiB sparse, no disk used
    path = tmp_path / "indices.npy"
    writer = np.lib.format.open_memmap(path, mode="w+", dtype=np.int32, shape=(num_edges,))
    rng = np.random.default_rng(11)
    written = np.unique(np.concatenate([rng.integers(2**31 - 100, num_edges, 200), rng.integers(0, 3000, 50)]))
    writer[written] = rng.integers(1, 2**31 - 1, written.shape[0])
    values = np.asarray(writer[written])
    writer.flush()
    del writer
    mapped = np.load(path, mmap_mode="r")
    indptr = np.array([0, 2**31 + 1, num_edges], dtype=np.int64)
    queries = np.concatenate([written, [num_edges - 1, 2**31, 2**31 + 1]])
    expected = np.concatenate([values, np.asarray(mapped[[num_edges - 1, 2**31, 2**31 + 1]])])
    for budget, ram, path_kind in [("1KiB", None, "cpu"), ("1KiB", "16KiB", "cpu"), ("1KiB", "16KiB", "kernels")]:
        fake = FakeRegistrar()
        with build(indptr, mapped, budget, ram, path_kind, registrar=fake) as topology:
            assert topology.num_edges == num_edges
            got = topology.gather_positions(torch.from_numpy(queries))
            np.testing.assert_array_equal(got.numpy(), expected.astype(np.int64))
            far = int(np.sum(queries >= topology.plan.host_end))
            assert (topology.traffic()["disk"] == far * 4) and (far > 0) == (ram is not None)
        assert fake.live == {}


def test_make_topology_rejects_bad_input() -> None:
    indptr, indices = random_graph(20, np.int32, seed=1)
    with pytest.raises(OptionError, match="^topology_budget=: expected") as info:
        make_topology(indptr, indices, device="cpu", topology_budget="lots", log=lambda _: None)
    assert info.value.render(cli=True).startswith("--topology-budget: expected")
    with pytest.raises(OptionError, match="^ram_budget=: expected"):
        make_topology(indptr, indices, device="cpu", ram_budget="2 parsecs", log=lambda _: None)
    shifted = indptr.copy()
    shifted[-1] += 1
    with pytest.raises(OptionError, match=r"indptr: expected it to run from 0 to len\(indices\)"):
        make_topology(shifted, indices, device="cpu", log=lambda _: None)
    with pytest.raises(OptionError, match="indices: expected an int32 or int64"):
        make_topology(indptr, indices.astype(np.float32), device="cpu", log=lambda _: None)
    with pytest.raises(OptionError, match="indptr: expected an int64"):
        make_topology(indptr.astype(np.float64), indices, device="cpu", log=lambda _: None)
    if not torch.cuda.is_available():
        with pytest.raises(OptionError, match="CUDA is not available"):
            make_topology(indptr, indices, device="cuda", log=lambda _: None)


def test_auto_budget_without_cuda_keeps_nothing_on_the_device_and_describes_in_one_line() -> None:
    indptr, indices = random_graph(20, np.int32, seed=1)
    lines: list[str] = []
    with make_topology(indptr, indices, device="cpu", log=lines.append) as topology:
        assert topology.plan.local_rows == 0 and topology.plan.host_end == indices.shape[0]
        line = topology.describe()
        assert "\n" not in line and "20 nodes" in line and lines[-1] == line


def test_satisfies_the_sampler_protocol_and_keeps_indptr_in_ram(tmp_path: Path) -> None:
    indptr, indices = random_graph(300, np.int32, seed=8)
    mapped_indptr, mapped = as_memmaps(tmp_path, indptr, indices)
    with make_topology(indptr, indices, device="cpu", log=lambda _: None) as in_ram:
        assert isinstance(in_ram, Topology)
        assert in_ram.indptr.data_ptr() == indptr.ctypes.data  # a view of the RAM array, no copy
    with make_topology(mapped_indptr, mapped, device="cpu", log=lambda _: None) as from_file:
        assert from_file.indptr.data_ptr() != mapped_indptr.ctypes.data  # the memory map copied into RAM
        assert torch.equal(from_file.indptr, torch.from_numpy(indptr))


requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.gpu
@requires_cuda
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("sorted_reads", [False, True])
def test_cuda_path_equals_indexing(tmp_path: Path, dtype: type, sorted_reads: bool) -> None:
    indptr, indices = random_graph(200_000, dtype, seed=5)
    mapped_indptr, mapped = as_memmaps(tmp_path, indptr, indices)
    device = torch.device("cuda", torch.cuda.current_device())
    with make_topology(
        mapped_indptr,
        mapped,
        device=device,
        topology_budget="10%",
        ram_budget="50%",
        sorted_reads=sorted_reads,
        log=lambda _: None,
    ) as topology:
        assert topology.indptr.device == device and torch.equal(topology.indptr.cpu(), torch.from_numpy(indptr))
        assert REGISTRY.is_registered(topology._host.tensor.data_ptr())
        positions = np.random.default_rng(0).integers(0, indices.shape[0], 300_000)
        got = topology.gather_positions(torch.from_numpy(positions).to(device))
        assert got.device == device
        np.testing.assert_array_equal(got.cpu().numpy(), indices[positions].astype(np.int64))
        plan = topology.plan
        assert topology.traffic() == expected_traffic(positions, plan.local_rows, plan.host_end, indices.itemsize)
        address = topology._host.tensor.data_ptr()
    assert not REGISTRY.is_registered(address)
