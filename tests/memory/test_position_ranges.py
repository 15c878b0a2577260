"""A topology whose GPU tier is several position ranges (a typed graph's per-relation prefixes): every position
reads its entry on every tier and path, the tier order is a bijection, and the traffic adds up."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.memory import TieredTopology, make_topology
from graphtier.memory.plan.placement import TIER_NAMES, TierPlan
from graphtier.memory.topology.position_ranges import GpuRanges
from tests.memory.test_topology import as_memmaps, random_graph
from tests.memory.test_unified import FakeRegistrar

triton = pytest.importorskip("triton")

from tests.interpreted import load_interpreted  # noqa: E402 - after the triton skip

kernels = load_interpreted("memory/topology/_topology_kernels.py")


@st.composite
def ranges_and_plan(draw: st.DrawFn) -> tuple[int, list[tuple[int, int]], int]:
    """(number of entries, sorted disjoint GPU ranges, host entries after them)."""
    num = draw(st.integers(1, 400))
    cuts = sorted(draw(st.lists(st.integers(0, num), max_size=8)))
    ranges = [(cuts[i], cuts[i + 1]) for i in range(0, len(cuts) - 1, 2)]
    gpu = sum(b - a for a, b in ranges)
    host = draw(st.integers(0, num - gpu))
    return num, ranges, host


def expected_tiers(num: int, ranges: list[tuple[int, int]], host_rows: int) -> np.ndarray:
    """Tier index (TIER_NAMES) of every position: GPU in a range, else host for the first host_rows others."""
    tier = np.full(num, TIER_NAMES.index("disk"), dtype=np.int64)
    on_gpu = np.zeros(num, dtype=bool)
    for a, b in ranges:
        on_gpu[a:b] = True
    tier[np.flatnonzero(~on_gpu)[:host_rows]] = TIER_NAMES.index("host")
    tier[on_gpu] = TIER_NAMES.index("gpu")
    return tier


@settings(max_examples=40, deadline=None)
@given(ranges_and_plan(), st.sampled_from(["cpu", "kernels"]), st.booleans(), st.integers(0, 2**31))
def test_positions_in_several_gpu_ranges_read_their_entries_on_every_tier(
    case: tuple[int, list[tuple[int, int]], int], path: str, sorted_reads: bool, seed: int
) -> None:
    num, ranges, host = case
    rng = np.random.default_rng(seed)
    indices = rng.integers(0, 1000, num).astype(np.int32)
    indptr = np.array([0, num], dtype=np.int64)
    gpu_ranges = GpuRanges(ranges, num)
    order = gpu_ranges.to_tier_order(torch.arange(num)).numpy()
    assert sorted(order.tolist()) == list(range(num))  # a bijection, the GPU ranges first
    assert set(order[expected_tiers(num, ranges, num) == 0].tolist()) == set(range(gpu_ranges.gpu_entries))
    local = gpu_ranges.gpu_entries
    plan = TierPlan(num, 4, local_rows=local, peer_end=local, host_end=local + host)
    extra = {"kernels": kernels, "registrar": FakeRegistrar()} if path == "kernels" else {}
    with TieredTopology(indptr, indices, plan, device="cpu", log=lambda _: None, sorted_reads=sorted_reads,
                        gpu_ranges=gpu_ranges, **extra) as topology:  # fmt: skip
        positions = rng.integers(0, num, 300)
        got = topology.gather_positions(torch.from_numpy(positions))
        np.testing.assert_array_equal(got.numpy(), indices[positions])
        counts = np.bincount(expected_tiers(num, ranges, host)[positions], minlength=len(TIER_NAMES))
        traffic = topology.traffic()
        assert {t: traffic[t] for t in TIER_NAMES} == {t: 4 * int(c) for t, c in zip(TIER_NAMES, counts)}
        assert traffic["requested"] == 4 * positions.shape[0]


@pytest.mark.parametrize("path", ["cpu", "kernels"])
def test_make_topology_places_the_ranges_given_for_its_budget_with_the_ram_budget(tmp_path: Path, path: str) -> None:
    indptr, indices = random_graph(2000, np.int64, seed=4)
    mapped_indptr, mapped = as_memmaps(tmp_path, indptr, indices)
    num = indices.shape[0]
    seen: list[int] = []

    def ranges_for(budget_bytes: int) -> list[tuple[int, int]]:
        seen.append(budget_bytes)
        entries = budget_bytes // 8
        return [(100, 100 + entries // 2), (num // 2, num // 2 + entries - entries // 2 - 3)]

    extra = {"kernels": kernels, "registrar": FakeRegistrar()} if path == "kernels" else {}
    topology = make_topology(mapped_indptr, mapped, device="cpu", topology_budget="20%", ram_budget="30%",
                             log=lambda _: None, gpu_ranges_for=ranges_for, **extra)  # fmt: skip
    assert seen == [int(np.floor(0.2 * num)) * 8]
    local = int(np.floor(0.2 * num)) - 3
    assert (topology.plan.local_rows, topology.plan.host_end) == (local, local + int(np.floor(0.3 * num)))
    assert "in 2 ranges" in topology.describe()
    positions = np.random.default_rng(0).integers(0, num, 5000)
    np.testing.assert_array_equal(topology.gather_positions(torch.from_numpy(positions)).numpy(), indices[positions])
    traffic = topology.traffic()
    tiers = expected_tiers(num, topology.gpu_ranges.ranges, topology.plan.host_rows)[positions]
    assert [traffic[t] for t in TIER_NAMES] == [8 * int(c) for c in np.bincount(tiers, minlength=len(TIER_NAMES))]
    assert traffic["gpu"] > 0 and traffic["host"] > 0 and traffic["disk"] > 0
    topology.close()


def test_ranges_must_be_sorted_disjoint_and_inside() -> None:
    for bad in ([(5, 9), (8, 12)], [(0, 11)], [(6, 8), (1, 2)]):
        with pytest.raises(OptionError, match="sorted disjoint ranges within"):
            GpuRanges(bad, 10)
    assert GpuRanges([(0, 4), (7, 7)], 10).is_prefix and not GpuRanges([(1, 4)], 10).is_prefix
