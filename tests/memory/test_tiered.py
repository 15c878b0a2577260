"""The tiered store equals plain indexing for every plan; traffic adds up; the cache never serves a stale row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.memory import (
    FEATURE_MODES,
    TIER_NAMES,
    CachedFeatures,
    HostFeatureStore,
    TieredFeatureStore,
    make_feature_store,
)
from graphtier.memory.features._gather_kernels import as_raw_bits, gather_rows_reference
from graphtier.memory.features._tiered_kernels import tiered_gather_rows
from graphtier.memory.features.tiered import torch_dtype_of
from graphtier.memory.plan.placement import TierPlan

CPU = torch.device("cpu")


def quiet(_: str) -> None:
    pass


@st.composite
def plans(draw: st.DrawFn) -> tuple[int, int, TierPlan]:
    num_rows = draw(st.integers(1, 60))
    dim = draw(st.integers(1, 7))
    partitions = draw(st.integers(1, 4))
    cuts = sorted(draw(st.lists(st.integers(0, num_rows), min_size=3, max_size=3)))
    local_rows = 0 if partitions > 1 else cuts[0]
    cache_rows = draw(st.integers(0, num_rows - cuts[1]))
    plan = TierPlan(
        num_rows=num_rows,
        row_bytes=0,
        local_rows=local_rows,
        peer_partitions=partitions,
        peer_end=cuts[1],
        host_end=cuts[2],
        cache_rows=cache_rows,
    )
    return num_rows, dim, plan


def with_row_bytes(plan: TierPlan, row_bytes: int) -> TierPlan:
    return TierPlan(**{**plan.__dict__, "row_bytes": row_bytes})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape_plan=plans(),
    dtype=st.sampled_from([np.float32, np.float16]),
    batches=st.lists(st.lists(st.integers(0, 10**6), max_size=40), min_size=1, max_size=4),
    use_memmap=st.booleans(),
)
def test_tiered_gather_equals_indexing(
    tmp_path: Path, shape_plan: tuple[int, int, TierPlan], dtype: type, batches: list[list[int]], use_memmap: bool
) -> None:
    num_rows, dim, plan = shape_plan
    rng = np.random.default_rng(num_rows * 7 + dim)
    table = rng.normal(size=(num_rows, dim)).astype(dtype)
    if use_memmap:
        path = tmp_path / f"t{num_rows}_{dim}_{np.dtype(dtype).name}.npy"
        np.save(path, table)
        table = np.load(path, mmap_mode="r")
    plan = with_row_bytes(plan, dim * np.dtype(dtype).itemsize)
    requested = 0
    tiered = TieredFeatureStore(table, plan, device=CPU, ring_size=len(batches) + 1, log=quiet)
    cached = CachedFeatures(tiered, plan.cache_rows, ring_size=len(batches) + 1) if plan.cache_rows else None
    with cached or tiered as store:
        outputs = []
        for batch in batches:
            ids = np.array([i % num_rows for i in batch], dtype=np.int64)
            got = store.gather(torch.from_numpy(ids))
            assert got.dtype == torch_dtype_of(table) and got.device == CPU
            np.testing.assert_array_equal(got.numpy(), table[ids])
            outputs.append((ids, got))
            requested += ids.shape[0] * plan.row_bytes
        for ids, got in outputs:  # the ring keeps every batch of this round alive
            np.testing.assert_array_equal(got.numpy(), table[ids])
        if use_memmap and plan.disk_rows > 0:  # the RAM tiers are a copy, not a view of the memory map
            assert not np.shares_memory(tiered._tiers.ram_np, table)
        traffic = store.traffic()
        assert set(traffic) == set(TIER_NAMES) | {"requested"}
        assert traffic["requested"] == requested == sum(traffic[name] for name in TIER_NAMES)
        if plan.cache_rows == 0:
            assert traffic["cache"] == 0
        else:
            assert cached is not None
            assert traffic["cache"] == cached.cache.hits * plan.row_bytes
    assert tiered.closed  # the wrapper closes the source it wraps


def test_traffic_per_tier_exact() -> None:
    table = np.arange(40, dtype=np.float32).reshape(20, 2)
    plan = TierPlan(num_rows=20, row_bytes=8, local_rows=2, peer_partitions=1, peer_end=2, host_end=10)
    store = TieredFeatureStore(table, plan, device=CPU, log=quiet)
    store.gather(torch.tensor([0, 1, 5, 19, 19, 12]))
    assert store.traffic() == {"gpu": 16, "gpu-peer": 0, "cache": 0, "host": 8, "disk": 24, "requested": 48}


def test_peer_partitions_interleave_and_account() -> None:
    table = np.arange(30, dtype=np.float32).reshape(10, 3)
    plan = TierPlan(num_rows=10, row_bytes=12, local_rows=0, peer_partitions=3, peer_end=7, host_end=10)
    store = TieredFeatureStore(table, plan, device=CPU, log=quiet)
    ids = torch.tensor([0, 1, 2, 3, 4, 5, 6, 9])
    np.testing.assert_array_equal(store.gather(ids).numpy(), table[ids.numpy()])
    traffic = store.traffic()
    assert traffic["gpu"] == 3 * 12  # ids 0, 3, 6 are partition 0, on the compute device
    assert traffic["gpu-peer"] == 4 * 12 and traffic["host"] == 12


def test_cache_hits_repeat_requests_and_reports_hit_ratio() -> None:
    table = np.random.default_rng(0).normal(size=(100, 4)).astype(np.float32)
    plan = TierPlan(num_rows=100, row_bytes=16, local_rows=10, peer_end=10, host_end=50, cache_rows=20)
    store = CachedFeatures(TieredFeatureStore(table, plan, device=CPU, log=quiet), plan.cache_rows)
    ids = torch.tensor([60, 61, 62, 5])
    store.gather(ids)
    assert store.cache_hit_ratio == 0.0
    got = store.gather(ids)
    np.testing.assert_array_equal(got.numpy(), table[ids.numpy()])
    assert store.cache_hit_ratio == store.hit_ratio == pytest.approx(0.5)  # 3 of 6 cold lookups hit
    assert store.traffic()["cache"] == 3 * 16 and store.traffic()["disk"] == 3 * 16
    assert "hit ratio 0.500" in store.describe()


@settings(max_examples=30, deadline=None)
@given(
    capacity=st.integers(1, 8),
    batches=st.lists(st.lists(st.integers(0, 49), max_size=12), min_size=1, max_size=8),
)
def test_cache_never_serves_a_stale_row(capacity: int, batches: list[list[int]]) -> None:
    table = np.random.default_rng(capacity).normal(size=(50, 3)).astype(np.float32)
    plan = TierPlan(num_rows=50, row_bytes=12, local_rows=5, peer_end=5, host_end=30, cache_rows=capacity)
    store = CachedFeatures(TieredFeatureStore(table, plan, device=CPU, log=quiet), capacity)
    for batch in batches:
        ids = np.array(batch, dtype=np.int64)
        np.testing.assert_array_equal(store.gather(ids).numpy(), table[ids])
        tags = store.cache.tags.numpy()
        held = tags >= 0
        np.testing.assert_array_equal(store.cache.rows.numpy()[held], table[tags[held]])
        assert np.all(tags[held] % store.cache.num_sets == np.nonzero(held)[0] // store.cache.ways)  # in its set


@settings(max_examples=30, deadline=None)
@given(rows=st.integers(1, 40), dim=st.integers(1, 6), ids=st.lists(st.integers(0, 10**6), max_size=50))
def test_tiered_kernel_equals_reference(rows: int, dim: int, ids: list[int]) -> None:
    table = np.random.default_rng(rows).normal(size=(rows, dim)).astype(np.float32)
    ids_np = np.array([i % rows for i in ids], dtype=np.int64)
    local_rows, peer_end, host_end, partitions = rows // 4, rows // 2, (3 * rows) // 4, 3
    ram = np.ascontiguousarray(table[:host_end])
    disk = table.copy()
    disk[:host_end] = np.nan  # rows below host_end come from the RAM array, the rest from the disk tier
    out = np.full((ids_np.shape[0], dim), np.nan, dtype=np.float32)
    tiered_gather_rows(
        *(as_raw_bits(a) for a in (ram, disk)), local_rows, peer_end, partitions, host_end, ids_np,
        as_raw_bits(out), 0, len(ids_np),
    )  # fmt: skip
    np.testing.assert_array_equal(out, gather_rows_reference(table, ids_np))  # the tiers only move rows


def test_out_of_range_and_bad_ids_raise() -> None:
    store = make_feature_store(np.zeros((5, 2), np.float32), "tiered", device=CPU, gpu_budget="0.4", log=quiet)
    with pytest.raises(IndexError, match=r"\[0, 5\)"):
        store.gather(torch.tensor([0, 5]))
    with pytest.raises(IndexError, match=r"\[0, 5\)"):
        store.gather(torch.tensor([-1]))
    with pytest.raises(IndexError, match="integers"):
        store.gather(torch.tensor([0.5]))
    assert store.gather(torch.empty(0, dtype=torch.int64)).shape == (0, 2)


@pytest.mark.parametrize("mode", FEATURE_MODES)
def test_factory_modes_share_the_contract(mode: str) -> None:
    table = np.random.default_rng(1).normal(size=(64, 8)).astype(np.float16)
    options = {"gpu_budget": "25%", "ram_budget": "50%"} if mode.startswith("tiered") else {}
    if mode == "tiered+cache":
        options["cache_budget"] = "512B"
    messages: list[str] = []
    store = make_feature_store(table, mode, device=CPU, log=messages.append, **options)
    assert (store.num_rows, store.dim, store.row_bytes) == (64, 8, 16)
    assert store.output_device == CPU
    ids = torch.tensor([3, 63, 40, 3, 17])
    for _ in range(2):
        np.testing.assert_array_equal(store.gather(ids).numpy(), table[ids.numpy()])
    traffic = store.traffic()
    assert traffic["requested"] == 2 * 5 * 16 == sum(traffic[t] for t in TIER_NAMES)
    if mode == "zero-copy":
        assert isinstance(store, HostFeatureStore) and len(messages) == 1 and "cpu-gather" in messages[0]
    if mode == "tiered+cache":
        assert traffic["cache"] > 0
    store.close()
    store.close()


def test_factory_rejects_options_of_other_modes() -> None:
    table = np.zeros((4, 2), np.float32)
    with pytest.raises(OptionError, match="^features_on= expected one of"):
        make_feature_store(table, "gpu-only", device=CPU)
    with pytest.raises(OptionError, match="^gpu_budget="):
        make_feature_store(table, "cpu-gather", device=CPU, gpu_budget="1GB")
    with pytest.raises(OptionError, match="^cache_budget="):
        make_feature_store(table, "tiered", device=CPU, cache_budget="1GB", log=quiet)
    with pytest.raises(OptionError, match="^ram_budget="):
        make_feature_store(table, "cpu-gather", device=CPU, ram_budget="1GB")
    with pytest.raises(OptionError, match="^gpu_budget=: expected bytes"):
        make_feature_store(table, "tiered", device=CPU, gpu_budget="lots", log=quiet)
    if not torch.cuda.is_available():
        with pytest.raises(OptionError, match="CUDA"):
            make_feature_store(table, "tiered", device=torch.device("cuda"), log=quiet)


def test_gather_after_close_and_from_a_thread() -> None:
    import threading

    table = np.arange(12, dtype=np.float32).reshape(6, 2)
    store = make_feature_store(table, "tiered", device=CPU, gpu_budget="0.5", log=quiet)
    results: list[np.ndarray] = []
    worker = threading.Thread(target=lambda: results.append(store.gather(torch.tensor([5, 0])).numpy().copy()))
    worker.start()
    worker.join()
    np.testing.assert_array_equal(results[0], table[[5, 0]])
    store.close()
    with pytest.raises(OptionError, match="closed"):
        store.gather(torch.tensor([0]))


def test_pyg_feature_store_serves_tiered_rows(tmp_path: Path) -> None:
    from torch_geometric.data import TensorAttr

    from graphtier.pyg import TieredPyGFeatureStore
    from tests.conftest import write_labelled_graph

    dataset = write_labelled_graph(tmp_path / "g", num_nodes=50, feature_dim=4)
    store = make_feature_store(
        dataset.features, "tiered+cache", device=CPU, gpu_budget="10%", cache_budget="10%", log=quiet
    )
    pyg_store = TieredPyGFeatureStore(dataset, store)
    index = torch.tensor([1, 49, 7])
    x = pyg_store.get_tensor(TensorAttr(group_name=None, attr_name="x", index=index))
    np.testing.assert_array_equal(x.numpy(), np.asarray(dataset.features)[index.numpy()].astype(np.float32))
    y = pyg_store.get_tensor(TensorAttr(group_name=None, attr_name="y", index=index))
    np.testing.assert_array_equal(y.numpy(), np.asarray(dataset.labels)[index.numpy()])
    assert store.traffic()["requested"] == 3 * store.row_bytes
    with pytest.raises(OptionError, match="shape"):
        TieredPyGFeatureStore(dataset, make_feature_store(np.zeros((3, 4), np.float32), "cpu-gather", device=CPU))
