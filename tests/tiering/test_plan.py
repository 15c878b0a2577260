"""Tests for graphtier.tiering.plan.capacity (capacity planner) and `graphtier plan`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError
from graphtier.memory.plan.placement import TIER_NAMES, TierPlan, format_bytes
from graphtier.tiering.plan.capacity import (
    describe_device,
    parse_memory,
    plan_capacity,
    tier_reads,
)
from graphtier.tiering.replay import Replay
from graphtier.train import train
from tests.cli.helpers import run
from tests.conftest import write_labelled_graph

FANOUTS = (5, 3)
BATCH = 64
HOST_BYTES = 2 * 2**30 + 24_000  # usable for the host tier: 24,000 B (the reserve is 2 GiB), the rest is on disk


@pytest.fixture(scope="module")
def dataset_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plan") / "graph"
    write_labelled_graph(root, num_nodes=1500, feature_dim=16, avg_degree=10, seed=3)
    return root


@settings(max_examples=50, deadline=None)
@given(
    counts=st.lists(st.integers(0, 50), min_size=1, max_size=60),
    cuts=st.lists(st.floats(0, 1), min_size=3, max_size=3),
    partitions=st.integers(1, 4),
)
def test_tier_reads_equal_tier_counts_of_every_read(counts: list[int], cuts: list[float], partitions: int) -> None:
    n = len(counts)
    local, peer_end, host_end = sorted(int(c * n) for c in cuts)
    if partitions == 1:
        peer_end = local
    plan = TierPlan(
        num_rows=n,
        row_bytes=4,
        local_rows=local,
        peer_partitions=partitions,
        peer_end=peer_end,
        host_end=max(host_end, peer_end),
    )
    reads = np.repeat(np.arange(n), counts)
    expected = plan.tier_counts(reads)
    got = tier_reads(np.asarray(counts, dtype=np.int64), plan)
    for tier in ("gpu", "gpu-peer", "host", "disk"):
        assert got[tier] == expected[TIER_NAMES.index(tier)]


@pytest.mark.parametrize("budget", ["0%", "10%", "30%"])
def test_plan_bytes_by_tier_match_training(dataset_path: Path, budget: str) -> None:
    device = describe_device("80GiB", host_memory=f"{HOST_BYTES}B")
    plan = plan_capacity(
        _open(dataset_path),
        device,
        budgets=[budget],
        replay=Replay(fanouts=FANOUTS, batch_size=BATCH, epochs=1, seed=5),
    )
    row = plan.rows[0]
    result = train(
        dataset_path,
        model="sage",
        fanouts=FANOUTS,
        batch_size=BATCH,
        epochs=1,
        seed=5,
        hidden=16,
        features_on="tiered",
        gpu_budget=budget,
        ram_budget="24000B",
        quiet=True,
        device="cpu",
    )
    measured = result.report["epochs"][0]["feature_bytes_by_tier"]
    assert row.tier_rows["disk"] > 0 and measured["disk"] > 0  # the host limit puts rows on disk
    for tier in ("gpu", "host", "disk"):
        assert row.bytes_per_epoch[tier] == pytest.approx(measured[tier], rel=0.05, abs=1)
    graph_pcie = row.topology_bytes_per_epoch["host"] + row.topology_bytes_per_epoch["disk"]
    assert graph_pcie > 0  # --topology-budget 0: every neighbour list is read over PCIe
    assert row.pcie_bytes_per_epoch - graph_pcie == pytest.approx(measured["host"] + measured["disk"], rel=0.05)
    # the same seed and epoch numbering as the trainer: the replay is exact
    assert sum(row.bytes_per_epoch.values()) == sum(measured.values())


def test_larger_budget_moves_reads_off_pcie(dataset_path: Path) -> None:
    device = describe_device("80GiB", host_memory="64GiB")
    plan = plan_capacity(
        _open(dataset_path),
        device,
        budgets=["0%", "50%", "100%"],
        topology_budget="100%",
        replay=Replay(fanouts=FANOUTS, batch_size=BATCH),
    )
    pcie = [row.pcie_bytes_per_epoch for row in plan.rows]
    assert pcie[0] > pcie[1] > pcie[2] == 0
    assert plan.rows[0].read_share["host"] == 1.0
    assert plan.rows[2].tier_rows["gpu"] == plan.num_rows


def test_budget_capped_by_gpu_memory(dataset_path: Path) -> None:
    indptr_bytes = 8 * 1501  # indptr lives on the GPU (--topology-budget 0 adds no indices)
    device = describe_device(f"{2 * 2**30 + 16 * 4 * 100 + indptr_bytes}B", host_memory="64GiB")  # 100 rows fit
    plan = plan_capacity(
        _open(dataset_path), device, budgets=["1%", "50%"], replay=Replay(fanouts=FANOUTS, batch_size=BATCH)
    )
    assert [row.capped for row in plan.rows] == [False, True]
    assert plan.rows[1].tier_rows["gpu"] == 100
    assert plan.topology.gpu_bytes == indptr_bytes and plan.feature_gpu_bytes == 16 * 4 * 100


@pytest.mark.parametrize("text", ["banana", "10%", "0.5", "-3GB", "0B"])
def test_parse_memory_rejects_non_bytes(text: str) -> None:
    with pytest.raises(OptionError, match="^gpu_memory=: expected") as info:
        parse_memory(text, "gpu_memory")
    assert info.value.render(cli=True).startswith("--gpu-memory: expected")


def test_plan_without_a_train_split_names_the_import_argument(tmp_path: Path) -> None:
    """``split=`` for a Python caller, ``--split`` on the CLI."""
    from graphtier.errors import DatasetError

    root = tmp_path / "graph"
    write_labelled_graph(root, num_nodes=50, feature_dim=4, seed=3)
    (root / "train_idx.npy").unlink()
    with pytest.raises(DatasetError, match=r"non-empty training split \(import with split=\)$") as info:
        plan_capacity(
            _open(root), describe_device("16GiB", host_memory="64GiB"), replay=Replay(fanouts=FANOUTS, batch_size=BATCH)
        )
    assert info.value.render(cli=True).endswith("(import with --split)")


def test_cli_prints_table_and_writes_json(
    dataset_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.json"
    code, stdout, err = run(
        [
            "plan",
            str(dataset_path),
            "--gpu-memory",
            "80GiB",
            "--fanouts",
            "5,3",
            "--batch-size",
            "64",
            "--budgets",
            "0%,10%,100%",
            "--json",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    assert "budget" in stdout and "PCIe/epoch" in stdout
    assert "topology on each GPU: indptr" in stdout and "T PCIe" in stdout
    assert "assumed bandwidths" in stdout
    assert stdout.splitlines()[-2].startswith(  # then "wrote plan.json"
        "recommendation: everything fits: --gpu-budget 100% holds all 1,500 feature rows (93.8 KiB) on the GPU; "
        "PCIe then carries "
    )
    data = json.loads(out.read_text())
    assert [b["budget"] for b in data["budgets"]] == ["0%", "10%", "100%"]
    last = data["budgets"][2]
    assert last["bytes_per_epoch"]["host"] == last["bytes_per_epoch"]["disk"] == 0
    assert last["pcie_bytes_per_epoch"] == last["topology_bytes_per_epoch"]["host"] > 0  # --topology-budget 0
    assert data["config"]["fanouts"] == [5, 3]
    assert data["placement"] is None and data["topology"]["budget"] == "0"
    assert set(data["budgets"][0]["topology_bytes_per_epoch"]) == {"gpu", "host", "disk"}
    assert not list(tmp_path.glob(".*tmp"))


def test_cli_bad_gpu_memory_is_one_line_error(
    dataset_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.json"
    code, _, err = run(["plan", str(dataset_path), "--gpu-memory", "lots", "--json", str(out)], capsys)
    assert code == 2
    assert err.startswith("graphtier: error: --gpu-memory") and "'lots'" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_cli_plot(dataset_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "plan.png"
    code, _, err = run(
        ["plan", str(dataset_path), "--gpu-memory", "80GiB", "--fanouts", "5,3", "--plot", str(png)], capsys
    )
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _open(path: Path) -> Dataset:
    return Dataset.open(path)


def test_gpu_memory_auto_without_cuda_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(OptionError, match="^gpu_memory=: auto needs a CUDA device.*e.g. gpu_memory='80GiB'$") as info:
        describe_device("auto")
    assert info.value.render(cli=True).endswith("e.g. --gpu-memory 80GiB")


def test_given_bandwidths_are_not_assumptions(dataset_path: Path) -> None:
    device = describe_device("16GiB", host_memory="64GiB", pcie_gbps=12.0)
    assert device.sources["pcie_gbps"] == "given" and device.sources["gpu_gbps"] == "assumed"
    plan = plan_capacity(_open(dataset_path), device, budgets=["0%"], replay=Replay(fanouts=FANOUTS, batch_size=BATCH))
    row = plan.rows[0]
    topo = row.topology_bytes_per_epoch
    disk_and_gpu = (row.bytes_per_epoch["disk"] + topo["disk"]) / 3e9 + (
        row.bytes_per_epoch["gpu"] + row.bytes_per_epoch["gpu-peer"] + topo["gpu"]
    ) / 1500e9
    assert row.epoch_data_seconds == pytest.approx(row.pcie_bytes_per_epoch / 12e9 + disk_and_gpu)
    assert row.pcie_bytes_per_epoch == pytest.approx(
        row.bytes_per_epoch["host"] + row.bytes_per_epoch["disk"] + topo["host"] + topo["disk"]
    )
    assert any("original" in note for note in plan.notes)  # not reordered: the output warns
    assert not any("pcie" in note.split(":")[1] for note in plan.notes if note.startswith("assumed"))


def test_several_gpus_interleave_the_budget(dataset_path: Path) -> None:
    one = plan_capacity(
        _open(dataset_path),
        describe_device("80GiB", host_memory="64GiB"),
        budgets=["20%"],
        replay=Replay(fanouts=FANOUTS, batch_size=BATCH),
    ).rows[0]
    two = plan_capacity(
        _open(dataset_path),
        describe_device("80GiB", gpus=2, host_memory="64GiB"),
        budgets=["20%"],
        replay=Replay(fanouts=FANOUTS, batch_size=BATCH),
    ).rows[0]
    assert two.tier_rows["gpu"] == one.tier_rows["gpu"]  # a fraction is of the whole table
    assert two.reads_per_epoch["gpu-peer"] > 0
    assert two.pcie_bytes_per_epoch == pytest.approx(one.pcie_bytes_per_epoch)


def test_several_epochs_average_to_training_bytes(dataset_path: Path) -> None:
    device = describe_device("80GiB", host_memory="64GiB")
    row = plan_capacity(
        _open(dataset_path), device, budgets=["15%"], replay=Replay(fanouts=FANOUTS, batch_size=BATCH, epochs=2, seed=1)
    ).rows[0]
    result = train(
        dataset_path,
        model="sage",
        fanouts=FANOUTS,
        batch_size=BATCH,
        epochs=2,
        seed=1,
        hidden=16,
        features_on="tiered",
        gpu_budget="15%",
        quiet=True,
        device="cpu",
        eval_every=2,
    )
    for tier in ("gpu", "host"):
        measured = sum(epoch["feature_bytes_by_tier"][tier] for epoch in result.report["epochs"])
        assert 2 * row.bytes_per_epoch[tier] == measured


def _with_traffic(row, pcie: float, gpu: float):  # a BudgetRow with these PCIe and GPU-served bytes per epoch
    import dataclasses

    return dataclasses.replace(
        row, pcie_bytes_per_epoch=pcie, bytes_per_epoch={**row.bytes_per_epoch, "gpu": gpu, "gpu-peer": 0.0}
    )


def test_recommendation_is_the_smallest_budget_with_90_percent_of_the_best_saving(dataset_path: Path) -> None:
    import dataclasses

    from graphtier.tiering.plan.recommendation import recommend_budget

    device = describe_device("80GiB", host_memory="64GiB")
    plan = plan_capacity(
        _open(dataset_path), device, budgets=["0%", "25%", "50%"], replay=Replay(fanouts=FANOUTS, batch_size=BATCH)
    )
    assert not any(row.tier_rows["gpu"] == plan.num_rows for row in plan.rows)
    no_tier, (zero, quarter, half) = 1000.0 * 2**20, plan.rows
    # 25% saves 900 MiB of the 1000 MiB without a tier, 50% saves 1000: 900 >= 90% of 1000, so 25% it is
    plan.rows = [
        _with_traffic(zero, no_tier, 0.0),
        _with_traffic(quarter, 100 * 2**20, 900 * 2**20),
        _with_traffic(half, 0.0, no_tier),
    ]
    line = recommend_budget(plan)
    assert line.startswith(
        f"recommendation: --gpu-budget 25% ({format_bytes(quarter.tier_bytes['gpu'])} of features "
        "on the GPU), the smallest listed budget within 90% of the best PCIe saving: it keeps "
        "900.0 MiB of the 1000.0 MiB/epoch without a GPU tier off PCIe (50%: 1000.0 MiB)"
    )
    plan.rows[1] = _with_traffic(quarter, 101 * 2**20, 899 * 2**20)  # just under 90%: the best one
    line = recommend_budget(plan)
    assert line.startswith("recommendation: --gpu-budget 50% (") and line.endswith("without a GPU tier off PCIe")
    plan.rows = [dataclasses.replace(plan.rows[0])]
    assert recommend_budget(plan).startswith("recommendation: none of the listed budgets moves feature reads off PCIe")


def test_the_plan_sizes_the_edge_table_from_the_sampled_edges(dataset_path: Path, tmp_path: Path) -> None:
    from tests.graphstore.test_edge_features import with_edge_features

    root = tmp_path / "edges"
    write_labelled_graph(root, num_nodes=1500, feature_dim=16, avg_degree=10, seed=3)
    dataset = with_edge_features(Dataset.open(root), 6, "float16")
    plan = plan_capacity(
        dataset,
        describe_device("80GiB", host_memory="64GiB"),
        budgets=["0%", "10%", "50%", "100%", "auto"],
        replay=Replay(fanouts=FANOUTS, batch_size=BATCH),
    )
    assert plan.edges is not None and plan.edges.row_bytes == 12 and plan.edges.num_rows == dataset.num_edges
    assert plan.edges.reads_per_epoch == plan.topology.total_entry_reads > 0  # one edge row per sampled edge
    rows = plan.edges.rows
    assert [row.budget for row in rows] == ["0%", "10%", "50%", "100%"]  # auto sizes node features only
    assert [row.gpu_rows for row in rows] == [0, dataset.num_edges // 10, dataset.num_edges // 2, dataset.num_edges]
    shares = [row.read_share for row in rows]
    assert shares[0] == 0.0 and shares[-1] == pytest.approx(1.0) and shares == sorted(shares)
    assert all(row.best_share >= row.read_share - 1e-12 for row in rows)  # no prefix beats the best rows
    assert rows[0].best_share == 0.0 and rows[-1].best_share == pytest.approx(1.0)
    assert plan.to_json()["edge_features"]["budgets"][1]["gpu_bytes"] == rows[1].gpu_rows * 12
    assert (
        plan_capacity(
            _open(dataset_path), describe_device("80GiB"), replay=Replay(fanouts=FANOUTS, batch_size=BATCH)
        ).edges
        is None
    )
