"""Benchmark: seconds per iteration of wrpr (numba, parallel) against a scipy.sparse SpMV loop.

Both run the same Algorithm-1 rounds from the same weighted start on the same graph in the same
process; the scipy matrix is built once before timing (its build time is reported separately).
Prints a table and writes benchmarks/results/bench_scores.json.

    flock /tmp/graphtier-bigjob.lock python benchmarks/bench_scores.py --dataset /tmp/graphtier-data/synth-10m
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numba
import numpy as np

from graphtier.dataset.format import Dataset
from graphtier.graph.scores import (
    rank_matrix,
    reverse_pagerank_reference,
    weighted_initial_scores,
    weighted_reverse_pagerank,
)

RESULTS = Path(__file__).parent / "results" / "bench_scores.json"


def time_wrpr(indptr: np.ndarray, indices: np.ndarray, train: np.ndarray, iterations: int, repeats: int) -> list[float]:
    """Wall seconds per iteration of each of ``repeats`` wrpr runs."""
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        weighted_reverse_pagerank(indptr, indices, train, iterations=iterations)
        runs.append((time.perf_counter() - started) / iterations)
    return runs


def main() -> None:
    load_at_start = os.getloadavg()[0]  # other jobs on the machine make timings noisy: record how busy it was
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="/tmp/graphtier-data/synth-10m")
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()

    data = Dataset.open(args.dataset, mmap=False)
    indptr, indices = np.asarray(data.indptr), np.asarray(data.indices)
    if data.train_idx is not None and np.asarray(data.train_idx).size:
        train = np.asarray(data.train_idx)
    else:
        train = np.random.default_rng(0).choice(data.num_nodes, max(1, data.num_nodes // 100), replace=False)
    threads = numba.get_num_threads()

    # warm up the JIT (cached kernels load here) on a tiny prefix-free graph
    weighted_reverse_pagerank(np.array([0, 1, 2]), np.array([1, 0], dtype=indices.dtype), np.array([0]), iterations=1)

    numba_runs = time_wrpr(indptr, indices, train, args.iterations, args.repeats)
    numba.set_num_threads(1)
    single_runs = time_wrpr(indptr, indices, train, args.iterations, max(1, args.repeats - 1))
    numba.set_num_threads(threads)

    started = time.perf_counter()
    matrix = rank_matrix(indptr, indices)
    build_seconds = time.perf_counter() - started
    initial = weighted_initial_scores(data.num_nodes, train)
    scipy_runs = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        reference = reverse_pagerank_reference(
            indptr, indices, initial, damping=0.85, iterations=args.iterations, matrix=matrix
        )
        scipy_runs.append((time.perf_counter() - started) / args.iterations)
    del matrix
    ours = weighted_reverse_pagerank(indptr, indices, train, iterations=args.iterations)
    rel_error = float(np.abs(ours - reference).max() / np.abs(reference).max())

    best_numba, best_single, best_scipy = min(numba_runs), min(single_runs), min(scipy_runs)
    rows = [
        (f"wrpr numba, {threads} threads", best_numba, best_scipy / best_numba),
        ("wrpr numba, 1 thread", best_single, best_scipy / best_single),
        ("scipy.sparse SpMV loop (1 thread)", best_scipy, 1.0),
    ]
    print(
        f"graph: {data.path} ({data.num_nodes:,} nodes, {data.num_edges:,} edges), "
        f"{args.iterations} iterations, best of {args.repeats}; 1-min load average at start {load_at_start:.2f}"
    )
    print(f"{'implementation':<36}{'s/iter':>10}{'speed-up vs scipy':>20}")
    for name, seconds, ratio in rows:
        print(f"{name:<36}{seconds:>10.3f}{ratio:>19.2f}x")
    print(f"scipy matrix build (not in s/iter): {build_seconds:.2f} s; max relative difference {rel_error:.2e}")
    doc = {
        "benchmark": "wrpr seconds per iteration vs scipy.sparse SpMV",
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.node(),
        "cpus": os.cpu_count(),
        "numba_threads": threads,
        "dataset": str(data.path),
        "num_nodes": data.num_nodes,
        "num_edges": data.num_edges,
        "iterations": args.iterations,
        "repeats": args.repeats,
        "numba_s_per_iter": numba_runs,
        "numba_1thread_s_per_iter": single_runs,
        "scipy_s_per_iter": scipy_runs,
        "scipy_matrix_build_s": build_seconds,
        "speedup_vs_scipy": best_scipy / best_numba,
        "speedup_vs_scipy_1thread": best_scipy / best_single,
        "max_relative_difference": rel_error,
        "load_average_1min_at_start": load_at_start,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
