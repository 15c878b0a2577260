"""The GPU check harness itself (benchmarks/gpu_checks.py), on the CPU: steps in subprocesses, the JSON
rewritten after every step (a hung or killed step keeps the rows before it), skipped steps, plans, options."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import gpu_checks  # noqa: E402
from gpu_checks import PLAN_LIMIT_S, PLANS, STEPS, Step, parse_count, run_plan  # noqa: E402


def _stub(name: str, function: str, estimate_s: int = 1, min_gpus: int = 1) -> Step:
    return Step(name, f"stub {name}", f"tests.gpu_checks_stubs:{function}", estimate_s, min_gpus)


def _run(tmp_path: Path, steps: list[Step], gpus: int = 1, budget: float | None = None) -> tuple[int, dict[str, Any]]:
    output = tmp_path / "elsewhere" / "gpu.json"
    options = {"gpus": gpus, "root": str(tmp_path)}
    code = run_plan(steps, options, output, {"plan": None}, budget, gpus)
    return code, json.loads(output.read_text())


def test_plans_cover_every_step_once_within_the_time_limit() -> None:
    planned = [name for names in PLANS.values() for name in names]
    assert sorted(planned) == sorted(step.name for step in STEPS)
    by_name = {step.name: step for step in STEPS}
    for plan, names in PLANS.items():
        assert sum(by_name[n].estimate_s for n in names) <= PLAN_LIMIT_S, plan
    for plan in PLANS:
        assert f"--plan {plan}:" in gpu_checks.__doc__


def test_every_step_target_names_a_function() -> None:
    for step in STEPS:
        module, _, function = step.target.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), step.target


@pytest.mark.parametrize(
    ("text", "count"), [("500000", 500_000), ("500k", 500_000), ("10M", 10_000_000), ("1.5M", 1_500_000)]
)
def test_epoch_nodes_parse(text: str, count: int) -> None:
    assert parse_count(text) == count


def test_steps_run_in_subprocesses_and_the_json_keeps_rows_of_a_crashed_step(tmp_path: Path) -> None:
    code, report = _run(tmp_path, [_stub("a", "passes"), _stub("b", "dies"), _stub("c", "passes")])
    assert code == 1 and report["complete"]
    statuses = [(row["step"], row["status"]) for row in report["checks"]]
    assert statuses[:2] == [("a", "pass"), ("a", "measured")]
    assert ("b", "measured") in statuses and ("b", "FAIL") in statuses  # its row before the crash, then the crash
    assert statuses[-2:] == [("c", "pass"), ("c", "measured")]  # the step after a crash still ran
    assert report["steps"]["a"]["data"] == {"figures": {"gb_per_s": 1.0}}


def test_a_hung_step_is_stopped_at_the_budget_and_earlier_rows_are_in_the_json(tmp_path: Path) -> None:
    code, report = _run(tmp_path, [_stub("a", "passes"), _stub("h", "hangs"), _stub("late", "passes")], budget=3)
    assert code == 1 and report["complete"]
    rows = {(row["step"], row["status"]): row["detail"] for row in report["checks"]}
    assert ("a", "pass") in rows and ("h", "measured") in rows
    assert "stopped after" in rows[("h", "FAIL")]
    assert "not started" in rows[("late", "skipped")]


def test_the_json_is_rewritten_after_each_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a kill of the whole call during step 2 would leave: the file as written after step 1."""
    output = tmp_path / "gpu.json"
    seen: list[list[str]] = []

    def runner(step: Step, options: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        seen.append([row["step"] for row in json.loads(output.read_text())["checks"]])
        return gpu_checks.run_step(step, options, timeout)

    run_plan([_stub("a", "passes"), _stub("b", "passes")], {"gpus": 1}, output, {}, None, 1, runner=runner)
    assert seen == [[], ["a", "a"]]


def test_missing_input_and_missing_gpus_are_skipped_not_failed(tmp_path: Path) -> None:
    code, report = _run(tmp_path, [_stub("in", "needs_input"), _stub("two", "passes", min_gpus=2)])
    assert code == 0
    rows = {row["step"]: row for row in report["checks"]}
    assert rows["in"]["status"] == "skipped" and "not found" in rows["in"]["detail"]
    assert rows["two"]["status"] == "skipped" and "needs 2 GPUs, found 1" in rows["two"]["detail"]


def test_without_a_gpu_every_step_reports_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gpu_checks, "detect_gpus", lambda: (0, [], "cpu"))
    output = tmp_path / "out-dir"
    output.mkdir()
    assert gpu_checks.main(["--plan", "2", "--output", str(output), "--epoch-nodes", "500000"]) == 0
    report = json.loads((output / "gpu_checks.json").read_text())
    assert report["options"]["epoch_nodes"] == 500_000
    assert [row["step"] for row in report["checks"]] == list(PLANS["2"])
    assert all(row["status"] == "skipped" and "no CUDA device" in row["detail"] for row in report["checks"])
