"""GCN test accuracy with ``--gcn-degrees full`` against ``--gcn-degrees block``.

``full`` normalises a sampled GCN block by full-graph in-degrees (the unbiased estimate of the full-graph
GCN); ``block`` by the block's own in-degrees, as DGL's GraphConv on blocks (docs/decisions.md). This trains
the same GCN both ways and prints one JSON line per run, then a table of the mean test accuracy per setting
(``--out FILE``: the runs as a JSON list too):

    python benchmarks/bench_gcn_degrees.py bench --fanouts 15,10,5 --seeds 0,1 --epochs 10
    python benchmarks/bench_gcn_degrees.py cora --seeds 0,1,2                    # Cora, the bench_accuracy settings

``--degrees`` also takes ``dgl-both``, an experiment that is not a graphtier option: DGL's
``GraphConv(norm="both")`` weights on the block, edge ``j -> i`` ``1 / sqrt(in_i * out_j)`` with the block's
in-degree of the destination and out-degree of the source (each at least 1) and no self-loop, patched into
the GCN layer for that run (its exact inference on Cora is right because Cora fits one inference chunk).

``bench``: /tmp/graphtier-bench-epoch/g1000000 (made by bench_epoch.py), batch 1024, hidden 128, lr 0.003,
dropout 0, ``--epochs`` (default 3), evaluation after the last epoch: sampled (the training fanouts) or with
``--full-inference`` exact layer-wise inference (full-graph in-degrees for both choices).
``cora``: a dataset from ``graphtier prepare planetoid ../shared/data/cora DIR`` (``--dataset DIR``,
default /tmp/e11/cora), fanouts 10,10 (or ``--fanouts``), 40 epochs, hidden 64, lr 0.01, weight decay 5e-4, batch 64,
dropout 0.5, full-neighbourhood inference every epoch, test accuracy of the best-validation epoch.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from graphtier import configure_process
from graphtier.dataset import Dataset
from graphtier.train.loop.trainer import Trainer
from graphtier.train.nn import models
from graphtier.train.nn.aggregate import BlockCSR, gcn_weights
from graphtier.train.nn.models import GCN_DEGREES
from graphtier.train.options.config import TrainConfig


def dgl_both_weights(csr: BlockCSR, degree: torch.Tensor | None, dtype: torch.dtype) -> tuple[torch.Tensor, None]:
    """DGL GraphConv norm="both" on a block: edge weights [E] in CSR order, no self-loop (``degree`` unused)."""
    in_degree = csr.in_degree().to(dtype).clamp(min=1.0)
    out_degree = torch.bincount(csr.col, minlength=csr.num_src).to(dtype).clamp(min=1.0)
    return in_degree.rsqrt()[csr.row] * out_degree.rsqrt()[csr.col], None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("preset", choices=["bench", "cora"])
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--fanouts", default=None, help="bench: default 15,10,5; cora: default 10,10")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--epochs", type=int, default=None, help="bench: epochs (default 3); cora: 40")
    parser.add_argument("--degrees", default=",".join(GCN_DEGREES), help="the --gcn-degrees choices to run")
    parser.add_argument(
        "--full-inference", action="store_true", help="bench: exact layer-wise inference at the end (not dgl-both)"
    )
    parser.add_argument("--out", default=None, help="write the runs as a JSON list to this file")
    args = parser.parse_args()
    runs = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        for degrees in args.degrees.split(","):
            option = "full" if degrees == "full" else "block"  # dgl-both: degree None, weights patched
            default_fanouts = "15,10,5" if args.preset == "bench" else "10,10"
            fanouts = tuple(int(f) for f in (args.fanouts or default_fanouts).split(","))
            if args.preset == "bench":
                dataset = Dataset.open(args.dataset or "/tmp/graphtier-bench-epoch/g1000000")
                epochs = args.epochs or 3
                config = TrainConfig(
                    model="gcn", gcn_degrees=option, fanouts=fanouts, dropout=0.0, num_threads=2, batch_size=1024, hidden=128, lr=0.003, epochs=epochs,
                    eval_every=epochs, seed=seed, quiet=True, full_inference=args.full_inference,
                )  # fmt: skip
            else:
                dataset = Dataset.open(args.dataset or "/tmp/e11/cora")
                config = TrainConfig(
                    model="gcn", gcn_degrees=option, fanouts=fanouts, epochs=args.epochs or 40, hidden=64, lr=0.01,
                    weight_decay=5e-4, batch_size=64, dropout=0.5, eval_every=1, full_inference=True, seed=seed,
                    num_threads=2, quiet=True,
                )  # fmt: skip
            started = time.perf_counter()
            models.gcn_weights = dgl_both_weights if degrees == "dgl-both" else gcn_weights
            configure_process(config.run.num_threads, passive_wait=False)  # as `graphtier train --num-threads`
            report = Trainer(dataset, config).fit()
            models.gcn_weights = gcn_weights
            run = {
                "preset": args.preset,
                "fanouts": list(config.sampling.fanouts),
                "epochs": config.optim.epochs,
                "evaluation": "full" if config.run.full_inference else "sampled",
                "degrees": degrees,
                "seed": seed,
                "valid_acc": report["final"].get("valid_acc"),
                "test_acc": report["final"]["test_acc"],
                "seconds": round(time.perf_counter() - started, 1),
            }
            runs.append(run)
            print(json.dumps(run), flush=True)
    print(
        f"\n{'preset':<7} {'fanouts':<9} {'epochs':>6} {'eval':<8} {'degrees':<8} {'seeds':>5} {'test acc (each seed)':<28} mean"
    )
    for degrees in args.degrees.split(","):
        mine = [r for r in runs if r["degrees"] == degrees]
        accs = [r["test_acc"] for r in mine]
        print(
            f"{args.preset:<7} {','.join(map(str, mine[0]['fanouts'])):<9} {mine[0]['epochs']:>6} "
            f"{mine[0]['evaluation']:<8} {degrees:<8} "
            f"{len(accs):>5} {' '.join(f'{a:.4f}' for a in accs):<28} {statistics.mean(accs):.4f}"
        )
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(runs, indent=1) + "\n")


if __name__ == "__main__":
    main()
