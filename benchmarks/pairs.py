"""The same-run pairs harness shared by the graphtier-against-DGL training benchmarks (bench_hetero.py, bench_link.py).

Each repetition trains once with graphtier (``graphtier train --report``) and once with a DGL script (one JSON
line on stdout) on the same dataset and options, alternating which side goes first; a row holds both results, the
mean epoch seconds after the first epoch and their ratio DGL / graphtier; the results go to one JSON file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_epoch import run_json, thread_env  # noqa: E402


def add_run_options(parser: argparse.ArgumentParser, json_path: Path) -> None:
    """The options of the run itself: ``--threads`` (both sides), ``--pairs``, ``--json`` (default ``json_path``)
    and ``--dgl-wait-policy``."""
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--pairs", type=int, default=1, help="repetitions of (graphtier, DGL) in this run")
    parser.add_argument("--json", type=Path, default=json_path)
    parser.add_argument(
        "--dgl-wait-policy",
        choices=("PASSIVE", "ACTIVE"),
        default=None,
        help="run DGL with this OMP_WAIT_POLICY (default: the environment as it is; graphtier sets PASSIVE for itself)",
    )


def check_run_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Exit through ``parser`` unless ``--epochs`` >= 2 (the first is left out of the mean) and ``--pairs`` >= 1."""
    if args.epochs < 2:
        parser.error(f"--epochs: expected at least 2 (the first is left out of the mean), found {args.epochs}")
    if args.pairs < 1:
        parser.error(f"--pairs: expected at least 1, found {args.pairs}")


def report_result(report: dict[str, Any], final: dict[str, Any]) -> dict[str, Any]:
    """The epoch numbers of a ``graphtier train`` report (docs/report-format.md): seconds, losses and batches per
    epoch, the given ``final`` numbers, then the mean seconds per stage after the first epoch."""
    epochs = report["epochs"]
    stages = {
        stage: statistics.mean(e["stage_seconds"][stage] for e in epochs[1:]) for stage in epochs[0]["stage_seconds"]
    }
    return {
        "epoch_seconds": [e["stage_seconds"]["total"] for e in epochs],
        "epoch_losses": [e.get("loss") for e in epochs],
        "batches": [e.get("batches") for e in epochs],
        **final,
        "stage_seconds": stages,
    }


def last_json_line(stdout: str) -> dict[str, Any]:
    """The JSON line a DGL script prints last (warnings of DGL's imports may precede it)."""
    return json.loads(stdout.strip().splitlines()[-1])


def run_graphtier(
    command: Callable[[Path], list[str]], threads: int, result: Callable[[dict[str, Any]], dict[str, Any]]
) -> dict[str, Any]:
    """Run ``command(report path)`` on ``threads`` threads; ``result`` of its report and the ``wall_seconds``."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        start = time.perf_counter()
        run_json(command(report), thread_env(threads))
        wall = time.perf_counter() - start
        return dict(result(json.loads(report.read_text())), wall_seconds=wall)


def run_dgl(command: list[str], threads: int, wait_policy: str | None) -> dict[str, Any]:
    """Run the DGL ``command`` on ``threads`` threads; the JSON line it prints and the ``wall_seconds``."""
    env = thread_env(threads)
    # graphtier sets OMP_WAIT_POLICY=PASSIVE for itself; DGL runs as its users run it unless asked
    if wait_policy is not None:
        env["OMP_WAIT_POLICY"] = wait_policy
    start = time.perf_counter()
    output = run_json(command, env)
    return dict(last_json_line(output), wall_seconds=time.perf_counter() - start)


def make_row(repetition: int, ours: dict[str, Any], peer: dict[str, Any]) -> dict[str, Any]:
    """One repetition's row: both results, the mean epoch seconds after the first, their ratio DGL / graphtier."""
    ours_s = statistics.mean(ours["epoch_seconds"][1:])
    peer_s = statistics.mean(peer["epoch_seconds"][1:])
    return {
        "repetition": repetition,
        "first": "graphtier" if repetition % 2 == 0 else "dgl",
        "graphtier": ours,
        "dgl": peer,
        "graphtier_epoch_s": ours_s,
        "dgl_epoch_s": peer_s,
        "ratio_dgl_over_graphtier": peer_s / ours_s,
    }


def number(value: float | None, width: int) -> str:
    """``value`` with 3 decimals in ``width`` characters, '-' when None."""
    return f"{value:{width}.3f}" if value is not None else f"{'-':>{width}s}"


def epoch_medians(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over the rows of :func:`make_row`: epoch seconds of both sides and the ratio DGL / graphtier."""
    return {
        "graphtier_epoch_s": statistics.median(r["graphtier_epoch_s"] for r in rows),
        "dgl_epoch_s": statistics.median(r["dgl_epoch_s"] for r in rows),
        "ratio_dgl_over_graphtier": statistics.median(r["ratio_dgl_over_graphtier"] for r in rows),
    }


def dgl_python(venv: Path) -> Path:
    """The python of the DGL ``venv``; exits with how to build it when there is none."""
    python = venv / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{python}: no DGL venv; build it with bash ../shared/baselines/make-dgl-venv.sh {venv}")
    return python


def run_pairs(
    pairs: int,
    ours: Callable[[], dict[str, Any]],
    peer: Callable[[], dict[str, Any]],
    header: str,
    format_row: Callable[[dict[str, Any]], str],
) -> list[dict[str, Any]]:
    """``pairs`` rows of :func:`make_row`, graphtier first in the even repetitions; prints ``header`` and each row."""
    print(header, flush=True)
    rows = []
    for repetition in range(pairs):
        if repetition % 2 == 0:
            ours_result = ours()
            peer_result = peer()
        else:
            peer_result = peer()
            ours_result = ours()
        rows.append(make_row(repetition, ours_result, peer_result))
        print(format_row(rows[-1]), flush=True)
    return rows


def save_results(
    path: Path,
    dataset: Path,
    graph: dict[str, Any],
    options: dict[str, Any],
    rows: list[dict[str, Any]],
    medians: dict[str, float],
    wait_policy: str | None,
) -> None:
    """Write the run (machine, command, ``dataset`` and its ``graph`` entries, ``options``, rows, medians) to
    ``path`` as JSON."""
    path.write_text(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d %H:%M"),
                "machine": f"{platform.node()} {os.cpu_count()} cores",
                "command": " ".join(sys.argv),
                "dataset": str(dataset),
                **graph,
                "options": options,
                "rows": rows,
                "median": medians,
                "load_average": os.getloadavg(),
                "dgl_wait_policy": wait_policy or os.environ.get("OMP_WAIT_POLICY"),
            },
            indent=2,
        )
    )
    print(f"saved {path}")
