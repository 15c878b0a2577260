"""Accuracy benchmark: Cora (public split) over 5 seeds per model, and GNN vs features-only MLP on a
generated homophilous graph. Prints a table and saves benchmarks/results/accuracy.json.

    python benchmarks/bench_accuracy.py [--seeds 5] [--cora ../shared/data/cora]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from graphtier.dataset.importers import import_planetoid
from graphtier.dataset.synthetic.generate import generate
from graphtier.train import train

ROOT = Path(__file__).resolve().parents[1]
# Published full-batch results on Cora's public split, for reference.
PUBLISHED = {"gcn": 0.815, "gat": 0.830, "sage": None, "mlp": 0.59}
CORA_OPTIONS = dict(
    fanouts=(10, 10),
    epochs=40,
    hidden=64,
    lr=0.01,
    weight_decay=5e-4,
    batch_size=64,
    dropout=0.5,
    eval_every=1,
    full_inference=True,
)
SYNTH_OPTIONS = dict(fanouts=(10, 10), epochs=10, hidden=128, batch_size=512, eval_every=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--cora", type=Path, default=ROOT / ".." / "shared" / "data" / "cora")
    parser.add_argument("--models", default="sage,gcn,gat,mlp")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "accuracy.json")
    args = parser.parse_args()
    results: dict[str, dict] = {"cora": {}, "synthetic": {}}
    with tempfile.TemporaryDirectory() as tmp:
        cora = import_planetoid(args.cora, Path(tmp) / "cora")
        for model in args.models.split(","):
            accs, seconds = [], []
            for seed in range(args.seeds):
                start = time.perf_counter()
                report = train(cora, model=model, seed=seed, **CORA_OPTIONS)
                seconds.append(time.perf_counter() - start)
                accs.append(report["final"]["test_acc"])
            results["cora"][model] = {
                "test_acc": accs,
                "mean": statistics.mean(accs),
                "std": statistics.pstdev(accs),
                "published": PUBLISHED.get(model),
                "seconds_per_run": statistics.mean(seconds),
            }
            print(
                f"cora {model:5s} test acc {statistics.mean(accs):.4f} ± {statistics.pstdev(accs):.4f} "
                f"over {args.seeds} seeds ({statistics.mean(seconds):.1f} s/run)  {accs}",
                flush=True,
            )
        synth = generate(Path(tmp) / "synth", nodes=50_000, avg_degree=10, train_fraction=0.05, seed=0)
        for model in ("sage", "mlp"):
            report = train(synth, model=model, seed=0, **SYNTH_OPTIONS)
            results["synthetic"][model] = report["final"]["test_acc"]
        gain = results["synthetic"]["sage"] - results["synthetic"]["mlp"]
        results["synthetic"]["gain_points"] = 100 * gain
        print(
            f"synthetic 50k nodes: sage {results['synthetic']['sage']:.4f}, mlp {results['synthetic']['mlp']:.4f}, "
            f"gain {100 * gain:.1f} points"
        )
    results["config"] = {
        "cora": {k: list(v) if isinstance(v, tuple) else v for k, v in CORA_OPTIONS.items()},
        "synthetic": {k: list(v) if isinstance(v, tuple) else v for k, v in SYNTH_OPTIONS.items()},
        "date": time.strftime("%Y-%m-%d"),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"saved {args.json}")


if __name__ == "__main__":
    main()
