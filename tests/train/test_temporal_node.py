"""--task node --temporal: each seed sampled at its node's time (no edge or node after it on any hop), trained from the
CLI and from Python on an OGB-layout folder with node years; datasets without node times are refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from graphtier import Dataset, OptionError
from graphtier.cli import cli
from graphtier.dataset.importers import import_ogb
from graphtier.graphstore import GraphStore
from graphtier.train import TrainConfig, train
from graphtier.train.loop.report import final_summary
from graphtier.train.loop.task import timed_node_sampler
from tests.dataset.importers.helpers import assert_user_error, run_cli
from tests.dataset.importers.test_ogb import _gz, write_ogb

SMALL = dict(batch_size=16, hidden=16, fanouts=(5, 5), epochs=2, eval_batch_size=64, lr=0.01, seed=0)


def ogb_folder(root: Path, years: bool) -> Path:
    """An ogbn-style folder of 40 nodes, every node labelled, with ``node_year`` when ``years``."""
    write_ogb(root, n=40, e=300)
    year = np.random.default_rng(5).integers(2000, 2010, 40)
    _gz(root / "raw" / "node-label.csv.gz", [str(y % 3) for y in year])
    if years:
        _gz(root / "raw" / "node_year.csv.gz", [str(y) for y in year])
    return root


@pytest.fixture(scope="module")
def arxiv_like(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("arxiv")
    return import_ogb(ogb_folder(root / "raw_ds", years=True), root / "ds", undirected=True)


@pytest.mark.parametrize("strategy", ["uniform", "recent"])
def test_every_hop_reads_only_edges_before_the_seed_node_time(arxiv_like: Dataset, strategy: str) -> None:
    store = GraphStore.open(arxiv_like, seed=0)
    sample = timed_node_sampler(store, (5, 5), strategy, seed=1)
    seeds = np.arange(arxiv_like.num_nodes)
    batch = sample(seeds, 0)
    node_time = np.asarray(arxiv_like.node_time)
    n_time = batch.n_time.numpy()
    assert np.array_equal(n_time[batch.seed_index.numpy()], node_time[seeds])  # each seed at its own time
    edge_time = np.asarray(arxiv_like.edge_time)
    for block in batch.blocks:
        _, d = block.edge_index.numpy()
        assert np.all(edge_time[block.edge_id.numpy()] <= n_time[d])  # at or before: never a later node
        s_rows, _ = block.edge_index.numpy()
        assert np.all(node_time[batch.n_id.numpy()[s_rows]] <= n_time[d])
    assert sum(b.num_edges for b in batch.blocks) > 0


def test_temporal_node_classification_trains_from_python_and_the_cli(arxiv_like: Dataset, tmp_path: Path) -> None:
    report = train(arxiv_like, TrainConfig(temporal="uniform", **SMALL))
    assert final_summary(report["final"], report["config"]).count("sampled at each node's time, uniform neighbours")
    assert 0.0 <= report["final"]["test_acc"] <= 1.0
    result = CliRunner().invoke(
        cli, ["train", str(arxiv_like.path), "--temporal", "recent", "--epochs", "1", "--batch-size", "16",
              "--fanouts", "5,5", "--hidden", "16", "--report", str(tmp_path / "r.json")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "sampled at each node's time, recent neighbours" in result.output


def test_temporal_node_classification_needs_node_times(tmp_path: Path) -> None:
    plain = import_ogb(ogb_folder(tmp_path / "plain", years=False), tmp_path / "ds")
    with pytest.raises(OptionError, match="needs node and edge times, found no node times"):
        train(plain, TrainConfig(temporal="uniform", **SMALL))
    result = run_cli("train", str(tmp_path / "ds"), "--temporal", "uniform", "--epochs", "1")
    assert_user_error(result, "--temporal with --task node", "found no node times (node_time.npy)")


def test_temporal_node_classification_refuses_seeds_before_every_edge(arxiv_like: Dataset, tmp_path: Path) -> None:
    """Node years against edge times in seconds: no seed would have a neighbour; refused in one line."""
    copy = tmp_path / "seconds"
    shutil.copytree(arxiv_like.path, copy)
    seconds = np.load(copy / "edge_time.npy") * 31_557_600
    np.save(copy / "edge_time.npy", seconds)
    meta = json.loads((copy / "meta.json").read_text())
    meta["edge_time"] = {"unit": "s", "min": int(seconds.min()), "max": int(seconds.max())}
    (copy / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(OptionError, match="expected training nodes at or after the earliest edge time"):
        train(Dataset.open(copy), TrainConfig(temporal="uniform", **SMALL))
    result = run_cli("train", str(copy), "--temporal", "uniform", "--epochs", "1")
    assert_user_error(result, "node_time.npy", f"earliest edge time {int(seconds.min())} (s, edge_time.npy)")
    assert "--temporal would sample no neighbour" in result.stderr
    train(arxiv_like, TrainConfig(temporal="uniform", **{**SMALL, "epochs": 1}))  # the same years in both: trains


def test_temporal_node_classification_refuses_full_inference(arxiv_like: Dataset) -> None:
    with pytest.raises(OptionError, match="full_inference"):
        train(arxiv_like, TrainConfig(temporal="uniform", full_inference=True, **SMALL))
