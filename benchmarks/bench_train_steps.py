"""A short training run on a large dataset: the first ``--batches`` mini-batches of one epoch, no evaluation.

For a model whose full epoch on a billion-edge graph takes longer than a benchmark window (R-GAT, issue 39): the
trainer is built as ``graphtier train`` builds it (placement, learnable tables, the producer thread), its training
seeds cut to ``--batches`` batches, and one epoch run; prints the epoch record (seconds per stage, bytes per tier)
as JSON. ``--save-model FILE`` saves the model then, for timing ``graphtier predict`` on it. Run it under ``benchmarks/stage_memory.py`` for peak RssAnon/RssFile:

    python benchmarks/stage_memory.py --label "train rgat (50 batches)" --json stages.json -- \\
        python benchmarks/bench_train_steps.py /work/scale/reordered --model rgat --fanouts 10,10 --hidden 64 \\
        --batches 50 --tables-on disk --scratch-dir /work/scale
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from graphtier import Dataset
from graphtier._process import configure_process
from graphtier.train import TrainConfig, Trainer
from graphtier.train.persist.saved import save_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--model", default="rgat")
    parser.add_argument("--fanouts", default="10,10")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--batches", type=int, default=50, help="training mini-batches run (the epoch is cut)")
    parser.add_argument("--tables-on", choices=["ram", "disk"], default="ram")
    parser.add_argument("--scratch-dir", default=None)
    parser.add_argument("--save-model", type=Path, default=None, help="save the model after the cut epoch (predict)")
    args = parser.parse_args()
    dataset = Dataset.open(args.dataset)
    options = {"model": args.model, "fanouts": tuple(int(f) for f in args.fanouts.split(",")), "hidden": args.hidden,
               "batch_size": args.batch_size, "epochs": 1, "quiet": True}  # fmt: skip
    if args.tables_on == "disk":
        options.update(tables_on="disk", scratch_dir=args.scratch_dir)
    config = TrainConfig(**options).for_dataset(dataset)
    config.validate(dataset)
    configure_process(config.run.num_threads, passive_wait=False)
    started = time.perf_counter()
    trainer = Trainer(dataset, config)
    built = time.perf_counter() - started
    trainer.train_idx = trainer.train_idx[: args.batches * args.batch_size]
    started = time.perf_counter()
    record = trainer.train_epoch(1)
    seconds = time.perf_counter() - started
    if args.save_model is not None:
        save_model(args.save_model, trainer.model, config.to_dict(), dataset)
    print(json.dumps({"build_seconds": built, "epoch_seconds": seconds, "batches_per_second": record["batches"] / seconds,
                      **record}, default=str, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
