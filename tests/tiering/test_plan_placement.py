"""Tests for graphtier.tiering.plan.placement: the multi-GPU feature placement of `graphtier plan`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError
from graphtier.memory.plan import gpu_topology
from graphtier.memory.plan.gpu_topology import resolve_topology
from graphtier.tiering.plan import placement as plan_placement
from graphtier.tiering.plan.capacity import describe_device, plan_capacity
from graphtier.tiering.plan.placement import gpu_topology_from_option
from graphtier.tiering.replay import Replay
from tests.conftest import write_labelled_graph

FANOUTS = (5, 3)
BATCH = 64
RESERVE = 2 * 2**30


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("plan-placement") / "graph"
    write_labelled_graph(root, num_nodes=1600, feature_dim=16, avg_degree=10, seed=5)
    return Dataset.open(root)


def non_local_bytes(placement, access: float, num_gpus: int) -> float:
    """Bytes every GPU reads from groups it does not hold (from peers or the host), summed over GPUs."""
    return sum(
        access * share
        for i in range(num_gpus)
        for share, holders in zip(placement.group_share, placement.placement.holders)
        if i not in holders
    )


@pytest.mark.parametrize("name, gpus", [("dgx1-v100", 8), ("pcie-4", 4)])
def test_placement_beats_baselines_and_bytes_add_up(data: Dataset, name: str, gpus: int) -> None:
    row_bytes = 16 * 4
    indptr_bytes = 8 * (data.features.shape[0] + 1)
    per_gpu = 500 * row_bytes  # a quarter-ish of the table per GPU
    device = describe_device(f"{RESERVE + indptr_bytes + per_gpu}B", gpus=gpus, host_memory="64GiB")
    plan = plan_capacity(
        data,
        device,
        budgets=["0%"],
        gpu_topology=resolve_topology(name),
        placement_groups=16,
        replay=Replay(fanouts=FANOUTS, batch_size=BATCH, seed=2),
    )
    placed = plan.placement
    assert placed is not None and placed.budget_per_gpu == per_gpu == plan.feature_gpu_bytes
    p = placed.placement
    assert all(p.objective_seconds <= seconds * (1 + 1e-9) for seconds in p.baselines.values())
    assert set(p.baselines) == {"host-only", "replicate-only", "replicate+interleave"}
    assert max(p.gpu_bytes) <= per_gpu
    assert placed.bounds[0] == 0 and placed.bounds[-1] == data.features.shape[0]
    assert placed.group_share.sum() == pytest.approx(1.0)
    # each GPU trains on 1/G of the batches: the GPUs together read the epoch's feature bytes
    assert placed.access_bytes * gpus == pytest.approx(plan.reads_per_epoch * row_bytes)
    # the host and peer links carry exactly the bytes read from groups a GPU does not hold
    remote = sum(b for link, b in placed.link_bytes.items() if not link.endswith("local"))
    assert remote == pytest.approx(non_local_bytes(placed, placed.access_bytes, gpus), rel=1e-9)
    assert remote > 0  # the table does not fit on every GPU
    local = sum(b for link, b in placed.link_bytes.items() if link.endswith("local"))
    peer = sum(b for link, b in placed.link_bytes.items() if not link.endswith("local") and not link.startswith("host"))
    assert local == pytest.approx(placed.access_bytes * gpus - remote + peer, rel=1e-9)
    if name == "pcie-4":
        assert peer == 0  # no peer links: every miss comes from the host
    else:
        assert "interleaved" in p.kinds
    doc = plan.to_json()["placement"]
    assert doc["num_gpus"] == gpus and doc["topology"]["name"] == name
    assert sum(len(range(*g["rows"])) for g in doc["groups"]) == data.features.shape[0]
    assert doc["link_bytes_per_epoch"] == placed.link_bytes


def test_topology_and_gpu_count_must_agree(data: Dataset) -> None:
    device = describe_device("80GiB", gpus=4, host_memory="64GiB")
    with pytest.raises(OptionError, match="dgx1-v100: has 8 GPUs, but --gpus is 4"):
        plan_capacity(
            data, device, gpu_topology=resolve_topology("dgx1-v100"), replay=Replay(fanouts=FANOUTS, batch_size=BATCH)
        )
    with pytest.raises(OptionError, match="pcie-4: has 4 GPUs, but --gpus is 2"):
        gpu_topology_from_option("pcie-4", 2)
    assert gpu_topology_from_option("pcie-4", None).num_gpus == 4


def test_nvml_topology_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_placement, "nvml_topology", lambda: None)
    with pytest.raises(OptionError, match="--gpu-topology nvml: needs the nvidia-ml-py package"):
        gpu_topology_from_option("nvml", None)
    two = gpu_topology.topology_from_dict({"links_gbps": [[0, 50], [50, 0]], "host_gbps": 20.0}, "nvml")
    monkeypatch.setattr(plan_placement, "nvml_topology", lambda: two)
    assert gpu_topology_from_option("nvml", 2) is two
    with pytest.raises(OptionError, match="has 2 GPUs, but --gpus is 8"):
        gpu_topology_from_option("nvml", 8)


def test_the_placement_follows_the_reads(data: Dataset, tmp_path: Path) -> None:
    """Hot rows first: with room for a third of the table on each of 4 NVSwitch GPUs, the hottest rows are
    held on a GPU and the rows nobody reads stay in host memory."""
    counts = np.zeros(1000, dtype=np.int64)
    counts[:100] = 50
    counts[100:400] = 2
    topology = resolve_topology("nvswitch-8").subset([0, 1, 2, 3])
    placed = plan_placement.plan_placement(counts, 64, topology, 330 * 64, epochs=1, groups=10)
    kinds = placed.placement.kinds
    assert kinds[0] != "host" and kinds[-1] == "host"
    assert placed.link_bytes.get("host->gpu0", 0.0) == 0.0  # the unread rows cost no host traffic
