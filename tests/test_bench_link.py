"""The link-prediction benchmark harness (benchmarks/bench_link.py) without DGL: both sides get the same training
options, the report fields it reads, the table and summary; and (slow, only where the DGL venv exists) the DGL
script end to end on a tiny hand-made dataset with an edge split."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from bench_link import (  # noqa: E402
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
    args = parse_args(["--fanouts", "10,5", "--batch-size", "256", "--num-negatives", "3", "--hidden", "64",
                       "--lr", "0.01", "--dropout", "0.2", "--epochs", "4", "--threads", "1"])  # fmt: skip
    ours = graphtier_command(Path("/data/g"), args, Path("/tmp/r.json"))
    peer = dgl_command(Path("/venv/bin/python"), Path("/data/g"), args)
    for flag, value in [("--fanouts", "10,5"), ("--batch-size", "256"), ("--num-negatives", "3"), ("--hidden", "64"),
                        ("--lr", "0.01"), ("--dropout", "0.2"), ("--epochs", "4")]:  # fmt: skip
        assert _flag(ours, flag) == value and _flag(peer, flag) == value, flag
    assert _flag(ours, "--num-threads") == "1" and _flag(peer, "--threads") == "1"
    assert _flag(ours, "--task") == "link" and _flag(ours, "--decoder") == "dot" and _flag(ours, "--model") == "sage"
    assert (
        _flag(ours, "--eval-every") == "4" and "--full-inference" in ours and _flag(ours, "--report") == "/tmp/r.json"
    )
    assert peer[1].endswith("dgl_link.py") and peer[2] == "/data/g"


def test_defaults_and_bad_options() -> None:
    args = parse_args([])
    assert (args.fanouts, args.batch_size, args.num_negatives, args.threads, args.epochs) == ("15,10,5", 1024, 1, 2, 2)
    assert args.edge_split == "0.9,0.05,0.05" and args.json.name == "link.json"
    generate = generate_command(Path("/work/g"), args)
    assert generate[3:5] == ["generate", "/work/g"] and _flag(generate, "--edge-split") == "0.9,0.05,0.05"
    assert _flag(generate, "--nodes") == "50000" and _flag(generate, "--feature-dim") == "128"
    for bad in (["--epochs", "1"], ["--pairs", "0"]):
        with pytest.raises(SystemExit):
            parse_args(bad)


def test_graphtier_result_reads_epoch_totals_and_the_final_auc() -> None:
    epoch = {"stage_seconds": {"total": 5.0, "sample": 1.0}, "loss": 0.7, "batches": 10}
    later = {"stage_seconds": {"total": 3.0, "sample": 2.0}, "loss": 0.5, "batches": 10}
    report = {"epochs": [epoch, later, later], "final": {"test_auc": 0.9, "test_ap": 0.8, "test_popularity_auc": 0.7}}
    result = graphtier_result(report)
    assert result["epoch_seconds"] == [5.0, 3.0, 3.0] and result["epoch_losses"] == [0.7, 0.5, 0.5]
    assert result["stage_seconds"] == {"total": 3.0, "sample": 2.0}  # the first epoch left out
    assert (result["test_auc"], result["test_ap"], result["test_popularity_auc"]) == (0.9, 0.8, 0.7)
    assert result["batches"][-1] == 10


def test_rows_ratio_order_table_and_median() -> None:
    ours = {"epoch_seconds": [9.0, 2.0, 2.0], "test_auc": 0.91, "test_popularity_auc": None, "batches": [10, 10, 10]}
    peer = {"epoch_seconds": [9.0, 3.0, 5.0], "test_auc": None, "batches": [10, 10, 10]}
    rows = [make_row(0, ours, peer), make_row(1, ours, dict(peer, epoch_seconds=[1.0, 3.0]))]
    assert rows[0]["ratio_dgl_over_graphtier"] == 2.0 and rows[1]["ratio_dgl_over_graphtier"] == 1.5
    assert [r["first"] for r in rows] == ["graphtier", "dgl"]
    line = format_row(rows[0])
    assert len(line) == len(TABLE_HEADER)
    assert line.split() == ["0", "graphtier", "2.00", "4.00", "2.00", "0.910", "-", "-", "10/10"]
    assert summary(rows) == {"graphtier_epoch_s": 2.0, "dgl_epoch_s": 3.5, "ratio_dgl_over_graphtier": 1.75}


def test_a_dataset_without_an_edge_split_is_refused(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text(json.dumps({"num_nodes": 3, "num_edges": 2}))
    with pytest.raises(SystemExit, match="no edge split"):
        prepare_dataset(parse_args(["--dataset", str(tmp_path)]))


def _tiny_link_dataset(root: Path) -> int:
    """A 40-node undirected ring with chords (CSC), 16-dim features, every message-passing edge a
    training pair, 6 held-out test edges and 6 non-edge negatives; returns the number of training pairs."""
    n = 40
    pairs = {(v, (v + 1) % n) for v in range(n)} | {(v, (v + 7) % n) for v in range(0, n, 2)}
    pairs = sorted((min(a, b), max(a, b)) for a, b in pairs)
    test, train = pairs[:6], pairs[6:]
    # sources descending within each column, as a reordered dataset may have them (DGL's edge ids are positions)
    edges = sorted({(s, d) for s, d in train} | {(d, s) for s, d in train}, key=lambda e: (e[1], -e[0]))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount([d for _, d in edges], minlength=n), out=indptr[1:])
    every = set(pairs) | {(b, a) for a, b in pairs}
    negatives = [(a, b) for a in range(n) for b in range(a + 2, n) if (a, b) not in every][::97][:6]
    root.mkdir()
    np.save(root / "indptr.npy", indptr)
    np.save(root / "indices.npy", np.array([s for s, _ in edges], np.int64))
    np.save(root / "features.npy", np.random.default_rng(0).standard_normal((n, 16)).astype(np.float32))
    np.save(root / "link_train.npy", np.array(train, np.int64))
    np.save(root / "link_test.npy", np.array(test, np.int64))
    np.save(root / "link_test_neg.npy", np.array(negatives, np.int64))
    link = {"train": len(train), "test": len(test), "test_negatives": 6, "eval_negatives": 0, "dst_range": [0, n],
            "undirected": True}  # fmt: skip
    (root / "meta.json").write_text(json.dumps({"num_nodes": n, "num_edges": len(edges), "link": link}))
    return len(train)


@pytest.mark.slow
@pytest.mark.skipif(not DGL_PYTHON.exists(), reason=f"no DGL venv at {DGL_PYTHON.parent.parent}")
def test_dgl_script_trains_and_scores_a_tiny_split(tmp_path: Path) -> None:
    dataset = tmp_path / "tiny"
    train_pairs = _tiny_link_dataset(dataset)
    args = parse_args(["--fanouts", "3,2", "--batch-size", "8", "--hidden", "8", "--threads", "1", "--epochs", "2"])
    done = subprocess.run(dgl_command(DGL_PYTHON, dataset, args), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = last_json_line(done.stdout)
    assert len(result["epoch_seconds"]) == 2 and result["batches"] == [math.ceil(train_pairs / 8)] * 2
    assert 0.0 <= result["test_auc"] <= 1.0 and 0.0 < result["test_ap"] <= 1.0
    assert all(math.isfinite(loss) for loss in result["epoch_losses"])
