"""The graph store's typed sampling: TypedMiniBatch of a typed dataset, per-relation fanouts, topology tally."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.memory import TIER_NAMES, make_topology
from graphtier.memory.topology.topology import INDPTR_BYTES_PER_DESTINATION
from graphtier.sampling.neighbor.sampler import NeighborSampler
from graphtier.sampling.relation_fanouts import parse_relation_fanouts
from graphtier.sampling.typed_batch import TypedMiniBatch
from tests.typed_data import open_tiny_typed_dataset

FANOUTS, PER_RELATION = [3, 2], "writes=1,cites=2/-1"


def assert_samples_like_the_cpu(store: GraphStore, dataset: Dataset, seeds: np.ndarray) -> tuple[dict[str, int], int]:
    """Three batches of 20 of ``seeds`` from ``store`` (fanouts FANOUTS and PER_RELATION, sampler seed 6) equal the
    CPU typed sampler's; closes ``store``, checks its topology tally against the batches and returns (the topology
    traffic by tier, the destination rows sampled)."""
    schema = dataset.schema
    fanouts = parse_relation_fanouts(PER_RELATION, schema, FANOUTS)
    reference = NeighborSampler(dataset.indptr, dataset.indices, fanouts, schema=schema, seed=6)
    sample = store.sampler(FANOUTS, PER_RELATION)
    edges = rows = 0
    for batch_id in range(3):
        batch_seeds = seeds[batch_id * 20 : batch_id * 20 + 20]
        batch, expected = sample(batch_seeds, batch_id), reference.sample(batch_seeds, batch_id)
        for t in schema.type_names:
            assert torch.equal(batch.n_id[t], expected.n_id[t])
        for got, want in zip(batch.blocks, expected.blocks):
            assert got.num_src == want.num_src and got.num_dst == want.num_dst
            for key, rel in want.relations.items():
                assert torch.equal(got.relations[key].rowptr, rel.rowptr)
                assert torch.equal(got.relations[key].col, rel.col)
        edges += batch.num_sampled_edges
        rows += sum(blk.num_dst[rel.dst] for blk in batch.blocks for rel in schema.relations)
    traffic = store.traffic()["topology"].as_dict()
    store.close()
    itemsize = dataset.indices.dtype.itemsize
    assert traffic["requested"] == edges * itemsize + rows * INDPTR_BYTES_PER_DESTINATION
    assert sum(traffic[t] for t in TIER_NAMES) == traffic["requested"]
    return traffic, rows


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
        reference = NeighborSampler(typed_dataset.indptr, typed_dataset.indices, fanouts, schema=schema, seed=4)
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


@pytest.mark.parametrize(
    ("budget", "ram", "interpreted"), [("0", None, False), ("30%", "40%", False), ("10%", None, True)]
)
def test_gpu_sampling_path_on_the_cpu_gives_the_cpu_batches_and_counts_its_tiers(
    typed_dataset: Dataset, budget: str, ram: str | None, interpreted: bool
) -> None:
    """sample_on=gpu of a typed dataset: the device typed sampler over the tiered back-to-back CSC (its CPU twin,
    or the interpreted Triton picks and tiered reads with a fake registered host tier) gives the CPU batches, and
    the topology bytes (per relation row two indptr entries, per edge one indices entry) add up over the tiers."""
    options = {}
    picks = "numba"
    if interpreted:
        pytest.importorskip("triton")
        from tests.interpreted import load_interpreted
        from tests.memory.test_unified import FakeRegistrar

        options = {"registrar": FakeRegistrar(), "kernels": load_interpreted("memory/topology/_topology_kernels.py")}
        picks = "triton"
    topology = make_topology(typed_dataset.indptr, typed_dataset.indices, device=torch.device("cpu"),
                             topology_budget=budget, ram_budget=ram, log=lambda _: None, **options)  # fmt: skip
    kernels = load_interpreted("sampling/device/_device_kernels.py") if interpreted else None
    store = GraphStore(typed_dataset, None, topology=topology, seed=6, picks=picks, kernels=kernels)
    traffic, rows = assert_samples_like_the_cpu(store, typed_dataset, typed_dataset.train_idx)
    if budget == "0":  # only indptr (whole on the device in the plan) is read from the gpu tier
        assert traffic["gpu"] == rows * INDPTR_BYTES_PER_DESTINATION
    else:
        assert traffic["host"] > 0 and (traffic["disk"] > 0) == (ram is not None)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_sample_on_gpu_of_a_typed_dataset_on_cuda(typed_dataset: Dataset) -> None:
    """GraphStore.open(sample_on="gpu") of a typed dataset: compiled picks and tiered reads, the CPU batches."""
    device = torch.device("cuda", torch.cuda.current_device())
    with GraphStore.open(typed_dataset, device=device, sample_on="gpu", topology_budget="20%", features_on="cpu-gather",
                         seed=3, log=lambda _: None) as store:  # fmt: skip
        assert store.sample_on == "gpu"
        schema = typed_dataset.schema
        reference = NeighborSampler(
            typed_dataset.indptr,
            typed_dataset.indices,
            parse_relation_fanouts(None, schema, [4, 3]),
            schema=schema,
            seed=3,
        )
        for batch_id in range(3):
            seeds = typed_dataset.train_idx[batch_id * 20 : batch_id * 20 + 20]
            batch = store.sampler([4, 3])(torch.from_numpy(seeds).to(device), batch_id)
            assert all(ids.device == device for ids in batch.n_id.values())
            expected, batch = reference.sample(seeds, batch_id), batch.to("cpu")
            for t in schema.type_names:
                assert torch.equal(batch.n_id[t], expected.n_id[t])
            for got, want in zip(batch.blocks, expected.blocks):
                assert all(torch.equal(got.relations[k].col, rel.col) for k, rel in want.relations.items())
        traffic = store.traffic()["topology"].as_dict()
        assert traffic["gpu"] > 0 and traffic["host"] > 0


def test_the_store_s_link_sampler_serves_a_typed_dataset(tmp_path: Path) -> None:
    """``GraphStore.link_sampler`` is the one door for pairs: on a typed dataset with an edge split of a relation it
    gives the typed link sampler's batches (pairs in the relation's local ids); per-relation fanouts on a
    homogeneous dataset are refused in one line."""
    from graphtier.dataset.synthetic.synthetic_mag import generate_mag
    from graphtier.graphstore.links import typed_link_sampler
    from tests.conftest import write_labelled_graph

    dataset = generate_mag(tmp_path / "mag", nodes=400, feature_dim=4, seed=1, edge_split="0.8,0.1,0.1",
                           split_relation="writes")  # fmt: skip
    pairs = np.asarray(np.load(dataset.path / "link_train.npy"))
    with GraphStore.open(dataset, log=lambda _: None, seed=2) as store:
        got = store.link_sampler([3, 2], pairs, num_negatives=2, relation_fanouts="writes=1")(np.arange(6), 1)
        want = typed_link_sampler(store, [3, 2], pairs, num_negatives=2, relation_fanouts="writes=1").sample(
            np.arange(6), 1
        )
    assert (got.src_type, got.dst_type) == ("author", "paper")
    assert torch.equal(got.src_index, want.src_index) and torch.equal(got.dst_index, want.dst_index)
    assert all(torch.equal(got.n_id[t], want.n_id[t]) for t in want.n_id)
    plain = write_labelled_graph(tmp_path / "p", num_nodes=40)
    with GraphStore.open(plain, log=lambda _: None) as store:
        with pytest.raises(OptionError, match="has one relation"):
            store.link_sampler([2], np.array([[0, 1]]), relation_fanouts="x=1")
