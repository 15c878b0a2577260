"""Hybrid-training benchmark (seed 002): one trainer process against several, same total resources.

On a CPU-only machine: ``--devices cpu`` (one process, all threads) against ``--devices cpu,cpu`` (two
processes, half the threads each): the overhead of the multi-process protocol. With CUDA: ``cuda:0``
against ``cpu,cuda:0`` (the unified CPU-GPU protocol, dynamic balancer). GraphSAGE and GCN, neighbour
and ShaDow samplers, on a generated power-law graph. Epoch time is the mean over the epochs after the
first (which includes JIT compilation). Prints a table and saves benchmarks/results/hybrid.json.

    python benchmarks/bench_hybrid.py [--nodes 200000] [--epochs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from graphtier import configure_process
from graphtier.dataset.synthetic.generate import generate
from graphtier.train import TrainConfig, Trainer
from graphtier.train.loop.launch import launch

ROOT = Path(__file__).resolve().parents[1]


def epoch_seconds(report: dict) -> float:
    times = [e["stage_seconds"]["total"] for e in report["epochs"]]
    return statistics.mean(times[1:]) if len(times) > 1 else times[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--avg-degree", type=float, default=15)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "hybrid.json")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    cuda = torch.cuda.is_available()
    single, multi = (("cuda:0",), ("cpu", "cuda:0")) if cuda else (("cpu",), ("cpu", "cpu"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        dataset = generate(Path(tmp) / "g", nodes=args.nodes, avg_degree=args.avg_degree, train_fraction=0.1, seed=0)
        for model in ("sage", "gcn"):
            for sampler, fanouts, layers in (("neighbor", (15, 10), None), ("shadow", (10, 5), 3)):
                common = dict(
                    model=model,
                    sampler=sampler,
                    fanouts=fanouts,
                    layers=layers,
                    epochs=args.epochs,
                    batch_size=args.batch_size,
                    hidden=128,
                    eval_every=args.epochs,
                    quiet=True,
                )
                start = time.perf_counter()
                configure_process(cores, passive_wait=False)  # torch's threads, as `graphtier train --num-threads`
                one = Trainer(dataset, TrainConfig(device=single[0], num_threads=cores, **common)).fit()
                one_wall = time.perf_counter() - start
                start = time.perf_counter()
                many = launch(str(dataset.path), TrainConfig(devices=multi, cpu_threads=max(1, cores // 2), **common))
                many_wall = time.perf_counter() - start
                assert many is not None
                row = {
                    "model": model,
                    "sampler": sampler,
                    "single": "+".join(single),
                    "multi": "+".join(multi),
                    "single_epoch_s": epoch_seconds(one),
                    "multi_epoch_s": epoch_seconds(many),
                    "speedup": epoch_seconds(one) / epoch_seconds(many),
                    "final_cpu_share": many["balancer"]["final_cpu_share"],
                    "final_shares": many["balancer"]["final_shares"],
                    "single_test_acc": one["final"]["test_acc"],
                    "multi_test_acc": many["final"]["test_acc"],
                    "single_wall_s": one_wall,
                    "multi_wall_s": many_wall,
                }
                rows.append(row)
                print(
                    f"{model:4s} {sampler:8s} {row['single']:>7s}: {row['single_epoch_s']:6.2f} s/epoch  "
                    f"{row['multi']:>10s}: {row['multi_epoch_s']:6.2f} s/epoch  speedup {row['speedup']:.2f}x  "
                    f"shares {[round(s, 3) for s in row['final_shares']]}  acc {row['single_test_acc']:.3f}/"
                    f"{row['multi_test_acc']:.3f}",
                    flush=True,
                )
    result = {
        "benchmark": "hybrid",
        "date": time.strftime("%Y-%m-%d"),
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "cpu_count": cores,
        "nodes": args.nodes,
        "epochs": args.epochs,
        "rows": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")
    print(f"saved {args.json}")


if __name__ == "__main__":
    main()
