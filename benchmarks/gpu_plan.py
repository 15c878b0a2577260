"""Which GPU steps one short call runs (``--plan first`` / ``--plan rerun``), their estimates, and the markdown table.

Estimates, in this order of trust: the seconds a GPU run recorded for the step (a previous ``gpu_checks.json``
whose ``devices`` name a GPU), else the step's CPU twin timed on a developer machine (``--time-twins``, kept in
``benchmarks/results/gpu_estimates.json``, at the step's ``twin_scale`` of its size) times :data:`FACTOR`, else its
written guess. Every estimate says which of the three it is.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

ESTIMATES = Path(__file__).parent / "results" / "gpu_estimates.json"
PREVIOUS = Path(__file__).parent / "results" / "gpu_checks.json"  # where the JSON a GPU call sent back is put
FIRST_BUDGET_S = 400
RERUN_BUDGET_S = 230
FACTOR = 1.0
FACTOR_WHY = (
    "GPU seconds ~ 1.0 x the CPU twin's: the twin runs the step's own code on a 2-core VM at its twin_scale of the "
    "step's size (1 for env and pytest, 1/4 for train, predict and headline, 1/20 for the 2M-node epoch); the GPU "
    "machine runs the full size with 16 cores for the CPU parts (generation, reordering) and the GPU for the rest, "
    "and pays Triton compiles and the GPU tests the twin skips. A guess until a GPU run's seconds replace it"
)
# the value order: correctness (tests, training, predict) before speed (the headline figures), then the rest
VALUE_ORDER: tuple[str, ...] = (
    "env", "pytest", "train", "predict", "headline", "epoch",
    "modes", "bigreg", "link", "typed", "temporal", "sampler", "topology", "resume", "gat", "cachetrace", "cnr",
    "rows", "gather", "alignment", "trace", "hybrid", "multigpu",
)  # fmt: skip
FIRST: tuple[str, ...] = VALUE_ORDER[:6]
# one command for each call, run from the checkout's root on the GPU machine; docs/development.md (GPU checks) quotes them verbatim
FIRST_COMMAND = 'PYTHONPATH=. PYTHONUNBUFFERED=1 timeout 440 python3 benchmarks/gpu_checks.py --plan first --budget 400 --output "${OUT:-/tmp/gpu}/"'
RERUN_COMMAND = (
    "PYTHONPATH=. PYTHONUNBUFFERED=1 timeout 270 python3 benchmarks/gpu_checks.py --plan rerun --budget 230 "
    '--previous benchmarks/results/gpu_checks.json --output "${OUT:-/tmp/gpu}/"'
)


def load_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; SystemExit naming the file when it is missing or not a JSON object."""
    try:
        value = json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"gpu_checks: --previous {path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise SystemExit(f"gpu_checks: --previous {path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(value, dict) or not isinstance(value.get("steps", {}), dict):
        raise SystemExit(f"gpu_checks: --previous {path}: expected a gpu_checks JSON object with 'steps'")
    return value


def gpu_seconds(previous: dict[str, Any] | None) -> dict[str, float]:
    """Seconds per step measured by a GPU run (``previous`` names a device; the step ran, it was not skipped)."""
    if not previous or not previous.get("devices"):
        return {}
    return {
        name: float(step["seconds"])
        for name, step in previous.get("steps", {}).items()
        if step.get("status") != "skipped" and step.get("seconds")
    }


def resolve_estimates(
    guesses: dict[str, int], previous: dict[str, Any] | None, twins: dict[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """``{step: {"seconds": int, "source": "gpu" | "cpu twin" | "guess", ...}}`` for every step of ``guesses``."""
    measured = gpu_seconds(previous)
    twin_steps = (twins or {}).get("steps", {})
    factor = float((twins or {}).get("factor", FACTOR))
    out: dict[str, dict[str, Any]] = {}
    for name, guess in guesses.items():
        if name in measured:
            out[name] = {"seconds": math.ceil(measured[name]), "source": "gpu"}
        elif name in twin_steps:
            twin = twin_steps[name]
            seconds = math.ceil(twin["twin_s"] * factor)
            out[name] = {"seconds": seconds, "source": "cpu twin", "twin_s": twin["twin_s"], "scale": twin["scale"]}
        else:
            out[name] = {"seconds": guess, "source": "guess"}
    return out


def select_rerun(
    previous: dict[str, Any], estimates: dict[str, dict[str, Any]], budget_s: float, gpus_needed: dict[str, int]
) -> tuple[list[str], list[str]]:
    """(steps to run, steps left out) for ``--plan rerun``: first what failed or was skipped in ``previous`` (not
    those that need more GPUs than it had), then the steps it never ran, each group in value order; a step is
    taken when its estimate fits in what is left of ``budget_s``."""
    ran = previous.get("steps", {})
    had = len(previous.get("devices") or []) or 1
    failed = {
        name
        for name, step in ran.items()
        if step.get("status") != "done" or any(r["status"] == "FAIL" for r in previous.get("checks", []) if r.get("step") == name)
    }  # fmt: skip
    failed |= {row["step"] for row in previous.get("checks", []) if row.get("status") in ("FAIL", "skipped")}
    wanted = [n for n in VALUE_ORDER if n in failed and gpus_needed[n] <= had]
    wanted += [n for n in VALUE_ORDER if n not in ran and gpus_needed[n] <= had]
    chosen: list[str] = []
    left = budget_s
    for name in wanted:
        if estimates[name]["seconds"] <= left:
            chosen.append(name)
            left -= estimates[name]["seconds"]
    return chosen, [name for name in wanted if name not in chosen]


def carried_over(previous: dict[str, Any], rerun: list[str]) -> dict[str, Any]:
    """What a ``--plan rerun`` output starts from, so that it is the record of every call so far: the steps and
    rows of ``previous`` that this call does not run again (each step with the date of the call that ran it),
    and the list of earlier calls. A later rerun then reads one file for what failed and what never ran."""
    date = previous.get("date")
    calls = previous.get("calls") or [
        {"date": date, "plan": previous.get("plan"), "steps": list(previous.get("steps", {}))}
    ]
    return {
        "steps": {
            name: {"date": date, **step} for name, step in previous.get("steps", {}).items() if name not in rerun
        },
        "checks": [row for row in previous.get("checks", []) if row.get("step") not in rerun],
        "calls": list(calls),
    }


def markdown_table(report: dict[str, Any]) -> str:
    """The report as a markdown table (one line per row; a step's seconds and estimate on its first row)."""
    devices = ", ".join(report.get("devices") or []) or "no CUDA device"
    lines = [
        f"GPU checks, plan {report.get('plan')}, {report.get('date')}, {devices}, torch {report.get('torch')}",
        "",
        "| step | seconds (estimate, source) | row | status | detail |",
        "| --- | --- | --- | --- | --- |",
    ]
    shown: set[str] = set()
    for row in report.get("checks", []):
        name = row["step"]
        step = report["steps"].get(name, {})
        timing = (
            "" if name in shown else f"{step.get('seconds')} ({step.get('estimate_s')}, {step.get('estimate_source')})"
        )
        shown.add(name)
        detail = str(row["detail"]).replace("|", "/")
        lines.append(f"| {'' if timing == '' else name} | {timing} | {row['check']} | {row['status']} | {detail} |")
    return "\n".join(lines) + "\n"


def save_twins(path: Path, twins: dict[str, dict[str, float]], machine: str) -> None:
    """Keep the CPU twins' seconds (merged into what ``path`` holds), the factor and the machine in ``path``."""
    old = json.loads(path.read_text()) if path.exists() else {}
    steps = {**old.get("steps", {}), **twins}
    payload = {"factor": FACTOR, "factor_why": FACTOR_WHY, "machine": machine, "steps": steps}
    path.write_text(json.dumps(payload, indent=2) + "\n")
