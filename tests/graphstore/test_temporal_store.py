"""GraphStore.temporal_sampler on a store that samples on a device (device-on-cpu here): the DeviceTemporalSampler,
with the CPU store's batches for node seeds, link pairs and the node task's inclusive cut."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphtier.dataset import Dataset
from graphtier.graphstore import GraphStore
from graphtier.memory import make_topology
from graphtier.sampling.temporal.temporal_device import DeviceTemporalSampler
from tests.sampling.test_link import assert_same_link_batch
from tests.sampling.test_temporal_device import assert_identical
from tests.train.test_temporal_link import time_split  # noqa: F401  (the module's timed dataset)


def stores(dataset: Dataset) -> tuple[GraphStore, GraphStore]:
    indptr, indices = np.asarray(dataset.indptr), np.asarray(dataset.indices)
    topology = make_topology(indptr, indices, device=torch.device("cpu"), topology_budget="50%", log=lambda _: None)
    device = GraphStore(dataset, None, topology=topology, seed=4, picks="numba")
    assert device.sample_on == "device-on-cpu"
    return GraphStore(dataset, None, seed=4), device


@pytest.mark.parametrize(("strategy", "inclusive"), [("uniform", False), ("recent", True)])
def test_node_seeds_give_the_cpu_stores_batches(time_split: Dataset, strategy: str, inclusive: bool) -> None:  # noqa: F811
    cpu, device = stores(time_split)
    on_cpu, on_device = (store.temporal_sampler([5, 5], strategy, inclusive=inclusive) for store in (cpu, device))
    before = device.traffic()["topology"].requested
    rng = np.random.default_rng(0)
    edge_time = np.asarray(time_split.edge_time)
    for batch_id in range(3):
        seeds = rng.integers(0, time_split.num_nodes, 128)
        times = rng.integers(int(edge_time.min()), int(edge_time.max()) + 2, 128)
        mb = on_device(seeds, batch_id, times)
        assert_identical(mb, on_cpu(seeds, batch_id, times))
        assert mb.num_sampled_edges > 0
        for block in mb.blocks:
            cut = edge_time[block.edge_id.numpy()] - mb.n_time.numpy()[block.edge_index[1].numpy()]
            assert np.all(cut <= 0) if inclusive else np.all(cut < 0)
    assert device.traffic()["topology"].requested > before  # its indptr reads are counted
    assert device.temporal_sampler([5, 5], strategy, inclusive=inclusive) is on_device  # cached
    device.close()


def test_link_pairs_at_their_times_give_the_cpu_stores_batches(time_split: Dataset) -> None:  # noqa: F811
    cpu, device = stores(time_split)
    train = time_split.link.pairs("train")
    pairs, times = np.asarray(train.positives), np.asarray(train.positive_times)
    on_cpu, on_device = (
        store.make_link_sampler([-1, 4], pairs, times=times, temporal="recent", exclude=False, num_negatives=2)
        for store in (cpu, device)
    )
    ids = np.arange(0, pairs.shape[0], 3)[:200]
    mb, expected = on_device.sample(ids, 1), on_cpu.sample(ids, 1)
    assert_same_link_batch(mb, expected)
    assert mb.blocks[-1].num_edges > 0
    assert torch.equal(mb.n_time, expected.n_time)
    assert all(torch.equal(a.edge_id, b.edge_id) for a, b in zip(mb.blocks, expected.blocks))
    edge_time = np.asarray(time_split.edge_time)
    for block in mb.blocks:
        assert np.all(edge_time[block.edge_id.numpy()] < mb.n_time.numpy()[block.edge_index[1].numpy()])
    device.close()


def test_the_device_store_builds_a_device_temporal_sampler(time_split: Dataset, monkeypatch) -> None:  # noqa: F811, ANN001
    from graphtier.graphstore import samplers

    built = []
    real = samplers.DeviceTemporalSampler
    monkeypatch.setattr(samplers, "DeviceTemporalSampler", lambda *a, **k: built.append(real(*a, **k)) or built[-1])
    _, device = stores(time_split)
    device.temporal_sampler([3])(np.arange(4), 0, np.full(4, 10**9))
    assert len(built) == 1 and isinstance(built[0], DeviceTemporalSampler)
    device.close()
