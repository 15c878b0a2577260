"""Every GPU check and GPU benchmark of graphtier, in one run, summarised in one table.

1. ``pytest -m gpu tests`` (all GPU-only tests of the project), in a subprocess;
2. correctness of every feature mode on CUDA against plain indexing (float32/float16, a memory-mapped
   table with a disk tier, the row cache, peer partitions when there are >= 2 GPUs), traffic sums;
3. the gather benchmark on the GPU (zero-copy naive vs aligned, tiered, cpu-gather + copy baseline).

Without CUDA it prints a skip message and exits 0. Writes benchmarks/results/gpu_checks.json.

    flock /tmp/graphtier-bigjob.lock python benchmarks/gpu_checks.py
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "gpu_checks.json"


def check_pytest_gpu() -> tuple[str, str]:
    """Run the project's GPU-marked tests; (status, summary line)."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    summary = lines[-1] if lines else proc.stderr.strip()[-200:]
    status = "pass" if proc.returncode == 0 else ("none" if proc.returncode == 5 else "FAIL")
    if status == "FAIL":
        print(proc.stdout[-4000:])
    return status, f"{summary} ({time.perf_counter() - started:.0f} s)"


def check_modes(device: torch.device) -> list[tuple[str, str, str]]:
    """Every feature mode on CUDA equals plain indexing and its traffic adds up."""
    from graphtier.store import FEATURE_MODES, TIER_NAMES, make_feature_store

    rows: list[tuple[str, str, str]] = []
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in (np.float32, np.float16):
            for dim in (33, 128):
                table = rng.normal(size=(20_000, dim)).astype(dtype)
                path = Path(tmp) / f"t-{dim}-{np.dtype(dtype).name}.npy"
                np.save(path, table)
                mapped = np.load(path, mmap_mode="r")
                cases: list[tuple[str, np.ndarray, dict[str, Any]]] = [(m, table, {}) for m in FEATURE_MODES]
                cases.append(("tiered", mapped, {"gpu_budget": "10%", "ram_budget": "50%"}))
                cases.append(("tiered+cache", mapped, {"gpu_budget": "5%", "cache_budget": "5%", "ram_budget": "30%"}))
                if torch.cuda.device_count() >= 2:
                    cases.append(("tiered", mapped, {"gpu_budget": "10%", "peer_partitions": 2, "ram_budget": "50%"}))
                for mode, source, options in cases:
                    if mode.startswith("tiered") and not options:
                        options = {"gpu_budget": "20%"} if mode == "tiered" else {"gpu_budget": "10%", "cache_budget": "10%"}
                    name = f"{mode} {np.dtype(dtype).name} D={dim} {'mmap' if source is mapped else 'ram'} {options}"
                    try:
                        store = make_feature_store(source, mode, device=device, log=lambda _: None, **options)
                        ok = True
                        for step in range(6):
                            ids = torch.from_numpy(rng.integers(0, table.shape[0], 5000 + step))
                            got = store.gather(ids)
                            ok &= bool(np.array_equal(got.cpu().numpy(), table[ids.numpy()]))
                        traffic = store.traffic()
                        ok &= traffic["requested"] == sum(traffic[t] for t in TIER_NAMES)
                        hit = getattr(store, "cache_hit_ratio", None)
                        detail = f"on {store.output_device}" + (f", cache hit ratio {hit:.3f}" if hit is not None else "")
                        store.close()
                        rows.append((name, "pass" if ok else "FAIL", detail))
                    except Exception as exc:  # report and go on: this is a checklist
                        rows.append((name, "FAIL", f"{type(exc).__name__}: {exc}"[:160]))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-pytest", action="store_true")
    parser.add_argument("--table-mib", type=int, default=1024)
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_checks: SKIPPED, no CUDA device on this machine (torch %s); nothing was measured on a GPU" % torch.__version__)
        return 0
    device = torch.device("cuda", torch.cuda.current_device())
    table: list[tuple[str, str, str]] = []
    steps: list[tuple[str, Callable[[], Any]]] = []
    if not args.skip_pytest:
        steps.append(("pytest -m gpu", lambda: table.append(("pytest -m gpu tests", *check_pytest_gpu()))))
    steps.append(("feature modes", lambda: table.extend(check_modes(device))))
    report: dict[str, Any] = {}

    def bench() -> None:
        from graphtier.cli.bench_gather import run_gather_benchmark

        result = run_gather_benchmark(
            row_bytes=[128, 512, 2052, 4096], table_bytes=args.table_mib * 2**20, batch_rows=65536,
            threads=[torch.get_num_threads()], repeats=7, device=device,
        )  # fmt: skip
        report["gather"] = result
        for row in result["results"]:
            if row["threads"] is None:
                table.append(
                    (f"gather {row['method']} {row['row_bytes']} B", "measured",
                     f"{row['gb_per_s']:.2f} GB/s, {row['vs_baseline']:.2f}x cpu-gather+h2d"),
                )  # fmt: skip

    steps.append(("gather benchmark", bench))
    for label, action in steps:
        print(f"running {label} ...", flush=True)
        try:
            action()
        except Exception as exc:  # a crashing step is a failed check, the others still run
            table.append((label, "FAIL", f"{type(exc).__name__}: {exc}"[:160]))
    width = max(len(name) for name, _, _ in table)
    print(f"\n{'check':<{width}}  {'status':<8}  detail")
    for name, status, detail in table:
        print(f"{name:<{width}}  {status:<8}  {detail}")
    report.update(
        {
            "date": datetime.date.today().isoformat(),
            "device": torch.cuda.get_device_name(device),
            "torch": torch.__version__,
            "checks": [{"check": n, "status": s, "detail": d} for n, s, d in table],
        }
    )
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {output}")
    return 1 if any(status == "FAIL" for _, status, _ in table) else 0


if __name__ == "__main__":
    sys.exit(main())
