"""Temporal sampling throughput against the untimed sampler on the same graph, fanouts and seeds (issue 38).

A generated power-law graph gets uniform random edge times; both samplers draw the same seed batches (batch
1024, one thread each: the temporal sampler runs one thread). Two seed-time settings:

* ``all-past``: every seed at a time after every edge, so both samplers see the same admissible edges and the
  ratio is the cost of the time machinery alone (binary search in the time order, the (node, time) relabel);
* ``uniform``: seed times uniform over the edge-time range (every batch mixes the whole history);
* ``chronological``: as a chronological link task trains, batch ``b`` of ``B`` holds the times of one contiguous
  slice of the first 70% of the range (slice ``b``, width 0.7 / B of the range), seed times uniform inside it.

Runs alternate (untimed, temporal) ``--repeats`` times; medians of sampled edges per second and per CPU-second.

    python benchmarks/bench_temporal.py [--nodes 500000 --degree 20 --fanouts 15,10,5 10,10]

Prints a table and writes benchmarks/results/bench_temporal.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import graphtier
from graphtier.sampling import NeighborSampler, TemporalNeighborSampler, iter_seed_batches

RESULTS = Path(__file__).resolve().parent / "results" / "bench_temporal.json"


def time_order(indptr: np.ndarray, edge_time: np.ndarray) -> np.ndarray:
    """int64 [E]: every list's CSC positions sorted by (time, position)."""
    lists = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    return np.lexsort((edge_time, lists)).astype(np.int64)  # lexsort is stable: ties keep position order


def run(sample, batches: list[np.ndarray]) -> tuple[float, float, int, int]:  # noqa: ANN001
    """(wall seconds, CPU seconds, sampled edges, rows) of sampling every batch once (rows: the batches' ``n_id``
    lengths, the input rows whose features a model gathers)."""
    edges = rows = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for b, seeds in enumerate(batches):
        batch = sample(seeds, b)
        edges += batch.num_sampled_edges
        rows += batch.n_id.shape[0]
    return time.perf_counter() - wall, time.process_time() - cpu, edges, rows


def seed_times(setting: str, size: int, batch: int, batches: int, rng: np.random.Generator) -> np.ndarray:
    """int64 [size] the seed times of batch ``batch`` of ``batches`` in ``setting`` (edge times span [0, 10^9))."""
    if setting == "all-past":
        return np.full(size, 10**9, np.int64)
    if setting == "uniform":
        return rng.integers(0, 10**9, size)
    width = 7 * 10**8 // batches  # chronological: slice ``batch`` of the first 70% of the range
    return rng.integers(batch * width, (batch + 1) * width, size)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=500_000)
    parser.add_argument("--degree", type=float, default=20.0)
    parser.add_argument("--fanouts", nargs="+", default=["15,10,5", "10,10"])
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="graphtier-bench-temporal-") as tmp:
        ds = graphtier.generate(Path(tmp) / "g", nodes=args.nodes, avg_degree=args.degree, feature_dim=1,
                                train_fraction=0.05)  # fmt: skip
        indptr, indices = np.array(ds.indptr), np.array(ds.indices)
        train = np.asarray(ds.train_idx)
    rng = np.random.default_rng(0)
    edge_time = rng.integers(0, 10**9, indices.shape[0]).astype(np.int64)
    order = time_order(indptr, edge_time)
    batches = list(iter_seed_batches(train, 1024, shuffle=True, seed=0, epoch=0))[: args.batches]
    rows = []
    for fanouts in args.fanouts:
        fanout_list = [int(f) for f in fanouts.split(",")]
        plain = NeighborSampler(indptr, indices, fanout_list, num_threads=1)
        timed = TemporalNeighborSampler(indptr, indices, edge_time, order, fanout_list)
        for setting in ("all-past", "uniform", "chronological"):
            seed_time = [seed_times(setting, s.shape[0], b, len(batches), rng) for b, s in enumerate(batches)]
            samplers = {
                "untimed": lambda seeds, b: plain.sample(seeds, batch_id=b),
                "temporal": lambda seeds, b, st=seed_time: timed.sample(seeds, st[b], batch_id=b),
            }
            for sample in samplers.values():  # warm-up: compile, fault pages in
                run(sample, batches[:3])
            results: dict[str, list[tuple[float, float, int, int]]] = {name: [] for name in samplers}
            for _ in range(args.repeats):
                for name, sample in samplers.items():
                    results[name].append(run(sample, batches))
            row = {"fanouts": fanouts, "seed_times": setting}
            for name, runs in results.items():
                row[f"{name}_edges_per_s"] = statistics.median(e / w for w, _, e, _ in runs)
                row[f"{name}_edges_per_cpu_s"] = statistics.median(e / c for _, c, e, _ in runs)
                row[f"{name}_edges_per_batch"] = runs[0][2] / len(batches)
                row[f"{name}_rows_per_batch"] = runs[0][3] / len(batches)
                row[f"{name}_batches_per_s"] = statistics.median(len(batches) / w for w, _, _, _ in runs)
            row["slowdown"] = row["untimed_edges_per_s"] / row["temporal_edges_per_s"]
            row["slowdown_cpu"] = row["untimed_edges_per_cpu_s"] / row["temporal_edges_per_cpu_s"]
            row["slowdown_batches"] = row["untimed_batches_per_s"] / row["temporal_batches_per_s"]
            rows.append(row)
            print(
                f"{fanouts:>9} {setting:>13}: untimed {row['untimed_edges_per_s'] / 1e6:6.2f} M edges/s "
                f"({row['untimed_edges_per_batch']:,.0f}/batch), temporal {row['temporal_edges_per_s'] / 1e6:6.2f} M "
                f"({row['temporal_edges_per_batch']:,.0f}/batch); untimed/temporal {row['slowdown']:.2f}x "
                f"(per CPU-s {row['slowdown_cpu']:.2f}x, per batch {row['slowdown_batches']:.2f}x); rows/batch "
                f"{row['untimed_rows_per_batch']:,.0f} untimed, {row['temporal_rows_per_batch']:,.0f} temporal"
            )
    record = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.node()} {os.cpu_count()} CPUs",
        "command": "python benchmarks/bench_temporal.py --fanouts " + " ".join(args.fanouts),
        "graph": {"nodes": int(indptr.shape[0] - 1), "edges": int(indices.shape[0])},
        "load_average": os.getloadavg(),
        "rows": rows,
    }
    args.out.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
