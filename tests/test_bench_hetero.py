"""The heterogeneous benchmark harness (benchmarks/bench_hetero.py) without DGL: both sides get the same training
options, the report fields it reads, the ratio, table and medians; and (slow, only where the DGL venv exists) the
DGL R-GCN script end to end on a tiny generated MAG-like graph."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphtier.dataset.synthetic import synthetic_mag

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from bench_hetero import (  # noqa: E402
    TABLE_HEADER,
    dgl_command,
    format_row,
    generate_command,
    graphtier_command,
    graphtier_result,
    parse_args,
    prepare_dataset,
    summary,
)
from pairs import last_json_line, make_row  # noqa: E402

DGL_PYTHON = Path(os.environ.get("GRAPHTIER_DGL_VENV", "/tmp/dglvenv")) / "bin" / "python"


def _flag(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_both_sides_get_the_same_training_options() -> None:
    args = parse_args(["--fanouts", "5,3", "--fanouts-per-relation", "writes=2,cites=4/1", "--batch-size", "256",
                       "--hidden", "32", "--lr", "0.02", "--dropout", "0.1", "--epochs", "4", "--threads", "1"])  # fmt: skip
    ours = graphtier_command(Path("/data/g"), args, Path("/tmp/r.json"))
    peer = dgl_command(Path("/venv/bin/python"), Path("/data/g"), args)
    for flag, value in [("--fanouts", "5,3"), ("--fanouts-per-relation", "writes=2,cites=4/1"), ("--batch-size", "256"),
                        ("--hidden", "32"), ("--lr", "0.02"), ("--dropout", "0.1"), ("--epochs", "4")]:  # fmt: skip
        assert _flag(ours, flag) == value and _flag(peer, flag) == value, flag
    assert _flag(ours, "--num-threads") == "1" and _flag(peer, "--threads") == "1"
    assert _flag(ours, "--model") == "rgcn" and _flag(ours, "--featureless") == "embedding"
    assert _flag(ours, "--eval-every") == "4" and _flag(ours, "--report") == "/tmp/r.json"
    assert peer[1].endswith("dgl_hetero.py") and peer[2] == "/data/g"


def test_defaults_generate_and_bad_options() -> None:
    args = parse_args([])
    assert (args.fanouts, args.batch_size, args.hidden, args.threads, args.epochs) == ("10,10", 1024, 64, 2, 3)
    assert args.json.name == "hetero.json"
    ours = graphtier_command(Path("/g"), args, Path("/r.json"))
    assert "--fanouts-per-relation" not in ours and "--fanouts-per-relation" not in dgl_command(
        Path("p"), Path("/g"), args
    )
    generate = generate_command(Path("/work/g"), args)
    assert generate[3:7] == ["generate", "--hetero", "mag", "/work/g"]
    assert _flag(generate, "--nodes") == "200000" and _flag(generate, "--feature-dim") == "128"
    assert (_flag(generate, "--train-fraction"), _flag(generate, "--test-fraction")) == ("0.1", "0.1")
    for bad in (["--epochs", "1"], ["--pairs", "0"], ["--splits", "0.5,0.5"]):
        with pytest.raises(SystemExit):
            parse_args(bad)


def test_results_of_both_sides() -> None:
    epoch = {"stage_seconds": {"total": 5.0, "sample": 1.0}, "loss": 2.0, "batches": 4}
    later = {"stage_seconds": {"total": 3.0, "sample": 2.0}, "loss": 1.0, "batches": 4}
    result = graphtier_result({"epochs": [epoch, later, later], "final": {"test_acc": 0.8}})
    assert result["epoch_seconds"] == [5.0, 3.0, 3.0] and result["epoch_losses"] == [2.0, 1.0, 1.0]
    assert result["stage_seconds"] == {"total": 3.0, "sample": 2.0} and result["test_acc"] == 0.8
    stdout = 'UserWarning: deprecated\n{"epoch_seconds": [1.0, 2.0], "test_acc": 0.7, "batches": [3, 3]}\n'
    assert last_json_line(stdout)["test_acc"] == 0.7


def test_rows_ratio_table_and_medians() -> None:
    ours = {"epoch_seconds": [9.0, 2.0, 2.0], "test_acc": 0.9, "batches": [10, 10, 10]}
    peer = {"epoch_seconds": [9.0, 3.0, 5.0], "test_acc": None, "batches": [10, 10, 10]}
    rows = [make_row(0, ours, peer), make_row(1, ours, dict(peer, epoch_seconds=[1.0, 3.0], test_acc=0.8))]
    assert rows[0]["ratio_dgl_over_graphtier"] == 2.0 and rows[1]["ratio_dgl_over_graphtier"] == 1.5
    assert [r["first"] for r in rows] == ["graphtier", "dgl"]
    line = format_row(rows[0])
    assert len(line) == len(TABLE_HEADER)
    assert line.split() == ["0", "graphtier", "2.00", "4.00", "2.00", "0.900", "-", "10/10"]
    rows[0]["dgl"]["test_acc"] = 0.6
    assert summary(rows) == {"graphtier_epoch_s": 2.0, "dgl_epoch_s": 3.5, "ratio_dgl_over_graphtier": 1.75,
                             "graphtier_test": 0.9, "dgl_test": 0.7}  # fmt: skip


def test_a_homogeneous_dataset_is_refused(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text(json.dumps({"num_nodes": 3, "num_edges": 2}))
    with pytest.raises(SystemExit, match="not a typed dataset"):
        prepare_dataset(parse_args(["--dataset", str(tmp_path)]))


@pytest.mark.slow
@pytest.mark.skipif(not DGL_PYTHON.exists(), reason=f"no DGL venv at {DGL_PYTHON.parent.parent}")
def test_dgl_script_trains_a_tiny_mag_graph(tmp_path: Path) -> None:
    dataset = synthetic_mag.generate_mag(
        tmp_path / "mag", nodes=600, feature_dim=8, train_fraction=0.5, test_fraction=0.2, seed=1
    )
    args = parse_args(["--fanouts", "4,3", "--fanouts-per-relation", "writes=2,paper___cites___paper=3/1",
                       "--batch-size", "100", "--hidden", "8", "--threads", "1", "--epochs", "2"])  # fmt: skip
    done = subprocess.run(dgl_command(DGL_PYTHON, dataset.path, args), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = last_json_line(done.stdout)
    assert len(result["epoch_seconds"]) == 2 and result["batches"] == [3, 3]
    assert 0.0 <= result["test_acc"] <= 1.0 and all(math.isfinite(loss) for loss in result["epoch_losses"])


def test_link_task_commands() -> None:
    args = parse_args(["--task", "link", "--num-negatives", "3"])
    assert args.json.name == "hetero_link.json"
    generate = generate_command(Path("/work/g"), args)
    assert _flag(generate, "--edge-split") == "0.9,0.05,0.05" and _flag(generate, "--split-relation") == "writes"
    ours = graphtier_command(Path("/g"), args, Path("r.json"))
    assert _flag(ours, "--task") == "link" and _flag(ours, "--num-negatives") == "3"
    theirs = dgl_command(Path("p"), Path("/g"), args)
    assert theirs[1].endswith("dgl_hetero_link.py") and _flag(theirs, "--num-negatives") == "3"
    result = graphtier_result({"epochs": [{"stage_seconds": {"total": 1.0}, "loss": 1.0, "batches": 2}] * 2,
                               "final": {"test_auc": 0.75}})  # fmt: skip
    assert result["test_auc"] == 0.75 and result["test_acc"] is None


@pytest.mark.slow
@pytest.mark.skipif(not DGL_PYTHON.exists(), reason=f"no DGL venv at {DGL_PYTHON.parent.parent}")
def test_dgl_link_script_trains_a_tiny_mag_graph(tmp_path: Path) -> None:
    dataset = synthetic_mag.generate_mag(
        tmp_path / "mag", nodes=600, feature_dim=8, seed=1, edge_split="0.8,0.1,0.1", split_relation="writes"
    )
    args = parse_args(["--task", "link", "--fanouts", "4,3", "--batch-size", "100", "--hidden", "8", "--threads", "1",
                       "--epochs", "2"])  # fmt: skip
    done = subprocess.run(dgl_command(DGL_PYTHON, dataset.path, args), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = last_json_line(done.stdout)
    assert len(result["epoch_seconds"]) == 2 and all(math.isfinite(loss) for loss in result["epoch_losses"])
    assert 0.0 <= result["test_auc"] <= 1.0 and 0.0 <= result["test_ap"] <= 1.0
