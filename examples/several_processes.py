"""Several trainer processes: synchronous data-parallel training over two CPU ranks, as ``--devices cpu,cpu``.

    python examples/several_processes.py --nodes 5000

graphtier starts one process per listed device and splits every global mini-batch between them (by the
balancer's shares), so the summed gradients are those of the whole batch. The same command takes
``--devices cuda:0,cuda:1`` on a machine with two GPUs, or runs under ``torchrun`` across machines.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import graphtier


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3000, help="nodes of the generated graph (default 3000)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--devices", default="cpu,cpu", help="one trainer process per device (default cpu,cpu)")
    parser.add_argument(
        "--work", type=Path, default=None, help="folder for the dataset and report (default: temporary)"
    )
    return parser


def run(nodes: int, epochs: int, devices: str, work: Path) -> dict:
    """Train over ``devices``; returns the run report (``ranks``, ``balancer``, ``final``, ...)."""
    graphtier.generate(work / "graph", nodes=nodes, avg_degree=10, feature_dim=32, train_fraction=0.3, overwrite=True)
    command = [
        sys.executable, "-m", "graphtier", "train", str(work / "graph"), "--devices", devices, "--fanouts", "10,5",
        "--hidden", "32", "--batch-size", "256", "--epochs", str(epochs), "--num-threads", "1",
        "--report", str(work / "run.json"),
    ]  # fmt: skip
    print("+", " ".join(command))
    subprocess.run(command, check=True, env={**os.environ, "GRAPHTIER_PROGRESS_INTERVAL": "off"})
    report = json.loads((work / "run.json").read_text())
    print(f"final shares {report['balancer']['final_shares']}; test accuracy {report['final']['test_acc']:.3f}")
    return report


def main(argv: list[str] | None = None) -> dict:
    args = build_parser().parse_args(argv)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        return run(args.nodes, args.epochs, args.devices, args.work)
    with tempfile.TemporaryDirectory() as work:
        return run(args.nodes, args.epochs, args.devices, Path(work))


if __name__ == "__main__":
    main()
