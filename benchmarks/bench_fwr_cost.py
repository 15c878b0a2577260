"""Seconds to compute fwr vs wrpr vs presample (1 and 10 epochs), best of --repeats, per dataset.

    python benchmarks/bench_fwr_cost.py /tmp/tiering2/cnr-2000 /tmp/tiering2/g200k --fanouts 15,10,5 \\
        --json benchmarks/results/bench_fwr_cost.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from graphtier.dataset.format import Dataset
from graphtier.tiering.hotness import compute_scores
from graphtier.tiering.replay import Replay

RUNS = (("wrpr", 1), ("fwr", 1), ("fwr-sum", 1), ("presample", 1), ("presample", 10))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    fanouts = [int(f) for f in args.fanouts.split(",")]
    labels = [f"{m}" if m != "presample" else f"presample x{e}" for m, e in RUNS]
    print(f"best of {args.repeats}, seconds; fanouts {args.fanouts}, batch {args.batch_size}")
    print(f"{'dataset':<12}" + "".join(f"{label:>15}" for label in labels))
    rows = []
    for path in args.datasets:
        data = Dataset.open(path)
        compute_scores(data, "fwr", replay=Replay(fanouts=fanouts))  # load the compiled kernels once
        best = {}
        for (method, epochs), label in zip(RUNS, labels):
            times = []
            for _ in range(args.repeats):
                started = time.perf_counter()
                compute_scores(
                    data, method, replay=Replay(fanouts=fanouts, batch_size=args.batch_size, epochs=epochs, seed=1)
                )
                times.append(time.perf_counter() - started)
            best[label] = min(times)
        print(f"{path.name:<12}" + "".join(f"{best[label]:>15.4f}" for label in labels), flush=True)
        rows.append({"dataset": str(path), "num_nodes": data.num_nodes, "num_edges": data.num_edges, "best_s": best})
    if args.json is not None:
        args.json.write_text(
            json.dumps(
                {"fanouts": fanouts, "batch_size": args.batch_size, "repeats": args.repeats, "rows": rows}, indent=1
            )
            + "\n"
        )
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
