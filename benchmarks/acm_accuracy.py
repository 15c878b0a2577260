"""Accuracy on heco-acm (paper / author / subject), 20 labelled papers per class, over 5 seeds per model.

Imports ../shared/data/heco-acm through a manifest (``graphtier prepare manifest``, with reverse relations), trains
R-GCN, R-GAT, HeteroSAGE and the MLP on the paper features with the splits ``train_20`` / ``val_20`` / ``test_20``,
and prints test accuracy (mean ± std over the seeds) of the best-validation epoch; writes
benchmarks/results/acm_accuracy.json.

    python benchmarks/acm_accuracy.py [--seeds 5] [--models rgcn,rgat,hsage,mlp] [--acm ../shared/data/heco-acm]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from graphtier.dataset.importers.manifest import import_manifest
from graphtier.train import train

ROOT = Path(__file__).resolve().parents[1]
COMMON: dict[str, Any] = dict(
    fanouts=(10, 10), batch_size=32, epochs=100, eval_every=5, lr=0.01, weight_decay=1e-3, hidden=64, dropout=0.5,
    featureless="zeros", eval_batch_size=1024, quiet=True,
)  # fmt: skip
OPTIONS: dict[str, dict[str, Any]] = {
    "rgcn": {},
    "rgat": {"heads": 4},
    "hsage": {},
    "mlp": {"fanouts": (10,)},
}


def acm_manifest(root: Path) -> dict[str, Any]:
    """The manifest of heco-acm (paper features and labels; authors and subjects featureless)."""
    return {
        "name": "acm",
        "nodes": {
            "paper": {"count": 4019, "features": str(root / "p_feat.npz"), "labels": str(root / "labels.npy")},
            "author": {"count": 7167},
            "subject": {"count": 60},
        },
        "edges": [
            {"type": ["paper", "written_by", "author"], "path": str(root / "pa.txt")},
            {"type": ["paper", "about", "subject"], "path": str(root / "ps.txt")},
        ],
        "target": "paper",
        "split": {name: str(root / f"{file}_20.npy") for name, file in (("train", "train"), ("valid", "val"),
                                                                         ("test", "test"))},
    }  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--models", default="rgcn,rgat,hsage,mlp")
    parser.add_argument("--acm", type=Path, default=ROOT / ".." / "shared" / "data" / "heco-acm")
    parser.add_argument("--epochs", type=int, default=COMMON["epochs"])
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "acm_accuracy.json")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    results: dict[str, Any] = {"options": {k: list(v) if isinstance(v, tuple) else v for k, v in COMMON.items()}}
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "acm.json"
        manifest.write_text(json.dumps(acm_manifest(args.acm.resolve())))
        acm = import_manifest(manifest, Path(tmp) / "acm", add_reverse=True)
        for model in args.models.split(","):
            accs, seconds = [], []
            for seed in range(args.seeds):
                start = time.perf_counter()
                options = {**COMMON, "epochs": args.epochs, **OPTIONS[model]}
                report = train(acm, model=model, seed=seed, **options).report
                seconds.append(time.perf_counter() - start)
                accs.append(report["final"]["test_acc"])
            results[model] = {"test_acc": accs, "mean": statistics.mean(accs), "std": statistics.pstdev(accs),
                              "seconds_per_run": statistics.mean(seconds), "options": OPTIONS[model]}  # fmt: skip
            print(f"{model:6s} test acc {results[model]['mean']:.4f} ± {results[model]['std']:.4f}  "
                  f"({args.seeds} seeds, {results[model]['seconds_per_run']:.1f} s per run)", flush=True)  # fmt: skip
    print("\n| model | test accuracy (mean ± std, %d seeds) |\n|---|---|" % args.seeds)
    for model in args.models.split(","):
        print(f"| {model} | {results[model]['mean']:.4f} ± {results[model]['std']:.4f} |")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
