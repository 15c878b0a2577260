"""Benchmark: neighbour reads of the tiered topology (all on the device, 25 % on the device, all zero-copy), sorted or not.

A random graph of ``--nodes`` nodes and ``--avg-degree`` in-neighbours per node (int32 indices),
``--positions`` sampler-like reads per call (random destination, random position in its list), the
median of ``--repeats`` calls. On CUDA this measures whether sorting the positions before the
zero-copy reads pays (GraphBolt sorts); without CUDA the CPU path runs the same plans. Prints a
table and writes benchmarks/results/topology.json.

    flock /tmp/graphtier-bigjob.lock python benchmarks/bench_topology.py
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

import torch

from graphtier.bench.topology import format_topology_table, run_topology_benchmark

RESULTS = Path(__file__).parent / "results" / "topology.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20_000_000)
    parser.add_argument("--avg-degree", type=int, default=15)
    parser.add_argument("--positions", type=int, default=4_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()
    device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    report = run_topology_benchmark(
        num_nodes=args.nodes, avg_degree=args.avg_degree, positions=args.positions, repeats=args.repeats,
        device=device, log=lambda _: None,
    )  # fmt: skip
    report["command"] = " ".join(["python"] + sys.argv)
    report["date"] = datetime.date.today().isoformat()
    print(format_topology_table(report))
    if device.type != "cuda":
        print("GPU paths: not measured on GPU (no CUDA device); the CPU path keeps every tier in RAM")
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {output}")


if __name__ == "__main__":
    main()
