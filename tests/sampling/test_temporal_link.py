"""LinkSampler with pair times: every endpoint and negative is a seed at its pair's time, and no block reads an
edge at or after the time of the pair whose rows it serves."""

from __future__ import annotations

import numpy as np
import pytest

from graphtier.errors import OptionError
from graphtier.sampling import TemporalNeighborSampler
from graphtier.sampling.link.pairs import NegativeDestinations
from graphtier.sampling.link.sampler import LinkSampler

from .test_temporal import check_input_rows
from .test_temporal_kernels import timed_csc


def make(rng: np.random.Generator, exclude: bool) -> tuple[LinkSampler, np.ndarray, np.ndarray, tuple]:
    indptr, indices, time, order = timed_csc(rng, 60, 3000, horizon=500)
    temporal = TemporalNeighborSampler(indptr, indices, time, order, [4, 3], seed=1)
    dst = np.repeat(np.arange(60), np.diff(indptr))
    rows = rng.choice(indices.shape[0], 200, replace=False)
    pairs = np.stack([indices[rows], dst[rows]], axis=1).astype(np.int64)
    times = time[rows]
    sampler = LinkSampler(
        lambda seeds, batch_id, seed_time: temporal.sample(seeds, seed_time, batch_id),
        pairs, num_nodes=60, num_negatives=2, negatives=NegativeDestinations("uniform", (0, 60)), seed=3,
        times=times, exclude=exclude,
    )  # fmt: skip
    return sampler, pairs, times, (indptr, indices, time)


def test_pairs_and_negatives_are_sampled_at_the_pair_time() -> None:
    sampler, pairs, times, (_, _, time) = make(np.random.default_rng(0), exclude=False)
    batch = sampler.sample(np.arange(50, 90), batch_id=7)
    n_id, n_time = batch.n_id.numpy(), batch.n_time.numpy()
    b = 40
    pair_time = np.concatenate([times[50:90], np.repeat(times[50:90], 2)])  # positives, then 2 negatives each
    assert np.array_equal(n_time[batch.src_index.numpy()], pair_time)
    assert np.array_equal(n_time[batch.dst_index.numpy()], pair_time)
    assert np.array_equal(n_id[batch.src_index.numpy()[:b]], pairs[50:90, 0])
    assert np.array_equal(n_id[batch.dst_index.numpy()[:b]], pairs[50:90, 1])
    assert batch.label.tolist() == [1.0] * b + [0.0] * (2 * b)
    for h, block in enumerate(batch.blocks):
        s, d = block.edge_index.numpy()
        assert np.all(time[block.edge_id.numpy()] < n_time[d])  # never at or after the pair's time
        if h > 0:  # the input block's sources are one row per node
            assert np.all(n_time[s] == n_time[d])
        else:
            check_input_rows(n_id, n_time, block.num_dst, s, n_time[d])


def test_a_snapshot_time_keeps_the_exclusion() -> None:
    """Pairs scored at one later time (the static snapshot) read their target edges unless excluded."""
    rng = np.random.default_rng(1)
    sampler, pairs, times, _ = make(rng, exclude=True)
    sampler.times = np.full(times.shape, 10**6, np.int64)
    batch = sampler.sample(np.arange(0, 100), batch_id=0)
    assert batch.excluded_edges > 0


def test_times_must_match_the_pairs() -> None:
    sampler, pairs, times, _ = make(np.random.default_rng(2), exclude=False)
    with pytest.raises(OptionError, match=r"times: expected one time per pair \(200\)"):
        LinkSampler(sampler.sample_nodes, pairs, num_nodes=60, times=times[:-1])
    with pytest.raises(OptionError, match="times: expected pair times exactly when"):
        sampler.sample_pairs(pairs[:3], 0)
