"""Every GPU check and GPU benchmark of graphtier, made for short GPU windows (calls of a few minutes).

Each step runs in its own subprocess (a sticky CUDA error fails that step, not the rest). After every step
its rows are printed and the JSON (``--output``, a file or a directory) is rewritten, so a call stopped
at its time limit leaves everything measured so far; rows a step emitted before it was killed are kept.
``--budget SECONDS`` stops the run itself in time: a step is not started when its estimate does not fit
in what is left, and a running step is stopped when the budget is spent.

A row is a **check** (``pass`` or ``FAIL`` against its reference) or a **benchmark** (``measured``: a
figure, never "pass"); ``skipped`` says why (no GPU, one GPU where two are needed, input missing, budget).

Plans, one call each, on the GPU machine from the checkout's root (``PYTHONPATH=.``, nothing installed):

    ``--plan first`` (``--budget 400``): the steps of most value, correctness before speed:
{first}
    ``--plan rerun --previous JSON`` (``--budget 230``): what failed or was skipped in JSON (the file the first
    call wrote), then the steps no call has run yet, in this order of value, as far as the budget goes.

Estimates come from a GPU run's seconds, else the CPU twin's (``--time-twins``: each step's own code run on
the CPU, at a stated scale) times a stated factor, else a guess; ``--dry-run`` lists them with their source.
The JSON and a markdown table beside it (same name, ``.md``) are rewritten after every step; the table is
printed last.

Without CUDA every step is reported skipped (exit 0): nothing is measured. ``--steps a,b`` runs a subset.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import platform
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
sys.path.insert(0, str(Path(__file__).parent))  # gpu_plan beside this file, when imported from the tests
import gpu_plan  # noqa: E402
from gpu_plan import ESTIMATES, FIRST, VALUE_ORDER, load_json, markdown_table, resolve_estimates  # noqa: E402

STATUSES = ("pass", "FAIL", "measured", "skipped")


@dataclass(frozen=True)
class Step:
    """One step: ``target`` is ``module:function`` (run in a subprocess), ``estimate_s`` its guessed seconds
    on the GPU machine (used until a CPU twin or a GPU run gives a better one), ``min_gpus`` the CUDA devices
    it needs, ``twin_scale`` the size at which its CPU twin runs (0: the step has no CPU twin)."""

    name: str
    label: str
    target: str
    estimate_s: int
    min_gpus: int = 1
    twin_scale: float = 0.0


STEPS: tuple[Step, ...] = (
    Step("env", "import graphtier and the steps with this machine's packages", "gpu_steps_first:environment", 10, 1, 1.0),
    Step("pytest", "pytest -m gpu on the data-path tests", "gpu_steps_first:pytest_gpu", 150, 1, 1.0),
    Step("train", "train --features-on tiered --gpu-budget 10% --sample-on gpu vs cpu-gather", "gpu_steps_train:tiered_training", 90, 1, 0.25),
    Step("predict", "predict and --full-inference on CUDA vs the CPU", "gpu_steps_train:predict_cuda", 45, 1, 0.25),
    Step("headline", "zero-copy gather vs one pinned copy_ of the same bytes", "gpu_steps_first:headline_gather", 30, 1, 0.25),
    Step("epoch", "GPU-path epoch vs cpu-gather (--epoch-nodes), hot-tier share", "gpu_steps:epoch", 240, 1, 0.05),
    Step("modes", "every feature mode on CUDA equals plain indexing", "gpu_steps:feature_modes", 60),
    Step("bigreg", "values through a 2.25 GiB host registration", "gpu_steps_train:big_registration", 60),
    Step("multigpu", "cuda:1 device index, NCCL training on cuda:0,cuda:1", "gpu_steps_train:multi_gpu", 90, 2),
    Step("resume", "checkpoint resume with --device cuda", "gpu_steps_train:resume", 60),
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
    Step("temporal", "temporal GPU sampler vs TemporalNeighborSampler (issue 38)", "gpu_steps:temporal_sampler", 60),
    Step("link", "train --task link, GPU sampling + tiered vs CPU (issue 25)", "gpu_steps_train:link_training", 90),
)  # fmt: skip
BY_NAME = {step.name: step for step in STEPS}
PLAN_NAMES = ("first", "rerun")


def first_lines() -> str:
    """One line per step of ``--plan first``: name, guessed seconds, what it checks."""
    return "\n".join(f"      {n:<9} {BY_NAME[n].label}" for n in FIRST)


__doc__ = (__doc__ or "").replace("{first}", first_lines())


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
        self.scale: float = float(options.get("scale", 1.0))  # < 1 in a CPU twin: sizes scale down
        self._rows_file = rows_file

    @property
    def device(self) -> Any:
        """The step's device: the current CUDA device, or the CPU in a CPU twin (``options["device"] == "cpu"``)."""
        import torch

        if self.options.get("device") == "cpu":
            return torch.device("cpu")
        return torch.device("cuda", torch.cuda.current_device())

    @property
    def on_gpu(self) -> bool:
        return self.options.get("device") != "cpu"

    def sized(self, count: int, least: int = 1) -> int:
        """``count`` at this run's scale (at least ``least``)."""
        return max(least, int(count * self.scale))

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
    if path.suffix == ".json" and "steps" in report:  # the markdown table beside it, as complete as the JSON
        table = path.with_suffix(".md")
        tmp = table.with_name(f".{table.name}.tmp-{os.getpid()}")
        tmp.write_text(markdown_table(report))
        os.replace(tmp, table)


def print_rows(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        print(f"  {row['status']:<8}  {row['check']}: {row['detail']}", flush=True)


def select_steps(args: argparse.Namespace, estimates: dict[str, dict[str, Any]]) -> tuple[list[Step], list[str]]:
    """The steps this call runs, and (``--plan rerun``) the steps left for a later call."""
    later: list[str] = []
    if args.plan == "first":
        names: list[str] = list(FIRST)
    elif args.plan == "rerun":
        previous = load_json(Path(args.previous))
        names, later = gpu_plan.select_rerun(previous, estimates, args.budget or gpu_plan.RERUN_BUDGET_S,
                                    {s.name: s.min_gpus for s in STEPS})  # fmt: skip
    elif args.steps == "all":
        names = list(VALUE_ORDER)
    else:
        names = [name.strip() for name in args.steps.split(",") if name.strip()]
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        raise SystemExit(f"gpu_checks: unknown --steps {', '.join(unknown)} (known: {', '.join(BY_NAME)})")
    if args.skip_pytest:
        names = [name for name in names if name != "pytest"]
    return [BY_NAME[name] for name in names], later


def run_plan(
    steps: list[Step],
    options: dict[str, Any],
    output: Path,
    report: dict[str, Any],
    budget_s: float | None,
    gpus: int,
    runner: Callable[..., dict[str, Any]] = run_step,
    estimates: dict[str, dict[str, Any]] | None = None,
) -> int:
    """Run ``steps`` one by one, rewriting ``output`` and its markdown table (``.md``) after each, and print
    the table last; returns 1 when any row is FAIL. In a CPU twin (``options["device"] == "cpu"``) each
    step with a twin runs on the CPU at its ``twin_scale``."""
    started = time.perf_counter()
    estimates = estimates or {s.name: {"seconds": s.estimate_s, "source": "guess"} for s in steps}
    twin = options.get("device") == "cpu"
    report.setdefault("checks", [])
    report.setdefault("steps", {})
    write_json(output, report)
    for step in steps:
        left = None if budget_s is None else budget_s - (time.perf_counter() - started)
        estimate = estimates[step.name]["seconds"]
        print(f"== {step.name}: {step.label}", flush=True)
        if twin and not step.twin_scale:
            result = _skipped(step, "no CPU twin: the step needs CUDA throughout")
        elif not twin and gpus < step.min_gpus:
            why = "no CUDA device on this machine" if gpus == 0 else f"needs {step.min_gpus} GPUs, found {gpus}"
            result = _skipped(step, why)
        elif left is not None and estimate > left:
            result = _skipped(step, f"not started: estimate {estimate} s > {left:.0f} s left of --budget")
        else:
            step_options = {**options, "scale": step.twin_scale * options.get("scale", 1.0)} if twin else options
            result = runner(step, step_options, left)
        _record(report, step, result, estimates[step.name])
        print_rows(result["rows"])
        write_json(output, report)
        if result["status"] == "interrupted":
            print(f"gpu_checks: interrupted; the rows so far are in {output}", file=sys.stderr)
            break
    else:
        report["complete"] = True
        write_json(output, report)
    print(f"saved {output} and {output.with_suffix('.md')}\n")
    print(markdown_table(report), flush=True)
    if not report.get("complete"):
        return 130
    return 1 if any(row["status"] == "FAIL" for row in report["checks"]) else 0


def _skipped(step: Step, why: str) -> dict[str, Any]:
    return {
        "status": "skipped",
        "seconds": 0.0,
        "data": {},
        "rows": [{"check": step.label, "status": "skipped", "detail": why}],
    }


def _record(report: dict[str, Any], step: Step, result: dict[str, Any], estimate: dict[str, Any]) -> None:
    report["checks"].extend({"step": step.name, **row} for row in result["rows"])
    report["steps"][step.name] = {
        "date": report.get("date"), "status": result["status"], "seconds": result.get("seconds"),
        "estimate_s": estimate["seconds"],
        "estimate_source": estimate["source"], "data": result.get("data", {}),
    }  # fmt: skip


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plan", choices=PLAN_NAMES, help="run one planned call (see above)")
    parser.add_argument("--previous", default=None, help="the JSON of an earlier call: --plan rerun reads what "
                        "failed or was skipped there; its GPU seconds replace the estimates")  # fmt: skip
    parser.add_argument("--steps", default="all", help=f"comma-separated subset of: {', '.join(VALUE_ORDER)}")
    parser.add_argument("--skip-pytest", action="store_true")
    parser.add_argument("--budget", type=float, default=None, help="seconds this call may take (stop in time)")
    parser.add_argument("--table-mib", type=int, default=1024)
    parser.add_argument(
        "--epoch-nodes", default="2M", help="nodes of the epoch step's generated graph: 500000, 500k, 10M"
    )
    parser.add_argument("--output", default=str(RESULTS), help="JSON file, or a directory for gpu_checks.json")
    parser.add_argument("--dry-run", action="store_true", help="list the steps and estimates, run nothing")
    parser.add_argument("--time-twins", action="store_true", help=f"run the steps' CPU twins, keep their seconds "
                        f"in {ESTIMATES.relative_to(ROOT)} (--output: the twins' JSON)")  # fmt: skip
    parser.add_argument("--scale", type=float, default=1.0, help="CPU twins: multiply every twin's scale (tests)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--rows-file", help=argparse.SUPPRESS)
    parser.add_argument("--options", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.child:
        return run_child(args.child, Path(args.rows_file), json.loads(args.options))
    if args.plan == "rerun" and args.previous is None:
        raise SystemExit("gpu_checks: --plan rerun needs --previous JSON (the gpu_checks.json of the earlier call)")
    if args.budget is None and args.plan is not None and not args.time_twins:
        args.budget = float(gpu_plan.FIRST_BUDGET_S if args.plan == "first" else gpu_plan.RERUN_BUDGET_S)
    previous_path = Path(args.previous) if args.previous else (RESULTS if RESULTS.exists() else None)
    previous = load_json(previous_path) if previous_path else None
    twins = json.loads(ESTIMATES.read_text()) if ESTIMATES.exists() else None
    estimates = resolve_estimates({s.name: s.estimate_s for s in STEPS}, previous, twins)
    steps, later = select_steps(args, estimates)
    epoch_nodes = parse_count(args.epoch_nodes)
    output = output_path(args.output)
    if args.dry_run:
        for step in steps:
            est = estimates[step.name]
            print(
                f"{step.name:<11} ~{est['seconds']:>4} s ({est['source']:<8})  needs {step.min_gpus} GPU(s)  {step.label}"
            )
        print(f"total ~{sum(estimates[s.name]['seconds'] for s in steps)} s of --budget {args.budget}; output {output}; "
              f"epoch nodes {epoch_nodes:,}" + (f"; left for a later call: {', '.join(later)}" if later else ""))  # fmt: skip
        return 0
    signal.signal(signal.SIGTERM, _interrupt)  # a `timeout` kill still writes the rows measured so far
    gpus, names, torch_version = detect_gpus()
    options = {"gpus": gpus, "table_mib": args.table_mib, "epoch_nodes": epoch_nodes, "root": str(ROOT)}
    if args.time_twins:
        options.update(device="cpu", scale=args.scale)
        steps = [s for s in steps if s.twin_scale] or steps
    elif gpus == 0:
        print("gpu_checks: no CUDA device on this machine; every step is reported skipped, nothing is measured")
    report: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "devices": [] if args.time_twins else names, "torch": torch_version, "plan": args.plan,
        "budget_s": args.budget, "options": options, "left_for_later": later, "complete": False,
    }  # fmt: skip
    if args.plan == "rerun":  # the output is the record of every call: the previous one's other steps stay
        report.update(gpu_plan.carried_over(load_json(Path(args.previous)), [s.name for s in steps]))
    report.setdefault("calls", []).append({"date": report["date"], "plan": args.plan, "steps": [s.name for s in steps]})
    code = run_plan(steps, options, output, report, args.budget, gpus, estimates=estimates)
    if args.time_twins and args.scale == 1.0 and code == 0:
        measured = {n: {"twin_s": s["seconds"], "scale": BY_NAME[n].twin_scale} for n, s in report["steps"].items()
                    if s["status"] == "done"}  # fmt: skip
        gpu_plan.save_twins(ESTIMATES, measured, platform.node() + f", {os.cpu_count()} cores, torch {torch_version}")
        print(f"saved the twins' seconds in {ESTIMATES}")
    return code


if __name__ == "__main__":
    sys.exit(main())
