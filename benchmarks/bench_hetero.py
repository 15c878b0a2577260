"""Heterogeneous training epochs: graphtier's R-GCN against DGL 2.1's sampled R-GCN on one MAG-like graph, in one run.

Both sides train an R-GCN (per layer: the mean of each relation's sampled in-neighbours times a weight per
relation, summed over relations, plus a self-loop weight; ReLU and dropout between layers; a learnable embedding
table for every featureless type) on the same typed dataset with the same fanouts (``--fanouts`` for every
relation, ``--fanouts-per-relation`` overrides), batch size, hidden size, learning rate, dropout, epochs and
threads. graphtier runs ``graphtier train --model rgcn``; DGL runs ``benchmarks/dgl_hetero.py``
(``MultiLayerNeighborSampler`` on a ``dgl.heterograph``, ``HeteroGraphConv`` of ``GraphConv``, inside DGL's own
venv, as a subprocess: DGL is never a dependency of graphtier). Test accuracy: each side's own final evaluation
(graphtier's report ``final.test_acc``; DGL: the same sampler over the test papers).

Each of ``--pairs`` repetitions runs both sides one after the other (graphtier first in even repetitions, DGL
first in odd ones, so that a drifting machine load favours neither); it prints the mean epoch seconds of each
(the first epoch, which compiles kernels and warms caches, is left out), the ratio DGL / graphtier (> 1:
graphtier is faster) and both test accuracies, then the medians. Results go to ``benchmarks/results/hetero.json``.

    bash ../shared/baselines/make-dgl-venv.sh /tmp/dglvenv          # once
    python benchmarks/bench_hetero.py --dgl-venv /tmp/dglvenv [--nodes 200000] [--pairs 3]
    python benchmarks/bench_hetero.py --dgl-venv /tmp/dglvenv --task link [--split-relation writes]

``--task link``: link prediction on one relation (``--split-relation``, default ``writes``: author -> paper) with
an R-GCN encoder returning both endpoint types' embeddings and a dot decoder, ``--num-negatives`` uniform
destinations per positive, each batch's target edges (and their reverses) left out of its blocks; graphtier runs
``graphtier train --task link --model rgcn``, DGL ``benchmarks/dgl_hetero_link.py`` (``as_edge_prediction_sampler``
on the same heterograph). The graph gets the edge split ``--edge-split`` (default 0.9,0.05,0.05) of that relation
with one negative pair per test positive; each side reports test AUC from exact embeddings (every neighbour).
Results go to ``benchmarks/results/hetero_link.json``.

The graph is ``graphtier generate --hetero mag --nodes N --feature-dim 128 --seed 3`` with 10% / 5% / 10% of
the papers in train / valid / test (papers, as many authors, N/50 institutions, N/100 fields; cites, writes,
affiliated_with, has_topic and their reverses), cached under ``--work``; ``--dataset DIR`` uses any typed dataset
instead. Training: fanouts 10,10, batch 1024, hidden 64, lr 0.01, no dropout, 3 epochs, 2 threads.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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
TRAINING_OPTIONS = (
    "fanouts", "fanouts_per_relation", "batch_size", "hidden", "lr", "dropout", "epochs", "threads"
)  # fmt: skip
"""Options both sides get with the same value (the argparse destinations)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The harness's options (``argv`` None: the command line)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dgl-venv", type=Path, default=Path(os.environ.get("GRAPHTIER_DGL_VENV", "/tmp/dglvenv")))
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "graphtier-bench-hetero")
    parser.add_argument("--dataset", type=Path, default=None, help="a typed dataset (skips generate)")
    parser.add_argument("--nodes", type=int, default=200_000, help="papers of the generated graph")
    parser.add_argument("--feature-dim", type=int, default=128)
    parser.add_argument("--splits", default="0.1,0.05,0.1", help="TRAIN,VALID,TEST fractions of the papers")
    parser.add_argument("--fanouts", default="10,10", help="neighbours per hop and relation, first hop from the seeds")
    parser.add_argument("--fanouts-per-relation", default="", help="NAME=F or NAME=F1/F2 overrides, comma separated")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--epochs", type=int, default=3, help="epochs per run; the first is left out of the mean")
    parser.add_argument("--task", choices=("node", "link"), default="node")
    parser.add_argument("--split-relation", default="writes", help="--task link: the relation of the pairs")
    parser.add_argument("--edge-split", default="0.9,0.05,0.05", help="--task link: the relation's edge split")
    parser.add_argument("--num-negatives", type=int, default=1, help="--task link: negatives per positive")
    add_run_options(parser, ROOT / "benchmarks" / "results" / "hetero.json")
    args = parser.parse_args(argv)
    if args.task == "link" and args.json == ROOT / "benchmarks" / "results" / "hetero.json":
        args.json = ROOT / "benchmarks" / "results" / "hetero_link.json"
    check_run_options(parser, args)
    fractions = args.splits.split(",")
    if len(fractions) != 3:
        parser.error(f"--splits: expected TRAIN,VALID,TEST, found {args.splits!r}")
    return args


def generate_command(dataset: Path, args: argparse.Namespace) -> list[str]:
    """``graphtier generate --hetero mag`` of the benchmark graph."""
    train, valid, test = args.splits.split(",")
    return [
        sys.executable, "-m", "graphtier", "generate", "--hetero", "mag", str(dataset),
        "--nodes", str(args.nodes),
        "--feature-dim", str(args.feature_dim),
        "--train-fraction", train, "--valid-fraction", valid, "--test-fraction", test,
        "--seed", "3",
        *(["--edge-split", args.edge_split, "--split-relation", args.split_relation] if args.task == "link" else []),
        "--quiet",
    ]  # fmt: skip


def training_flags(args: argparse.Namespace) -> list[str]:
    """The training flags both sides get with the same value (the threads excepted: their flags differ)."""
    relation = ["--fanouts-per-relation", args.fanouts_per_relation] if args.fanouts_per_relation else []
    return [
        "--fanouts", args.fanouts,
        *relation,
        "--batch-size", str(args.batch_size),
        "--hidden", str(args.hidden),
        "--lr", str(args.lr),
        "--dropout", str(args.dropout),
        "--epochs", str(args.epochs),
        *(["--num-negatives", str(args.num_negatives)] if args.task == "link" else []),
    ]  # fmt: skip


def graphtier_command(dataset: Path, args: argparse.Namespace, report: Path) -> list[str]:
    """``graphtier train --model rgcn`` with the shared training options, writing its report to ``report``."""
    return [
        sys.executable, "-m", "graphtier", "train", str(dataset),
        "--model", "rgcn",
        "--task", args.task,
        "--featureless", "embedding",
        *training_flags(args),
        "--eval-every", str(args.epochs),
        "--num-threads", str(args.threads),
        "--report", str(report),
        "--quiet",
    ]  # fmt: skip


def dgl_command(python: Path, dataset: Path, args: argparse.Namespace) -> list[str]:
    """``benchmarks/dgl_hetero.py`` in DGL's venv with the shared training options."""
    return [
        str(python), str(ROOT / "benchmarks" / ("dgl_hetero_link.py" if args.task == "link" else "dgl_hetero.py")),
        str(dataset),
        *training_flags(args),
        "--threads", str(args.threads),
    ]  # fmt: skip


def graphtier_result(report: dict[str, Any]) -> dict[str, Any]:
    """The numbers of a ``graphtier train`` report (docs/report-format.md) that the table shows."""
    final = report["final"]
    return report_result(report, {"test_acc": final.get("test_acc"), "test_auc": final.get("test_auc")})


def test_figure(result: dict[str, Any]) -> float:
    """A side's test figure: accuracy (node classification) or AUC (link prediction)."""
    return result["test_acc"] if result.get("test_acc") is not None else result.get("test_auc")


TABLE_HEADER = (
    f"{'rep':>3s} {'first':9s} {'graphtier s':>11s} {'DGL s':>8s} {'DGL/gt':>6s} {'test gt':>7s} {'test DGL':>8s} "
    f"{'batches gt/DGL':>14s}"
)


def format_row(row: dict[str, Any]) -> str:
    """One table line of :func:`make_row`'s row (matches :data:`TABLE_HEADER`)."""
    ours, peer = row["graphtier"], row["dgl"]
    batches = f"{ours['batches'][-1]}/{peer['batches'][-1]}"
    return (
        f"{row['repetition']:3d} {row['first']:9s} {row['graphtier_epoch_s']:11.2f} {row['dgl_epoch_s']:8.2f} "
        f"{row['ratio_dgl_over_graphtier']:6.2f} {number(test_figure(ours), 7)} {number(test_figure(peer), 8)} "
        f"{batches:>14s}"
    )


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over the repetitions: epoch seconds of both, the ratio DGL / graphtier, both test figures
    (accuracy, or AUC with ``--task link``)."""
    return {
        **epoch_medians(rows),
        "graphtier_test": statistics.median(test_figure(r["graphtier"]) for r in rows),
        "dgl_test": statistics.median(test_figure(r["dgl"]) for r in rows),
    }


def prepare_dataset(args: argparse.Namespace) -> Path:
    """The typed dataset to train on: ``--dataset``, or the generated graph (generated once, cached under ``--work``)."""
    if args.dataset is not None:
        dataset = args.dataset
    else:
        link = f"-link-{args.split_relation}-{args.edge_split}" if args.task == "link" else ""
        dataset = args.work / f"mag{args.nodes}-f{args.feature_dim}-s{args.splits}{link}"
        if not dataset.exists():
            args.work.mkdir(parents=True, exist_ok=True)
            run_json(generate_command(dataset, args), dict(os.environ))
    meta = json.loads((dataset / "meta.json").read_text())
    if "hetero" not in meta:
        raise SystemExit(f"{dataset / 'meta.json'}: not a typed dataset (no 'hetero' entry)")
    return dataset


def main() -> None:
    args = parse_args()
    python = dgl_python(args.dgl_venv)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    dataset = prepare_dataset(args)
    meta = json.loads((dataset / "meta.json").read_text())
    types = ", ".join(f"{t['count']:,} {t['name']}" for t in meta["hetero"]["node_types"])
    print(
        f"graph {dataset}: {types}; {meta['num_edges']:,} edges of {len(meta['hetero']['relations'])} relations; "
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
        f"DGL / graphtier {medians['ratio_dgl_over_graphtier']:.2f}x; test {'AUC' if args.task == 'link' else 'accuracy'} graphtier "
        f"{medians['graphtier_test']:.3f}, DGL {medians['dgl_test']:.3f}",
        flush=True,
    )
    graph = {"hetero": meta["hetero"], "num_nodes": meta["num_nodes"], "num_edges": meta["num_edges"]}
    options = {name: getattr(args, name) for name in TRAINING_OPTIONS}
    save_results(args.json, dataset, graph, options, rows, medians, args.dgl_wait_policy)


if __name__ == "__main__":
    main()
