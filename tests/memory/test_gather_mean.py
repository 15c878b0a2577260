"""The first layer's neighbour mean read straight from the feature table: the kernel against its reference and
against gathering the rows then aggregating them (the same floats), through every CPU feature source."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.memory import HostFeatureStore, TieredFeatureStore
from graphtier.memory.features._mean_kernels import gather_mean_reference, gather_mean_rows
from graphtier.memory.plan.placement import TierPlan
from graphtier.sampling.batch import Block
from graphtier.train.nn.aggregate import aggregate_with_root, block_csr, mean_weights


def _block(rng: np.random.Generator, num_rows: int, num_dst: int, num_src: int, max_degree: int):
    """Global ids [num_src] (distinct, destinations first) and a CSR over num_dst destinations of local sources."""
    ids = rng.choice(num_rows, size=num_src, replace=False).astype(np.int64)
    degrees = rng.integers(0, max_degree + 1, num_dst)
    rowptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    col = rng.integers(0, num_src, int(rowptr[-1])).astype(np.int64)
    return ids, rowptr, col


def _spmm_path(table: np.ndarray, ids: np.ndarray, rowptr: np.ndarray, col: np.ndarray):
    """What the model computes without the fused path: gather x = table[ids], then the mean aggregation."""
    csr = block_csr(Block(torch.from_numpy(rowptr), torch.from_numpy(col), ids.shape[0]))
    x = torch.from_numpy(table[ids])
    agg, root = aggregate_with_root(x, csr, mean_weights(csr, x.dtype))
    return agg.numpy(), root.numpy()


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    num_dst=st.integers(0, 30),
    extra=st.integers(0, 30),
    max_degree=st.integers(0, 6),
    dim=st.integers(1, 9),
    host_fraction=st.floats(0.0, 1.0),
)
def test_kernel_matches_the_reference_and_the_gather_then_aggregate_floats(
    seed: int, num_dst: int, extra: int, max_degree: int, dim: int, host_fraction: float
) -> None:
    rng = np.random.default_rng(seed)
    num_rows = num_dst + extra + 5
    table = rng.standard_normal((num_rows, dim)).astype(np.float32)
    ids, rowptr, col = _block(rng, num_rows, num_dst, num_dst + extra, max_degree)
    host_end = int(host_fraction * num_rows)
    ram = table[:host_end].copy()
    disk = table.copy()
    disk[:host_end] = np.nan  # rows below host_end must come from ram
    agg = np.full((num_dst, dim), np.nan, dtype=np.float32)
    root = np.full((num_dst, dim), np.nan, dtype=np.float32)
    cut = int(rng.integers(0, num_dst + 1))  # any split of the destinations gives the same result
    assert gather_mean_rows(ram, disk, host_end, ids, rowptr, col, agg, root, cut, num_dst) == 0
    assert gather_mean_rows(ram, disk, host_end, ids, rowptr, col, agg, root, 0, cut) == 0
    want_agg, want_root = gather_mean_reference(table, ids, rowptr, col)
    np.testing.assert_allclose(agg, want_agg, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(root, want_root)
    spmm_agg, spmm_root = _spmm_path(table, ids, rowptr, col)
    np.testing.assert_array_equal(agg, spmm_agg)  # the same floats as the model's own aggregation
    np.testing.assert_array_equal(root, spmm_root)


def test_kernel_counts_ids_and_columns_out_of_range() -> None:
    table = np.ones((4, 2), dtype=np.float32)
    rowptr = np.array([0, 2], dtype=np.int64)
    agg, root = np.zeros((1, 2), np.float32), np.zeros((1, 2), np.float32)
    assert gather_mean_rows(table, table, 4, np.array([0, 9]), rowptr, np.array([0, 1]), agg, root, 0, 1) == 1
    assert gather_mean_rows(table, table, 4, np.array([0, 1]), rowptr, np.array([0, 5]), agg, root, 0, 1) == 1
    assert gather_mean_rows(table, table, 4, np.array([-1, 1]), rowptr, np.array([1, 1]), agg, root, 0, 1) == 1


def _stores(table: np.ndarray) -> list:
    num_rows = table.shape[0]
    row_bytes = table.shape[1] * 4
    disk_plan = TierPlan(num_rows=num_rows, row_bytes=row_bytes, local_rows=10, peer_end=10, host_end=num_rows // 2)
    ram_plan = TierPlan(num_rows=num_rows, row_bytes=row_bytes, local_rows=10, peer_end=10, host_end=num_rows)
    return [
        HostFeatureStore(table),
        TieredFeatureStore(table, ram_plan, device=torch.device("cpu"), log=lambda _: None),
        TieredFeatureStore(table, disk_plan, device=torch.device("cpu"), log=lambda _: None),
    ]


def test_every_cpu_store_gives_the_gather_then_aggregate_floats_and_the_gather_traffic(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    path = tmp_path / "features.npy"
    np.save(path, rng.standard_normal((200, 8)).astype(np.float32))
    table = np.load(path, mmap_mode="r")  # a memory map: the tiered store with a disk tier copies only its RAM rows
    ids, rowptr, col = _block(rng, 200, 40, 90, 5)
    want_agg, want_root = _spmm_path(np.asarray(table), ids, rowptr, col)
    for store in _stores(table):
        with store:
            pair = store.gather_mean(torch.from_numpy(ids), torch.from_numpy(rowptr), torch.from_numpy(col))
            assert pair is not None, type(store).__name__
            np.testing.assert_array_equal(pair[0].numpy(), want_agg)
            np.testing.assert_array_equal(pair[1].numpy(), want_root)
            after_mean = dict(store.traffic())
            store.gather(torch.from_numpy(ids))
            after_gather = dict(store.traffic())
            assert {k: after_gather[k] - after_mean[k] for k in after_mean} == after_mean  # same bytes per tier


def test_a_float16_table_declines_and_ids_out_of_range_raise() -> None:
    half = np.zeros((10, 4), dtype=np.float16)
    rowptr, col = torch.tensor([0, 1]), torch.tensor([0])
    assert HostFeatureStore(half).gather_mean(torch.tensor([1]), rowptr, col) is None
    store = HostFeatureStore(np.zeros((10, 4), dtype=np.float32))
    with pytest.raises(IndexError, match=r"\[0, 10\)"):
        store.gather_mean(torch.tensor([12]), rowptr, col)
