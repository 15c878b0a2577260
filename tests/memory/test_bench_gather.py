"""``bench gather`` runs end to end on tiny tables and reports ratios against its in-run baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from graphtier.bench.gather import (
    CPU_METHODS,
    format_gather_table,
    run_gather_benchmark,
)
from graphtier.cli.bench_gather import command
from graphtier.errors import OptionError


def test_cli_prints_table_and_saves_json(tmp_path: Path) -> None:
    output = tmp_path / "gather.json"
    result = CliRunner().invoke(
        command,
        ["--row-bytes", "128,512", "--table-size", "1MiB", "--batch-rows", "500", "--threads", "1",
         "--repeats", "1", "--device", "cpu", "--json", str(output)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "index_select" in result.output and "not measured" in result.output
    report = json.loads(output.read_text())
    rows = report["results"]
    assert [(r["row_bytes"], r["method"]) for r in rows] == [(b, m) for b in (128, 512) for m in CPU_METHODS]
    baseline = [r for r in rows if r["method"] == "index_select"]
    assert all(r["vs_baseline"] == pytest.approx(1.0) for r in baseline)
    assert all(r["gb_per_s"] > 0 and r["seconds"] > 0 for r in rows)


def test_bad_options_name_themselves() -> None:
    with pytest.raises(OptionError, match="--row-bytes"):
        run_gather_benchmark(row_bytes=[6], table_bytes=1024, batch_rows=4, threads=[1], dtype="float32")
    with pytest.raises(OptionError, match="--threads"):
        run_gather_benchmark(row_bytes=[8], table_bytes=1024, batch_rows=4, threads=[999])
    result = CliRunner().invoke(command, ["--table-size", "10%"])
    assert isinstance(result.exception, OptionError) and "--table-size" in str(result.exception)


def test_format_table_has_a_row_per_result() -> None:
    report = run_gather_benchmark(
        row_bytes=[16], table_bytes=4096, batch_rows=8, threads=[1], repeats=1, dtype="float16"
    )
    assert len(format_gather_table(report).splitlines()) == 2 + len(CPU_METHODS)


def test_dataset_mode_reports_tiers_and_baseline(tmp_path: Path) -> None:
    from tests.conftest import write_labelled_graph

    dataset = write_labelled_graph(tmp_path / "d", num_nodes=300)
    output = tmp_path / "dataset-gather.json"
    result = CliRunner().invoke(
        command,
        [str(dataset.path), "--features-on", "tiered", "--gpu-budget", "20%", "--fanouts", "5,5", "--batch-size", "50",
         "--batches", "3", "--device", "cpu", "--json", str(output)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(output.read_text())
    for key in ("gb_per_s", "rows_per_s", "bytes_by_tier", "index_select_gb_per_s"):
        assert key in report
    tiers = report["bytes_by_tier"]
    assert sum(tiers.values()) == report["rows"] * report["row_bytes"]
    assert tiers["gpu"] > 0 and tiers["host"] > 0


def test_dataset_mode_replays_an_epoch_until_the_time_is_spent(tmp_path: Path) -> None:
    from tests.conftest import write_labelled_graph

    dataset = write_labelled_graph(tmp_path / "d", num_nodes=300)  # 150 training nodes: 3 batches of 50
    output = tmp_path / "g.json"
    result = CliRunner().invoke(
        command,
        [str(dataset.path), "--fanouts", "5,5", "--batch-size", "50", "--min-seconds", "0.3", "--device", "cpu",
         "--json", str(output)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(output.read_text())
    assert report["batches"] == 3  # one epoch by default
    assert report["passes"] > 1 and report["seconds"] >= 0.3
    assert "passes" in result.output
    more = CliRunner().invoke(
        command, [str(dataset.path), "--batch-size", "50", "--batches", "7", "--min-seconds", "0", "--device", "cpu",
                  "--json", str(output)],
    )  # fmt: skip
    assert more.exit_code == 0, more.output
    assert json.loads(output.read_text())["batches"] == 7  # a second epoch when asked for more


def test_dataset_mode_gathers_a_typed_dataset_per_featured_type(tmp_path: Path) -> None:
    """A typed dataset: the typed sampler's rows of every featured type (papers 8 wide, authors 4), gathered as one
    dict per batch; the bytes per tier are those rows' bytes, type by type."""
    from tests.typed_data import write_tiny_typed_dataset

    dataset = write_tiny_typed_dataset(tmp_path / "t")
    output = tmp_path / "typed-gather.json"
    for ids in ("sampler", "uniform"):
        result = CliRunner().invoke(
            command,
            [str(dataset.path), "--features-on", "tiered", "--fanouts", "3,2", "--batch-size", "16", "--batches", "3",
             "--min-seconds", "0", "--device", "cpu", "--ids", ids, "--json", str(output)],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        report = json.loads(output.read_text())
        rows = report["rows_by_type"]
        assert set(rows) == {"paper", "author"} and rows["paper"] > 0 and rows["author"] > 0
        assert sum(report["bytes_by_tier"].values()) == (rows["paper"] * 8 + rows["author"] * 4) * 4
