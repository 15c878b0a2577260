"""Tests for graphtier.tiering.plan.topology: topology tiers and reads in `graphtier plan`."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError
from graphtier.sampling.neighbor.sampler import NeighborSampler
from graphtier.sampling.seeds import iter_seed_batches
from graphtier.tiering.plan.capacity import describe_device, plan_capacity
from graphtier.tiering.plan.topology import entries_before
from graphtier.tiering.replay import Replay
from tests.conftest import write_labelled_graph

FANOUTS = (5, 3)
BATCH = 64
SEED = 4
RESERVE = 2 * 2**30  # the GPU and RAM reserves of small machines


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("plan-topology") / "graph"
    write_labelled_graph(root, num_nodes=1200, feature_dim=8, avg_degree=12, seed=11)
    return Dataset.open(root)


def sampled_positions(data: Dataset, epochs: int) -> tuple[np.ndarray, int]:
    """Independent count: the ``indices`` position of every sampled edge (the graph has no duplicate edges, so
    (destination, source) names one position) and the number of hop destinations, for the trainer's batches."""
    indptr, indices = np.asarray(data.indptr), np.asarray(data.indices)
    num_nodes = indptr.shape[0] - 1
    owner = np.repeat(np.arange(num_nodes), np.diff(indptr))
    keys = owner * num_nodes + indices  # sorted by owner; sort within lists for the lookup
    order = np.argsort(keys, kind="stable")
    sampler = NeighborSampler(data.indptr, data.indices, list(FANOUTS), seed=SEED)
    positions, destinations, batch_id = [], 0, 0
    for epoch in range(1, epochs + 1):
        for seeds in iter_seed_batches(np.asarray(data.train_idx), BATCH, shuffle=True, seed=SEED, epoch=epoch):
            batch = sampler.sample(seeds, batch_id)
            batch_id += 1
            for block in batch.blocks:
                src = batch.n_id[block.edge_index[0]].numpy()
                dst = batch.n_id[block.edge_index[1]].numpy()
                wanted = dst * num_nodes + src
                found = order[np.searchsorted(keys[order], wanted)]
                assert np.array_equal(keys[found], wanted)
                positions.append(found)
                destinations += block.num_dst
    return np.concatenate(positions), destinations


def _plan(data: Dataset, topology_budget: str, host_memory: str = "64GiB", epochs: int = 1):
    device = describe_device("80GiB", host_memory=host_memory)
    return plan_capacity(
        data,
        device,
        budgets=["0%"],
        topology_budget=topology_budget,
        replay=Replay(fanouts=FANOUTS, batch_size=BATCH, epochs=epochs, seed=SEED),
    )


@pytest.mark.parametrize("where", ["0", "100%", "list-end", "ram-limit"])
def test_topology_reads_per_tier_match_sampled_positions(data: Dataset, where: str) -> None:
    itemsize = np.asarray(data.indices).dtype.itemsize
    indptr = np.asarray(data.indptr)
    num_edges = int(indptr[-1])
    feature_bytes = int(np.asarray(data.features).nbytes)
    boundary = {"0": 0, "100%": num_edges, "list-end": int(indptr[300]), "ram-limit": int(indptr[100])}[where]
    host_end = int(indptr[700]) if where == "ram-limit" else num_edges
    # the features fill the host tier first; the topology's host tier gets what is left
    host_memory = f"{RESERVE + feature_bytes + (host_end - boundary) * itemsize}B" if where == "ram-limit" else "64GiB"
    budget = where if where in ("0", "100%") else f"{boundary * itemsize}B"
    for epochs in (1, 2):
        plan = _plan(data, budget, host_memory, epochs)
        row = plan.rows[0]
        positions, destinations = sampled_positions(data, epochs)
        expected = {
            "gpu": np.count_nonzero(positions < boundary) * itemsize + 16 * destinations,
            "host": np.count_nonzero((positions >= boundary) & (positions < host_end)) * itemsize,
            "disk": np.count_nonzero(positions >= host_end) * itemsize,
        }
        assert plan.topology.gpu_entries == boundary
        for tier in ("gpu", "host", "disk"):
            assert row.topology_bytes_per_epoch[tier] * epochs == pytest.approx(expected[tier], abs=1e-6), tier
        assert row.topology_tier_bytes == {
            "gpu": 8 * indptr.shape[0] + boundary * itemsize,
            "host": (host_end - boundary) * itemsize,
            "disk": (num_edges - host_end) * itemsize,
        }
    if where == "ram-limit":
        assert expected["disk"] > 0 and expected["host"] > 0


@settings(max_examples=60, deadline=None)
@given(degrees=st.lists(st.integers(0, 6), min_size=1, max_size=25), data=st.data())
def test_entries_before_splits_a_straddling_list_in_proportion(degrees: list[int], data: st.DataObject) -> None:
    indptr = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    reads = np.asarray(
        data.draw(st.lists(st.integers(0, 40), min_size=len(degrees), max_size=len(degrees))), dtype=np.int64
    ) * (np.asarray(degrees) > 0)  # an empty list is never read
    boundary = data.draw(st.integers(0, int(indptr[-1])))
    cumulative = np.concatenate([[0], np.cumsum(reads)])
    starts, ends = indptr[:-1], indptr[1:]
    share = np.where(ends > starts, np.clip(boundary - starts, 0, None) / np.maximum(ends - starts, 1), 0.0)
    expected = float(np.sum(reads * np.minimum(share, 1.0)))
    assert entries_before(indptr, cumulative, reads, boundary) == pytest.approx(expected)
    assert entries_before(indptr, cumulative, reads, int(indptr[-1])) == reads.sum()


@pytest.mark.parametrize("budget", ["0", "30%", "0.7", "5KiB", "auto"])
def test_topology_tiers_add_up(data: Dataset, budget: str) -> None:
    itemsize = np.asarray(data.indices).dtype.itemsize
    num_edges = int(np.asarray(data.indptr)[-1])
    feature_bytes = int(np.asarray(data.features).nbytes)
    plan = _plan(data, budget, host_memory=f"{RESERVE + feature_bytes + 4000 * itemsize}B")
    row = plan.rows[0]
    positions, destinations = sampled_positions(data, 1)
    assert sum(row.topology_bytes_per_epoch.values()) == pytest.approx(positions.size * itemsize + 16 * destinations)
    tiers = row.topology_tier_bytes
    assert tiers["gpu"] - plan.topology.indptr_bytes + tiers["host"] + tiers["disk"] == num_edges * itemsize
    if budget == "auto":
        assert plan.topology.gpu_entries == num_edges  # 80 GiB holds it all
    assert row.pcie_bytes_per_epoch == pytest.approx(
        row.bytes_per_epoch["host"]
        + row.bytes_per_epoch["disk"]
        + row.topology_bytes_per_epoch["host"]
        + row.topology_bytes_per_epoch["disk"]
    )


def test_topology_budget_leaves_less_gpu_memory_for_features(data: Dataset) -> None:
    itemsize = np.asarray(data.indices).dtype.itemsize
    num_nodes, num_edges = data.features.shape[0], int(np.asarray(data.indptr)[-1])
    row_bytes = data.features.shape[1] * data.features.dtype.itemsize
    usable = 8 * (num_nodes + 1) + num_edges * itemsize + 50 * row_bytes  # all the graph and 50 feature rows
    device = describe_device(f"{RESERVE + usable}B", host_memory="64GiB")
    plan = plan_capacity(
        data,
        device,
        budgets=["1%", "100%", "auto"],
        topology_budget="auto",
        replay=Replay(fanouts=FANOUTS, batch_size=BATCH, seed=SEED),
    )
    assert plan.topology.gpu_entries == num_edges and not plan.topology.capped
    assert plan.feature_gpu_bytes == 50 * row_bytes
    assert [row.capped for row in plan.rows] == [False, True, False]
    assert [row.tier_rows["gpu"] for row in plan.rows] == [num_nodes // 100, 50, 50]
    assert all(row.topology_bytes_per_epoch["host"] == 0 for row in plan.rows)
    # a topology budget beyond the GPU memory is capped, and says so
    small = describe_device(f"{RESERVE + 8 * (num_nodes + 1) + 100 * itemsize}B", host_memory="64GiB")
    capped = plan_capacity(
        data, small, budgets=["0%"], topology_budget="100%", replay=Replay(fanouts=FANOUTS, batch_size=BATCH, seed=SEED)
    )
    assert capped.topology.gpu_entries == 100 and capped.topology.capped
    assert any("--topology-budget 100% capped" in note for note in capped.notes)
    assert capped.feature_gpu_bytes == 0


def test_bad_topology_budget_is_refused_before_the_replay(data: Dataset) -> None:
    device = describe_device("80GiB", host_memory="64GiB")
    with pytest.raises(OptionError, match="^topology_budget=: expected") as info:
        plan_capacity(
            data, device, budgets=["0%"], topology_budget="lots", replay=Replay(fanouts=FANOUTS, batch_size=BATCH)
        )
    assert info.value.render(cli=True).startswith("--topology-budget: expected")
