"""StagingArena: buffers are reused once released, grown x2, never handed out while referenced; stores do not allocate in steady state."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.memory import (
    FEATURE_MODES,
    CachedFeatures,
    FeatureSource,
    HostFeatureStore,
    StagingArena,
    TieredFeatureStore,
    batch_rows_bound,
    make_feature_store,
)
from graphtier.memory.features import arena as arena_module
from graphtier.memory.features._gather_kernels import (
    as_raw_bits,
    gather_rows_checked,
    gather_rows_checked_reference,
)
from graphtier.memory.features._tiered_kernels import tiered_counts_reference, tiered_gather_rows
from graphtier.memory.features.threads import GatherTeam
from graphtier.memory.features.tiered import _CpuTiers

CPU = torch.device("cpu")


def quiet(_: str) -> None:
    pass


def test_batch_rows_bound() -> None:
    assert batch_rows_bound(1024, [15, 10, 5], 10**9) == 1024 * 16 * 11 * 6
    assert batch_rows_bound(1024, [15, 10, 5], 325_557) == 325_557
    assert batch_rows_bound(4, [2], 100) == 12
    assert batch_rows_bound(4, [-1, 3], 100) == 100  # a full-neighbour layer is bounded by the graph
    assert batch_rows_bound(7, [], 100) == 7


def test_released_buffer_is_reused_without_allocating() -> None:
    arena = StagingArena(4, torch.float32, ring_size=3)
    first = arena.take(10)
    address = first.data_ptr()
    del first
    for rows in (10, 3, 7, 10):
        view = arena.take(rows)
        assert view.shape == (rows, 4) and view.data_ptr() == address
        del view
    assert arena.allocations == 1 and arena.capacity == 10 and arena.slots == 1


def test_growth_is_geometric_and_capped_by_the_bound() -> None:
    arena = StagingArena(2, torch.float16)
    arena.take(10)
    assert arena.capacity == 10
    arena.take(11)
    assert arena.capacity == 20 and arena.allocations == 2
    arena.take(20)
    assert arena.allocations == 2  # the 11-row view was dropped: its slot is free again
    capped = StagingArena(2, torch.float32, max_rows=12)
    capped.take(10)
    capped.take(11)
    assert capped.capacity == 12
    assert capped.take(30).shape == (30, 2) and capped.capacity == 37  # beyond the bound: the request and a quarter
    assert capped.take(38).shape == (38, 2) and capped.capacity == 47  # not double (74): each slot in flight is one
    reserved = StagingArena(3, torch.float32)
    reserved.reserve(50)
    assert reserved.capacity == 50 and reserved.allocations == 0
    assert reserved.take(0).shape == (0, 3) and reserved.allocations == 0


def test_referenced_buffers_are_never_handed_out() -> None:
    arena = StagingArena(3, torch.float32, ring_size=2)
    held = [arena.take(5) for _ in range(4)]
    for k, view in enumerate(held):
        view.fill_(k)
    numpy_view = arena.take(5).numpy()  # a numpy array keeps its buffer referenced too
    numpy_view[:] = -1
    assert len({view.data_ptr() for view in held} | {numpy_view.ctypes.data}) == 5
    for k, view in enumerate(held):
        assert bool((view == k).all())
    assert arena.allocations == 5
    sliced = held[0][1:3]  # a view of a view: the buffer stays in use
    del held[0]
    assert arena.take(5).data_ptr() not in {sliced.data_ptr() - 12, sliced.data_ptr()}
    assert bool((sliced == 0).all())


def test_without_use_counts_slots_are_reused_in_ring_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arena_module, "_use_count", None)
    arena = StagingArena(2, torch.float32, ring_size=3)
    addresses = [arena.take(4).data_ptr() for _ in range(7)]
    assert len(set(addresses[:3])) == 3
    assert addresses[3:6] == addresses[:3] and addresses[6] == addresses[0]
    assert arena.allocations == 3


def test_touch_pages_faults_every_page_in() -> None:
    buffer = torch.empty((3 * arena_module.PAGE_BYTES // 4 + 1,), dtype=torch.float32)
    buffer.fill_(7.0)
    arena_module.touch_pages(buffer)
    flat = buffer.view(torch.uint8)
    assert int(flat[:: arena_module.PAGE_BYTES].sum()) == 0


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 50),
    dim=st.integers(1, 9),
    dtype=st.sampled_from([np.float32, np.float16]),
    batches=st.lists(st.tuples(st.lists(st.integers(0, 10**6), max_size=60), st.booleans()), min_size=1, max_size=8),
    mode=st.sampled_from(FEATURE_MODES),
)
def test_gather_equals_plain_indexing_and_kept_outputs_stay_intact(
    rows: int, dim: int, dtype: type, batches: list[tuple[list[int], bool]], mode: str
) -> None:
    table = np.random.default_rng(rows * 31 + dim).normal(size=(rows, dim)).astype(dtype)
    options = {"gpu_budget": "30%", "ram_budget": "60%"} if mode.startswith("tiered") else {}
    if mode == "tiered+cache":
        options["cache_budget"] = f"{2 * dim * np.dtype(dtype).itemsize}B"
    store = make_feature_store(table, mode, device=CPU, ring_size=2, log=quiet, **options)
    kept: list[tuple[np.ndarray, torch.Tensor]] = []
    for batch, keep in batches:
        ids = np.array([i % rows for i in batch], dtype=np.int64)
        got = store.gather(torch.from_numpy(ids))
        np.testing.assert_array_equal(got.numpy(), table[ids])
        if keep:
            kept.append((ids, got))
    for ids, got in kept:  # no later call wrote into an output still referenced
        np.testing.assert_array_equal(got.numpy(), table[ids])
    store.close()


def arenas_of(store: FeatureSource) -> list[StagingArena]:
    """The CPU staging arenas a store gathers into (a cache wrapper's own, then its fallback's)."""
    if isinstance(store, CachedFeatures):
        assert store._arena is not None
        return [store._arena, *arenas_of(store.fallback)]
    if isinstance(store, TieredFeatureStore):
        assert isinstance(store._tiers, _CpuTiers)
        return [store._tiers.arena]
    assert isinstance(store, HostFeatureStore)
    return [store.arena]


def gather_teams_of(store: FeatureSource) -> list[GatherTeam]:
    """The thread teams a store's CPU gathers run on."""
    if isinstance(store, CachedFeatures):
        return gather_teams_of(store.fallback)
    if isinstance(store, TieredFeatureStore):
        return [store._tiers.team]
    assert isinstance(store, HostFeatureStore)
    return [store._team]


@pytest.mark.parametrize("mode", FEATURE_MODES)
def test_no_allocation_in_steady_state(mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    table = rng.normal(size=(5000, 16)).astype(np.float32)
    options = {"gpu_budget": "10%", "ram_budget": "80%"} if mode.startswith("tiered") else {}
    store = make_feature_store(table, mode, device=CPU, ring_size=4, log=quiet, **options)
    trace = [rng.integers(0, 5000, size) for size in (700, 1200, 900, 1500, 400, 1100)]
    for ids in trace:  # first pass: the arena grows to the largest batch
        store.gather(torch.from_numpy(ids))
    arenas = arenas_of(store)
    allocations = [arena.allocations for arena in arenas]
    assert max(allocations) <= 3  # 700 -> 1400 -> 2800 rows (x2 growth), one slot each time
    empties: list[tuple[int, ...]] = []
    real_empty = torch.empty

    def counting_empty(*args: object, **kwargs: object) -> torch.Tensor:
        empties.append(tuple(args))
        return real_empty(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch, "empty", counting_empty)
    for _ in range(3):
        for ids in trace:
            got = store.gather(torch.from_numpy(ids))
            np.testing.assert_array_equal(got.numpy(), table[ids])
            del got
    assert [arena.allocations for arena in arenas] == allocations and all(arena.slots == 1 for arena in arenas)
    if mode in ("cpu-gather", "zero-copy", "tiered"):
        assert empties == []  # the cache path allocates small index tensors (torch ops), never row buffers
    store.close()


def test_pipeline_depth_is_respected_by_held_outputs() -> None:
    """A consumer holding ``depth`` batches (the trainer's queue) gets depth + 1 slots, then no more."""
    table = np.arange(4000, dtype=np.float32).reshape(1000, 4)
    store = HostFeatureStore(table, ring_size=5)
    rng = np.random.default_rng(0)
    queue: list[tuple[np.ndarray, torch.Tensor]] = []
    for step in range(40):
        ids = rng.integers(0, 1000, 50 + step % 7)
        queue.append((ids, store.gather(ids)))
        if len(queue) > 3:
            old_ids, old = queue.pop(0)
            np.testing.assert_array_equal(old.numpy(), table[old_ids])
            del old  # the consumer is done with it
    assert store.arena.slots == 4


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 40), dim=st.integers(1, 5), ids=st.lists(st.integers(-50, 90), max_size=60))
def test_checked_kernel_equals_reference(rows: int, dim: int, ids: list[int]) -> None:
    table = np.random.default_rng(rows).normal(size=(rows, dim)).astype(np.float32)
    ids_np = np.array(ids, dtype=np.int64)
    out = np.full((ids_np.shape[0], dim), np.nan, dtype=np.float32)
    expected = np.full_like(out, np.nan)
    first, stop = len(ids) // 3, len(ids) - len(ids) // 4
    bad = gather_rows_checked(as_raw_bits(table), ids_np, as_raw_bits(out), first, stop)
    assert bad == gather_rows_checked_reference(table, ids_np, expected, first, stop)
    np.testing.assert_array_equal(out, expected)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 40),
    partitions=st.integers(1, 4),
    cuts=st.lists(st.integers(0, 40), min_size=3, max_size=3),
    ids=st.lists(st.integers(-5, 45), max_size=60),
)
def test_tiered_kernels_count_tiers_like_the_reference(
    rows: int, partitions: int, cuts: list[int], ids: list[int]
) -> None:
    local_rows, peer_end, host_end = sorted(min(c, rows) for c in cuts)
    table = np.random.default_rng(rows).normal(size=(rows, 3)).astype(np.float32)
    ram = np.ascontiguousarray(table[:host_end])  # the CPU tiers' RAM rows
    disk = table.copy()
    disk[:host_end] = np.nan  # rows below host_end must come from the RAM array
    ids_np = np.array(ids, dtype=np.int64)
    expected = tiered_counts_reference(ids_np, rows, local_rows, peer_end, host_end, partitions)
    bits = [as_raw_bits(a) for a in (ram, disk)]
    bounds = (local_rows, peer_end, partitions, host_end)
    out = np.zeros((ids_np.shape[0], 3), dtype=np.float32)
    counts = tiered_gather_rows(*bits, *bounds, ids_np, as_raw_bits(out), 0, len(ids))
    assert tuple(counts) == expected
    split = len(ids) // 2  # two threads' shares add up to the whole
    halves = [
        tiered_gather_rows(*bits, *bounds, ids_np, as_raw_bits(out), a, b) for a, b in ((0, split), (split, len(ids)))
    ]
    assert tuple(int(x) + int(y) for x, y in zip(*halves)) == expected
    valid = (ids_np >= 0) & (ids_np < rows)
    np.testing.assert_array_equal(out[valid], table[ids_np[valid]])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_pinned_arena_reuses_slots_only_ring_size_calls_apart() -> None:
    arena = StagingArena(8, torch.float32, ring_size=3, pin=True)
    addresses = []
    for _ in range(7):
        view = arena.take(100)
        assert view.is_pinned()
        addresses.append(view.data_ptr())
        del view
    assert len(set(addresses[:3])) == 3 and addresses[3:6] == addresses[:3]
    assert arena.allocations == 3


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_stores_gather_like_indexing_through_the_arena() -> None:
    table = np.random.default_rng(2).normal(size=(300, 8)).astype(np.float32)
    for mode in FEATURE_MODES:
        store = make_feature_store(table, mode, device=torch.device("cuda"), ring_size=3, log=quiet)
        ids = torch.from_numpy(np.random.default_rng(3).integers(0, 300, 77))
        for _ in range(4):
            got = store.gather(ids)
            np.testing.assert_array_equal(got.cpu().numpy(), table[ids.numpy()])
        store.close()


@pytest.mark.parametrize("mode", FEATURE_MODES)
def test_rows_split_between_threads_equal_indexing_and_count_every_tier(mode: str) -> None:
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two numba threads")
    table = np.random.default_rng(9).normal(size=(3000, 5)).astype(np.float32)
    options = {"gpu_budget": "20%", "ram_budget": "70%"} if mode.startswith("tiered") else {}
    store = make_feature_store(table, mode, device=CPU, log=quiet, **options)
    for team in gather_teams_of(store):
        team.min_chunk_rows = 16  # many chunks, claimed by both threads
    previous = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        ids = np.random.default_rng(10).integers(0, 3000, 1000)
        before = store.traffic()["requested"]
        for _ in range(3):
            np.testing.assert_array_equal(store.gather(torch.from_numpy(ids)).numpy(), table[ids])
        traffic = store.traffic()
        assert traffic["requested"] - before == 3 * 1000 * 20
        assert sum(traffic[tier] for tier in ("gpu", "gpu-peer", "cache", "host", "disk")) == traffic["requested"]
        bad = ids.copy()
        bad[777] = 3000  # out of range in a late chunk
        with pytest.raises(IndexError, match=r"\[0, 3000\)"):
            store.gather(torch.from_numpy(bad))
    finally:
        numba.set_num_threads(previous)
        store.close()
