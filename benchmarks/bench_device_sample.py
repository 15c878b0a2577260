"""DeviceNeighborSampler against NeighborSampler on the same seed batches; every batch checked identical.

On the real cnr-2000 web graph (../shared/data, 325k nodes, 3.2M arcs; ``--graph`` for another
``.npz`` with ``indptr``/``indices``) it times, per fanout list, ``--batches`` batches of ``--batch-size``
random seeds with:

* ``NeighborSampler`` (numba, CPU, ``--threads`` threads; torch's CPU ops get as many), the reference;
* ``DeviceNeighborSampler`` over a ``DenseTopology`` on each device of ``--devices`` (default: cpu, and
  cuda when available): Triton picks on CUDA, numba picks on the CPU.

Batches are compared tensor for tensor with the reference before timing. Reports median ms per batch and
sampled edges/s over ``--repeats`` runs; prints a table and writes benchmarks/results/bench_device_sample.json.

    flock /tmp/graphtier-bigjob.lock python benchmarks/bench_device_sample.py
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from graphtier.bench.sample_device import same_batch
from graphtier.sampling import DenseTopology, DeviceNeighborSampler, NeighborSampler

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_GRAPH = ROOT.parent / "shared" / "data" / "cnr-2000" / "cnr-2000.csr.npz"
RESULTS = Path(__file__).resolve().parent / "results" / "bench_device_sample.json"


def time_batches(sample, batches: list[np.ndarray], device: torch.device, repeats: int) -> tuple[float, int]:
    """(median seconds for all batches, sampled edges); ``sample(seeds, batch_id)`` returns a MiniBatch."""
    runs, edges = [], 0
    for _ in range(repeats):
        edges = 0
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        started = time.perf_counter()
        for batch_id, seeds in enumerate(batches):
            edges += sample(seeds, batch_id).num_sampled_edges
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs), edges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--graph", type=Path, default=DEFAULT_GRAPH)
    parser.add_argument("--fanouts", nargs="+", default=["15,10,5", "25,10", "10,10"])
    parser.add_argument("--devices", default=None, help="comma-separated, default cpu (+ cuda if available)")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="NeighborSampler threads, and torch's CPU threads")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    with np.load(args.graph) as graph:
        indptr, indices = graph["indptr"].astype(np.int64), graph["indices"]
    num_nodes = indptr.shape[0] - 1
    devices = args.devices.split(",") if args.devices else ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    rng = np.random.default_rng(0)
    batches = [rng.integers(0, num_nodes, args.batch_size) for _ in range(args.batches)]
    rows = []
    for fanout_text in args.fanouts:
        fanouts = [int(f) for f in fanout_text.split(",")]
        reference = NeighborSampler(indptr, indices, fanouts, seed=0, num_threads=args.threads)
        expected = [reference.sample(seeds, b) for b, seeds in enumerate(batches)]
        seconds, edges = time_batches(reference.sample, batches, torch.device("cpu"), args.repeats)
        rows.append(
            {
                "fanouts": fanout_text,
                "sampler": f"NeighborSampler ({args.threads} thr)",
                "device": "cpu",
                "ms_per_batch": 1e3 * seconds / len(batches),
                "edges_per_s": edges / seconds,
                "identical": True,
            }
        )
        for name in devices:
            device = torch.device(name)
            sampler = DeviceNeighborSampler(DenseTopology(indptr, indices, device=device), fanouts, seed=0)
            same = all(same_batch(sampler.sample(s, b), expected[b]) for b, s in enumerate(batches))
            seconds, edges = time_batches(sampler.sample, batches, device, args.repeats)
            rows.append(
                {
                    "fanouts": fanout_text,
                    "sampler": f"DeviceNeighborSampler ({sampler.picks})",
                    "device": str(device),
                    "ms_per_batch": 1e3 * seconds / len(batches),
                    "edges_per_s": edges / seconds,
                    "identical": same,
                }
            )
    print(
        f"{args.graph.name}: {num_nodes} nodes, {indices.shape[0]} edges; {args.batches} batches of {args.batch_size}"
    )
    print(f"{'fanouts':<10} {'sampler':<32} {'device':<8} {'ms/batch':>9} {'Medges/s':>9} identical")
    for r in rows:
        print(
            f"{r['fanouts']:<10} {r['sampler']:<32} {r['device']:<8} {r['ms_per_batch']:>9.2f} "
            f"{r['edges_per_s'] / 1e6:>9.2f} {r['identical']}"
        )
    machine = {
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    temporary = args.out.with_suffix(".json.tmp")
    temporary.write_text(
        json.dumps(
            {
                "date": datetime.datetime.now(datetime.UTC).isoformat(),
                "machine": machine,
                "graph": str(args.graph),
                "batch_size": args.batch_size,
                "batches": args.batches,
                "rows": rows,
            },
            indent=2,
        )
    )
    temporary.replace(args.out)
    if not all(r["identical"] for r in rows):
        raise SystemExit("bench_device_sample: a device batch differs from NeighborSampler's")


if __name__ == "__main__":
    main()
