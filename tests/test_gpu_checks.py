"""The GPU check harness itself (benchmarks/gpu_checks.py), on the CPU: steps in subprocesses, the JSON
rewritten after every step (a hung or killed step keeps the rows before it), skipped steps, the plans (first
within its budget, rerun from a previous JSON), the command lines of docs/development.md and the README, and the steps' CPU twins."""

from __future__ import annotations

import importlib
import importlib.util
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import gpu_checks  # noqa: E402
import gpu_plan  # noqa: E402
from gpu_checks import STEPS, Step, parse_count, run_plan  # noqa: E402
from gpu_plan import FIRST, FIRST_COMMAND, RERUN_COMMAND, VALUE_ORDER, resolve_estimates, select_rerun  # noqa: E402
from gpu_steps_first import declared_dependencies, gpu_test_files  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEV_PAGE = ROOT / "docs" / "development.md"  # the site page with the GPU checks section
README = ROOT / "README.md"


def _stub(name: str, function: str, estimate_s: int = 1, min_gpus: int = 1) -> Step:
    return Step(name, f"stub {name}", f"tests.gpu_checks_stubs:{function}", estimate_s, min_gpus)


def _run(tmp_path: Path, steps: list[Step], gpus: int = 1, budget: float | None = None) -> tuple[int, dict[str, Any]]:
    output = tmp_path / "elsewhere" / "gpu.json"
    options = {"gpus": gpus, "root": str(tmp_path)}
    code = run_plan(steps, options, output, {"plan": None}, budget, gpus)
    return code, json.loads(output.read_text())


def _estimates() -> dict[str, dict[str, Any]]:
    """The estimates the script uses without --previous: a GPU run's seconds from the recorded results when they
    exist (benchmarks/results/gpu_checks.json), else the CPU twins'."""
    twins = json.loads(gpu_plan.ESTIMATES.read_text()) if gpu_plan.ESTIMATES.exists() else None
    previous = json.loads(gpu_checks.RESULTS.read_text()) if gpu_checks.RESULTS.exists() else None
    return resolve_estimates({s.name: s.estimate_s for s in STEPS}, previous, twins)


def test_value_order_lists_every_step_once_and_plan_first_fits_its_budget(capsys: pytest.CaptureFixture[str]) -> None:
    assert sorted(VALUE_ORDER) == sorted(step.name for step in STEPS)
    assert FIRST == ("env", "pytest", "train", "predict", "headline", "epoch")  # correctness before speed
    estimates = _estimates()
    assert sum(estimates[name]["seconds"] for name in FIRST) <= gpu_plan.FIRST_BUDGET_S
    assert gpu_checks.main(["--plan", "first", "--dry-run", "--output", "/nonexistent/x.json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == list(FIRST)
    total = int(lines[-1].split("~")[1].split()[0])
    assert total == sum(estimates[name]["seconds"] for name in FIRST) <= 400


def test_estimates_come_from_a_gpu_run_then_the_cpu_twin_then_the_guess() -> None:
    twins = {
        "factor": 2.0,
        "steps": {"train": {"twin_s": 10.0, "scale": 0.25}, "epoch": {"twin_s": 30.0, "scale": 0.05}},
    }
    previous = {"devices": ["NVIDIA H200"], "steps": {"epoch": {"status": "done", "seconds": 71.2},
                                                      "predict": {"status": "skipped", "seconds": 0.0}}}  # fmt: skip
    got = resolve_estimates({"train": 90, "epoch": 240, "predict": 45}, previous, twins)
    assert got["epoch"] == {"seconds": 72, "source": "gpu"}
    assert got["train"]["seconds"] == 20 and got["train"]["source"] == "cpu twin"
    assert got["predict"] == {"seconds": 45, "source": "guess"}
    cpu_only = resolve_estimates({"epoch": 240}, {**previous, "devices": []}, twins)  # a CPU run measures nothing
    assert cpu_only["epoch"]["source"] == "cpu twin"


def _previous_first_call() -> dict[str, Any]:
    """What a first call on one GPU could leave: pytest failed, headline stopped, epoch not started."""
    rows = [("env", "pass"), ("pytest", "FAIL"), ("train", "pass"), ("predict", "pass"), ("headline", "measured"),
            ("headline", "FAIL"), ("epoch", "skipped")]  # fmt: skip
    status = {"env": "done", "pytest": "exited with code 1", "train": "done", "predict": "done",
              "headline": "stopped after 40 s (--budget)", "epoch": "skipped"}  # fmt: skip
    return {
        "devices": ["NVIDIA H200"],
        "checks": [{"step": name, "check": "c", "status": st, "detail": ""} for name, st in rows],
        "steps": {name: {"status": st, "seconds": 0.0 if st == "skipped" else 30.0} for name, st in status.items()},
    }


def test_rerun_takes_what_failed_or_was_skipped_then_the_rest_by_value_within_the_budget() -> None:
    previous = _previous_first_call()
    estimates = resolve_estimates({s.name: s.estimate_s for s in STEPS}, previous, None)
    gpus = {s.name: s.min_gpus for s in STEPS}
    chosen, later = select_rerun(previous, estimates, 230, gpus)
    assert chosen[:2] == ["pytest", "headline"]  # failed or skipped, in value order
    assert "epoch" in later  # skipped too, but its guess (240 s) does not fit in what the two leave of 230 s
    assert "env" not in chosen and "train" not in chosen and "predict" not in chosen  # passed: not again
    assert "multigpu" not in chosen + later  # needs two GPUs, the machine had one
    assert chosen[2:] == [n for n in VALUE_ORDER if n in chosen[2:]]  # then never run, by value
    assert sum(estimates[n]["seconds"] for n in chosen) <= 230
    assert later and all(n not in previous["steps"] or n in ("pytest", "headline", "epoch") for n in later)


def test_rerun_reads_the_previous_json_named_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "gpu_checks.json"
    path.write_text(json.dumps(_previous_first_call()))
    assert gpu_checks.main(["--plan", "rerun", "--previous", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out[:2]] == ["pytest", "headline"]
    assert "pytest      ~  30 s (gpu" in out[0]  # the GPU run's seconds replace the estimate
    assert "left for a later call" in out[-1]
    with pytest.raises(SystemExit, match="--plan rerun needs --previous"):
        gpu_checks.main(["--plan", "rerun", "--dry-run"])
    path.write_text("{not json")
    with pytest.raises(SystemExit, match="not JSON"):
        gpu_checks.main(["--plan", "rerun", "--previous", str(path), "--dry-run"])


def test_a_rerun_writes_the_record_of_every_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rerun's output keeps the previous call's steps it did not run (with that call's date), replaces the
    rows of those it ran, and lists both calls: the next rerun reads one file."""
    monkeypatch.setattr(gpu_checks, "detect_gpus", lambda: (0, [], "cpu"))
    previous = {**_previous_first_call(), "date": "2026-11-28T17:59:37+00:00", "plan": "first"}
    path = tmp_path / "previous.json"
    path.write_text(json.dumps(previous))
    output = tmp_path / "rerun.json"
    gpu_checks.main(["--plan", "rerun", "--previous", str(path), "--budget", "100", "--output", str(output)])
    report = json.loads(output.read_text())
    rerun = report["calls"][1]["steps"]
    assert report["calls"][0] == {"date": previous["date"], "plan": "first", "steps": list(previous["steps"])}
    assert rerun[0] == "pytest" and report["calls"][1]["plan"] == "rerun"
    for name in ("env", "train", "predict"):  # passed before, not run again: carried over with their date
        assert report["steps"][name]["date"] == previous["date"] and name not in rerun
        assert [r["status"] for r in report["checks"] if r["step"] == name] == ["pass"]
    for name in rerun:  # run again (skipped here, no GPU): only this call's rows
        assert report["steps"][name]["date"] == report["date"]
        assert [r["status"] for r in report["checks"] if r["step"] == name] == ["skipped"]
    chosen, _ = select_rerun(report, resolve_estimates({s.name: s.estimate_s for s in STEPS}, report, None), 1e6,
                             {s.name: s.min_gpus for s in STEPS})  # fmt: skip
    assert "env" not in chosen and "pytest" in chosen


def test_the_docs_give_the_command_lines_verbatim_and_the_script_takes_them() -> None:
    page = DEV_PAGE.read_text()
    start = page.index("## GPU checks")
    end = page.find("\n## ", start + 1)
    section = page[start : end if end >= 0 else len(page)]
    for command in (FIRST_COMMAND, RERUN_COMMAND):
        assert len(command) < 2000
        assert f"```bash\n{command}\n```" in section
        words = shlex.split(command.replace("${OUT:-/tmp/gpu}", "/tmp/gpu"))
        script = words.index("benchmarks/gpu_checks.py")
        assert words[script - 1] == "python3" and "PYTHONPATH=." in words[:script]
        args = gpu_checks.build_parser().parse_args(words[script + 1 :])
        assert args.budget <= (400 if args.plan == "first" else 240)
        assert int(words[words.index("timeout") + 1]) > args.budget  # the script stops itself before the kill
    assert "runs first" in section and "docs/benchmarks.md" in section
    readme = README.read_text()  # the front page names the first command and links to the section
    assert f"```bash\n{FIRST_COMMAND}\n```" in readme and "docs/development.md#gpu-checks" in readme


def test_the_gpu_tests_step_runs_every_gpu_marked_test_file_and_env_checks_the_declared_dependencies() -> None:
    files = gpu_test_files()
    assert "tests/memory/test_unified.py" in files and "tests/sampling/test_device_sampler.py" in files
    assert "tests/test_gpu_checks.py" not in files
    declared = declared_dependencies()
    assert declared == ["torch", "numpy", "numba", "scipy", "torch_geometric", "click", "rich", "yaml"]
    assert all(importlib.util.find_spec(name) is not None for name in declared)  # import names, as env looks them up


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


def test_without_a_gpu_every_step_reports_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(gpu_checks, "detect_gpus", lambda: (0, [], "cpu"))
    output = tmp_path / "out-dir"
    output.mkdir()
    assert gpu_checks.main(["--plan", "first", "--output", str(output), "--epoch-nodes", "500000"]) == 0
    report = json.loads((output / "gpu_checks.json").read_text())
    assert report["options"]["epoch_nodes"] == 500_000 and report["complete"]
    assert [row["step"] for row in report["checks"]] == list(FIRST)
    assert all(row["status"] == "skipped" and "no CUDA device" in row["detail"] for row in report["checks"])
    table = (output / "gpu_checks.md").read_text()
    assert table.count("| skipped | no CUDA device on this machine |") == len(FIRST)
    assert capsys.readouterr().out.rstrip().endswith(table.rstrip())  # the table is printed last


@pytest.mark.slow
def test_the_cpu_twins_run_every_step_of_plan_first(tmp_path: Path) -> None:
    """Each step of --plan first runs its own code on the CPU (small scale): every check passes there."""
    kept = gpu_plan.ESTIMATES.read_text() if gpu_plan.ESTIMATES.exists() else None
    code = gpu_checks.main(["--plan", "first", "--time-twins", "--scale", "0.02", "--output", str(tmp_path) + "/"])
    report = json.loads((tmp_path / "gpu_checks.json").read_text())
    assert code == 0 and report["complete"], report["checks"]
    assert set(report["steps"]) == set(FIRST)
    for name in FIRST:
        assert report["steps"][name]["status"] == "done", name
        rows = [row for row in report["checks"] if row["step"] == name]
        assert rows and all(row["status"] != "FAIL" for row in rows), rows
        if name != "pytest":  # the GPU tests themselves skip without CUDA
            assert any(row["status"] in ("pass", "measured") for row in rows), name
    assert (gpu_plan.ESTIMATES.read_text() if gpu_plan.ESTIMATES.exists() else None) == kept  # a scaled run keeps them
