"""Benchmark `graphtier generate`: time, edges/s and peak RSS per size, against a numpy baseline.

Every size runs in a fresh child process (so peak RSS is that generation's own). The baseline, run
in the same invocation at the sizes up to ``--baseline-max-nodes``, is the same model written with
the plain numpy reference kernels (``sample_edges_reference`` over the whole edge list, then
``graphtier.dataset.csc.edges_to_csc`` with dedup; features by ``fill_features_reference``); it must
produce the identical graph, which the benchmark checks.

    flock /tmp/graphtier-bigjob.lock python benchmarks/bench_generate.py \\
        --sizes 1M:20,2M:20,10M:20 --out-dir /tmp/graphtier-data

Prints a table and writes benchmarks/results/generate.json. The machine may be shared: note the load.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "generate.json"


def parse_count(text: str) -> int:
    """``'10M'`` -> 10_000_000 (suffixes k, M, G)."""
    scale = {"k": 10**3, "m": 10**6, "g": 10**9}.get(text[-1].lower(), 1)
    return int(float(text[:-1] if scale != 1 else text) * scale)


# ---------------------------------------------------------------------------------------------- children
def child_generate(spec: dict[str, Any]) -> dict[str, Any]:
    """Run graphtier's generator once; stage times come from its progress messages."""
    from graphtier.dataset.synthetic.generate import generate

    marks: list[tuple[str, float]] = []
    started = time.perf_counter()
    dataset = generate(
        spec["output"],
        nodes=spec["nodes"],
        avg_degree=spec["avg_degree"],
        feature_dim=spec["feature_dim"],
        seed=spec["seed"],
        overwrite=True,
        progress=lambda message: marks.append((message, time.perf_counter() - started)),
    )
    total = time.perf_counter() - started
    graph_done = next(t for message, t in marks if message.startswith("wrote") and "edges" in message)
    feature_marks = [i for i, (message, _) in enumerate(marks) if message.startswith("wrote features")]
    feature_seconds = (marks[feature_marks[0]][1] - marks[feature_marks[0] - 1][1]) if feature_marks else 0.0
    return {
        "seconds": total,
        "graph_seconds": graph_done,
        "feature_seconds": feature_seconds,
        "num_edges": dataset.num_edges,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "stages": [message for message, _ in marks],
    }


def child_baseline(spec: dict[str, Any]) -> dict[str, Any]:
    """The same model with the numpy reference kernels; checks that the graph is identical."""
    import numpy as np

    from graphtier.dataset.csc import edges_to_csc
    from graphtier.dataset.format import Dataset
    from graphtier.dataset.synthetic import _synthetic_kernels as kernels
    from graphtier.dataset.synthetic import generate as synthetic

    nodes, degree, seed, dim = spec["nodes"], spec["avg_degree"], spec["seed"], spec["feature_dim"]
    classes = synthetic.DEFAULT_NUM_CLASSES
    started = time.perf_counter()
    labels = synthetic.node_classes(seed, nodes, classes)
    hub = min(nodes - 1.0, synthetic.HUB_FACTOR * math.sqrt(degree * nodes))
    weights = synthetic.degree_weights(
        seed,
        nodes,
        synthetic.DEFAULT_DEGREE_EXPONENT,
        synthetic.weight_cap(synthetic.DEFAULT_DEGREE_EXPONENT, hub / degree),
    )
    members = np.argsort(labels, kind="stable").astype(np.int32)
    offsets = np.zeros(classes + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=classes), out=offsets[1:])
    accept, alias = kernels.build_alias_tables(weights[members], offsets)
    slots = kernels.pack_alias_slots(accept, alias, members)
    mass = np.bincount(labels, weights=weights, minlength=classes)
    pairs = int(round(nodes * degree / 2))
    src, dst = kernels.sample_edges_reference(
        kernels.stream_key(seed, 2), 0, pairs, np.cumsum(mass), mass, offsets, slots, synthetic.DEFAULT_HOMOPHILY
    )
    indptr, indices = edges_to_csc(
        np.concatenate([src, dst]), np.concatenate([dst, src]), nodes, dedup=True, drop_self_loops=True
    )
    graph_seconds = time.perf_counter() - started
    features_started = time.perf_counter()
    centroids = synthetic.class_centroids(seed, classes, dim)
    rows = max(1, (1 << 22) // dim)
    for start in range(0, nodes, rows):
        stop = min(nodes, start + rows)
        kernels.fill_features_reference(
            kernels.stream_key(seed, 5), start, labels[start:stop], centroids, synthetic.DEFAULT_FEATURE_NOISE, dim
        )
    feature_seconds = time.perf_counter() - features_started
    generated = Dataset.open(spec["compare_with"], validate=False)
    same = bool(np.array_equal(indptr, generated.indptr) and np.array_equal(indices, generated.indices))
    return {
        "graph_seconds": graph_seconds,
        "feature_seconds": feature_seconds,
        "identical_graph": same,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }


def run_child(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, __file__, "--child", kind, json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{kind} child failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1M:20,10M:20", help="comma list of NODES:AVG_DEGREE")
    parser.add_argument("--feature-dim", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", default="/tmp/graphtier-data", help="datasets go to OUT_DIR/synth-<nodes>")
    parser.add_argument("--baseline-max-nodes", default="1M", help="run the numpy baseline up to this size")
    parser.add_argument("--output", default=str(RESULTS))
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, spec = args.child
        result = (child_generate if kind == "generate" else child_baseline)(json.loads(spec))
        print(json.dumps(result))
        return

    import numba

    rows = []
    baseline_limit = parse_count(args.baseline_max_nodes)
    load_before = os.getloadavg()
    for item in args.sizes.split(","):
        nodes_text, degree_text = item.split(":")
        nodes, degree = parse_count(nodes_text), float(degree_text)
        output = Path(args.out_dir) / f"synth-{nodes_text.lower()}"
        spec = {
            "output": str(output),
            "nodes": nodes,
            "avg_degree": degree,
            "feature_dim": args.feature_dim,
            "seed": args.seed,
        }
        ours = run_child("generate", spec)
        row: dict[str, Any] = {
            "nodes": nodes,
            "avg_degree": degree,
            "drawn_edges": int(round(nodes * degree / 2)) * 2,
            "stored_edges": ours["num_edges"],
            "feature_dim": args.feature_dim,
            "path": str(output),
            "seconds": round(ours["seconds"], 2),
            "graph_seconds": round(ours["graph_seconds"], 2),
            "feature_seconds": round(ours["feature_seconds"], 2),
            "edges_per_second": round(ours["num_edges"] / ours["seconds"]),
            "graph_edges_per_second": round(ours["num_edges"] / ours["graph_seconds"]),
            "peak_rss_bytes": ours["peak_rss_bytes"],
            "stages": ours["stages"],
        }
        if nodes <= baseline_limit:
            base = run_child("baseline", dict(spec, compare_with=str(output)))
            row["baseline"] = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in base.items()}
            row["graph_speedup_vs_baseline"] = round(base["graph_seconds"] / ours["graph_seconds"], 2)
            row["feature_speedup_vs_baseline"] = round(base["feature_seconds"] / max(ours["feature_seconds"], 1e-9), 2)
        rows.append(row)
        print(f"done {item}: {row['seconds']}s", file=sys.stderr)

    header = (
        f"{'nodes':>11} {'stored edges':>13} {'total s':>8} {'graph s':>8} {'feat s':>7} "
        f"{'edges/s':>10} {'graph edges/s':>14} {'peak RSS':>9} {'graph x base':>13} {'feat x base':>12}"
    )
    print(header)
    for row in rows:
        print(
            f"{row['nodes']:>11,} {row['stored_edges']:>13,} {row['seconds']:>8.1f} {row['graph_seconds']:>8.1f} "
            f"{row['feature_seconds']:>7.1f} {row['edges_per_second'] / 1e6:>9.2f}M "
            f"{row['graph_edges_per_second'] / 1e6:>13.2f}M {row['peak_rss_bytes'] / 2**30:>7.2f}G "
            f"{row.get('graph_speedup_vs_baseline', '-'):>13} {row.get('feature_speedup_vs_baseline', '-'):>12}"
        )
    report = {
        "benchmark": "generate",
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.node()} ({os.cpu_count()} CPUs, {platform.machine()})",
        "numba_threads": numba.get_num_threads(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "command": "python " + " ".join(sys.argv),
        "baseline": "same model with numpy reference kernels + graphtier.dataset.csc.edges_to_csc; "
        "features with fill_features_reference; must give the identical graph",
        "rows": rows,
    }
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {args.output}")


if __name__ == "__main__":
    main()
