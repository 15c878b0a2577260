"""Benchmark: topology reorder (edges/s) and feature permutation (GB/s) against memcpy bandwidth.

All measured in one process on the same data: the topology reorder (Algorithm 2: permuted degrees,
prefix sum, relocate + relabel + sort every list) into a RAM buffer; the feature row gather
``out[i] = features[perm[i]]`` from the dataset's memory-mapped (page-cached) features.npy into a
RAM buffer; and memcpy of the same bytes (numpy single-threaded copy and a numba 2-thread copy).
The permutation is the wrpr order. Prints a table and writes benchmarks/results/bench_reorder.json.

    flock /tmp/graphtier-bigjob.lock python benchmarks/bench_reorder.py --dataset /tmp/graphtier-data/synth-10m
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
from graphtier.graph import _reorder_kernels as kernels
from graphtier.graph.reorder import order_by_score, permute_rows, reorder_topology
from graphtier.graph.scores import weighted_reverse_pagerank

RESULTS = Path(__file__).parent / "results" / "bench_reorder.json"


def best_of(repeats: int, action) -> list[float]:  # type: ignore[no-untyped-def]
    """Wall seconds of ``repeats`` calls of ``action()``."""
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        runs.append(time.perf_counter() - started)
    return runs


def main() -> None:
    load_at_start = os.getloadavg()[0]  # other jobs on the machine make timings noisy: record how busy it was
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="/tmp/graphtier-data/synth-10m")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args()

    data = Dataset.open(args.dataset)
    indptr = np.array(data.indptr)
    indices = np.array(data.indices)  # in RAM: measure the kernel, not the disk
    threads = numba.get_num_threads()
    train = np.asarray(data.train_idx) if data.train_idx is not None else np.arange(max(1, data.num_nodes // 100))
    started = time.perf_counter()
    perm = order_by_score(weighted_reverse_pagerank(indptr, indices, train))
    order_seconds = time.perf_counter() - started
    started = time.perf_counter()
    inverse = kernels.inverse_permutation(perm)
    inverse_seconds = time.perf_counter() - started

    out = np.empty_like(indices)
    reorder_topology(np.array([0, 1, 2]), np.array([1, 0], dtype=indices.dtype), np.array([1, 0]))  # JIT warm-up
    topo_runs = best_of(args.repeats, lambda: reorder_topology(indptr, indices, perm, out=out, inverse=inverse))
    numba.set_num_threads(1)
    topo_single = best_of(
        max(1, args.repeats - 1), lambda: reorder_topology(indptr, indices, perm, out=out, inverse=inverse)
    )
    numba.set_num_threads(threads)
    new_indptr, _ = reorder_topology(indptr, indices, perm, out=out, inverse=inverse)
    # spot-check: node 0's new list is the relabelled old list of perm[0]
    old_list = indices[indptr[perm[0]] : indptr[perm[0] + 1]]
    assert np.array_equal(out[new_indptr[0] : new_indptr[1]], np.sort(inverse[old_list]))
    topology_bytes = indices.nbytes * 2  # read + write of the edge array

    feature_row = {}
    if data.features is not None:
        source = data.features
        np.asarray(source).sum(axis=0)  # read once so the page cache holds it
        target = np.empty(source.shape, dtype=source.dtype)
        permute_rows(source[:2], np.array([1, 0]), target[:2])  # JIT warm-up
        gather = best_of(args.repeats, lambda: permute_rows(source, perm, target))
        flat_source = np.asarray(source).reshape(-1)
        flat_target = target.reshape(-1)
        memcpy = best_of(args.repeats, lambda: np.copyto(flat_target, flat_source))
        kernels.parallel_copy(flat_source[:8], flat_target[:8], threads)
        copy_parallel = best_of(args.repeats, lambda: kernels.parallel_copy(flat_source, flat_target, threads))
        permute_rows(source, perm, target)
        assert np.array_equal(target[:1000], np.asarray(source)[perm[:1000]])
        gigabytes = source.nbytes / 1e9
        feature_row = {
            "feature_shape": list(source.shape),
            "feature_dtype": str(source.dtype),
            "feature_gb": gigabytes,
            "gather_s": gather,
            "memcpy_numpy_s": memcpy,
            "memcpy_numba_parallel_s": copy_parallel,
            "gather_gb_per_s": gigabytes / min(gather),
            "memcpy_numpy_gb_per_s": gigabytes / min(memcpy),
            "memcpy_parallel_gb_per_s": gigabytes / min(copy_parallel),
        }
        del target

    edges = data.num_edges
    edges_per_s = edges / min(topo_runs)
    single_edges_per_s = edges / min(topo_single)
    print(
        f"graph: {data.path} ({data.num_nodes:,} nodes, {edges:,} edges); best of {args.repeats}; "
        f"1-min load average at start {load_at_start:.2f}"
    )
    print(f"wrpr + sort by score: {order_seconds:.2f} s, inverse permutation {inverse_seconds:.3f} s")
    print(f"{'stage':<44}{'time s':>9}{'rate':>20}{'vs memcpy':>11}")
    memcpy_rate = feature_row.get("memcpy_numpy_gb_per_s")
    topo_gbs = topology_bytes / 1e9 / min(topo_runs)
    print(
        f"{'topology reorder, ' + str(threads) + ' threads':<44}{min(topo_runs):>9.2f}"
        f"{edges_per_s / 1e6:>13.1f} Medge/s" + (f"{topo_gbs / memcpy_rate:>10.2f}x" if memcpy_rate else "")
    )
    print(f"{'topology reorder, 1 thread':<44}{min(topo_single):>9.2f}{single_edges_per_s / 1e6:>13.1f} Medge/s")
    if feature_row:
        gb = feature_row["feature_gb"]
        for name, key in (
            ("feature gather by perm, " + str(threads) + " threads", "gather_s"),
            ("memcpy (numpy copyto, 1 thread)", "memcpy_numpy_s"),
            ("memcpy (numba, " + str(threads) + " threads)", "memcpy_numba_parallel_s"),
        ):
            seconds = min(feature_row[key])
            print(f"{name:<44}{seconds:>9.2f}{gb / seconds:>15.2f} GB/s{(gb / seconds) / memcpy_rate:>10.2f}x")
    doc = {
        "benchmark": "reorder topology edges/s and feature permutation GB/s vs memcpy",
        "date": time.strftime("%Y-%m-%d"),
        "machine": platform.node(),
        "cpus": os.cpu_count(),
        "numba_threads": threads,
        "dataset": str(data.path),
        "num_nodes": data.num_nodes,
        "num_edges": edges,
        "score_and_sort_s": order_seconds,
        "inverse_permutation_s": inverse_seconds,
        "topology_s": topo_runs,
        "topology_1thread_s": topo_single,
        "topology_edges_per_s": edges_per_s,
        "topology_edges_per_s_per_thread_1thread": single_edges_per_s,
        "topology_gb_per_s_read_plus_write": topo_gbs,
        **feature_row,
        "load_average_1min_at_start": load_at_start,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
