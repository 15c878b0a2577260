"""Issue 13 item 4: train on a graph whose features do not fit the RAM budget (the disk tier), end to end.

Runs ``graphtier train DATASET --features-on tiered --ram-budget B`` for each budget (default ``2GB`` and
``auto``) as a separate process, one epoch of GraphSAGE at fanouts 15,10,5, batch 1024, and records per run:
epoch time, stage times, feature bytes by tier, and the memory of the training process, polled from
``/proc/PID/status`` every 0.2 s: peak RSS (``VmHWM``), and the largest anonymous (``RssAnon``: the process's
own allocations) and file-backed (``RssFile``: pages of memory-mapped files it touched, owned by the page
cache and dropped under pressure) parts. With ``--drop-caches`` (root) the OS page cache is dropped before
each run, so disk-tier rows are first read from the disk. Prints a table and saves JSON.

    python benchmarks/bench_disk_tier.py /path/to/reordered-10m-dataset --json benchmarks/results/disk_tier.json

Make the dataset with ``graphtier generate D --nodes 10M --avg-degree 20`` and ``graphtier reorder D D-fwr
--fanouts 15,10,5`` (hot rows first, so the RAM tier holds the hottest rows).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stage_memory import read_proc  # noqa: E402

GIB = 2**30


def read_status(pid: int) -> dict[str, int]:
    """VmHWM, VmRSS, RssAnon, RssFile of a process in bytes ({} once it has exited)."""
    return read_proc(f"/proc/{pid}/status", ("VmHWM", "VmRSS", "RssAnon", "RssFile"), 1024)


def drop_page_cache() -> bool:
    """Write back and drop the OS page cache (needs root); True when it was dropped."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as control:
            control.write("1\n")
        return True
    except OSError:
        return False


def run_one(dataset: Path, budget: str, args: argparse.Namespace) -> dict[str, Any]:
    """Train one epoch with ``--ram-budget budget``; the run report plus the polled memory figures."""
    cold = drop_page_cache() if args.drop_caches else False
    if args.drop_caches and not cold:
        print("  (could not drop the page cache: not root; the run starts with whatever is cached)")
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        command = [
            sys.executable,
            "-m",
            "graphtier",
            "train",
            str(dataset),
            "--model",
            "sage",
            "--fanouts",
            args.fanouts,
            "--batch-size",
            str(args.batch_size),
            "--epochs",
            "1",
            "--features-on",
            "tiered",
            "--ram-budget",
            budget,
            "--num-threads",
            str(args.threads),
            "--report",
            str(report_path),
        ]
        print("$ " + " ".join(command[1:]), flush=True)
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        peaks = {"VmHWM": 0, "RssAnon": 0, "RssFile": 0}
        done = threading.Event()

        def poll() -> None:
            while not done.is_set():
                status = read_status(proc.pid)
                for key, peak in peaks.items():
                    peaks[key] = max(peak, status.get(key, 0))
                done.wait(0.2)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        assert proc.stdout is not None
        output = []
        for line in proc.stdout:
            output.append(line)
            print("  " + line, end="", flush=True)
        proc.wait()
        done.set()
        poller.join()
        wall = time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"train failed with exit code {proc.returncode}:\n{''.join(output[-20:])}")
        report = json.loads(report_path.read_text())
    epoch = report["epochs"][0]
    return {
        "ram_budget": budget,
        "page_cache_dropped": cold,
        "command": " ".join(command[1:]),
        "epoch_seconds": epoch["stage_seconds"]["total"],
        "stage_seconds": epoch["stage_seconds"],
        "eval_seconds": epoch.get("eval_seconds"),
        "batches": epoch["batches"],
        "feature_bytes": epoch["feature_bytes"],
        "feature_bytes_by_tier": epoch["feature_bytes_by_tier"],
        "valid_acc": epoch.get("valid_acc"),
        "test_acc": report["final"]["test_acc"],
        "process_wall_seconds": wall,
        "peak_rss_bytes": peaks["VmHWM"],
        "peak_rss_anon_bytes": peaks["RssAnon"],
        "peak_rss_file_bytes": peaks["RssFile"],
        "tier_plan": next((line.strip() for line in output if "tier plan:" in line), None),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--budgets", default="2GB,auto", help="comma-separated --ram-budget values")
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--drop-caches",
        action="store_true",
        help="drop the OS page cache before each run (root only): the disk tier then starts cold",
    )
    parser.add_argument("--json", type=Path, default=Path(__file__).parent / "results" / "disk_tier.json")
    args = parser.parse_args()
    meta = json.loads((args.dataset / "meta.json").read_text())
    runs = [run_one(args.dataset, budget, args) for budget in args.budgets.split(",")]

    print()
    header = (
        f"{'ram budget':>10} | {'epoch s':>8} | {'wait':>6} | {'train':>6} | {'sample':>6} | {'extract':>7} | "
        f"{'host GB':>7} | {'disk GB':>7} | {'peak RSS':>8} | {'anon':>6} | {'file':>6}"
    )
    print(header)
    print("-" * len(header))
    for run in runs:
        stages, tiers = run["stage_seconds"], run["feature_bytes_by_tier"]
        print(
            f"{run['ram_budget']:>10} | {run['epoch_seconds']:8.1f} | {stages['wait']:6.1f} | {stages['train']:6.1f} | "
            f"{stages['sample']:6.1f} | {stages['extract']:7.1f} | {tiers['host'] / 1e9:7.2f} | {tiers['disk'] / 1e9:7.2f} | "
            f"{run['peak_rss_bytes'] / GIB:6.2f}Gi | {run['peak_rss_anon_bytes'] / GIB:4.2f}Gi | "
            f"{run['peak_rss_file_bytes'] / GIB:4.2f}Gi"
        )
    result = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} ({os.cpu_count()} cores), no GPU",
        "dataset": str(args.dataset),
        "num_nodes": meta.get("num_nodes"),
        "num_edges": meta.get("num_edges"),
        "runs": runs,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"\nsaved {args.json}")


if __name__ == "__main__":
    main()
