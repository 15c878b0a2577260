"""`graphtier generate` and `graphtier info` through the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from graphtier.cli import cli, main
from graphtier.cli.generate import COUNT
from graphtier.dataset.format import Dataset
from graphtier.graph.stats import in_degree_stats_reference


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run the real entry point (with its error handling) and return (exit code, stdout, stderr)."""
    code = 0
    try:
        main(args)
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "g"
    result = CliRunner().invoke(
        cli,
        [
            "generate",
            str(out),
            "--nodes",
            "3k",
            "--avg-degree",
            "12",
            "--feature-dim",
            "8",
            "--num-classes",
            "5",
            "--seed",
            "11",
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "3,000 nodes" in result.output
    return out


def test_generate_cli_mirrors_api(generated: Path) -> None:
    dataset = Dataset.open(generated)
    options = dataset.meta["source"]["options"]
    assert options["nodes"] == 3000 and options["avg_degree"] == 12.0 and options["seed"] == 11
    assert dataset.num_classes == 5 and dataset.feature_dim == 8 and not dataset.directed


def test_info_json_fields(generated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["info", str(generated), "--json"], capsys)
    assert code == 0
    info = json.loads(out)
    dataset = Dataset.open(generated)
    assert info["num_nodes"] == 3000 and info["num_edges"] == dataset.num_edges and info["directed"] is False
    reference = in_degree_stats_reference(np.asarray(dataset.indptr)).as_dict()
    for key in (
        "min",
        "mean",
        "median",
        "p99",
        "max",
        "zero_in_degree_nodes",
        "top1pct_edge_share",
        "top10pct_edge_share",
    ):
        assert info["in_degree"][key] == pytest.approx(reference[key])
    assert info["features"] == {
        "shape": [3000, 8],
        "dtype": "float32",
        "bytes": (generated / "features.npy").stat().st_size,
    }
    labels = np.asarray(dataset.labels)
    assert info["labels"] == {
        "num_classes": 5,
        "labelled": 3000,
        "unlabelled": 0,
        "class_counts": np.bincount(labels, minlength=5).tolist(),
        "class_names": None,
    }
    assert info["splits"] == {"train": 30, "valid": 30, "test": 60}
    assert set(info["arrays"]) == {"indptr", "indices", "features", "labels", "train_idx", "valid_idx", "test_idx"}
    assert info["arrays"]["indices"] == {
        "shape": [dataset.num_edges],
        "dtype": "int32",
        "bytes": (generated / "indices.npy").stat().st_size,
    }
    assert info["total_bytes"] == sum(p.stat().st_size for p in generated.iterdir())
    assert info["source"]["generator"] == "graphtier.dataset.synthetic"


def test_info_table(generated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["info", str(generated)], capsys)
    assert code == 0
    for text in ("3,000", "undirected", "top 1%", "median", "float32", "5 classes", "train 30", "indices.npy"):
        assert text in out
    counts = np.bincount(np.asarray(Dataset.open(generated).labels), minlength=5)
    largest = int(counts.argmax())
    assert f"largest {largest}: {counts[largest]:,} ({100 * counts[largest] / 3000:.1f}%)" in out
    assert "of 5 classes; 0 unlabelled" in out


def test_class_counts_skip_unlabelled_nodes_and_show_the_largest_classes(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphtier.cli import info as info_cli

    monkeypatch.setattr(info_cli, "CHUNK", 4)  # several chunks, the last one short
    labels = np.array([2, -1, 2, 0, 2, 5, -1, 0, 2, 3], dtype=np.int64)
    counts, unlabelled = info_cli.class_counts(labels, num_classes=4)  # label 5 beyond num_classes still counts
    assert counts.tolist() == [2, 0, 4, 1, 0, 1] and unlabelled == 2
    assert info_cli.describe_classes(counts.tolist(), unlabelled) == (
        "largest 2: 4 (50.0%), 0: 2 (25.0%), 3: 1 (12.5%) of 6 classes; 2 unlabelled"
    )
    assert info_cli.describe_classes([0, 0], 7) == "largest - of 2 classes; 7 unlabelled"


def test_info_on_missing_or_broken_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["info", str(tmp_path / "absent")], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1 and "not found" in err
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "meta.json").write_text("{not json")
    code, _, err = _run(["info", str(tmp_path / "broken")], capsys)
    assert code == 2 and "meta.json" in err and "Traceback" not in err


def test_generate_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(
        ["generate", str(tmp_path / "x"), "--nodes", "100", "--avg-degree", "3", "--homophily", "1.5"], capsys
    )
    assert code == 2 and "--homophily" in err and err.count("\n") == 1
    code, _, err = _run(["generate", str(tmp_path / "x"), "--nodes", "lots", "--avg-degree", "3"], capsys)
    assert code == 2 and "--nodes" in err
    assert not (tmp_path / "x").exists()


def test_count_parser() -> None:
    assert [COUNT.convert(v, None, None) for v in ("10", "2_000", "1,500", "3k", "1.5M", "2G", "1e3")] == [
        10,
        2000,
        1500,
        3000,
        1_500_000,
        2_000_000_000,
        1000,
    ]


def test_console_script_entry_point(generated: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "graphtier", "info", str(generated), "--json", "--no-validate"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["num_nodes"] == 3000


def test_undirected_pairs_count_self_loops_once(tmp_path: Path) -> None:
    from graphtier.cli.info import count_self_loops, dataset_info
    from graphtier.dataset import DatasetWriter

    # 0-1, 1-2 stored both ways, plus a self-loop on 2: 5 directed edges, 3 undirected pairs
    indptr = np.array([0, 1, 3, 5], dtype=np.int64)
    indices = np.array([1, 0, 2, 1, 2], dtype=np.int32)
    assert count_self_loops(indptr, indices) == 1
    with DatasetWriter(tmp_path / "sym") as writer:
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        ds = writer.finish(
            {
                "name": "sym",
                "num_nodes": 3,
                "num_edges": 5,
                "directed": False,
                "feature_dim": 0,
                "feature_dtype": "float32",
                "num_classes": 0,
                "source": {"kind": "test"},
            }
        )
    assert dataset_info(ds)["undirected_pairs"] == 3


def test_info_shows_whether_the_graph_is_symmetric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Recorded at import (meta.json 'symmetric'); computed for an older dataset that lacks it (issue 23)."""
    from graphtier.cli.info import dataset_info
    from graphtier.dataset import DatasetWriter

    def old_dataset(name: str, indptr: list[int], indices: list[int]) -> Dataset:
        with DatasetWriter(tmp_path / name) as writer:
            writer.save("indptr", np.array(indptr, dtype=np.int64))
            writer.save("indices", np.array(indices, dtype=np.int32))
            return writer.finish(
                {
                    "name": name,
                    "num_nodes": len(indptr) - 1,
                    "num_edges": len(indices),
                    "directed": True,
                    "feature_dim": 0,
                    "feature_dtype": "float32",
                    "num_classes": 0,
                    "source": {"kind": "test"},
                }
            )

    assert dataset_info(old_dataset("sym", [0, 1, 2], [1, 0]))["symmetric"] is True
    assert dataset_info(old_dataset("one", [0, 0, 1], [1]))["symmetric"] is True  # a self-loop is its own reverse
    assert dataset_info(old_dataset("dir", [0, 0, 1, 1], [0]))["symmetric"] is False
    edges = tmp_path / "e.txt"
    edges.write_text("0 1\n1 2\n")
    code, out, _ = _run(["prepare", "edgelist", str(edges), str(tmp_path / "d")], capsys)
    assert code == 0 and "directed: 0 of 2 edges have their reverse" in out
    assert Dataset.open(tmp_path / "d").meta["symmetric"] is False
    code, out, _ = _run(["info", str(tmp_path / "d")], capsys)
    assert code == 0 and "no (some edges lack their reverse)" in out
    code, out, _ = _run(["prepare", "edgelist", str(edges), str(tmp_path / "u"), "--undirected"], capsys)
    assert code == 0 and "0 edges already had their reverse, added 2 reverse edges" in out
    code, out, _ = _run(["info", str(tmp_path / "u"), "--json"], capsys)
    assert json.loads(out)["symmetric"] is True
