"""Run one command (a pipeline stage) and record its wall time, peak memory, I/O and disk use (Linux only).

The command runs as a child process; every ``--interval`` seconds (default 0.2) the wrapper reads
``/proc/PID/status`` of the child and of all its descendants and sums them: peak ``RssAnon`` (the
processes' own allocations: the figure that must fit in RAM), peak ``RssFile`` (pages of memory-mapped
files and binaries they touched: page cache, dropped under pressure) and peak ``VmRSS`` (their sum).
``VmHWM`` (each process's own peak RSS, anonymous + file) is kept too. Bytes read and written come from
``wait4``'s rusage of the child, which includes every descendant it waited for (``ru_inblock`` /
``ru_oublock``: block-device I/O, 512-byte units; reads served by the page cache are not counted), plus
the largest ``rchar`` / ``wchar`` (all read()/write() bytes, cached or not; memory-mapped I/O is not
counted) sampled from ``/proc/PID/io``. With ``--du PATH`` (repeatable) the disk use of each path is
measured after the run (``du``-style, allocated blocks), and the free space of the file system holding
the first one is polled during the run: its largest drop is the stage's peak extra disk use
(approximate on a shared disk: other processes' writes count too).

    python benchmarks/stage_memory.py --label generate --json /tmp/sm/stages.json --du /tmp/sm/g -- \\
        python -m graphtier generate /tmp/sm/g --nodes 2M --avg-degree 25 --feature-dim 160 --seed 1

Prints a markdown table row (``| label | wall s | peak RssAnon GiB | peak RssFile GiB | read GB | written GB |
disk GB |``) and appends the JSON record to ``--json`` (a list; created when missing). Exits with the
command's exit status.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

GIB = 2**30
STATUS_KEYS = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")
IO_KEYS = ("rchar", "wchar", "read_bytes", "write_bytes")


def read_proc(path: str, keys: tuple[str, ...], unit: int) -> dict[str, int]:
    """``key: value`` lines of a /proc file whose key is in ``keys``: the first number times ``unit`` ({} when
    unreadable, e.g. once the process is gone)."""
    values: dict[str, int] = {}
    try:
        with open(path) as lines:
            for line in lines:
                key, _, rest = line.partition(":")
                if key in keys:
                    values[key] = int(rest.split()[0]) * unit
    except (OSError, ValueError, IndexError):
        return {}
    return values


def read_status(pid: int) -> dict[str, int]:
    """The ``STATUS_KEYS`` of ``/proc/PID/status`` in bytes ({} once the process is gone)."""
    return read_proc(f"/proc/{pid}/status", STATUS_KEYS, 1024)


def read_io(pid: int) -> dict[str, int]:
    """The ``IO_KEYS`` of ``/proc/PID/io`` ({} when unreadable)."""
    return read_proc(f"/proc/{pid}/io", IO_KEYS, 1)


def descendants(pid: int) -> list[int]:
    """``pid`` and every live descendant (read from ``/proc/*/task/*/children``)."""
    found = [pid]
    index = 0
    while index < len(found):
        parent = found[index]
        index += 1
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children") as children:
                    found.extend(int(child) for child in children.read().split())
            except (OSError, ValueError):
                continue
    return found


def disk_use(path: Path) -> int:
    """Allocated bytes of ``path`` (a file or a directory tree; 0 when missing), as ``du`` counts them."""
    if not path.exists():
        return 0
    if path.is_file():
        return path.stat().st_blocks * 512
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                continue
    return total


def free_bytes(path: Path) -> int:
    """Free bytes of the file system holding ``path`` (or its nearest existing parent)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return shutil.disk_usage(path).free


class Poller(threading.Thread):
    """Samples the memory of a process tree and the free disk space until :meth:`stop`."""

    def __init__(self, pid: int, interval: float, disk_path: Path | None) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.disk_path = disk_path
        self.peaks = {key: 0 for key in STATUS_KEYS}
        self.peak_processes = 1
        self.io = {key: 0 for key in IO_KEYS}
        self.samples = 0
        self.timeline: list[tuple[float, int, int]] = []  # (seconds, RssAnon, RssFile) of every sample
        self._clock_start = time.perf_counter()
        self.free_at_start = free_bytes(disk_path) if disk_path is not None else 0
        self.min_free = self.free_at_start
        self._done = threading.Event()

    def sample(self) -> None:
        pids = descendants(self.pid)
        totals = {key: 0 for key in STATUS_KEYS}
        for pid in pids:
            status = read_status(pid)
            for key in STATUS_KEYS:
                value = status.get(key, 0)
                totals[key] = max(totals[key], value) if key == "VmHWM" else totals[key] + value
        for key in STATUS_KEYS:
            self.peaks[key] = max(self.peaks[key], totals[key])
        self.timeline.append((round(time.perf_counter() - self._clock_start, 2), totals["RssAnon"], totals["RssFile"]))
        self.peak_processes = max(self.peak_processes, len(pids))
        io = read_io(self.pid)
        for key in IO_KEYS:
            self.io[key] = max(self.io[key], io.get(key, 0))
        if self.disk_path is not None:
            self.min_free = min(self.min_free, free_bytes(self.disk_path))
        self.samples += 1

    def run(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(self.interval)

    def stop(self) -> None:
        self._done.set()
        self.join()


def gib(value: int) -> str:
    return f"{value / GIB:.2f}"


def run(command: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """Run ``command`` under the poller; the record of the run."""
    disk_paths = [Path(p) for p in args.du]
    load_before = os.getloadavg()
    started = time.perf_counter()
    proc = subprocess.Popen(command)
    poller = Poller(proc.pid, args.interval, disk_paths[0] if disk_paths else None)
    poller.start()
    # wait without reaping, so /proc/PID/io still holds the child's (and its reaped children's) totals
    try:
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    except KeyboardInterrupt:
        proc.terminate()
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    wall = time.perf_counter() - started
    poller.stop()
    final_io = read_io(proc.pid)
    for key in IO_KEYS:
        poller.io[key] = max(poller.io[key], final_io.get(key, 0))
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {
        "label": args.label,
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.node()} ({os.cpu_count()} CPUs, {platform.machine()})",
        "command": " ".join(command),
        "exit_code": proc.returncode,
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_anon_bytes": poller.peaks["RssAnon"],
        "peak_rss_file_bytes": poller.peaks["RssFile"],
        "peak_rss_shmem_bytes": poller.peaks["RssShmem"],
        "peak_rss_bytes": poller.peaks["VmRSS"],
        "max_process_hwm_bytes": max(poller.peaks["VmHWM"], usage.ru_maxrss * 1024),
        "peak_processes": poller.peak_processes,
        "block_read_bytes": usage.ru_inblock * 512,
        "block_written_bytes": usage.ru_oublock * 512,
        "io": poller.io,
        "disk_use_bytes": {str(p): disk_use(p) for p in disk_paths},
        "peak_disk_growth_bytes": max(0, poller.free_at_start - poller.min_free) if disk_paths else None,
        "samples": poller.samples,
        "interval_seconds": args.interval,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "timeline": poller.timeline if args.timeline else None,
    }


def markdown_row(record: dict[str, Any]) -> str:
    disk = sum(record["disk_use_bytes"].values())
    return (
        f"| {record['label']} | {record['wall_seconds']:.1f} | {gib(record['peak_rss_anon_bytes'])} | "
        f"{gib(record['peak_rss_file_bytes'])} | {record['io']['read_bytes'] / 1e9:.1f} | "
        f"{record['io']['write_bytes'] / 1e9:.1f} | {disk / 1e9:.1f} |"
    )


MARKDOWN_HEADER = (
    "| stage | wall s | peak RssAnon GiB | peak RssFile GiB | disk read GB | disk written GB | disk use GB |\n"
    "|---|---|---|---|---|---|---|"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", required=True, help="the stage's name in the table")
    parser.add_argument("--json", type=Path, help="append the record to this JSON list")
    parser.add_argument("--du", action="append", default=[], help="a path whose disk use to record (repeatable)")
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--header", action="store_true", help="print the markdown table header first")
    parser.add_argument(
        "--timeline", action="store_true", help="keep every sample (seconds, RssAnon, RssFile bytes) in the JSON record"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (put it after --)")
    record = run(command, args)
    if args.json is not None:
        records = json.loads(args.json.read_text()) if args.json.is_file() else []
        records.append(record)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(records, indent=2) + "\n")
    if args.header:
        print(MARKDOWN_HEADER)
    print(markdown_row(record), flush=True)
    print(
        f"  peak VmRSS {gib(record['peak_rss_bytes'])} GiB, largest VmHWM {gib(record['max_process_hwm_bytes'])} GiB, "
        f"peak disk growth {(record['peak_disk_growth_bytes'] or 0) / 1e9:.1f} GB, exit {record['exit_code']}",
        file=sys.stderr,
    )
    sys.exit(record["exit_code"])


if __name__ == "__main__":
    main()
