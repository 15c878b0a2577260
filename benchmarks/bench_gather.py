"""Benchmark: feature-row gather throughput (graphtier cpu-gather, tiered store) vs torch.index_select and copy.

For 128 B, 512 B and 4 KB float32 rows, a 512 MiB random table in RAM, batches of 65,536 uniformly
random row ids, at 1 and 2 threads; each method's GB/s is compared as a ratio with
``torch.index_select(out=...)`` at the same thread count (measured in the same run) and with a
contiguous copy of the same bytes. With CUDA the GPU paths are measured too (zero-copy Triton
kernels naive/aligned, tiered, cpu-gather + host-to-device copy as the GPU baseline).
Prints a table and writes benchmarks/results/gather.json.

    flock /tmp/graphtier-bigjob.lock python benchmarks/bench_gather.py
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import torch

from graphtier.bench.gather import format_gather_table, parse_int_list, run_gather_benchmark

RESULTS = Path(__file__).parent / "results" / "gather.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row-bytes", default="128,512,4096")
    parser.add_argument("--table-mib", type=int, default=512)
    parser.add_argument("--batch-rows", type=int, default=65536)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    device = torch.device("cuda") if torch.cuda.is_available() else None
    report = run_gather_benchmark(
        row_bytes=parse_int_list(args.row_bytes, "--row-bytes"),
        table_bytes=args.table_mib * 2**20,
        batch_rows=args.batch_rows,
        threads=parse_int_list(args.threads, "--threads"),
        repeats=args.repeats,
        device=device,
        log=print,
    )
    report["command"] = " ".join(["python"] + sys.argv)
    report["date"] = datetime.date.today().isoformat()
    print(format_gather_table(report))
    if device is None:
        print("GPU paths: not measured on GPU (no CUDA device)")
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {output}")


if __name__ == "__main__":
    main()
