"""Tiering: score nodes by expected feature reads, reorder hot rows first, plan the GPU tiers, train tiered.

    python examples/tiering_and_plan.py --nodes 20000

The same steps as ``graphtier score`` / ``reorder`` / ``plan`` / ``train --features-on tiered``. Without a GPU
the tiered store keeps the same plan and byte accounting with its "gpu" tier in RAM, so it runs anywhere.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import graphtier

graphtier.configure_threads()

from graphtier.tiering.plan.capacity import describe_device, plan_capacity  # noqa: E402
from graphtier.tiering.plan.report import format_plan  # noqa: E402
from graphtier.train import train  # noqa: E402

FANOUTS = [10, 5]
BATCH_SIZE = 256


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000, help="nodes of the generated graph (default 5000)")
    parser.add_argument("--work", type=Path, default=None, help="folder for the datasets (default: temporary)")
    return parser


def run(nodes: int, work: Path) -> dict[str, int]:
    """Score, reorder, plan and train one epoch tiered; returns the epoch's feature bytes per tier."""
    ds = graphtier.generate(work / "graph", nodes=nodes, avg_degree=10, feature_dim=64, overwrite=True)
    replay = graphtier.Replay(fanouts=FANOUTS, batch_size=BATCH_SIZE)  # the sampler training will run
    scores = graphtier.compute_scores(ds, "fwr", replay=replay)  # float64 [N]
    hot, _ = graphtier.reorder_dataset(ds, work / "graph-hot", scores.scores, score_label="fwr", overwrite=True)
    print(f"reordered {hot.num_nodes:,} nodes by fwr (hot rows first): node order {hot.node_order}")
    # a GPU of 4 GiB, planned without one: what share of the feature reads would each budget serve?
    device = describe_device("4GiB", host_memory="8GiB")
    plan = plan_capacity(hot, device, replay=replay, budgets=["0%", "10%", "25%", "100%"])
    print(format_plan(plan))
    result = train(
        hot, model="sage", fanouts=FANOUTS, batch_size=BATCH_SIZE, hidden=32, epochs=1, features_on="tiered",
        gpu_budget="10%", quiet=True,
    )  # fmt: skip
    by_tier = result["epochs"][-1]["feature_bytes_by_tier"]
    print(f"train --features-on tiered --gpu-budget 10%: feature bytes per tier {by_tier}")
    return by_tier


def main(argv: list[str] | None = None) -> dict[str, int]:
    args = build_parser().parse_args(argv)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        return run(args.nodes, args.work)
    with tempfile.TemporaryDirectory() as work:
        return run(args.nodes, Path(work))


if __name__ == "__main__":
    main()
