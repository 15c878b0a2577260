"""Accuracy on heco-acm (paper / author / subject), 20 labelled papers per class, over 5 seeds per model.

Imports ../shared/data/heco-acm through a manifest (``graphtier prepare manifest``, with reverse relations), trains
R-GCN, R-GAT, HeteroSAGE and the MLP on the paper features with the splits ``train_20`` / ``val_20`` / ``test_20``,
and prints test accuracy (mean ± std over the seeds) of the best-validation epoch; writes
benchmarks/results/acm_accuracy.json. Authors read ``a_feat.npz`` unless ``--no-author-features``; subjects are
featureless (``--featureless onehot``). All neighbours are sampled (fanouts -1,-1: ACM is small), layer norm.

    python benchmarks/acm_accuracy.py [--seeds 5] [--models rgcn,rgat,hsage,mlp] [--no-author-features]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from graphtier.dataset.importers.formats.manifest import import_manifest
from graphtier.train import train

ROOT = Path(__file__).resolve().parents[1]
COMMON: dict[str, Any] = dict(
    fanouts=(-1, -1), batch_size=64, epochs=100, eval_every=5, lr=0.01, weight_decay=0.0, hidden=128, dropout=0.5,
    featureless="onehot", norm="layer", eval_batch_size=1024, quiet=True,
)  # fmt: skip
OPTIONS: dict[str, dict[str, Any]] = {
    "rgcn": {},
    "rgat": {"heads": 4},
    "hsage": {},
    "mlp": {"fanouts": (-1,)},
}


def acm_manifest(root: Path, *, author_features: bool = True) -> dict[str, Any]:
    """The manifest of heco-acm: paper features and labels, author features (``a_feat.npz``) unless
    ``author_features`` is False (the issue's example manifest); subjects featureless."""
    author: dict[str, Any] = {"count": 7167}
    if author_features:
        author["features"] = str(root / "a_feat.npz")
    return {
        "name": "acm",
        "nodes": {
            "paper": {"count": 4019, "features": str(root / "p_feat.npz"), "labels": str(root / "labels.npy")},
            "author": author,
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
    parser.add_argument(
        "--no-author-features", dest="author_features", action="store_false",
        help="leave the authors featureless (the manifest of the issue); default: read a_feat.npz",
    )  # fmt: skip
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "acm_accuracy.json")
    return parser


def main() -> None:
    args = build_parser().parse_args()
    results: dict[str, Any] = {"options": {k: list(v) if isinstance(v, tuple) else v for k, v in COMMON.items()}}
    results["author_features"] = args.author_features
    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "acm.json"
        manifest.write_text(json.dumps(acm_manifest(args.acm.resolve(), author_features=args.author_features)))
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
