"""GCN test accuracy with full-graph degrees (graphtier's default) against the block's own degrees.

graphtier normalises a sampled GCN block by full-graph in-degrees (docs/decisions.md); DGL's GraphConv on
blocks uses the block's degrees. This trains the same GCN both ways (``Trainer.degree = None`` switches to
the block's degrees, the path ShaDow subgraphs take) and prints one JSON line per run:

    python benchmarks/bench_gcn_degrees.py bench --fanouts 15,10,5 --seeds 0,1   # the bench_epoch graph, 3 epochs
    python benchmarks/bench_gcn_degrees.py cora --seeds 0,1,2                    # Cora, the bench_accuracy settings

``bench``: /tmp/graphtier-bench-epoch/g1000000 (made by bench_epoch.py), batch 1024, hidden 128, lr 0.003,
dropout 0, 3 epochs. ``cora``: a dataset from ``graphtier prepare planetoid ../shared/data/cora DIR``
(``--dataset DIR``), fanouts 10,10, 40 epochs, hidden 64, lr 0.01, weight decay 5e-4, batch 64, dropout 0.5,
full-neighbourhood inference.
"""

from __future__ import annotations

import argparse
import json

from graphtier.dataset import Dataset
from graphtier.train.config import TrainConfig
from graphtier.train.trainer import Trainer


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("preset", choices=["bench", "cora"])
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--seeds", default="0,1")
    args = parser.parse_args()
    for seed in [int(s) for s in args.seeds.split(",")]:
        for degrees in ("full", "block"):
            if args.preset == "bench":
                dataset = Dataset.open(
                    args.dataset or "/tmp/graphtier-bench-epoch/g1000000"
                )
                config = TrainConfig(
                    model="gcn",
                    fanouts=tuple(int(f) for f in args.fanouts.split(",")),
                    dropout=0.0,
                    num_threads=2,
                    batch_size=1024,
                    hidden=128,
                    lr=0.003,
                    epochs=3,
                    eval_every=3,
                    seed=seed,
                )
            else:
                dataset = Dataset.open(args.dataset or "/tmp/e11/cora")
                config = TrainConfig(
                    model="gcn",
                    fanouts=(10, 10),
                    epochs=40,
                    hidden=64,
                    lr=0.01,
                    weight_decay=5e-4,
                    batch_size=64,
                    dropout=0.5,
                    eval_every=1,
                    full_inference=True,
                    seed=seed,
                    num_threads=2,
                )
            trainer = Trainer(dataset, config)
            if degrees == "block":
                trainer.degree = None
            report = trainer.fit()
            print(
                json.dumps(
                    {
                        "preset": args.preset,
                        "fanouts": list(config.fanouts),
                        "degrees": degrees,
                        "seed": seed,
                        "test_acc": report["final"]["test_acc"],
                    }
                ),
                flush=True,
            )


if __name__ == "__main__":
    main()
