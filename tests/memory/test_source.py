"""The FeatureSource contract, TierTraffic arithmetic, the CachedFeatures wrapper and the mode registry."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.memory import (
    FEATURE_MODE_REGISTRY,
    FEATURE_MODES,
    TIER_NAMES,
    CachedFeatures,
    FeatureMode,
    FeatureSource,
    HostFeatureStore,
    TieredFeatureStore,
    TierTraffic,
    make_feature_store,
    register_feature_mode,
)
from graphtier.memory.plan.placement import TierPlan

CPU = torch.device("cpu")
PACKAGE = Path(__file__).resolve().parents[2] / "graphtier"


def quiet(_: str) -> None:
    pass


class _Counting(FeatureSource):
    """A minimal source over a RAM table that counts its ``_close`` calls."""

    def __init__(self, table: np.ndarray) -> None:
        super().__init__(table.shape[0], table.shape[1], torch.float32, CPU)
        self.table = table
        self.closes = 0

    def _gather(self, ids: torch.Tensor | np.ndarray) -> torch.Tensor:
        return torch.from_numpy(self.table[np.asarray(ids)])

    def traffic(self) -> TierTraffic:
        return TierTraffic()

    def _close(self) -> None:
        self.closes += 1


def test_a_source_without_gather_cannot_be_built() -> None:
    class NoGather(FeatureSource):
        def traffic(self) -> TierTraffic:
            return TierTraffic()

        def _close(self) -> None:
            pass

    with pytest.raises(TypeError, match="_gather"):
        NoGather(3, 2, torch.float32, CPU)  # type: ignore[abstract]


def test_close_runs_once_and_a_closed_source_refuses_to_gather() -> None:
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    with _Counting(table) as source:
        np.testing.assert_array_equal(source.gather(np.array([2, 0])).numpy(), table[[2, 0]])
        assert source.row_bytes == 8 and source.cache_hit_ratio is None and source.device_rows == 0
    source.close()
    assert source.closes == 1 and source.closed
    with pytest.raises(OptionError, match="closed"):
        source.gather(np.array([0]))


def test_every_implementation_declares_the_interface() -> None:
    table = np.zeros((10, 2), np.float32)
    plan = TierPlan(num_rows=10, row_bytes=8, local_rows=2, peer_end=2, host_end=10)
    tiered = TieredFeatureStore(table, plan, device=CPU, log=quiet)
    for source in (HostFeatureStore(table), tiered, CachedFeatures(tiered, 4)):
        assert isinstance(source, FeatureSource)
        source.close()


def test_tier_traffic_arithmetic_and_mapping_view() -> None:
    a = TierTraffic(gpu=10, gpu_peer=2, host=5, requested=17)
    b = TierTraffic.served_by("gpu-peer", 4) + TierTraffic.of_rows(8, cache=1, disk=2, requested=3)
    assert a + b == TierTraffic(gpu=10, gpu_peer=6, cache=8, host=5, disk=16, requested=45)
    assert (a + b) - b == a
    assert a["gpu-peer"] == 2 and a["requested"] == 17
    assert list(a) == [*TIER_NAMES, "requested"]
    assert a.as_dict() == {"gpu": 10, "gpu-peer": 2, "cache": 0, "host": 5, "disk": 0, "requested": 17} == a
    assert a.by_tier() == {"gpu": 10, "gpu-peer": 2, "cache": 0, "host": 5, "disk": 0}
    assert a != TierTraffic()
    with pytest.raises(KeyError):
        a["gpu_peer"]  # the mapping keys are the tier names
    with pytest.raises(KeyError):
        TierTraffic.served_by("tape", 1)
    with pytest.raises(AttributeError):
        a.gpu = 3  # type: ignore[misc]  # frozen


def _sources(table: np.ndarray, kind: str, cut: float) -> FeatureSource:
    if kind == "host":
        return HostFeatureStore(table, ring_size=2)
    num_rows = table.shape[0]
    local = int(num_rows * cut)
    plan = TierPlan(
        num_rows=num_rows, row_bytes=table.shape[1] * 4, local_rows=local, peer_end=local,
        host_end=local + (num_rows - local) // 2,
    )  # fmt: skip
    return TieredFeatureStore(table, plan, device=CPU, ring_size=2, log=quiet)


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(["host", "tiered"]),
    rows=st.integers(1, 60),
    cut=st.floats(0.0, 1.0),
    capacity=st.integers(1, 16),
    ways=st.integers(1, 8),
    batches=st.lists(st.lists(st.integers(0, 10**6), max_size=30), min_size=1, max_size=6),
)
def test_cached_features_equal_plain_indexing_over_any_source(
    kind: str, rows: int, cut: float, capacity: int, ways: int, batches: list[list[int]]
) -> None:
    table = np.random.default_rng(rows).normal(size=(rows, 3)).astype(np.float32)
    fallback = _sources(table, kind, cut)
    with CachedFeatures(fallback, capacity, ring_size=2, ways=ways) as cached:
        requested = 0
        for batch in batches:
            ids = np.array([i % rows for i in batch], dtype=np.int64)
            np.testing.assert_array_equal(cached.gather(torch.from_numpy(ids)).numpy(), table[ids])
            requested += ids.shape[0] * cached.row_bytes
        traffic = cached.traffic()
        assert traffic["requested"] == requested == sum(traffic[tier] for tier in TIER_NAMES)
        assert traffic["cache"] == cached.cache.hits * cached.row_bytes
        assert 0.0 <= cached.hit_ratio == cached.cache_hit_ratio <= 1.0
        held = cached.cache.tags.numpy() >= 0  # never a row served from a stale slot
        np.testing.assert_array_equal(cached.cache.rows.numpy()[held], table[cached.cache.tags.numpy()[held]])
    assert fallback.closed


def test_cached_features_never_cache_rows_the_fallback_serves_from_device_memory() -> None:
    table = np.arange(40, dtype=np.float32).reshape(20, 2)
    plan = TierPlan(num_rows=20, row_bytes=8, local_rows=5, peer_end=5, host_end=20)
    cached = CachedFeatures(TieredFeatureStore(table, plan, device=CPU, log=quiet), 8)
    for _ in range(2):
        cached.gather(np.array([0, 1, 12]))
    assert cached.cache.lookups == 2 and cached.hit_ratio == 0.5  # only row 12 was looked up
    assert cached.traffic()["gpu"] == 4 * 8 and cached.traffic()["cache"] == 8
    with pytest.raises(IndexError, match=r"\[0, 20\)"):
        cached.gather(np.array([3, 20]))


def test_modes_come_from_one_registry() -> None:
    assert FEATURE_MODES == tuple(FEATURE_MODE_REGISTRY) == ("cpu-gather", "zero-copy", "tiered", "tiered+cache")
    assert all(mode.help for mode in FEATURE_MODE_REGISTRY.values())
    with pytest.raises(ValueError, match="registered already"):
        register_feature_mode(FeatureMode("tiered", "again", FEATURE_MODE_REGISTRY["tiered"].build))
    table = np.zeros((8, 2), np.float32)
    assert isinstance(make_feature_store(table, "tiered+cache", device=CPU, gpu_budget="0", cache_budget="50%", log=quiet),
                      CachedFeatures)  # fmt: skip
    assert isinstance(make_feature_store(table, "tiered", device=CPU, gpu_budget="0", log=quiet), TieredFeatureStore)
    # one message, two renderings: Python argument names here, CLI flags for the command line
    with pytest.raises(OptionError, match=r"^gpu_budget=: applies to features_on='tiered and tiered\+cache' only, "
                                          r"found '1GB' with features_on='zero-copy'$") as info:  # fmt: skip
        make_feature_store(table, "zero-copy", device=CPU, gpu_budget="1GB")
    assert info.value.render(cli=True) == (
        "--gpu-budget: applies to --features-on tiered and tiered+cache only, found '1GB' with --features-on zero-copy"
    )
    with pytest.raises(
        OptionError, match=r"^ram_budget=: applies to features_on='zero-copy, tiered and tiered\+cache'"
    ):
        make_feature_store(table, "cpu-gather", device=CPU, ram_budget="1GB")


# capability probes the store interface replaced: a declared method or property is called instead
PROBES = re.compile(
    r"(getattr|hasattr)\([^)]*[\"'](cache_hit_ratio|describe|_host|_local|_disk_arena|_peers|arena|cache)[\"']"
    r"|hasattr\(self,|delattr\(self,"
)


def test_no_capability_probing_left() -> None:
    found = []
    for package in ("store", "memory", "train", "bench", "pyg"):
        for path in sorted((PACKAGE / package).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if PROBES.search(line):
                    found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)


def test_the_trainer_reaches_data_only_through_the_graph_store() -> None:
    pattern = re.compile(
        r"self\.(indptr|indices|labels|features)\b|\.features\.gather|np\.asarray\(dataset\.(indptr|indices|labels)"
    )
    found = []
    for path in sorted((PACKAGE / "train").glob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
