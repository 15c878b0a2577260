"""GCN test accuracy with ``--gcn-degrees full`` against ``--gcn-degrees block``.

``full`` normalises a sampled GCN block by full-graph in-degrees (the unbiased estimate of the full-graph
GCN); ``block`` by the block's own in-degrees, as DGL's GraphConv on blocks (docs/decisions.md). This trains
the same GCN both ways and prints one JSON line per run, then a table of the mean test accuracy per setting
(``--out FILE``: the runs as a JSON list too):

    python benchmarks/bench_gcn_degrees.py bench --fanouts 15,10,5 --seeds 0,1 --epochs 10
    python benchmarks/bench_gcn_degrees.py cora --seeds 0,1,2                    # Cora, the bench_accuracy settings

``bench``: /tmp/graphtier-bench-epoch/g1000000 (made by bench_epoch.py), batch 1024, hidden 128, lr 0.003,
dropout 0, ``--epochs`` (default 3), sampled evaluation (the training fanouts) after the last epoch.
``cora``: a dataset from ``graphtier prepare planetoid ../shared/data/cora DIR`` (``--dataset DIR``,
default /tmp/e11/cora), fanouts 10,10, 40 epochs, hidden 64, lr 0.01, weight decay 5e-4, batch 64,
dropout 0.5, full-neighbourhood inference every epoch, test accuracy of the best-validation epoch.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from graphtier.dataset import Dataset
from graphtier.train.config import TrainConfig
from graphtier.train.models import GCN_DEGREES
from graphtier.train.trainer import Trainer


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("preset", choices=["bench", "cora"])
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--epochs", type=int, default=None, help="bench: epochs (default 3); cora: 40")
    parser.add_argument("--degrees", default=",".join(GCN_DEGREES), help="the --gcn-degrees choices to run")
    parser.add_argument("--out", default=None, help="write the runs as a JSON list to this file")
    args = parser.parse_args()
    runs = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        for degrees in args.degrees.split(","):
            if args.preset == "bench":
                dataset = Dataset.open(args.dataset or "/tmp/graphtier-bench-epoch/g1000000")
                epochs = args.epochs or 3
                config = TrainConfig(
                    model="gcn", gcn_degrees=degrees, fanouts=tuple(int(f) for f in args.fanouts.split(",")),
                    dropout=0.0, num_threads=2, batch_size=1024, hidden=128, lr=0.003, epochs=epochs,
                    eval_every=epochs, seed=seed, quiet=True,
                )  # fmt: skip
            else:
                dataset = Dataset.open(args.dataset or "/tmp/e11/cora")
                config = TrainConfig(
                    model="gcn", gcn_degrees=degrees, fanouts=(10, 10), epochs=args.epochs or 40, hidden=64,
                    lr=0.01, weight_decay=5e-4, batch_size=64, dropout=0.5, eval_every=1, full_inference=True,
                    seed=seed, num_threads=2, quiet=True,
                )  # fmt: skip
            started = time.perf_counter()
            report = Trainer(dataset, config).fit()
            run = {
                "preset": args.preset,
                "fanouts": list(config.fanouts),
                "epochs": config.epochs,
                "degrees": degrees,
                "seed": seed,
                "valid_acc": report["final"].get("valid_acc"),
                "test_acc": report["final"]["test_acc"],
                "seconds": round(time.perf_counter() - started, 1),
            }
            runs.append(run)
            print(json.dumps(run), flush=True)
    print(f"\n{'preset':<7} {'fanouts':<9} {'epochs':>6} {'degrees':<7} {'seeds':>5} {'test acc (each seed)':<28} mean")
    for degrees in args.degrees.split(","):
        mine = [r for r in runs if r["degrees"] == degrees]
        accs = [r["test_acc"] for r in mine]
        print(
            f"{args.preset:<7} {','.join(map(str, mine[0]['fanouts'])):<9} {mine[0]['epochs']:>6} {degrees:<7} "
            f"{len(accs):>5} {' '.join(f'{a:.4f}' for a in accs):<28} {statistics.mean(accs):.4f}"
        )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(runs, indent=1) + "\n")


if __name__ == "__main__":
    main()
