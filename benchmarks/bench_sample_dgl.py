"""graphtier's NeighborSampler against DGL 2.1's, same dataset, same seed batches, same run.

The graphtier side runs in this process; the DGL side runs ``benchmarks/dgl_sample.py`` in DGL's own
venv (a subprocess: DGL is never a dependency of graphtier). Both sample the same seed batches (training
split, shuffled, ``--batch-size`` each), written once to a temporary ``.npz``, and count sampled edges
the same way: the sum of the blocks' edge counts over the layers. On a shared machine the two sides
alternate ``--repeats`` times per thread count and the medians are compared.

    bash ../shared/baselines/make-dgl-venv.sh /tmp/dglvenv          # once
    graphtier generate /tmp/sampler/g2m --nodes 2000000 --avg-degree 20 --feature-dim 16 \
        --train-fraction 0.05 --seed 3
    python benchmarks/bench_sample_dgl.py /tmp/sampler/g2m --dgl-venv /tmp/dglvenv --threads 2,1

Prints a table and writes benchmarks/results/sample-dgl.json (``--out``).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from graphtier.dataset.format import Dataset
from graphtier.sampling import NeighborSampler, iter_seed_batches

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "sample-dgl.json"


def seed_batches(ds: Dataset, batch_size: int, count: int, seed: int = 0) -> list[np.ndarray]:
    """``count`` shuffled training-split batches (int64 [batch_size], distinct seeds each), epochs chained."""
    pool = np.asarray(ds.train_idx) if ds.train_idx is not None and len(ds.train_idx) else np.arange(ds.num_nodes)
    batches: list[np.ndarray] = []
    epoch = 0
    while len(batches) < count:
        batches.extend(
            np.asarray(b, dtype=np.int64)
            for b in iter_seed_batches(pool, batch_size, shuffle=True, seed=seed, epoch=epoch)
        )
        epoch += 1
    return batches[:count]


def graphtier_run(
    indptr: np.ndarray,
    indices: np.ndarray,
    fanouts: list[int],
    batches: list[np.ndarray],
    threads: int,
    warmup: int,
    keep: int = 1,
) -> dict[str, float]:
    """Time graphtier's sampler over ``batches[warmup:]``: edges, seconds, CPU seconds, sampled edges/s.

    The loop keeps the last ``keep`` batches alive, as a consumer would (1: a loop variable; the
    trainer's prefetch queue holds a few); 0 drops each batch before the next is sampled.
    """
    kept: collections.deque = collections.deque(maxlen=keep)
    sampler = NeighborSampler(indptr, indices, fanouts, seed=0, num_threads=threads)
    for b in range(warmup):
        sampler.sample(batches[b], batch_id=b)
    edges = nodes = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    for b in range(warmup, len(batches)):
        mb = sampler.sample(batches[b], batch_id=b)
        edges += mb.num_sampled_edges
        nodes += mb.num_nodes
        kept.append(mb)
        del mb
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    return {
        "edges": edges,
        "nodes": nodes,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "sampled_edges_per_s": edges / seconds,
    }


def dgl_run(python: Path, dataset: Path, seeds_file: Path, fanouts: str, threads: int, warmup: int) -> dict:
    """Run ``dgl_sample.py`` in the DGL venv; its JSON line as a dict."""
    cmd = [
        str(python),
        str(ROOT / "benchmarks" / "dgl_sample.py"),
        str(dataset),
        "--seeds",
        str(seeds_file),
        "--fanouts",
        fanouts,
        "--threads",
        str(threads),
        "--warmup",
        str(warmup),
    ]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    env.pop("PYTHONPATH", None)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise SystemExit(f"DGL side failed ({' '.join(cmd)}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--dgl-venv", type=Path, default=Path(os.environ.get("GRAPHTIER_DGL_VENV", "/tmp/dglvenv")))
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=30, help="timed batches per run")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", default="2,1", help="comma-separated thread counts")
    parser.add_argument("--repeats", type=int, default=3, help="alternating runs per side; medians are compared")
    parser.add_argument(
        "--keep",
        type=int,
        default=1,
        help="graphtier batches kept alive while the next is sampled (0: dropped at once)",
    )
    parser.add_argument("--label", default="", help="free text stored in the JSON (e.g. the commit)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    dgl_python = args.dgl_venv / "bin" / "python"
    if not dgl_python.exists():
        raise SystemExit(
            f"{dgl_python}: no DGL venv; build it with bash ../shared/baselines/make-dgl-venv.sh {args.dgl_venv}"
        )
    ds = Dataset.open(args.dataset, validate=False)
    indptr, indices = np.array(ds.indptr), np.array(ds.indices)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    batches = seed_batches(ds, args.batch_size, args.warmup + args.batches)
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        seeds_file = Path(tmp) / "seeds.npz"
        np.savez(seeds_file, **{f"b{i}": b for i, b in enumerate(batches)})
        for threads in [int(t) for t in args.threads.split(",")]:
            ours, peer = [], []
            for _ in range(args.repeats):
                ours.append(graphtier_run(indptr, indices, fanouts, batches, threads, args.warmup, args.keep))
                peer.append(dgl_run(dgl_python, args.dataset, seeds_file, args.fanouts, threads, args.warmup))
            ours_rate = statistics.median(r["sampled_edges_per_s"] for r in ours)
            peer_rate = statistics.median(r["sampled_edges_per_s"] for r in peer)
            rows.append(
                {
                    "threads": threads,
                    "graphtier_edges_per_s": ours_rate,
                    "dgl_edges_per_s": peer_rate,
                    "ratio": ours_rate / peer_rate,
                    "ratios_per_repeat": [
                        a["sampled_edges_per_s"] / b["sampled_edges_per_s"] for a, b in zip(ours, peer)
                    ],
                    "graphtier_edges_per_batch": ours[0]["edges"] / args.batches,
                    "dgl_edges_per_batch": peer[0]["edges"] / args.batches,
                    "graphtier_nodes_per_batch": ours[0]["nodes"] / args.batches,
                    "dgl_nodes_per_batch": peer[0]["nodes"] / args.batches,
                    "graphtier_runs": ours,
                    "dgl_runs": peer,
                }
            )
    print(
        f"dataset {ds.path}: {ds.num_nodes:,} nodes, {ds.num_edges:,} edges; fanouts {args.fanouts}, "
        f"batch {args.batch_size}, {args.batches} timed batches, keep {args.keep}, median of {args.repeats} alternating runs"
    )
    print(
        f"{'threads':>7} {'graphtier e/s':>14} {'DGL e/s':>10} {'ratio':>6} {'ratios per run':>24} "
        f"{'edges/batch (gt / DGL)':>24}"
    )
    for r in rows:
        per_run = ",".join(f"{x:.2f}" for x in r["ratios_per_repeat"])
        print(
            f"{r['threads']:>7} {r['graphtier_edges_per_s'] / 1e6:>13.1f}M {r['dgl_edges_per_s'] / 1e6:>9.1f}M "
            f"{r['ratio']:>6.2f} {per_run:>24} "
            f"{r['graphtier_edges_per_batch']:>11,.0f} / {r['dgl_edges_per_batch']:<11,.0f}"
        )
    report = {
        "benchmark": "bench_sample_dgl",
        "label": args.label,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "dataset": str(ds.path),
        "num_nodes": ds.num_nodes,
        "num_edges": ds.num_edges,
        "fanouts": fanouts,
        "batch_size": args.batch_size,
        "batches": args.batches,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "keep": args.keep,
        "dgl": rows[0]["dgl_runs"][0].get("dgl") if rows else None,
        "results": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(report, indent=2) + "\n")
    tmp_out.replace(args.out)
    print(f"\nsaved {args.out}")


if __name__ == "__main__":
    main()
