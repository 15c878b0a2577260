"""GraphStore.link_sampler on Cora: no target edge in any block, on the CPU and on the device path (on the CPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier.dataset import Dataset
from graphtier.dataset.importers import import_planetoid
from graphtier.graphstore import GraphStore
from graphtier.memory import make_topology
from graphtier.sampling import NeighborSampler, iter_seed_batches
from tests.conftest import shared_data
from tests.sampling.test_link import assert_no_leak_and_well_formed, assert_same_link_batch, graph_pairs

FANOUTS = [-1, 5]


@pytest.fixture(scope="module")
def cora(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return import_planetoid(shared_data("cora"), Path(tmp_path_factory.mktemp("cora")) / "cora")


@pytest.mark.parametrize("negative_sampling", ["uniform", "degree"])
def test_cora_training_batches_never_see_their_target_edges_on_cpu_and_device_paths(
    cora: Dataset, negative_sampling: str
) -> None:
    indptr, indices = np.asarray(cora.indptr), np.asarray(cora.indices)
    pairs = graph_pairs(indptr, indices, undirected=True)
    cpu = GraphStore(cora, None, seed=4)
    topology = make_topology(indptr, indices, device=torch.device("cpu"), topology_budget="50%", log=lambda _: None)
    device = GraphStore(cora, None, topology=topology, seed=4, picks="numba")
    k = 3
    options = dict(num_negatives=k, negative_sampling=negative_sampling)
    on_cpu, on_device = (store.link_sampler(FANOUTS, pairs, **options) for store in (cpu, device))
    plain = NeighborSampler(indptr, indices, FANOUTS, seed=4)
    excluded = 0
    batches = iter_seed_batches(np.arange(pairs.shape[0]), 512, shuffle=True, seed=1, epoch=0)
    for batch_id, ids in zip(range(3), batches):
        mb = on_cpu(ids, batch_id)
        chosen = pairs[ids]
        negatives = mb.n_id[mb.dst_index[ids.size :]].numpy()
        before = plain.sample(np.concatenate([chosen[:, 0], chosen[:, 1], negatives]), batch_id)
        assert_no_leak_and_well_formed(mb, before.blocks, pairs, indptr, indices, k, undirected=True)
        assert_same_link_batch(on_device(ids, batch_id), mb)
        excluded += mb.excluded_edges
    device.close()
    # the first hop takes whole lists: each target edge and its reverse were sampled, and removed
    assert excluded >= 3 * 512 * 2
