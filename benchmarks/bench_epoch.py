"""Whole training epochs: graphtier against DGL 2.1 on the same generated graph, in one run.

For every configuration (model x fanouts x dropout x threads) it runs ``graphtier train`` and the DGL
script ``benchmarks/dgl_epoch.py`` (inside DGL's own venv, as a subprocess: DGL is never a dependency of
graphtier) one after the other, and prints the mean epoch seconds of each (the first epoch, which
compiles kernels and warms caches, is left out), the ratio DGL / graphtier (> 1: graphtier is faster) and
the test accuracy of both. Results go to ``benchmarks/results/epoch.json``. graphtier sets
``OMP_WAIT_POLICY=PASSIVE`` for itself (its command line, graphtier._openmp); DGL runs in the environment as it is, or with
``--dgl-wait-policy PASSIVE`` to see what the same setting gives the peer.

    bash ../shared/baselines/make-dgl-venv.sh /tmp/dglvenv          # once
    python benchmarks/bench_epoch.py --dgl-venv /tmp/dglvenv [--nodes 1000000] [--threads 2,1]

The graph is ``graphtier generate --nodes N --avg-degree 15 --feature-dim 128 --train-fraction 0.05
--seed 3`` (1M nodes: 13.7M edges, 50k training nodes), cached under ``--work``. Training: batch 1024,
hidden 128, lr 0.003, the same for both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIGS = (
    "sage:15,10,5:0",
    "sage:15,10,5:0.5",
    "gcn:15,10,5:0",
    "gcn:15,10,5:0.5",
    "sage:10,10:0",
    "gcn:10,10:0",
)


def run_json(command: list[str], env: dict[str, str]) -> str:
    """Run ``command``; return its stdout, raising with its stderr tail when it fails."""
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"failed ({done.returncode}): {' '.join(command)}\n{done.stderr[-3000:]}")
    return done.stdout


def thread_env(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads), NUMBA_NUM_THREADS=str(threads))
    return env


def graphtier_epochs(
    dataset: Path, model: str, fanouts: str, dropout: float, threads: int, epochs: int, common: dict[str, str]
) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        command = [
            sys.executable,
            "-m",
            "graphtier",
            "train",
            str(dataset),
            "--model",
            model,
            "--fanouts",
            fanouts,
            "--dropout",
            str(dropout),
            "--num-threads",
            str(threads),
            "--epochs",
            str(epochs),
            "--eval-every",
            str(epochs),
            "--report",
            str(report_path),
            "--quiet",
            "--batch-size",
            common["batch_size"],
            "--hidden",
            common["hidden"],
            "--lr",
            common["lr"],
        ]
        run_json(command, thread_env(threads))
        report = json.loads(report_path.read_text())
    totals = [epoch["stage_seconds"]["total"] for epoch in report["epochs"]]
    stages = {
        stage: statistics.mean(epoch["stage_seconds"][stage] for epoch in report["epochs"][1:])
        for stage in report["epochs"][0]["stage_seconds"]
    }
    return {"epoch_seconds": totals, "test_acc": report["final"]["test_acc"], "stage_seconds": stages}


def dgl_epochs(
    python: Path,
    dataset: Path,
    model: str,
    fanouts: str,
    dropout: float,
    threads: int,
    epochs: int,
    common: dict[str, str],
    wait_policy: str | None = None,
) -> dict:
    command = [
        str(python),
        str(ROOT / "benchmarks" / "dgl_epoch.py"),
        str(dataset),
        "--model",
        model,
        "--fanouts",
        fanouts,
        "--dropout",
        str(dropout),
        "--threads",
        str(threads),
        "--epochs",
        str(epochs),
        "--batch-size",
        common["batch_size"],
        "--hidden",
        common["hidden"],
        "--lr",
        common["lr"],
    ]
    env = thread_env(threads)
    if (
        wait_policy is not None
    ):  # graphtier sets OMP_WAIT_POLICY=PASSIVE for itself; DGL runs as its users run it unless asked
        env["OMP_WAIT_POLICY"] = wait_policy
    return json.loads(run_json(command, env).strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dgl-venv", type=Path, default=Path(os.environ.get("GRAPHTIER_DGL_VENV", "/tmp/dglvenv")))
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "graphtier-bench-epoch")
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--epochs", type=int, default=3, help="epochs per run; the first is left out of the mean")
    parser.add_argument("--threads", default="2,1", help="comma list of thread counts")
    parser.add_argument(
        "--config",
        action="append",
        dest="configs",
        help=f"MODEL:FANOUTS:DROPOUT, e.g. sage:15,10,5:0.5; repeat for several (default: {' '.join(DEFAULT_CONFIGS)})",
    )
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "epoch.json")
    parser.add_argument(
        "--dgl-wait-policy",
        choices=("PASSIVE", "ACTIVE"),
        default=None,
        help="run DGL with this OMP_WAIT_POLICY (default: the environment as it is; graphtier sets PASSIVE for itself)",
    )
    args = parser.parse_args()
    dgl_python = args.dgl_venv / "bin" / "python"
    if not dgl_python.exists():
        raise SystemExit(
            f"{dgl_python}: no DGL venv; build it with bash ../shared/baselines/make-dgl-venv.sh {args.dgl_venv}"
        )
    configs = [parse_config(text) for text in (args.configs or DEFAULT_CONFIGS)]
    common = {"batch_size": "1024", "hidden": "128", "lr": "0.003"}
    dataset = args.work / f"g{args.nodes}"
    if not dataset.exists():
        args.work.mkdir(parents=True, exist_ok=True)
        run_json(
            [
                sys.executable,
                "-m",
                "graphtier",
                "generate",
                str(dataset),
                "--nodes",
                str(args.nodes),
                "--avg-degree",
                "15",
                "--feature-dim",
                "128",
                "--train-fraction",
                "0.05",
                "--seed",
                "3",
            ],
            dict(os.environ),
        )
    meta = json.loads((dataset / "meta.json").read_text())
    rows = []
    print(f"graph {dataset}: {meta.get('num_nodes'):,} nodes, {meta.get('num_edges'):,} edges", flush=True)
    print(
        f"{'model':5s} {'fanouts':9s} {'drop':>4s} {'thr':>3s} {'graphtier s':>11s} {'DGL s':>7s} "
        f"{'DGL/gt':>6s} {'acc gt':>6s} {'acc DGL':>7s}  graphtier stages (sample/extract | wait/train/other)"
    )
    for threads in [int(t) for t in args.threads.split(",")]:
        for model, fanouts, dropout in configs:
            ours = graphtier_epochs(dataset, model, fanouts, dropout, threads, args.epochs, common)
            peer = dgl_epochs(
                dgl_python, dataset, model, fanouts, dropout, threads, args.epochs, common, args.dgl_wait_policy
            )
            ours_s = statistics.mean(ours["epoch_seconds"][1:])
            peer_s = statistics.mean(peer["epoch_seconds"][1:])
            row = {
                "model": model,
                "fanouts": fanouts,
                "dropout": dropout,
                "threads": threads,
                "graphtier": ours,
                "dgl": peer,
                "graphtier_epoch_s": ours_s,
                "dgl_epoch_s": peer_s,
                "ratio_dgl_over_graphtier": peer_s / ours_s,
            }
            rows.append(row)
            stages = ours["stage_seconds"]
            print(
                f"{model:5s} {fanouts:9s} {dropout:4.1f} {threads:3d} {ours_s:11.2f} {peer_s:7.2f} "
                f"{peer_s / ours_s:6.2f} {ours['test_acc']:6.3f} {peer['test_acc']:7.3f}  "
                f"{stages['sample']:.2f}/{stages['extract']:.2f} | {stages.get('wait', 0.0):.2f}/"
                f"{stages['train']:.2f}/{stages.get('other', 0.0):.2f}",
                flush=True,
            )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "date": time.strftime("%Y-%m-%d"),
                "machine": f"{platform.node()} {os.cpu_count()} cores",
                "command": " ".join(sys.argv),
                "dataset": str(dataset),
                "num_nodes": meta.get("num_nodes"),
                "num_edges": meta.get("num_edges"),
                "epochs": args.epochs,
                "rows": rows,
                "load_average": os.getloadavg(),
                "dgl_wait_policy": args.dgl_wait_policy or os.environ.get("OMP_WAIT_POLICY"),
            },
            indent=2,
        )
    )
    print(f"saved {args.json}")


def parse_config(text: str) -> tuple[str, str, float]:
    """``"sage:15,10,5:0.5"`` -> ``("sage", "15,10,5", 0.5)``."""
    model, fanouts, dropout = text.split(":")
    return model, fanouts, float(dropout)


if __name__ == "__main__":
    main()
