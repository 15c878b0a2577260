"""Every GPU check and GPU benchmark of graphtier, made for short GPU windows (calls of a few minutes).

Each step runs in its own subprocess (a sticky CUDA error fails that step, not the rest). After every step
its rows are printed and the JSON (``--output``, a file or a directory) is rewritten, so a call stopped
at its time limit leaves everything measured so far; rows a step emitted before it was killed are kept.
``--budget SECONDS`` stops the run itself in time: a step is not started when its estimate does not fit
in what is left, and a running step is stopped when the budget is spent.

A row is a **check** (``pass`` or ``FAIL`` against its reference) or a **benchmark** (``measured``: a
figure, never "pass"); ``skipped`` says why (no GPU, one GPU where two are needed, input missing, budget).

Plans: named calls of at most 6 minutes each on one H100 by the estimates below (the estimates are
guesses until a GPU run has written each step's seconds into the JSON; correct them from there):

    timeout 470 python benchmarks/gpu_checks.py --plan 1 --budget 420 --output /tmp/gpu/plan1.json
    ... --plan 2, --plan 3, --plan 4 (one call each)

{plans}

Without CUDA every step is reported skipped (exit 0): nothing is measured. ``--dry-run`` lists what would
run. ``--steps a,b`` runs a subset by name.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "gpu_checks.json"
STATUSES = ("pass", "FAIL", "measured", "skipped")


@dataclass(frozen=True)
class Step:
    """One step: ``target`` is ``module:function`` (run in a subprocess), ``estimate_s`` its guessed seconds
    on one H100, ``min_gpus`` the CUDA devices it needs."""

    name: str
    label: str
    target: str
    estimate_s: int
    min_gpus: int = 1


STEPS: tuple[Step, ...] = (
    Step("pytest", "pytest -m gpu tests", "gpu_steps:pytest_gpu", 150),
    Step("modes", "every feature mode on CUDA equals plain indexing", "gpu_steps:feature_modes", 60),
    Step("bigreg", "values through a 2.25 GiB host registration", "gpu_steps_train:big_registration", 60),
    Step("multigpu", "cuda:1 device index, NCCL training on cuda:0,cuda:1", "gpu_steps_train:multi_gpu", 90, 2),
    Step("train", "train --features-on tiered --gpu-budget 10% vs cpu-gather", "gpu_steps_train:tiered_training", 90),
    Step("resume", "checkpoint resume with --device cuda", "gpu_steps_train:resume", 60),
    Step("predict", "predict and --full-inference on CUDA", "gpu_steps_train:predict_cuda", 45),
    Step("gat", "GAT on CUDA against the CPU", "gpu_steps_train:gat_cuda", 45),
    Step("cachetrace", "tiered+cache on the sampler's trace", "gpu_steps_train:cache_trace", 60),
    Step("cnr", "device sampler vs NeighborSampler (cnr-2000 or a generated twin)", "gpu_steps:device_sampler", 60),
    Step("gather", "gather benchmark", "gpu_steps:gather", 60),
    Step("rows", "row-size sweep (seed 003)", "gpu_steps:row_sizes", 120),
    Step("alignment", "alignment sweep (seed 003 Fig. 7)", "gpu_steps:alignment", 60),
    Step("trace", "tiered power-law trace", "gpu_steps:tiered_trace", 110),
    Step("hybrid", "hybrid CPU+GPU training", "gpu_steps:hybrid", 120),
    Step("topology", "tiered topology reads (issue 12)", "gpu_steps:topology", 90),
    Step("sampler", "GPU sampler vs CPU sampler (issue 12)", "gpu_steps:gpu_sampler", 120),
    Step("typed", "typed GPU sampler vs TypedNeighborSampler (issue 26)", "gpu_steps:typed_sampler", 30),
    Step("epoch", "end-to-end epoch, whole data path on the GPU (issue 12)", "gpu_steps:epoch", 240),
    Step("link", "train --task link, GPU sampling + tiered vs CPU (issue 25)", "gpu_steps_train:link_training", 90),
)
PLANS: dict[str, tuple[str, ...]] = {
    "1": ("pytest", "modes", "bigreg", "multigpu"),
    "2": ("train", "resume", "predict", "gat", "cachetrace", "cnr"),
    "3": ("gather", "rows", "alignment", "trace"),
    "4": ("hybrid", "topology", "sampler", "typed"),
    "5": ("epoch", "link"),
}
PLAN_LIMIT_S = 360


def plan_lines() -> str:
    """One line per plan: its steps and their estimated seconds."""
    by_name = {step.name: step for step in STEPS}
    return "\n".join(
        f"    --plan {plan}: {', '.join(names)} (~{sum(by_name[n].estimate_s for n in names)} s)"
        for plan, names in PLANS.items()
    )


__doc__ = (__doc__ or "").replace("{plans}", plan_lines())


def parse_count(text: str, option: str = "--epoch-nodes") -> int:
    """``"500000"`` -> 500000, ``"500k"`` -> 500000, ``"10M"`` -> 10000000, ``"1.5M"`` -> 1500000."""
    value = str(text).strip()
    scale = {"k": 10**3, "K": 10**3, "m": 10**6, "M": 10**6}.get(value[-1:], 1)
    digits = value[:-1] if scale != 1 else value
    try:
        count = float(digits) * scale
    except ValueError:
        raise SystemExit(f"gpu_checks: {option} expected a count like 500000, 500k or 10M, found {text!r}") from None
    if count < 1 or count != int(count):
        raise SystemExit(f"gpu_checks: {option} expected a positive whole count, found {text!r}")
    return int(count)


class SkipStep(Exception):
    """Raised by a step whose input or hardware is missing: the step is reported skipped with the message."""


class StepContext:
    """What a step sees in its subprocess: the options, the GPUs, and ``emit`` / ``check`` / ``measured``,
    which append one row (and ``save`` one data entry) to the step's rows file at once."""

    def __init__(self, options: dict[str, Any], rows_file: Path) -> None:
        self.options = options
        self.gpus: int = int(options.get("gpus", 0))
        self._rows_file = rows_file

    def _write(self, entry: dict[str, Any]) -> None:
        with open(self._rows_file, "a") as handle:
            handle.write(json.dumps(entry) + "\n")
            handle.flush()

    def emit(self, check: str, status: str, detail: str) -> None:
        if status not in STATUSES:
            raise ValueError(f"status {status!r} not one of {STATUSES}")
        self._write({"check": check, "status": status, "detail": detail})

    def check(self, check: str, ok: bool, detail: str) -> None:
        """A check row: pass or FAIL against its reference."""
        self.emit(check, "pass" if ok else "FAIL", detail)

    def measured(self, check: str, detail: str) -> None:
        """A benchmark row: a figure, never pass/FAIL."""
        self.emit(check, "measured", detail)

    def save(self, key: str, value: Any) -> None:
        """Keep ``value`` (JSON) under ``data[key]`` of the step in the output JSON."""
        self._write({"data": key, "value": value})

    def tmpdir(self) -> Path:
        """A scratch directory of this step (removed with the step's rows file by the parent)."""
        path = self._rows_file.parent / "scratch"
        path.mkdir(exist_ok=True)
        return path


def run_child(target: str, rows_file: Path, options: dict[str, Any]) -> int:
    """The subprocess side: import ``module:function`` and call it with a :class:`StepContext`."""
    for path in (str(ROOT), str(ROOT / "benchmarks")):
        if path not in sys.path:
            sys.path.insert(0, path)
    sys.modules.setdefault("gpu_checks", sys.modules[__name__])  # steps import SkipStep from the running harness
    ctx = StepContext(options, rows_file)
    module_name, _, function_name = target.partition(":")
    try:
        getattr(importlib.import_module(module_name), function_name)(ctx)
    except SkipStep as reason:
        ctx.emit(target, "skipped", str(reason))
    except Exception as exc:  # noqa: BLE001 - reported as a failed check, the parent goes on
        ctx.emit(target, "FAIL", f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300])
        return 1
    return 0


def _read_rows(rows_file: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    data: dict[str, Any] = {}
    if not rows_file.exists():
        return rows, data
    for line in rows_file.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a kill
            continue
        if "data" in entry:
            data[entry["data"]] = entry["value"]
        else:
            rows.append(entry)
    return rows, data


def run_step(step: Step, options: dict[str, Any], timeout_s: float | None) -> dict[str, Any]:
    """Run ``step`` in a subprocess (its own process group, killed whole on timeout or interrupt);
    returns ``{"status", "seconds", "rows", "data"}`` with every row it emitted."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"gpu-check-{step.name}-") as tmp:
        rows_file = Path(tmp) / "rows.jsonl"
        command = [sys.executable, str(Path(__file__).resolve()), "--child", step.target, "--rows-file",
                   str(rows_file), "--options", json.dumps(options)]  # fmt: skip
        proc = subprocess.Popen(command, cwd=ROOT, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
            status = "done" if code == 0 else f"exited with code {code}"
        except subprocess.TimeoutExpired:
            status = f"stopped after {timeout_s:.0f} s (--budget)"
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM (see main): keep what the step measured, then stop
            status = "interrupted"
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        rows, data = _read_rows(rows_file)
    if status != "done" and not any(row["status"] == "FAIL" for row in rows):
        rows.append({"check": step.label, "status": "FAIL", "detail": f"step {status}"})
    result = {"status": status, "seconds": round(time.perf_counter() - started, 1), "rows": rows, "data": data}
    return result


def detect_gpus() -> tuple[int, list[str], str]:
    """(number of CUDA devices, their names, torch version)."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return count, [torch.cuda.get_device_name(i) for i in range(count)], torch.__version__


def output_path(text: str) -> Path:
    """``--output``: a JSON file, or a directory (existing, or ending in /) that gets gpu_checks.json."""
    path = Path(text).expanduser()
    if path.is_dir() or text.endswith(("/", os.sep)):
        path = path / "gpu_checks.json"
    return path.resolve()


def write_json(path: Path, report: dict[str, Any]) -> None:
    """Replace ``path`` atomically (a kill leaves the previous complete file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, path)


def print_rows(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        print(f"  {row['status']:<8}  {row['check']}: {row['detail']}", flush=True)


def select_steps(args: argparse.Namespace) -> list[Step]:
    by_name = {step.name: step for step in STEPS}
    if args.plan is not None:
        names: list[str] = list(PLANS[args.plan])
    elif args.steps == "all":
        names = [step.name for step in STEPS]
    else:
        names = [name.strip() for name in args.steps.split(",") if name.strip()]
    unknown = [name for name in names if name not in by_name]
    if unknown:
        raise SystemExit(f"gpu_checks: unknown --steps {', '.join(unknown)} (known: {', '.join(by_name)})")
    if args.skip_pytest:
        names = [name for name in names if name != "pytest"]
    return [by_name[name] for name in names]


def run_plan(
    steps: list[Step],
    options: dict[str, Any],
    output: Path,
    report: dict[str, Any],
    budget_s: float | None,
    gpus: int,
    runner: Callable[..., dict[str, Any]] = run_step,
) -> int:
    """Run ``steps`` one by one, rewriting ``output`` after each; returns 1 when any row is FAIL."""
    started = time.perf_counter()
    report.setdefault("checks", [])
    report.setdefault("steps", {})
    write_json(output, report)
    for step in steps:
        left = None if budget_s is None else budget_s - (time.perf_counter() - started)
        print(f"== {step.name}: {step.label}", flush=True)
        if gpus < step.min_gpus:
            why = "no CUDA device on this machine" if gpus == 0 else f"needs {step.min_gpus} GPUs, found {gpus}"
            result = _skipped(step, why)
        elif left is not None and step.estimate_s > left:
            result = _skipped(step, f"not started: estimate {step.estimate_s} s > {left:.0f} s left of --budget")
        else:
            result = runner(step, options, left)
        _record(report, step, result)
        print_rows(result["rows"])
        write_json(output, report)
        if result["status"] == "interrupted":
            print(f"gpu_checks: interrupted; the rows so far are in {output}", file=sys.stderr)
            return 130
    report["complete"] = True
    write_json(output, report)
    print(f"saved {output}")
    return 1 if any(row["status"] == "FAIL" for row in report["checks"]) else 0


def _skipped(step: Step, why: str) -> dict[str, Any]:
    return {
        "status": "skipped",
        "seconds": 0.0,
        "data": {},
        "rows": [{"check": step.label, "status": "skipped", "detail": why}],
    }


def _record(report: dict[str, Any], step: Step, result: dict[str, Any]) -> None:
    report["checks"].extend({"step": step.name, **row} for row in result["rows"])
    report["steps"][step.name] = {
        "status": result["status"], "seconds": result.get("seconds"), "estimate_s": step.estimate_s,
        "data": result.get("data", {}),
    }  # fmt: skip


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", choices=sorted(PLANS), help="run one named call (see above)")
    parser.add_argument("--steps", default="all", help=f"comma-separated subset of: {', '.join(s.name for s in STEPS)}")
    parser.add_argument("--skip-pytest", action="store_true")
    parser.add_argument("--budget", type=float, default=None, help="seconds this call may take (stop in time)")
    parser.add_argument("--table-mib", type=int, default=1024)
    parser.add_argument(
        "--epoch-nodes", default="2M", help="nodes of the epoch step's generated graph: 500000, 500k, 10M"
    )
    parser.add_argument("--output", default=str(RESULTS), help="JSON file, or a directory for gpu_checks.json")
    parser.add_argument("--dry-run", action="store_true", help="list the steps that would run, run nothing")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--rows-file", help=argparse.SUPPRESS)
    parser.add_argument("--options", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.child:
        return run_child(args.child, Path(args.rows_file), json.loads(args.options))
    steps = select_steps(args)
    epoch_nodes = parse_count(args.epoch_nodes)
    output = output_path(args.output)
    if args.dry_run:
        for step in steps:
            print(f"{step.name:<11} ~{step.estimate_s:>4} s  needs {step.min_gpus} GPU(s)  {step.label}")
        print(f"total ~{sum(s.estimate_s for s in steps)} s; output {output}; epoch nodes {epoch_nodes:,}")
        return 0
    signal.signal(signal.SIGTERM, _interrupt)  # a `timeout` kill still writes the rows measured so far
    gpus, names, torch_version = detect_gpus()
    if gpus == 0:
        print("gpu_checks: no CUDA device on this machine; every step is reported skipped, nothing is measured")
    options = {"gpus": gpus, "table_mib": args.table_mib, "epoch_nodes": epoch_nodes, "root": str(ROOT)}
    report: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "devices": names, "torch": torch_version, "plan": args.plan, "budget_s": args.budget,
        "options": options, "complete": False,
    }  # fmt: skip
    return run_plan(steps, options, output, report, args.budget, gpus)


if __name__ == "__main__":
    sys.exit(main())
