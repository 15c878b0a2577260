"""The DGL side of ``bench_sample_dgl.py``: sampled edges/s of DGL 2.1's classic ``NeighborSampler``.

Runs only inside the DGL baseline venv (``../shared/baselines/make-dgl-venv.sh VENV``); graphtier never
imports DGL. It samples the seed batches that the graphtier side wrote (``--seeds``, an ``.npz`` with
arrays ``b0, b1, ...``), so both samplers see exactly the same seeds; fanouts are given seeds first, as
graphtier's, and reversed for DGL (which lists the layer next to the input first).

    VENV/bin/python benchmarks/dgl_sample.py DATASET --seeds SEEDS.npz --fanouts 15,10,5 --threads 2 --warmup 3

Sampled edges are counted as on the graphtier side: the sum of the blocks' edge counts over the layers.
Prints one JSON line: ``edges``, ``seconds``, ``cpu_seconds``, ``sampled_edges_per_s``, ``nodes`` (input
nodes summed over the timed batches), ``dgl`` and ``torch`` versions.
"""

import argparse
import json
import time

import dgl
import numpy as np
import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("--seeds", required=True)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    indptr = torch.from_numpy(np.load(f"{args.dataset}/indptr.npy"))
    indices = torch.from_numpy(np.load(f"{args.dataset}/indices.npy").astype(np.int64))
    graph = dgl.graph(("csc", (indptr, indices, torch.tensor([], dtype=torch.int64))))
    sampler = dgl.dataloading.NeighborSampler([int(f) for f in reversed(args.fanouts.split(","))])
    with np.load(args.seeds) as archive:
        batches = [torch.from_numpy(archive[f"b{i}"].astype(np.int64)) for i in range(len(archive.files))]
    for seeds in batches[: args.warmup]:
        sampler.sample_blocks(graph, seeds)
    edges = 0
    nodes = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    for seeds in batches[args.warmup :]:
        input_nodes, _, blocks = sampler.sample_blocks(graph, seeds)
        edges += sum(block.num_edges() for block in blocks)
        nodes += int(input_nodes.shape[0])
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    print(
        json.dumps(
            {
                "edges": edges,
                "nodes": nodes,
                "batches": len(batches) - args.warmup,
                "seconds": seconds,
                "cpu_seconds": cpu_seconds,
                "sampled_edges_per_s": edges / seconds,
                "threads": args.threads,
                "dgl": dgl.__version__,
                "torch": torch.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
