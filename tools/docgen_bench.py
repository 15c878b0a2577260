"""The benchmark pages, generated from ``benchmarks/results/*.json`` (tools/mkdocs_hooks.py).

One page per area; each series of result files (the same benchmark run on several days) shows its current
result, the file with the latest recorded date, with its date, machine and command as the file records them,
and its numbers as tables, then the earlier files of the series. ``docs/benchmarks.md`` stays the dated log.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
MAX_ROWS = 30
MAX_COLUMNS = 12


@dataclass(frozen=True)
class Series:
    title: str
    pattern: str  # a glob in benchmarks/results
    script: str  # the benchmark that writes it


# area slug -> (title, its series)
AREAS: dict[str, tuple[str, tuple[Series, ...]]] = {
    "epoch": (
        "Epoch time",
        (
            Series("Node classification epochs against DGL", "epoch*.json", "benchmarks/bench_epoch.py"),
            Series("Link prediction epochs against DGL", "link*.json", "benchmarks/bench_link.py"),
            Series("Typed (heterogeneous) epochs against DGL", "hetero*.json", "benchmarks/bench_hetero.py"),
            Series("Step floor", "step_floor*.json", "benchmarks/step_floor.py"),
        ),
    ),
    "sampling": (
        "Neighbour sampling",
        (
            Series("CPU sampler", "bench_sample.json", "benchmarks/bench_sample.py"),
            Series("Against DGL's sampler", "sample-dgl*.json", "benchmarks/bench_sample_dgl.py"),
            Series("Device sampler", "bench_device_sample.json", "benchmarks/bench_device_sample.py"),
        ),
    ),
    "gather": (
        "Feature gather",
        (
            Series("Gather kernels", "gather.json", "benchmarks/bench_gather.py"),
            Series("Staging arena", "arena-gather.json", "benchmarks/bench_gather.py"),
            Series("Gather traces", "gather-trace*.json", "benchmarks/bench_gather.py"),
            Series("Aggregation kernels", "aggregate.json", "benchmarks/bench_aggregate.py"),
            Series("Hybrid CPU/GPU", "hybrid.json", "benchmarks/bench_hybrid.py"),
        ),
    ),
    "tiering": (
        "Hotness scores and tiering",
        (
            Series("Hit ratio of each score", "bench_hotness*.json", "benchmarks/bench_hotness.py"),
            Series("Cost of the scores", "bench_scores.json", "benchmarks/bench_scores.py"),
            Series("Cost of fwr", "bench_fwr_cost.json", "benchmarks/bench_fwr_cost.py"),
            Series("Reorder", "bench_reorder.json", "benchmarks/bench_reorder.py"),
            Series("Disk tier", "disk_tier*.json", "benchmarks/bench_disk_tier.py"),
        ),
    ),
    "scale": (
        "Scale",
        (
            Series("One billion edges", "scale_1b*.json", "benchmarks/bench_scale.py"),
            Series("Import", "import.json", "benchmarks/bench_import.py"),
            Series("Generate", "generate.json", "benchmarks/bench_generate.py"),
        ),
    ),
    "accuracy": (
        "Accuracy",
        (
            Series("Cora and a synthetic graph", "accuracy.json", "benchmarks/bench_accuracy.py"),
            Series("heco-acm (typed models)", "acm_accuracy*.json", "benchmarks/acm_accuracy.py"),
            Series("GCN degree normalisation", "gcn_degrees*.json", "benchmarks/bench_gcn_degrees.py"),
        ),
    ),
}


def _is_record_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def _records(value: Any) -> list[dict[str, Any]] | None:
    """A list of dicts as it is; a dict of >= 2 dicts as records with a ``key`` column; else None."""
    if _is_record_list(value):
        return value
    if not isinstance(value, dict):
        return None
    inner = {key: item for key, item in value.items() if isinstance(item, dict)}
    if len(inner) < 2 or any(_records(item) is not None for item in inner.values()):
        return None  # fewer than 2 records, or records nested one level further down: those are the tables
    return [{"key": key, **item} for key, item in inner.items()]


def _tables(data: Any, path: str = "") -> list[tuple[str, list[dict[str, Any]]]]:
    """Every record list of ``data`` (breadth first, not inside another record list), with its dotted path."""
    found = _records(data)
    if found is not None:
        nested = [next((v for v in record.values() if _is_record_list(v)), None) for record in found]
        if all(inner is not None for inner in nested):  # runs of rows: the rows are the figures
            return [(f"{path}[].rows", [row for inner in nested for row in inner])]  # type: ignore[union-attr]
        return [(path, found)]
    tables: list[tuple[str, list[dict[str, Any]]]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if not isinstance(value, (dict, list)):
                continue
            tables += _tables(value, f"{path}.{key}" if path else key)
    return tables


def _flatten(record: dict[str, Any], prefix: str = "") -> dict[str, str]:
    cells: dict[str, str] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            cells.update(_flatten(value, f"{name}."))
        elif _is_record_list(value):
            cells[name] = f"{len(value)} entries"
        elif isinstance(value, list):
            shown = [_number(item) for item in value[:4]]
            cells[name] = ", ".join(shown) + (f", ... ({len(value)})" if len(value) > 4 else "")
        else:
            cells[name] = _number(value)
    return cells


def _number(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower() if value is not None else ""
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", r"\|").replace("<", "&lt;").replace("\n", " ")


def _meta(data: Any, key: str, depth: int = 0) -> Any:
    """The first ``key`` of ``data`` (top level first, then the first entry of nested lists, 3 levels down)."""
    if depth > 3:
        return None
    if isinstance(data, list):
        return _meta(data[0], key, depth + 1) if data else None
    if not isinstance(data, dict):
        return None
    if data.get(key) not in (None, ""):
        return data[key]
    for value in data.values():
        if isinstance(value, (dict, list)):
            found = _meta(value, key, depth + 1)
            if found is not None:
                return found
    return None


def _load(path: Path) -> Any:
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return json.loads(path.read_text())


def _date(path: Path, data: Any) -> str:
    """The date the file records, else the one in its name, else its last commit's date (said so)."""
    recorded = _meta(data, "date")
    if recorded:
        return str(recorded)[:10]
    named = re.search(r"\d{4}-\d{2}-\d{2}", path.name)
    if named:
        return named.group(0)
    try:
        out = subprocess.run(
            ["git", "log", "-1", "--format=%cs", "--", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=30
        )
        committed = out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        committed = ""
    return f"{committed} (committed; not recorded in the file)" if committed else "not recorded"


def _table(records: list[dict[str, Any]]) -> list[str]:
    rows = [_flatten(record) for record in records[:MAX_ROWS]]
    columns: list[str] = []
    for row in rows:
        columns += [column for column in row if column not in columns]
    columns.sort(key=lambda column: column.count("."))  # the shallow figures first, stage breakdowns last
    dropped = len(columns) - MAX_COLUMNS
    columns = columns[:MAX_COLUMNS]
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    notes = []
    if len(records) > MAX_ROWS:
        notes.append(f"{len(records) - MAX_ROWS} more rows")
    if dropped > 0:
        notes.append(f"{dropped} more columns")
    if notes:
        lines += ["", f"({' and '.join(notes)} in the file.)"]
    return lines + [""]


def _series_lines(series: Series) -> list[str]:
    files = sorted(RESULTS.glob(series.pattern))
    if not files:
        return []
    dated = [(path, _load(path)) for path in files]
    # current: the latest recorded date; on a tie the file without a date or run suffix in its name
    dated.sort(key=lambda item: (_date(*item)[:10], item[0].stem == series.pattern.split("*")[0].split(".")[0]))
    current, data = dated[-1]
    command = _meta(data, "command")
    machine = _meta(data, "machine")
    lines = [
        f"## {series.title}",
        "",
        f"- file: `benchmarks/results/{current.name}`",
        f"- date: {_date(current, data)}",
        f"- machine: {_cell(str(machine)) if machine else 'not recorded in the file'}",
        f"- command: `{command}`" if command else f"- command: not recorded in the file (written by `{series.script}`)",
        "",
    ]
    note = _meta(data, "note")
    if isinstance(note, str):
        lines += [_cell(note), ""]
    tables = _tables(data)
    shown = ("date", "machine", "command", "note")
    scalars = (
        {k: v for k, v in data.items() if not isinstance(v, (dict, list)) and k not in shown}
        if isinstance(data, dict)
        else {}
    )
    if scalars:
        lines += [", ".join(f"{_cell(k)} {_cell(_number(v))}" for k, v in scalars.items()), ""]
    for path, records in tables[:4]:
        if path:
            lines += [f"`{path}`:", ""]
        lines += _table(records)
    if len(tables) > 4:
        lines += [f"({len(tables) - 4} more tables in the file.)", ""]
    if len(dated) > 1:
        lines += ["Earlier results of this series:", ""]
        lines += [f"- `{path.name}`: {_date(path, d)}" for path, d in reversed(dated[:-1])]
        lines.append("")
    return lines


def benchmark_pages() -> dict[str, str]:
    """``{"benchmarks/index.md": ..., "benchmarks/<area>.md": ...}``: the markdown of every benchmark page."""
    pages: dict[str, str] = {}
    index = [
        "# Benchmarks",
        "",
        "The current result of every benchmark, generated from `benchmarks/results/*.json` when the site is built:",
        "each figure with its date, machine and command as the result file records them. How each was measured",
        "and what changed between runs is in the [dated log](../benchmarks.md).",
        "",
        "| area | series | latest date |",
        "|---|---|---|",
    ]
    for slug, (title, series_list) in AREAS.items():
        body = [f"# {title}", "", "Generated from `benchmarks/results/` when the site is built; the", ""]
        body[2] = (
            "Generated from `benchmarks/results/` when the site is built; the [dated log](../benchmarks.md) "
            "tells how each was measured."
        )
        latest = []
        for series in series_list:
            lines = _series_lines(series)
            body += lines
            if lines:
                latest.append(lines[3].removeprefix("- date: ")[:10])
        pages[f"benchmarks/{slug}.md"] = "\n".join(body) + "\n"
        names = ", ".join(series.title for series in series_list)
        index.append(f"| [{title}]({slug}.md) | {names} | {max(latest) if latest else 'no results'} |")
    pages["benchmarks/index.md"] = "\n".join(index) + "\n"
    return pages
