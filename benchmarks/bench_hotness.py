"""Top-x% hit ratio of every hotness score on several graphs and fanouts (issue 13, item 1).

For each dataset and fanout list this runs :func:`graphtier.tiering.access.analyze_access` (the
real sampler replayed for ``--epochs`` epochs with seed 0; ``presample`` sampled with seed 1 for the
same epochs) and prints one table row per (graph, fanouts): the top-10% hit ratio of every score,
the ideal (the replay's own counts), and each score's seconds. Saves everything as JSON.

    python benchmarks/bench_hotness.py --dataset cora=/tmp/tiering2/cora:10 \\
        --dataset g200k=/tmp/tiering2/g200k:3 --fanouts 10,10 --fanouts 25,10 --fanouts 15,10,5 \\
        --json benchmarks/results/bench_hotness.json

``NAME=PATH:EPOCHS`` per dataset (EPOCHS: replay epochs; fewer on big graphs to keep CPU low).

``--task link`` (with ``--num-negatives``, ``--negative-sampling``) replays the link sampler over the datasets'
training pairs (``link_train.npy``; ``--batch-size`` pairs per batch) and scores from the link seeds:

    graphtier generate /tmp/linktier/g200k-link --nodes 200000 --avg-degree 15 --feature-dim 0 --seed 3 \\
        --edge-split 0.85,0.05,0.1
    python benchmarks/bench_hotness.py --dataset g200k-link=/tmp/linktier/g200k-link:1 --fanouts 10,10 \
        --fanouts 15,10,5 --task link --json benchmarks/results/bench_hotness_link.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
from pathlib import Path

from graphtier._choices import DEFAULT_NEGATIVE_SAMPLING, DEFAULT_NUM_NEGATIVES, SCORE_METHODS, TASK_NAMES
from graphtier.dataset.format import Dataset
from graphtier.tiering.access import analyze_access
from graphtier.tiering.replay import Replay
from graphtier.tiering.seeds import EpochSeeds


def parse_dataset(text: str) -> tuple[str, Path, int]:
    name, rest = text.split("=", 1)
    path, _, epochs = rest.rpartition(":")
    return name, Path(path), int(epochs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", action="append", required=True, help="NAME=PATH:EPOCHS")
    parser.add_argument("--fanouts", action="append", required=True, help="e.g. 25,10 (repeatable)")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--percent", default="10", help="tier size reported in the table, in %% of nodes")
    parser.add_argument("--scores", default=",".join(SCORE_METHODS))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--task", choices=TASK_NAMES, default=TASK_NAMES[0])
    parser.add_argument("--num-negatives", type=int, default=DEFAULT_NUM_NEGATIVES)
    parser.add_argument("--negative-sampling", default=DEFAULT_NEGATIVE_SAMPLING)
    args = parser.parse_args()
    seeds = EpochSeeds(args.task, args.num_negatives, args.negative_sampling)
    methods = [m for m in args.scores.split(",") if m]
    rows = []
    header = f"{'graph':<12}{'fanouts':<10}" + "".join(f"{m:>10}" for m in methods) + f"{'ideal':>8}"
    print(f"top {args.percent}% hit ratio (%), then score seconds")
    print(header)
    for spec in args.dataset:
        name, path, epochs = parse_dataset(spec)
        dataset = Dataset.open(path)
        for fanout_text in args.fanouts:
            fanouts = [int(f) for f in fanout_text.split(",")]
            analysis = analyze_access(
                dataset,
                methods=methods,
                replay=Replay(fanouts=fanouts, batch_size=args.batch_size, epochs=epochs, seed=0, seeds=seeds),
            )
            curves = analysis.curves
            line = (
                f"{name:<12}{fanout_text:<10}"
                + "".join(f"{100 * curves[m][args.percent]:>10.1f}" for m in methods)
                + f"{100 * curves['ideal'][args.percent]:>8.1f}"
            )
            line += "   s: " + " ".join(f"{m}={analysis.seconds[m]:.3f}" for m in methods)
            print(line, flush=True)
            rows.append(
                {"graph": name, "path": str(path), "fanouts": fanouts, "epochs": epochs, "result": analysis.to_json()}
            )
    if args.json is not None:
        document = {
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs (2-core CPU VM, shared, no GPU)",
            "batch_size": args.batch_size,
            **seeds.describe(),
            "rows": rows,
        }
        tmp = args.json.with_name(f".{args.json.name}.tmp")
        tmp.write_text(json.dumps(document, indent=1) + "\n")
        tmp.replace(args.json)
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
