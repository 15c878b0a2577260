"""The CLI's progress displays: the log renderer's lines and interval (a fake clock), and commands run outside a
terminal (CliRunner) printing stage lines with an ETA (GRAPHTIER_PROGRESS_INTERVAL=0), and none with --quiet."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from graphtier.cli import cli
from graphtier.cli.common.progress import LogProgress, log_interval
from graphtier.errors import OptionError
from tests.test_progress import FakeClock

GENERATE = ["--nodes", "2k", "--avg-degree", "6", "--feature-dim", "8", "--chunk-edges", "2000", "--seed", "1"]


def test_log_lines_come_at_most_every_interval_and_a_long_stage_ends_with_its_time() -> None:
    clock, lines = FakeClock(), []
    progress = LogProgress(lines.append, interval=10.0, clock=clock)
    with progress.stage("reorder: permute features", total=100, unit="rows") as bar:
        for _ in range(10):
            clock.now += 3.0
            bar.advance(10)
    assert lines == [
        "graphtier: reorder: permute features 40/100 rows (40%) 3.3 rows/s, ETA 0:00:18",  # at 12 s
        "graphtier: reorder: permute features 80/100 rows (80%) 3.3 rows/s, ETA 0:00:06",  # at 24 s
        "graphtier: reorder: permute features 100 rows in 0:00:30 (3.3 rows/s)",
    ]


def test_a_quick_stage_prints_nothing_and_a_failed_one_no_final_line() -> None:
    clock, lines = FakeClock(), []
    progress = LogProgress(lines.append, interval=10.0, clock=clock)
    with progress.stage("generate: alias tables", total=5, unit="nodes") as bar:
        clock.now += 1.0
        bar.advance(5)
    with pytest.raises(KeyboardInterrupt), progress.stage("train epoch 1", total=4, unit="batches") as bar:
        clock.now += 11.0
        bar.advance(1, loss=0.5)
        raise KeyboardInterrupt
    assert lines == ["graphtier: train epoch 1 1/4 batches (25%) 0.09 batches/s, ETA 0:00:33, loss 0.5000"]


def test_the_interval_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRAPHTIER_PROGRESS_INTERVAL", raising=False)
    assert log_interval() == 10.0
    monkeypatch.setenv("GRAPHTIER_PROGRESS_INTERVAL", "2.5")
    assert log_interval() == 2.5
    monkeypatch.setenv("GRAPHTIER_PROGRESS_INTERVAL", "off")
    assert log_interval() is None
    monkeypatch.setenv("GRAPHTIER_PROGRESS_INTERVAL", "-1")
    with pytest.raises(OptionError, match="GRAPHTIER_PROGRESS_INTERVAL expected a number of seconds >= 0"):
        log_interval()


def _progress_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("graphtier: ") and "error" not in line]


def test_generate_reorder_train_predict_print_progress_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHTIER_PROGRESS_INTERVAL", "0")
    runner = CliRunner()
    result = runner.invoke(cli, ["generate", str(tmp_path / "g"), *GENERATE], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    lines = _progress_lines(result.stderr)
    assert any(line.startswith("graphtier: generate: draw pairs ") and ", ETA " in line for line in lines), lines
    assert any(line.startswith("graphtier: generate: write features 2.0K rows in 0:00:") for line in lines), lines

    result = runner.invoke(cli, ["reorder", str(tmp_path / "g"), str(tmp_path / "r"), "--score", "degree"])
    assert result.exit_code == 0, result.output
    lines = _progress_lines(result.stderr)
    for stage in ("reorder: relocate edges", "reorder: permute features", "validate the new dataset"):
        assert any(line.startswith(f"graphtier: {stage} ") and ", ETA " in line for line in lines), (stage, lines)

    model = tmp_path / "model.pt"
    train = ["train", str(tmp_path / "r"), "--epochs", "1", "--fanouts", "3", "--hidden", "8", "--batch-size", "500"]
    result = runner.invoke(cli, [*train, "--save-model", str(model)])
    assert result.exit_code == 0, result.output
    lines = _progress_lines(result.stderr)
    assert any(line.startswith("graphtier: train epoch 1 ") and "batches/s, ETA" in line and "loss" in line
               for line in lines), lines  # fmt: skip

    predict = ["predict", str(tmp_path / "r"), "--model", str(model), "--output", str(tmp_path / "p.npy")]
    result = runner.invoke(cli, predict)
    assert result.exit_code == 0, result.output
    lines = _progress_lines(result.stderr)
    assert any(line.startswith("graphtier: inference: layer-wise ") and "edges/s, ETA" in line for line in lines)

    result = runner.invoke(cli, [*predict, "--quiet"])
    assert result.exit_code == 0 and result.stderr == "", result.stderr
    result = runner.invoke(cli, ["generate", str(tmp_path / "q"), *GENERATE, "--quiet"])
    assert result.exit_code == 0 and result.stderr == "", result.stderr


@pytest.mark.parametrize("hetero", [False, True], ids=["plain", "typed"])
def test_score_analyze_plan_print_progress_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hetero: bool) -> None:
    monkeypatch.setenv("GRAPHTIER_PROGRESS_INTERVAL", "0")
    runner = CliRunner()
    generate = ["--hetero", "mag", "--nodes", "2k", "--feature-dim", "4", "--seed", "1"] if hetero else GENERATE
    result = runner.invoke(cli, ["generate", str(tmp_path / "g"), *generate], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    if hetero:  # the typed generator draws its edges chunk by chunk and builds the typed CSC as a stage
        assert any(line.startswith("graphtier: build the typed CSC ") and ", ETA " in line
                   for line in _progress_lines(result.stderr)), result.stderr  # fmt: skip
    sampling = ["--fanouts", "3,2", "--batch-size", "256"]
    expected = {
        "score": ("score: fanout-weighted hops",),
        "analyze": ("replay the sampler (1 epochs)", "score: fanout-weighted hops"),
        "plan": ("replay the sampler (1 epochs)",),
    }
    extra = {"score": ["--score", "fwr"], "analyze": ["--score", "degree,fwr"],
             "plan": ["--gpu-memory", "1GiB", "--host-memory", "4GiB"]}  # fmt: skip
    for command, stages in expected.items():
        result = runner.invoke(cli, [command, str(tmp_path / "g"), *sampling, *extra[command]])
        assert result.exit_code == 0, (command, result.output)
        lines = _progress_lines(result.stderr)
        for stage in stages:
            assert any(line.startswith(f"graphtier: {stage} ") and ", ETA " in line for line in lines), (
                command,
                stage,
                lines,
            )
