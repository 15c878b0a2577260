"""Link-prediction training epochs: graphtier against DGL 2.1 on the same generated graph and edge split, in one run.

Both sides train the same model on the same data: a GraphSAGE-mean encoder (``hidden``-wide embeddings) with a
dot-product decoder and binary cross-entropy, over the supervision pairs of the dataset's edge split
(``link_train.npy``), ``--num-negatives`` uniform negative destinations per positive (source kept), each batch's
target edges and their reverses excluded from message passing, the same fanouts, batch size (positive pairs per
batch), hidden size, learning rate, dropout, epochs and threads. graphtier runs ``graphtier train --task link``;
DGL runs ``benchmarks/dgl_link.py`` (``as_edge_prediction_sampler(exclude='reverse_id')`` + ``SAGEConv`` + dot
decoder, inside DGL's own venv, as a subprocess: DGL is never a dependency of graphtier). The test AUC of both
comes from exact layer-wise embeddings of all nodes, then dot scores of the test positive and negative pairs,
with the same AUC formula (Mann-Whitney U, ties half).

Each of ``--pairs`` repetitions runs both sides one after the other (graphtier first in even repetitions, DGL
first in odd ones, so that a drifting machine load favours neither); it prints the mean epoch seconds of each
(the first epoch, which compiles kernels and warms caches, is left out), the ratio DGL / graphtier (> 1:
graphtier is faster) and the test AUC of both, then the median ratio. Results go to
``benchmarks/results/link.json``.

    bash ../shared/baselines/make-dgl-venv.sh /tmp/dglvenv          # once
    python benchmarks/bench_link.py --dgl-venv /tmp/dglvenv [--nodes 50000] [--pairs 3]

The graph is ``graphtier generate --nodes N --avg-degree 15 --feature-dim 128 --seed 3 --edge-split
0.9,0.05,0.05`` (GAE protocol: one uniform non-edge per valid/test edge), cached under ``--work``; ``--dataset
DIR`` uses any dataset with an edge split instead. Training: fanouts 15,10,5 (DGL's
``examples/pytorch/graphsage/link_pred.py``), batch 1024 positive pairs, 1 negative, hidden 128, lr 0.003, no
dropout, 2 epochs, 2 threads. An epoch visits every training pair, so its time grows with the graph's edges:
``--nodes 20000`` is a quick check.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_epoch import run_json  # noqa: E402
from pairs import (  # noqa: E402
    add_run_options,
    check_run_options,
    dgl_python,
    epoch_medians,
    number,
    report_result,
    run_dgl,
    run_graphtier,
    run_pairs,
    save_results,
)

ROOT = Path(__file__).resolve().parents[1]
TRAINING_OPTIONS = ("fanouts", "batch_size", "num_negatives", "hidden", "lr", "dropout", "epochs", "threads")
"""Options both sides get with the same value (the argparse destinations)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The harness's options (``argv`` None: the command line)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dgl-venv", type=Path, default=Path(os.environ.get("GRAPHTIER_DGL_VENV", "/tmp/dglvenv")))
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "graphtier-bench-link")
    parser.add_argument("--dataset", type=Path, default=None, help="a dataset with an edge split (skips generate)")
    parser.add_argument("--nodes", type=int, default=50_000, help="nodes of the generated graph")
    parser.add_argument("--avg-degree", type=float, default=15.0)
    parser.add_argument("--feature-dim", type=int, default=128)
    parser.add_argument("--feature-noise", type=float, default=1.0, help="generate's --feature-noise")
    parser.add_argument("--edge-split", default="0.9,0.05,0.05", help="TRAIN,VALID,TEST edge fractions")
    parser.add_argument("--fanouts", default="15,10,5", help="neighbours per hop, first hop from the seeds")
    parser.add_argument("--batch-size", type=int, default=1024, help="positive pairs per batch")
    parser.add_argument("--num-negatives", type=int, default=1, help="uniform negatives per positive")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--epochs", type=int, default=2, help="epochs per run; the first is left out of the mean")
    add_run_options(parser, ROOT / "benchmarks" / "results" / "link.json")
    args = parser.parse_args(argv)
    check_run_options(parser, args)
    return args


def generate_command(dataset: Path, args: argparse.Namespace) -> list[str]:
    """``graphtier generate`` of the benchmark graph with its edge split."""
    return [
        sys.executable, "-m", "graphtier", "generate", str(dataset),
        "--nodes", str(args.nodes),
        "--avg-degree", str(args.avg_degree),
        "--feature-dim", str(args.feature_dim),
        "--feature-noise", str(args.feature_noise),
        "--seed", "3",
        "--edge-split", args.edge_split,
        "--quiet",
    ]  # fmt: skip


def graphtier_command(dataset: Path, args: argparse.Namespace, report: Path) -> list[str]:
    """``graphtier train --task link`` with the shared training options, writing its report to ``report``."""
    return [
        sys.executable, "-m", "graphtier", "train", str(dataset),
        "--task", "link",
        "--model", "sage",
        "--decoder", "dot",
        "--negative-sampling", "uniform",
        "--num-negatives", str(args.num_negatives),
        "--fanouts", args.fanouts,
        "--batch-size", str(args.batch_size),
        "--hidden", str(args.hidden),
        "--lr", str(args.lr),
        "--dropout", str(args.dropout),
        "--epochs", str(args.epochs),
        "--eval-every", str(args.epochs),
        "--full-inference",
        "--num-threads", str(args.threads),
        "--report", str(report),
        "--quiet",
    ]  # fmt: skip


def dgl_command(python: Path, dataset: Path, args: argparse.Namespace) -> list[str]:
    """``benchmarks/dgl_link.py`` in DGL's venv with the shared training options."""
    return [
        str(python), str(ROOT / "benchmarks" / "dgl_link.py"), str(dataset),
        "--num-negatives", str(args.num_negatives),
        "--fanouts", args.fanouts,
        "--batch-size", str(args.batch_size),
        "--hidden", str(args.hidden),
        "--lr", str(args.lr),
        "--dropout", str(args.dropout),
        "--epochs", str(args.epochs),
        "--threads", str(args.threads),
    ]  # fmt: skip


def graphtier_result(report: dict[str, Any]) -> dict[str, Any]:
    """The numbers of a ``graphtier train --task link`` report (docs/report-format.md) that the table shows."""
    final = report["final"]
    numbers = {name: final.get(name) for name in ("test_auc", "test_ap", "test_popularity_auc")}
    return report_result(report, {**numbers, "final_method": final.get("method")})


TABLE_HEADER = (
    f"{'rep':>3s} {'first':9s} {'graphtier s':>11s} {'DGL s':>8s} {'DGL/gt':>6s} {'AUC gt':>6s} {'AUC DGL':>7s} "
    f"{'AUC pop':>7s} {'batches gt/DGL':>14s}"
)


def format_row(row: dict[str, Any]) -> str:
    """One table line of :func:`make_row`'s row (matches :data:`TABLE_HEADER`)."""
    ours, peer = row["graphtier"], row["dgl"]
    batches = f"{ours['batches'][-1]}/{peer['batches'][-1]}"
    return (
        f"{row['repetition']:3d} {row['first']:9s} {row['graphtier_epoch_s']:11.2f} {row['dgl_epoch_s']:8.2f} "
        f"{row['ratio_dgl_over_graphtier']:6.2f} {number(ours['test_auc'], 6)} {number(peer['test_auc'], 7)} "
        f"{number(ours.get('test_popularity_auc'), 7)} {batches:>14s}"
    )


summary = epoch_medians  # medians over the repetitions: epoch seconds of both, the ratio DGL / graphtier


def prepare_dataset(args: argparse.Namespace) -> Path:
    """The dataset to train on: ``--dataset``, or the generated graph (generated once, cached under ``--work``)."""
    if args.dataset is not None:
        dataset = args.dataset
    else:
        dataset = args.work / (
            f"g{args.nodes}-d{args.avg_degree:g}-f{args.feature_dim}-n{args.feature_noise:g}-s{args.edge_split}"
        )
        if not dataset.exists():
            args.work.mkdir(parents=True, exist_ok=True)
            run_json(generate_command(dataset, args), dict(os.environ))
    meta = json.loads((dataset / "meta.json").read_text())
    if "link" not in meta:
        raise SystemExit(f"{dataset / 'meta.json'}: no edge split ('link'); prepare it with --edge-split")
    return dataset


def main() -> None:
    args = parse_args()
    python = dgl_python(args.dgl_venv)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    dataset = prepare_dataset(args)
    meta = json.loads((dataset / "meta.json").read_text())
    link = meta["link"]
    print(
        f"graph {dataset}: {meta['num_nodes']:,} nodes, {meta['num_edges']:,} message-passing edges, "
        f"{link['train']:,} train / {link['test']:,} test pairs; "
        + ", ".join(f"{name} {getattr(args, name)}" for name in TRAINING_OPTIONS),
        flush=True,
    )
    rows = run_pairs(
        args.pairs,
        lambda: run_graphtier(lambda report: graphtier_command(dataset, args, report), args.threads, graphtier_result),
        lambda: run_dgl(dgl_command(python, dataset, args), args.threads, args.dgl_wait_policy),
        TABLE_HEADER,
        format_row,
    )
    medians = summary(rows)
    print(
        f"median of {len(rows)}: graphtier {medians['graphtier_epoch_s']:.2f} s, DGL {medians['dgl_epoch_s']:.2f} s, "
        f"DGL / graphtier {medians['ratio_dgl_over_graphtier']:.2f}x",
        flush=True,
    )
    graph = {"num_nodes": meta["num_nodes"], "num_edges": meta["num_edges"], "link": link}
    options = {name: getattr(args, name) for name in TRAINING_OPTIONS}
    save_results(args.json, dataset, graph, options, rows, medians, args.dgl_wait_policy)


if __name__ == "__main__":
    main()
