"""PyG's LinkNeighborLoader with edge_label_time over graphtier's stores: every pair sampled at its time, no
sampled edge at or after it, the labels' times in the batch; NeighborLoader with input_time: node seeds at their
times."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.loader import LinkNeighborLoader, NeighborLoader

from graphtier import Dataset
from graphtier.pyg import GraphtierFeatureStore, GraphtierGraphStore, GraphtierNeighborSampler
from tests.train.test_temporal_link import time_split  # noqa: F401  (the module's timed dataset)


def loader(dataset: Dataset, pairs: np.ndarray, times: np.ndarray, **options) -> LinkNeighborLoader:
    sampler = GraphtierNeighborSampler(dataset, [-1, 3], seed=1, temporal=options.pop("temporal", "uniform"))
    return LinkNeighborLoader(
        (GraphtierFeatureStore(dataset), GraphtierGraphStore(dataset)), num_neighbors=[-1, 3],
        neighbor_sampler=sampler, edge_label_index=(None, torch.from_numpy(pairs.T.copy())),
        edge_label_time=torch.from_numpy(times), time_attr="edge_time", **options,
    )  # fmt: skip


@pytest.mark.parametrize("temporal", ["uniform", "recent"])
def test_one_pair_batches_read_only_its_past(time_split: Dataset, temporal: str) -> None:  # noqa: F811
    test = time_split.link.pairs("test")
    pairs, times = np.asarray(test.positives)[:20], np.asarray(test.positive_times)[:20]
    edge_time = np.asarray(time_split.edge_time)
    for batch in loader(time_split, pairs, times, batch_size=1, temporal=temporal):
        t = int(batch.edge_label_time[0])
        assert t == times[int(batch.input_id[0])]
        assert batch.e_id.numel() == batch.edge_index.shape[1]
        assert np.all(edge_time[batch.e_id.numpy()] < t)  # whole first-hop lists, yet nothing at or after t
        n_id = batch.n_id.numpy()
        ends = n_id[batch.edge_label_index.numpy()]
        assert np.array_equal(ends[:, 0], pairs[int(batch.input_id[0])])


def test_binary_negatives_carry_their_positive_time(time_split: Dataset) -> None:  # noqa: F811
    train = time_split.link.pairs("train")
    pairs, times = np.asarray(train.positives)[:64], np.asarray(train.positive_times)[:64]
    batch = next(iter(loader(time_split, pairs, times, batch_size=32, neg_sampling=("binary", 2))))
    chosen = times[batch.input_id.numpy()]
    assert batch.edge_label.tolist() == [1.0] * 32 + [0.0] * 64
    assert torch.equal(batch.edge_label_time, torch.from_numpy(np.concatenate([chosen, np.repeat(chosen, 2)])))


def test_node_seeds_with_times_read_only_their_past(time_split: Dataset) -> None:  # noqa: F811
    """NeighborLoader(input_time=...): each seed's hops hold only edges at or before its time (PyG's semantics)."""
    seeds = torch.arange(0, 40, 2)
    times = torch.from_numpy(np.random.default_rng(0).integers(1_000, 100_000, seeds.shape[0]))
    loader = NeighborLoader(
        (GraphtierFeatureStore(time_split), GraphtierGraphStore(time_split)), num_neighbors=[-1, 3],
        input_nodes=seeds, input_time=times, time_attr="edge_time", batch_size=1,
        neighbor_sampler=GraphtierNeighborSampler(time_split, [-1, 3], seed=1, temporal="recent"),
    )  # fmt: skip
    edge_time = np.asarray(time_split.edge_time)
    indptr = np.asarray(time_split.indptr)
    for batch in loader:
        seed, t = int(batch.n_id[0]), int(batch.seed_time[0])
        assert t == int(times[int(batch.input_id[0])])
        assert batch.e_id.numel() == batch.edge_index.shape[1] and np.all(edge_time[batch.e_id.numpy()] <= t)
        first_hop = int(batch.num_sampled_edges[0])  # the seed's whole list, cut at its time
        assert first_hop == int(np.sum(edge_time[indptr[seed] : indptr[seed + 1]] <= t))
