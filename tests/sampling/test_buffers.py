"""Buffer reuse across batches: a batch still referenced is never overwritten; dropped batches free their buffer."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

from graphtier.sampling import NeighborSampler
from graphtier.sampling import buffers as buffers_module
from graphtier.sampling.buffers import Carver, OutputRing, Workspace
from tests.sampling.graphs import random_csc
from tests.sampling.test_neighbor import assert_matches_reference, assert_well_formed

needs_use_count = pytest.mark.skipif(buffers_module._use_count is None, reason="torch has no storage use count")


def snapshot(mb) -> list[np.ndarray]:
    """Copies of every tensor of a batch."""
    return [mb.n_id.numpy().copy(), mb.seed_index.numpy().copy()] + [b.edge_index.numpy().copy() for b in mb.blocks]


def test_kept_batches_are_not_overwritten_by_later_batches():
    """A consumer that keeps batches alive (the trainer prefetches ahead) sees them unchanged after more sampling."""
    indptr, indices = random_csc(5_000, 60_000, 4)
    rng = np.random.default_rng(0)
    sampler = NeighborSampler(indptr, indices, [6, 3], seed=1, num_threads=1)
    kept = []
    for b in range(12):
        seeds = rng.integers(0, 5_000, 200)
        mb = sampler.sample(seeds, batch_id=b)
        kept.append((seeds, b, mb, snapshot(mb)))
        if len(kept) > 3:  # like a prefetch queue of 3: the oldest is dropped
            kept.pop(0)
        for seeds_k, b_k, mb_k, copies in kept:
            assert all(np.array_equal(a, c) for a, c in zip(snapshot(mb_k), copies))
    for seeds_k, b_k, mb_k, _ in kept:
        assert_matches_reference(mb_k, indptr, indices, [6, 3], seeds_k, 1, b_k)
        assert_well_formed(mb_k, indptr, indices, [6, 3])


def test_views_and_numpy_arrays_keep_a_buffer_taken():
    """A numpy array or a slice made from a batch tensor keeps its buffer from being handed out again."""
    indptr, indices = random_csc(2_000, 20_000, 5)
    sampler = NeighborSampler(indptr, indices, [5, 5], seed=2, num_threads=1)
    seeds = np.arange(0, 2_000, 7)
    sampler.sample(seeds, batch_id=0)  # sizes the ring: later batches are carved from its buffers
    first = sampler.sample(seeds, batch_id=0)
    n_id_array = first.n_id.numpy()[:10]
    edges_slice = first.blocks[0].edge_index[:, :5]
    expected = (n_id_array.copy(), edges_slice.clone())
    del first
    gc.collect()
    for b in range(1, 6):
        sampler.sample(np.arange(b, 2_000, 5), batch_id=b)
        assert np.array_equal(n_id_array, expected[0]) and torch.equal(edges_slice, expected[1])


@needs_use_count
def test_dropped_batches_reuse_one_buffer():
    """A consumer that drops each batch before the next keeps the ring at a couple of buffers."""
    indptr, indices = random_csc(5_000, 60_000, 6)
    sampler = NeighborSampler(indptr, indices, [5, 5], seed=3, num_threads=1)
    seeds = np.arange(0, 5_000, 9)
    for b in range(20):
        mb = sampler.sample(seeds, batch_id=b)
        del mb
    # the first batch sizes the ring (no slot); growth may drop a slot once
    assert sampler._outputs.allocations <= 3
    assert sampler._outputs.slots == 1


@needs_use_count
def test_ring_is_bounded_and_falls_back_to_fresh_memory():
    """Keeping more batches than the ring holds gives fresh memory; every batch stays correct."""
    indptr, indices = random_csc(3_000, 30_000, 7)
    sampler = NeighborSampler(indptr, indices, [4, 4], seed=4, num_threads=1)
    sampler._outputs.max_slots = 2
    seeds = np.arange(0, 3_000, 11)
    kept = [sampler.sample(seeds, batch_id=b) for b in range(6)]
    assert sampler._outputs.slots <= 2
    for b, mb in enumerate(kept):
        assert_matches_reference(mb, indptr, indices, [4, 4], seeds, 4, b)


def test_same_batch_with_and_without_reuse():
    """Reused buffers give the batch a fresh sampler gives (determinism for a seed and batch id)."""
    indptr, indices = random_csc(4_000, 50_000, 8)
    seeds = np.random.default_rng(3).integers(0, 4_000, 500)
    warm = NeighborSampler(indptr, indices, [8, 4, 2], seed=9, num_threads=2)
    for b in range(5):
        warm.sample(np.arange(b, 4_000, 3), batch_id=b)  # bigger batches first: buffers hold stale data
    fresh = NeighborSampler(indptr, indices, [8, 4, 2], seed=9, num_threads=2).sample(seeds, batch_id=42)
    again = warm.sample(seeds, batch_id=42)
    assert all(np.array_equal(a, c) for a, c in zip(snapshot(again), snapshot(fresh)))


def test_workspace_array_grows_keeping_prefix():
    ws = Workspace(10)
    first = ws.array("a", 5)
    first[:] = np.arange(5)
    grown = ws.array("a", 5000, keep=5)
    assert grown.shape == (5000,) and np.array_equal(grown[:5], np.arange(5))
    assert ws.array("a", 100).base is grown.base  # no new allocation below the capacity
    assert np.all(ws.local_id == -1) and ws.local_id.dtype == np.int32


def test_carver_carves_then_allocates_when_full():
    ring = OutputRing()
    assert ring.take() is None  # no capacity before the first batch's need
    ring.need(100)
    buffer = ring.take()
    if buffer is None:  # torch without storage use counts: no reuse
        return
    carver = Carver(buffer)
    a, b = carver.take(60), carver.take(70)  # capacity 125 (need + 25%)
    assert a.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr()
    assert b.untyped_storage().data_ptr() != buffer.untyped_storage().data_ptr()  # did not fit
    assert carver.used == 130 and ring.capacity == 125


@pytest.mark.parametrize("fanouts", [[3, 2], [-1, 2], [50]])
def test_pipelined_relabel_matches_one_thread(fanouts):
    """2 threads (draws and relabel overlapped chunk by chunk) give the 1-thread batch, over many chunks."""
    indptr, indices = random_csc(30_000, 400_000, 9)
    seeds = np.random.default_rng(4).integers(0, 30_000, 5_000)
    one = NeighborSampler(indptr, indices, fanouts, seed=6, num_threads=1).sample(seeds, batch_id=3)
    two = NeighborSampler(indptr, indices, fanouts, seed=6, num_threads=2).sample(seeds, batch_id=3)
    assert all(np.array_equal(a, c) for a, c in zip(snapshot(one), snapshot(two)))
    assert_matches_reference(two, indptr, indices, fanouts, seeds, 6, 3)


def test_pipelined_hop_error_reaches_the_caller_and_sampler_recovers(monkeypatch):
    """A chunk that fails in a helper or the caller raises from sample(); the next batch is still correct."""
    from graphtier.sampling.neighbor import sampler as neighbor

    indptr, indices = random_csc(20_000, 200_000, 10)
    seeds = np.random.default_rng(5).integers(0, 20_000, 4_000)
    sampler = NeighborSampler(indptr, indices, [4, 4], seed=7, num_threads=2)
    real = neighbor.kernels.sample_sources
    calls = []

    def failing(*args):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("chunk failed")
        return real(*args)

    monkeypatch.setattr(neighbor.kernels, "sample_sources", failing)
    with pytest.raises(RuntimeError, match="chunk failed"):
        sampler.sample(seeds, batch_id=1)
    monkeypatch.setattr(neighbor.kernels, "sample_sources", real)
    mb = sampler.sample(seeds, batch_id=1)
    assert_matches_reference(mb, indptr, indices, [4, 4], seeds, 7, 1)
