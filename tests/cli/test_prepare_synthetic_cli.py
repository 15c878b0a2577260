"""``prepare --synthetic-features`` must not leak the labels; train, info and the report say what is synthetic."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset
from graphtier.train import train
from tests.dataset.importers.helpers import run_cli


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphtier", *args], capture_output=True, text=True, timeout=600, check=False
    )


@pytest.fixture(scope="module")
def labelled_graph(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A 2-class graph whose majority class holds about 74% of the nodes (as in the issue), CSV files."""
    root = tmp_path_factory.mktemp("labelled")
    rng = np.random.default_rng(7)
    n = 3000
    labels = (rng.random(n) > 0.742).astype(np.int64)
    src = rng.integers(0, n, 6 * n)
    dst = rng.integers(0, n, 6 * n)
    edges = root / "edges.csv"
    edges.write_text("id_1,id_2\n" + "".join(f"{u},{v}\n" for u, v in zip(src, dst)))
    target = root / "target.csv"
    target.write_text("id,target\n" + "".join(f"{i},{c}\n" for i, c in enumerate(labels)))
    return edges, target


def _majority(ds: Dataset) -> float:
    test = np.asarray(ds.labels)[np.asarray(ds.test_idx)]
    return float(np.bincount(test).max() / test.size)


def test_mlp_on_default_synthetic_features_stays_at_the_majority_class(
    labelled_graph: tuple[Path, Path], tmp_path: Path
) -> None:
    edges, target = labelled_graph
    common = ["--labels", str(target), "--synthetic-features", "16", "--split", "0.6,0.2,0.2", "--undirected"]
    result = run_cli("prepare", "edgelist", str(edges), str(tmp_path / "plain"), *common)
    assert result.returncode == 0, result.stderr
    assert "note: features are synthetic random noise (no label information)" in result.stdout
    result = run_cli(
        "prepare", "edgelist", str(edges), str(tmp_path / "leak"), *common, "--synthetic-feature-signal", "1"
    )
    assert result.returncode == 0, result.stderr
    assert "encode the labels" in result.stdout

    plain = Dataset.open(tmp_path / "plain")
    assert plain.name == "plain"  # the default name comes from the output directory
    majority = _majority(plain)
    assert 0.69 < majority < 0.8
    options = {
        "model": "mlp",
        "epochs": 4,
        "hidden": 32,
        "batch_size": 256,
        "num_threads": 1,
        "quiet": True,
        "prefetch": 0,
    }
    honest = train(plain, **options)["final"]["test_acc"]
    assert abs(honest - majority) < 0.04, (honest, majority)
    # the opt-in signal does carry the labels: the same model then looks (wrongly) excellent
    leaky = train(Dataset.open(tmp_path / "leak"), **options)["final"]["test_acc"]
    assert leaky > majority + 0.15, (leaky, majority)


def test_train_info_and_report_say_the_features_are_synthetic(
    labelled_graph: tuple[Path, Path], tmp_path: Path
) -> None:
    edges, target = labelled_graph
    out = tmp_path / "ds"
    result = run_cli(
        "prepare",
        "edgelist",
        str(edges),
        str(out),
        "--labels",
        str(target),
        "--synthetic-features",
        "8",
        "--synthetic-feature-signal",
        "0.5",
        "--split",
        "0.6,0.2,0.2",
    )
    assert result.returncode == 0, result.stderr
    report = tmp_path / "run.json"
    trained = _run(
        "train",
        str(out),
        "--model",
        "mlp",
        "--epochs",
        "1",
        "--hidden",
        "8",
        "--num-threads",
        "1",
        "--report",
        str(report),
    )
    assert trained.returncode == 0, trained.stderr
    assert re.search(r"note: features are synthetic with label signal 0.5", trained.stdout)
    data = json.loads(report.read_text())
    assert data["dataset"]["provenance"]["features"] == {"kind": "synthetic", "signal": 0.5, "seed": 0}
    assert any("encode the labels" in note for note in data["dataset"]["notes"])
    info = run_cli("info", str(out), "--json")
    assert info.returncode == 0, info.stderr
    parsed = json.loads(info.stdout)
    assert parsed["provenance"]["labels"] == {"kind": "input"}
    assert parsed["notes"] and parsed["nodes_only_in_node_data"] == 0
    table = _run("info", str(out))
    assert table.returncode == 0 and "SYNTHETIC" in table.stdout  # rich may wrap the rest of the cell
