"""GraphStore: one object for topology and features; CPU and device sampling give the same batches and honest bytes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.memory import TIER_NAMES, PlacementSpec, make_feature_store, make_topology
from graphtier.sampling import NeighborSampler, ShadowSampler, iter_seed_batches
from graphtier.tiering.plan.capacity import describe_device, plan_capacity
from graphtier.tiering.replay import Replay

FANOUTS = [5, 3]


def assert_same_batch(got, expected) -> None:
    assert torch.equal(got.n_id.cpu(), expected.n_id)
    assert torch.equal(got.seed_index.cpu(), expected.seed_index)
    assert len(got.blocks) == len(expected.blocks)
    for a, b in zip(got.blocks, expected.blocks):
        assert (a.num_src, a.num_dst) == (b.num_src, b.num_dst)
        assert torch.equal(a.edge_index.cpu(), b.edge_index)


def expected_topology_bytes(dataset: Dataset, batches) -> int:
    itemsize = np.asarray(dataset.indices).dtype.itemsize
    return sum(b.num_sampled_edges * itemsize + sum(blk.num_dst for blk in b.blocks) * 16 for b in batches)


def seed_batches(dataset: Dataset, count: int = 4) -> list[np.ndarray]:
    return list(iter_seed_batches(np.asarray(dataset.train_idx), 37, shuffle=True, seed=0, epoch=1))[:count]


def test_cpu_sampling_matches_the_sampler_and_counts_host_topology_reads(tiny_dataset: Dataset) -> None:
    with GraphStore.open(tiny_dataset, features_on="cpu-gather", seed=3, log=lambda _: None) as store:
        reference = NeighborSampler(tiny_dataset.indptr, tiny_dataset.indices, FANOUTS, seed=3)
        batches = []
        for batch_id, seeds in enumerate(seed_batches(tiny_dataset)):
            batch = store.sample(seeds, FANOUTS, batch_id=batch_id)
            assert_same_batch(batch, reference.sample(seeds, batch_id))
            batches.append(batch)
            rows = store.gather(batch.n_id)
            assert np.array_equal(rows.numpy(), np.asarray(tiny_dataset.features)[batch.n_id.numpy()])
        traffic = store.traffic()
    topology = traffic["topology"]
    assert topology["host"] == topology["requested"] == expected_topology_bytes(tiny_dataset, batches)
    assert sum(topology[t] for t in TIER_NAMES) == topology["requested"]
    features = traffic["features"]
    assert features["requested"] == sum(b.num_nodes for b in batches) * tiny_dataset.feature_dim * 4


@pytest.mark.parametrize("budget", ["0", "10%", "100%"])
def test_device_sampling_on_the_cpu_twin_is_identical_and_its_tiers_add_up(tiny_dataset: Dataset, budget: str) -> None:
    topology = make_topology(
        tiny_dataset.indptr,
        tiny_dataset.indices,
        device=torch.device("cpu"),
        topology_budget=budget,
        log=lambda _: None,
    )
    features = make_feature_store(tiny_dataset.features, "cpu-gather", device=torch.device("cpu"))
    store = GraphStore(tiny_dataset, features, topology=topology, seed=5, picks="numba")
    reference = NeighborSampler(tiny_dataset.indptr, tiny_dataset.indices, FANOUTS, seed=5)
    batches = []
    for batch_id, seeds in enumerate(seed_batches(tiny_dataset)):
        batch = store.sample(seeds, FANOUTS, batch_id=batch_id)
        assert_same_batch(batch, reference.sample(seeds, batch_id))
        batches.append(batch)
    traffic = store.traffic()["topology"]
    store.close()
    assert sum(traffic[t] for t in TIER_NAMES) == traffic["requested"]
    assert traffic["requested"] == expected_topology_bytes(tiny_dataset, batches)
    indptr_bytes = sum(sum(blk.num_dst for blk in b.blocks) * 16 for b in batches)
    if budget == "0":  # only indptr (whole on the device in the plan) is read from the gpu tier
        assert traffic["gpu"] == indptr_bytes
    if budget == "100%":
        assert traffic["host"] == 0 and traffic["disk"] == 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error of a machine without CUDA")
def test_gpu_sampling_without_cuda_is_a_one_line_error(tiny_dataset: Dataset) -> None:
    with pytest.raises(OptionError, match=r"^sample_on='gpu': needs a CUDA device") as info:
        GraphStore.open(tiny_dataset, sample_on="gpu", log=lambda _: None)
    assert "\n" not in str(info.value)
    assert info.value.render(cli=True).startswith("--sample-on gpu: needs a CUDA device")


def test_bad_sample_on_and_topology_budget_without_gpu_sampling_are_refused(tiny_dataset: Dataset) -> None:
    """Errors from a Python call name the arguments the caller used, not CLI flags."""
    with pytest.raises(OptionError, match=r"^sample_on= expected one of cpu, gpu, found 'tpu'$"):
        GraphStore.open(tiny_dataset, sample_on="tpu", log=lambda _: None)
    with pytest.raises(OptionError, match=r"^topology_budget=: applies to sample_on='gpu' only") as info:
        GraphStore.open(tiny_dataset, topology_budget="10%", log=lambda _: None)
    assert info.value.render(cli=True).startswith("--topology-budget: applies to --sample-on gpu only")
    with pytest.raises(OptionError, match=r"^gpu_budget=: applies to features_on='tiered and tiered\+cache' only"):
        GraphStore.open(tiny_dataset, PlacementSpec(features_on="cpu-gather", gpu_budget="1GB"))


def test_auto_topology_budget_with_cpu_sampling_means_zero(tiny_dataset: Dataset) -> None:
    """The GPU data path guide's GraphStore call on a machine without a GPU: sample_on="cpu" with topology_budget="auto"."""
    with GraphStore.open(
        tiny_dataset,
        device="cpu",
        sample_on="cpu",
        features_on="tiered",
        feature_budget="auto",
        topology_budget="auto",
        ram_budget="auto",
        log=lambda _: None,
    ) as store:
        assert store.topology is None and store.sample_on == "cpu"
        store.sample(np.asarray(tiny_dataset.train_idx[:8]), FANOUTS)
        topology = store.traffic()["topology"]
        assert topology["host"] == topology["requested"] > 0 and topology["gpu"] == 0


def test_plan_and_closed_store(tiny_dataset: Dataset) -> None:
    store = GraphStore.open(tiny_dataset, features_on="cpu-gather", log=lambda _: None)
    plan = plan_capacity(
        store.dataset,
        describe_device("16GiB"),
        budgets=("0%", "50%"),
        replay=Replay(fanouts=FANOUTS, batch_size=64, seed=store.seed),
    )
    assert [row.budget for row in plan.rows] == ["0%", "50%"]
    assert plan.rows[1].tier_rows["gpu"] == tiny_dataset.num_nodes // 2
    assert "sampling on cpu" in store.describe()
    store.close()
    store.close()  # idempotent
    with pytest.raises(OptionError, match="closed"):
        store.sample(np.array([0]), FANOUTS)


@pytest.mark.parametrize(("budget", "ram"), [("10%", None), ("25%", "40%")])
def test_the_gpu_code_path_on_the_cpu_interpreted_kernels_and_tiers(
    tiny_dataset: Dataset, budget: str, ram: str | None
) -> None:
    """Triton picks and Triton tiered reads (interpreted), registered host tier (fake registrar), lists cut by tiers."""
    pytest.importorskip("triton")
    from tests.interpreted import load_interpreted
    from tests.memory.test_unified import FakeRegistrar

    indptr = np.asarray(tiny_dataset.indptr)
    topology = make_topology(
        tiny_dataset.indptr,
        tiny_dataset.indices,
        device=torch.device("cpu"),
        topology_budget=budget,
        ram_budget=ram,
        log=lambda _: None,
        registrar=FakeRegistrar(),
        kernels=load_interpreted("memory/topology/_topology_kernels.py"),
    )
    boundaries = [topology.plan.local_rows, topology.plan.host_end]
    # the boundaries fall inside neighbour lists: a list is read from two tiers
    assert all(b not in set(indptr.tolist()) for b in boundaries if 0 < b < indptr[-1])
    store = GraphStore(
        tiny_dataset,
        None,
        topology=topology,
        seed=9,
        picks="triton",
        kernels=load_interpreted("sampling/device/_device_kernels.py"),
    )
    reference = NeighborSampler(tiny_dataset.indptr, tiny_dataset.indices, FANOUTS, seed=9)
    batches = []
    for batch_id, seeds in enumerate(seed_batches(tiny_dataset, 3)):
        batch = store.sample(seeds, FANOUTS, batch_id=batch_id)
        assert_same_batch(batch, reference.sample(seeds, batch_id))
        batches.append(batch)
    traffic = store.traffic()["topology"]
    store.close()
    assert traffic["requested"] == expected_topology_bytes(tiny_dataset, batches) == sum(traffic[t] for t in TIER_NAMES)
    assert traffic["gpu"] > 0 and traffic["host"] > 0 and (traffic["disk"] > 0) == (ram is not None)


def test_open_leaves_room_for_prefetch_plus_two_batches_in_auto_gpu_budgets(
    tiny_dataset: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graphtier.graphstore.store as store_module
    import graphtier.memory.features.spec as features_module  # the homogeneous store's table: PlacementSpec.feature_store
    from graphtier.memory import batch_rows_bound
    from graphtier.memory.features.arena import in_flight_bytes

    seen: dict[str, int] = {}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(
        store_module, "make_topology", lambda *a, **k: seen.setdefault("topology", k["in_flight_bytes"]) and None
    )
    monkeypatch.setattr(
        features_module,
        "make_feature_store",
        lambda *a, **k: seen.setdefault("features", k["in_flight_bytes"]) and None,
    )
    GraphStore.open(
        tiny_dataset, device="cuda", sample_on="gpu", batch_size=8, fanouts=(2, 2), ring_size=7, log=lambda _: None
    )
    row_bytes = tiny_dataset.features.shape[1] * tiny_dataset.features.dtype.itemsize
    expected = in_flight_bytes(batch_rows_bound(8, [2, 2], tiny_dataset.num_nodes), row_bytes, prefetch=4)
    assert expected == 6 * 72 * (row_bytes + 24) and seen == {"topology": expected, "features": expected}


def test_the_store_serves_shadow_seed_only_labels_splits_and_the_csc(tiny_dataset: Dataset) -> None:
    store = GraphStore.open(tiny_dataset, features_on="cpu-gather", log=lambda _: None)
    seeds = seed_batches(tiny_dataset, 1)[0]
    shadow = store.sampler(FANOUTS, seed=3, kind="shadow", num_layers=2)
    reference = ShadowSampler(
        np.asarray(tiny_dataset.indptr), np.asarray(tiny_dataset.indices), list(FANOUTS), 2, seed=3
    )
    assert_same_batch(shadow(seeds, 5), reference.sample(seeds, 5))
    assert store.sampler(FANOUTS, seed=3, kind="shadow", num_layers=2) is shadow  # cached per arguments
    mlp = store.sampler(FANOUTS, kind="seed-only")(np.array([4, 2, 4]), 0)
    assert mlp.blocks == [] and mlp.n_id.tolist() == [4, 2] and mlp.seed_index.tolist() == [0, 1, 0]
    np.testing.assert_array_equal(store.labels(torch.tensor([1, 0])), np.asarray(tiny_dataset.labels)[[1, 0]])
    assert store.labels(np.array([3])).dtype == np.int64
    np.testing.assert_array_equal(store.split("train"), np.asarray(tiny_dataset.train_idx))
    indptr, indices = store.csc
    np.testing.assert_array_equal(indptr, np.asarray(tiny_dataset.indptr))
    assert indices.shape[0] == tiny_dataset.num_edges and store.num_nodes == tiny_dataset.num_nodes
    assert store.row_bytes == tiny_dataset.feature_dim * tiny_dataset.features.dtype.itemsize
    assert store.cache_hit_ratio is None
    with pytest.raises(OptionError, match="kind= expected one of neighbor, shadow, seed-only, found 'walk'"):
        store.sampler(FANOUTS, kind="walk")
    with pytest.raises(OptionError, match="split: expected one of train, valid, test, found 'dev'"):
        store.split("dev")
    store.close()
