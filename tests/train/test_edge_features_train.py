"""train --edge-features: every block of every batch carries edge_feat[edge_id] as edge_attr, the losses do not
depend on where the edge rows live (RAM, a RAM prefix, the memory map), the edge bytes per tier are reported apart,
temporal batches carry edge ages, and a dataset or model without edge inputs is refused in one line.
``generate --edge-feature-dim`` writes the deterministic edge table these runs read."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier import Dataset, OptionError
from graphtier.dataset.synthetic import generate as synthetic
from graphtier.graphstore import GraphStore
from graphtier.graphstore.edge_features import edge_feature_table
from graphtier.train import train
from graphtier.train.loop.feed import add_edge_inputs
from graphtier.train.loop.task import LinkTask, make_task
from graphtier.train.options.spec import TaskSpec
from tests.dataset.importers.helpers import assert_user_error, run_cli
from tests.graphstore.test_edge_features import with_edge_features
from tests.train.test_temporal_link import timed_edges

EDGE_DIM = 12
RUN = dict(epochs=2, fanouts=(4, 3), batch_size=64, hidden=8, num_threads=1, quiet=True, eval_batch_size=512)


@pytest.fixture(scope="module")
def edge_graph(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    """A generated graph whose edge table (12 floats per edge) is larger than its node table (4 per node)."""
    root = tmp_path_factory.mktemp("edges")
    return synthetic.generate(root / "g", nodes=600, avg_degree=6, feature_dim=4, edge_feature_dim=EDGE_DIM,
                              train_fraction=0.3, seed=5)  # fmt: skip


def test_generated_edge_table_is_deterministic_per_seed(edge_graph: Dataset, tmp_path: Path) -> None:
    table = np.asarray(edge_feature_table(edge_graph))
    assert table.shape == (edge_graph.num_edges, EDGE_DIM) and table.dtype == np.float32
    assert edge_graph.meta["edge_features"]["dim"] == EDGE_DIM
    assert table.min() >= -1 and table.max() < 1 and abs(float(table.mean())) < 0.05
    again = synthetic.generate(tmp_path / "again", nodes=600, avg_degree=6, feature_dim=4, edge_feature_dim=EDGE_DIM,
                               train_fraction=0.3, seed=5, chunk_edges=100, feature_dtype="float16")  # fmt: skip
    half = np.asarray(edge_feature_table(again))
    assert half.dtype == np.float16 and np.array_equal(half, table.astype(np.float16))  # any chunking: same rows
    other = synthetic.generate(tmp_path / "other", nodes=600, avg_degree=6, feature_dim=4, edge_feature_dim=EDGE_DIM,
                               train_fraction=0.3, seed=6)  # fmt: skip
    assert not np.array_equal(np.asarray(edge_feature_table(other))[:10], table[:10])


def test_generate_refuses_edge_features_it_cannot_write(tmp_path: Path) -> None:
    result = run_cli("generate", str(tmp_path / "x"), "--nodes", "50", "--avg-degree", "3", "--edge-feature-dim", "-1")
    assert_user_error(result, "--edge-feature-dim expected an integer >= 0, found -1")
    result = run_cli("generate", str(tmp_path / "y"), "--nodes", "50", "--hetero", "mag", "--edge-feature-dim", "4")
    assert_user_error(result, "--edge-feature-dim applies to homogeneous graphs only")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_losses_are_the_same_with_edge_rows_in_ram_partly_on_disk_or_all_on_disk(edge_graph: Dataset) -> None:
    runs = {}
    for name, placement in (("ram", dict(features_on="cpu-gather")), ("tiered", dict(features_on="tiered",
                            ram_budget="30%")), ("disk", dict(features_on="tiered", ram_budget="0"))):  # fmt: skip
        runs[name] = train(edge_graph, edge_features=True, model="gine", **placement, **RUN).report
    losses = {name: [e["loss"] for e in report["epochs"]] for name, report in runs.items()}
    assert losses["ram"] == losses["tiered"] == losses["disk"]
    tiers = {name: report["epochs"][-1]["edge_feature_bytes_by_tier"] for name, report in runs.items()}
    assert sum(tiers["ram"].values()) == sum(tiers["tiered"].values()) == sum(tiers["disk"].values()) > 0
    assert tiers["disk"]["disk"] == sum(tiers["disk"].values())
    assert tiers["tiered"]["host"] > 0 and tiers["tiered"]["disk"] > 0
    assert tiers["ram"]["disk"] == 0


def test_cli_refuses_a_model_without_edge_inputs(edge_graph: Dataset) -> None:
    result = run_cli("train", str(edge_graph.path), "--edge-features", "--epochs", "1", "--quiet")
    assert_user_error(
        result, "--edge-features: the model sage reads no edge features (models with edge inputs: gat, gine, rgat)"
    )


def test_cli_refuses_a_dataset_without_edge_features(tiny_dataset: Dataset) -> None:
    result = run_cli("train", str(tiny_dataset.path), "--edge-features", "--epochs", "1", "--quiet")
    assert_user_error(result, "--edge-features: ", "has no edge_feat.npy")


def test_the_epoch_line_shows_the_edge_bytes_per_tier(edge_graph: Dataset, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = run_cli("train", str(edge_graph.path), "--edge-features", "--model", "gine", "--epochs", "1", "--features-on", "tiered",
                     "--ram-budget", "0", "--fanouts", "4,3", "--hidden", "8", "--report", str(report))  # fmt: skip
    assert result.returncode == 0, result.stderr
    epoch_line = next(line for line in result.stdout.splitlines() if line.startswith("epoch 1/1"))
    assert "edge features " in epoch_line and "(disk " in epoch_line
    tiers = json.loads(report.read_text())["epochs"][0]["edge_feature_bytes_by_tier"]
    assert tiers["disk"] == sum(tiers.values()) > 0


def test_options_that_cannot_feed_edge_rows_are_refused(edge_graph: Dataset) -> None:
    with pytest.raises(OptionError, match="neighbour-sampled blocks in one process.*found sampler=.shadow."):
        train(edge_graph, edge_features=True, sampler="shadow", **RUN)
    with pytest.raises(OptionError, match="found full_inference=.True."):  # layer-wise inference has no edge rows
        train(edge_graph, edge_features=True, full_inference=True, **RUN)


@pytest.fixture(scope="module")
def timed_graph(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    from graphtier.dataset.importers.formats.edgelist import import_edgelist

    root = tmp_path_factory.mktemp("timed_edges")
    dataset = import_edgelist(
        timed_edges(root / "edges.txt"), root / "ds", time_column=2, edge_split=(0.7, 0.15, 0.15), split_by="time",
        synthetic_features=8, seed=0,
    )  # fmt: skip
    return with_edge_features(dataset, EDGE_DIM, seed=1)


def test_temporal_batches_carry_edge_ages(timed_graph: Dataset) -> None:
    with GraphStore.open(timed_graph, features_on="tiered", ram_budget="0", edge_features=True,
                         log=lambda _: None) as store:  # fmt: skip
        task = make_task(TaskSpec(task="link"), store, temporal="uniform")
        assert isinstance(task, LinkTask)
        batch = task.train_sampler(store, None, (5, 5), 0)(np.arange(100), 0)  # type: ignore[arg-type]
        add_edge_inputs(batch, store, features=True, ages=True)
    table, edge_time = np.asarray(edge_feature_table(timed_graph)), np.asarray(timed_graph.edge_time)
    n_time = batch.n_time.numpy()
    assert sum(block.num_edges for block in batch.blocks) > 0
    for block in batch.blocks:
        ids = block.edge_id.numpy()
        assert np.array_equal(block.edge_attr.numpy(), table[ids])
        assert block.edge_age.dtype == torch.float32
        expected = (n_time[block.edge_index[1].numpy()] - edge_time[ids]).astype(np.float32)
        assert np.array_equal(block.edge_age.numpy(), expected) and np.all(expected > 0)  # strictly earlier edges


def test_temporal_link_training_reads_edge_rows(timed_graph: Dataset) -> None:
    report = train(timed_graph, task="link", temporal="uniform", edge_features=True, model="gine", time_encoding=4,
                   **RUN).report  # fmt: skip
    assert all(np.isfinite(e["loss"]) for e in report["epochs"])
    assert sum(report["epochs"][-1]["edge_feature_bytes_by_tier"].values()) > 0
    assert json.dumps(report)  # the report stays plain JSON


def test_a_static_link_run_with_edge_features_reports_the_popularity_baseline(tmp_path: Path) -> None:
    linked = synthetic.generate(tmp_path / "g", nodes=400, avg_degree=6, feature_dim=4, edge_feature_dim=EDGE_DIM,
                                edge_split="0.8,0.1,0.1", seed=3)  # fmt: skip
    final = train(linked, task="link", edge_features=True, model="gat", **RUN).report["final"]
    assert final["method"] == "sampled"  # layer-wise inference reads no edge rows
    assert final["test_auc"] is not None and final["test_popularity_auc"] is not None
