"""The training step without its producer: how fast could an epoch be if sampling and gathering were free?

Prepares ``--batches`` mini-batches of one epoch first (sample, exclude, gather, block CSRs: the producer's
whole job), then times the consumer alone on them: device copy, forward, loss, backward, optimizer step, one
batch after the other with nothing else running. The result, scaled to the epoch's batch count, is a floor for
``graphtier train``'s epoch on this machine: the producer thread can only add to it (it shares the cores).
Also times the dense products alone (the Linear layers' forward and backward GEMMs at the batches' shapes),
the part that no sampler or kernel work can remove.

    python benchmarks/step_floor.py DATASET --task link --fanouts 15,10,5 --batches 60 --threads 2

The training options are those of ``graphtier train`` (model sage, hidden 128, batch 1024, Adam lr 0.003, no
dropout by default: the settings of ``bench_link.py`` and ``bench_epoch.py``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from graphtier import configure_threads  # noqa: E402


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--task", choices=("node", "link"), default="node")
    parser.add_argument("--model", default="sage")
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--batches", type=int, default=60, help="batches prepared and timed (held in memory)")
    parser.add_argument("--repeats", type=int, default=3, help="timed passes over the prepared batches")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None)
    return parser.parse_args()


def _gemm_seconds(shapes: list[list[tuple[int, int, int]]], threads: int) -> float:
    """Seconds of the Linear layers' GEMMs alone (forward, weight gradients, input gradients past the first layer)."""
    import torch

    torch.set_num_threads(threads)
    total = 0.0
    for batch in shapes:
        for layer, (rows, d_in, d_out) in enumerate(batch):
            a = torch.randn(rows, d_in)
            root = torch.randn(rows, d_in)
            w_l, w_r = torch.randn(d_out, d_in), torch.randn(d_out, d_in)
            grad = torch.randn(rows, d_out)
            started = time.perf_counter()
            out = torch.addmm(torch.zeros(d_out), a, w_l.t()).addmm_(root, w_r.t())
            grad.t().mm(a), grad.t().mm(root)  # weight gradients
            if layer > 0:
                grad.mm(w_l), grad.mm(w_r)  # input gradients (the first layer's input is not learnable)
            total += time.perf_counter() - started
            del out
    return total


def main() -> None:
    args = _arguments()
    configure_threads(args.threads)
    import numpy as np
    import torch

    from graphtier import Dataset, TrainConfig
    from graphtier.sampling import iter_seed_batches
    from graphtier.train.loop.trainer import Trainer

    dataset = Dataset.open(args.dataset)
    fanouts = tuple(int(f) for f in args.fanouts.split(","))
    config = TrainConfig(
        task=args.task, model=args.model, fanouts=fanouts, batch_size=args.batch_size, hidden=args.hidden,
        lr=0.003, dropout=0.0, epochs=1, num_threads=args.threads, prefetch=0,
    )  # fmt: skip
    trainer = Trainer(dataset, config)
    batches = list(iter_seed_batches(trainer.train_idx, args.batch_size, shuffle=True, seed=0, epoch=1))
    epoch_batches = len(batches)
    # the producer timed as training runs it: each batch dropped once made, so its staging buffers are reused
    # (holding every batch, as the consumer's pass below must, makes the store allocate and fault in a new
    # buffer per batch: measured 1.5-7x the producer's real time)
    producer = trainer.feed.producer(batches[: args.batches], trainer.train_sample, 0)
    started = time.perf_counter()
    for _ in producer:
        pass
    producer_seconds = time.perf_counter() - started
    producer.close()
    producer = trainer.feed.producer(batches[: args.batches], trainer.train_sample, 0)
    items = list(producer)  # the same batches (same batch ids), held for the consumer's passes
    producer.close()
    encoder = getattr(trainer.model, "encoder", trainer.model)  # a link model wraps the node encoder
    shapes = [
        [(int(block.num_dst), int(conv.lin_l.weight.shape[1]), int(conv.lin_l.weight.shape[0]))
         for block, conv in zip(item.batch.blocks, encoder.convs)]
        for item in items
    ] if args.model == "sage" else []  # fmt: skip
    model, optimizer, task = trainer.model, trainer.optimizer, trainer.task
    model.train()

    def consume() -> float:
        begin = time.perf_counter()
        for item in items:
            batch = trainer.feed.to_device(item)
            optimizer.zero_grad(set_to_none=True)
            out = task.outputs(model, batch.forward(model), batch)
            task.loss(out, batch.y).backward()
            optimizer.step()
        return time.perf_counter() - begin

    consume()  # warm-up: kernels compiled, buffers allocated
    passes = [consume() for _ in range(args.repeats)]
    step = statistics.median(passes) / len(items)
    gemm = _gemm_seconds(shapes, args.threads) / len(items) if shapes else None
    result: dict[str, Any] = {
        "dataset": str(args.dataset), "task": args.task, "model": args.model, "fanouts": args.fanouts,
        "threads": args.threads, "batches_timed": len(items), "epoch_batches": epoch_batches,
        "producer_seconds_per_batch": producer_seconds / len(items),
        "consumer_seconds_per_batch": step, "consumer_epoch_floor_seconds": step * epoch_batches,
        "consumer_passes_seconds": passes,
        "gemm_seconds_per_batch": gemm, "gemm_epoch_seconds": gemm * epoch_batches if gemm else None,
        "mean_layer_rows": [float(np.mean([s[i][0] for s in shapes])) for i in range(len(fanouts))] if shapes else None,
    }  # fmt: skip
    trainer.store.close()
    print(
        f"{args.task} {args.model} {args.fanouts}, {args.threads} threads, {epoch_batches} batches an epoch: "
        f"consumer alone {step * 1e3:.1f} ms a batch = {step * epoch_batches:.2f} s an epoch"
        + (f"; its GEMMs alone {gemm * 1e3:.1f} ms = {gemm * epoch_batches:.2f} s" if gemm else "")
        + f"; the producer alone {producer_seconds / len(items) * 1e3:.1f} ms a batch"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    del torch


if __name__ == "__main__":
    main()
