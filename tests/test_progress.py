"""graphtier._progress: a stage's rate and ETA from a fake clock, their spelling, and the silent default."""

from __future__ import annotations

import pytest

from graphtier._progress import NO_PROGRESS, Progress, count_text, duration_text


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_rate_and_eta_from_elapsed_time() -> None:
    clock = FakeClock()
    with Progress(clock).stage("reorder: permute features", total=40_000_000, unit="rows") as bar:
        assert bar.rate() is None and bar.eta() is None  # nothing done yet: ETA ?
        assert bar.line().endswith("? rows/s, ETA ?")
        clock.now += 6.0
        bar.advance(12_000_000)
        assert bar.rate() == pytest.approx(2_000_000)
        assert bar.eta() == pytest.approx(14.0)  # 28M left at 2M rows/s
        assert bar.line() == "reorder: permute features 12.0M/40.0M rows (30%) 2.0M rows/s, ETA 0:00:14"
        clock.now += 14.0
        bar.advance(28_000_000)
        assert bar.eta() == 0.0
    assert bar.final_line() == "reorder: permute features 40.0M rows in 0:00:20 (2.0M rows/s)"


def test_without_a_total_there_is_a_rate_but_no_eta() -> None:
    clock = FakeClock()
    with Progress(clock).stage("prepare: read edges", unit="edges") as bar:
        clock.now += 2.0
        bar.advance(3000, loss=0.25)
        assert bar.eta() is None
        assert bar.line() == "prepare: read edges 3.0K edges 1.5K edges/s, ETA ?"
        assert bar.fields_text() == "loss 0.2500"


def test_counts_and_durations_are_spelled_short() -> None:
    assert [count_text(v) for v in (0, 0.5, 950, 12_000, 1_900_000, 3.2e9)] == [
        "0",
        "0.50",
        "950",
        "12.0K",
        "1.9M",
        "3.2G",
    ]
    assert [duration_text(s) for s in (0, 15.4, 61, 3723)] == ["0:00:00", "0:00:15", "0:01:01", "1:02:03"]


def test_the_default_reports_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with NO_PROGRESS.stage("generate: draw edges", total=10, unit="edges") as bar:
        bar.advance(10)
    assert capsys.readouterr() == ("", "")
