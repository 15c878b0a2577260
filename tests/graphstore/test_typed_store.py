"""The graph store's typed sampling: TypedMiniBatch of a typed dataset, per-relation fanouts, topology tally."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.memory.topology import INDPTR_BYTES_PER_DESTINATION
from graphtier.sampling.relation_fanouts import parse_relation_fanouts
from graphtier.sampling.typed_batch import TypedMiniBatch
from graphtier.sampling.typed_neighbor import TypedNeighborSampler
from tests.typed_graphs import open_tiny_typed_dataset


@pytest.fixture
def typed_dataset(tmp_path: Path) -> Dataset:
    return open_tiny_typed_dataset(tmp_path)


def test_typed_store_samples_typed_batches_and_counts_topology_bytes(typed_dataset: Dataset) -> None:
    with GraphStore.open(typed_dataset, features_on="cpu-gather", seed=4, log=lambda _: None) as store:
        assert store.is_hetero
        sample = store.sampler([3, 2], "writes=1,cites=2/-1")
        assert store.sampler([3, 2], "writes=1,cites=2/-1") is sample  # cached per parsed fanouts
        schema = typed_dataset.schema
        fanouts = parse_relation_fanouts("writes=1,cites=2/-1", schema, [3, 2])
        reference = TypedNeighborSampler(typed_dataset.indptr, typed_dataset.indices, schema, fanouts, seed=4)
        seeds = typed_dataset.train_idx[:30]
        edges = rows = 0
        for batch_id in range(3):
            batch = sample(seeds, batch_id)
            assert isinstance(batch, TypedMiniBatch) and batch.target == "paper"
            expected = reference.sample(seeds, batch_id)
            for t in schema.type_names:
                assert torch.equal(batch.n_id[t], expected.n_id[t])
            edges += batch.num_sampled_edges
            # one indptr row pair per (relation, destination of its type)
            rows += sum(blk.num_dst[rel.dst] for blk in batch.blocks for rel in schema.relations)
        host = store.traffic()["topology"].as_dict()
        itemsize = typed_dataset.indices.dtype.itemsize
        assert host["host"] == host["requested"] == edges * itemsize + rows * INDPTR_BYTES_PER_DESTINATION
        assert rows > 0 and edges > 0


def test_seed_only_and_refused_kinds(typed_dataset: Dataset) -> None:
    with GraphStore.open(typed_dataset, features_on="cpu-gather", log=lambda _: None) as store:
        batch = store.sampler([2], kind="seed-only")(np.array([5, 3, 5]), 0)
        assert batch.n_id["paper"].tolist() == [5, 3] and batch.seed_index.tolist() == [0, 1, 0]
        assert batch.n_id["author"].numel() == 0 and batch.blocks == []
        with pytest.raises(OptionError, match="typed sampler is 'neighbor' or 'seed-only'"):
            store.sampler([2], kind="shadow", num_layers=2)
        with pytest.raises(OptionError, match="fanouts_per_relation= unknown relation 'nope'"):
            store.sampler([2], "nope=3")


def test_homogeneous_store_gives_typed_batches_on_request(tiny_dataset: Dataset) -> None:
    with GraphStore.open(tiny_dataset, features_on="cpu-gather", seed=2, log=lambda _: None) as store:
        assert not store.is_hetero
        plain = store.sampler([4, 3])(np.arange(20), 1)
        typed = store.typed_sampler([4, 3])(np.arange(20), 1)
        assert torch.equal(typed.n_id["_N"], plain.n_id)
        for a, b in zip(typed.blocks, plain.blocks):
            assert torch.equal(a.relations[("_N", "_E", "_N")].edge_index, b.edge_index)
        assert isinstance(store.sampler([4, 3], {"_E": 2})(np.arange(5), 0), TypedMiniBatch)
