"""Node classification with the Python API: generate a graph, train GraphSAGE, save it, predict every node.

    python examples/node_classification.py --nodes 5000

Runs in seconds at the default size; any ``--nodes`` works (the graph is memory-mapped, training is mini-batch).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import graphtier

graphtier.configure_threads()  # before torch loads: idle OpenMP threads sleep (as the command line does)

from graphtier.train import train  # noqa: E402  (imports torch)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3000, help="nodes of the generated graph (default 3000)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None, help="folder for the dataset and model (default: temporary)")
    return parser


def run(nodes: int, epochs: int, work: Path) -> float:
    """Train on a generated ``nodes``-node graph under ``work``; returns the exact test accuracy of ``predict``."""
    ds = graphtier.generate(
        work / "graph", nodes=nodes, avg_degree=10, feature_dim=32, train_fraction=0.3, valid_fraction=0.1,
        test_fraction=0.2, overwrite=True,
    )  # fmt: skip
    result = train(
        ds, model="sage", fanouts=(10, 5), hidden=64, epochs=epochs, batch_size=256, lr=0.01,
        save_model=work / "sage.pt", quiet=True,
    )  # fmt: skip
    print(f"sampled test accuracy {result['final']['test_acc']:.3f} after {epochs} epochs")
    preds = graphtier.predict(graphtier.load_model(work / "sage.pt"), ds, embeddings=True)
    classes = preds.classes  # int64 [N]: the predicted class of every node
    accuracy = float((classes[ds.test_idx] == ds.labels[ds.test_idx]).mean())
    print(f"exact test accuracy {accuracy:.3f}; embeddings {preds.embeddings.shape} (float32 [N, hidden])")
    return accuracy


def main(argv: list[str] | None = None) -> float:
    args = build_parser().parse_args(argv)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        return run(args.nodes, args.epochs, args.work)
    with tempfile.TemporaryDirectory() as work:
        return run(args.nodes, args.epochs, Path(work))


if __name__ == "__main__":
    main()
