"""The one block layout: every sampler's blocks are CSRs over their destinations whose row pointer counts their edges."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphtier.sampling import (
    DenseTopology,
    DeviceNeighborSampler,
    DeviceTemporalSampler,
    MiniBatch,
    NeighborSampler,
    ShadowSampler,
    TemporalNeighborSampler,
)
from graphtier.sampling.batch import Block
from graphtier.sampling.link.sampler import LinkSampler
from tests.sampling.graphs import random_csc

from .test_temporal_kernels import timed_csc


def assert_csr_blocks(blocks: list[Block]) -> None:
    """Each block's ``rowptr`` counts its edges per destination, in order, and its edge index (the sampler's own,
    cached) is the one its CSR derives."""
    for block in blocks:
        assert isinstance(block, Block) and block.rowptr.dtype == torch.int64 and block.col.dtype == torch.int64
        assert int(block.rowptr[0]) == 0 and int(block.rowptr[-1]) == block.num_edges
        derived = Block(block.rowptr, block.col, block.num_src)
        assert torch.equal(derived.edge_index, block.edge_index)
        if block.num_edges:
            assert int(block.col.max()) < block.num_src


@pytest.mark.parametrize("threads", [1, 2])
def test_neighbour_device_and_shadow_blocks(threads: int) -> None:
    indptr, indices = random_csc(400, 6000, 2)
    seeds = np.random.default_rng(1).integers(0, 400, 90)
    sampler = NeighborSampler(indptr, indices, [6, -1, 3], seed=2, num_threads=threads)
    sampler.parallel_relabel_min_threads = 2  # cover the parallel relabel too
    for batch in (sampler.sample(seeds, 0), sampler.sample(seeds[:1], 1)):
        assert_csr_blocks(batch.blocks)
    device = DeviceNeighborSampler(DenseTopology(indptr, indices), [6, -1, 3], seed=2, picks="numba")
    on_device = device.sample(seeds, 0)
    assert_csr_blocks(on_device.blocks)
    for a, b in zip(on_device.blocks, sampler.sample(seeds, 0).blocks):  # the same batches, CSR included
        assert torch.equal(a.rowptr, b.rowptr) and torch.equal(a.col, b.col)
    assert_csr_blocks(ShadowSampler(indptr, indices, [4, 2], 2, seed=1).sample(seeds).blocks[:1])


@pytest.mark.parametrize("one_time", [True, False])
def test_temporal_and_link_blocks(one_time: bool) -> None:
    rng = np.random.default_rng(4)
    indptr, indices, time, order = timed_csc(rng, 300, 4000, horizon=500)
    seeds = rng.integers(0, 300, 60)
    seed_time = np.full(60, 400) if one_time else rng.integers(0, 600, 60)
    cpu = TemporalNeighborSampler(indptr, indices, time, order, [5, 3], seed=3)
    device = DeviceTemporalSampler(DenseTopology(indptr, indices), time, order, [5, 3], seed=3, picks="numba")
    a, b = cpu.sample(seeds, seed_time, 0), device.sample(seeds, seed_time, 0)
    assert_csr_blocks(a.blocks)
    assert_csr_blocks(b.blocks)
    for x, y in zip(a.blocks, b.blocks):
        assert torch.equal(x.rowptr, y.rowptr) and torch.equal(x.col, y.col)
    dst = np.repeat(np.arange(300), np.diff(indptr))
    pairs = np.stack([indices, dst], 1).astype(np.int64)
    plain = NeighborSampler(indptr, indices, [5, 3], seed=3)
    for exclusion in ("numba", "torch"):  # the target edges leave the blocks: their row pointers follow
        link = LinkSampler(plain.sample, pairs, num_nodes=300, seed=1, exclusion=exclusion)
        batch = link.sample(rng.choice(pairs.shape[0], 40, replace=False), 0)
        assert batch.excluded_edges > 0 and isinstance(batch, MiniBatch)
        assert_csr_blocks(batch.blocks)
