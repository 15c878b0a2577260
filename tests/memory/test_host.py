"""The CPU row gather equals plain indexing; staging buffers are reused, counters add up."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.memory import HostFeatureStore
from graphtier.memory.features._gather_kernels import as_raw_bits, gather_rows_checked, gather_rows_reference


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 50),
    dim=st.integers(1, 9),
    ids=st.lists(st.integers(0, 10**6), max_size=80),
    dtype=st.sampled_from([np.float32, np.float16]),
)
def test_gather_equals_indexing(rows: int, dim: int, ids: list[int], dtype: type) -> None:
    rng = np.random.default_rng(rows * 31 + dim)
    table = rng.normal(size=(rows, dim)).astype(dtype)
    ids_np = np.array([i % rows for i in ids], dtype=np.int64)
    out = np.empty((len(ids_np), dim), dtype=dtype)
    assert gather_rows_checked(as_raw_bits(table), ids_np, as_raw_bits(out), 0, len(ids_np)) == 0
    np.testing.assert_array_equal(out, gather_rows_reference(table, ids_np))
    store = HostFeatureStore(table)
    got = store.gather(torch.from_numpy(ids_np))
    np.testing.assert_array_equal(got.numpy(), table[ids_np])
    assert store.bytes_gathered == len(ids_np) * dim * np.dtype(dtype).itemsize


def test_ring_buffers_are_reused_and_memmaps_work(tmp_path: object) -> None:
    path = f"{tmp_path}/t.npy"
    np.save(path, np.arange(40, dtype=np.float32).reshape(10, 4))
    table = np.load(path, mmap_mode="r")
    store = HostFeatureStore(table, ring_size=2)
    first = store.gather(np.array([1, 2]))
    second = store.gather(np.array([3]))
    third = store.gather(np.array([9, 0]))  # first and second are still referenced: never overwritten
    assert len({first.data_ptr(), second.data_ptr(), third.data_ptr()}) == 3
    np.testing.assert_array_equal(first.numpy(), table[[1, 2]])
    np.testing.assert_array_equal(second.numpy(), table[[3]])
    np.testing.assert_array_equal(third.numpy(), table[[9, 0]])
    address = third.data_ptr()
    del third
    fourth = store.gather(np.array([4, 5]))  # the buffer released last is reused (still in the CPU caches)
    assert fourth.data_ptr() == address
    np.testing.assert_array_equal(fourth.numpy(), table[[4, 5]])
    assert store.rows_gathered == 7 and store.arena.allocations == 3


def test_out_of_range_ids_raise() -> None:
    store = HostFeatureStore(np.zeros((3, 2), dtype=np.float32))
    with pytest.raises(IndexError, match=r"\[0, 3\)"):
        store.gather(np.array([0, 3]))
    with pytest.raises(IndexError):
        store.gather(np.array([-1]))
    assert store.gather(np.array([], dtype=np.int64)).shape == (0, 2)
