"""A typed (heterogeneous) graph: papers, authors, institutions and fields; HeteroSAGE on the papers.

    python examples/typed_graph.py --nodes 3000

The graph is what ``graphtier generate --hetero mag`` writes: ``--nodes`` papers (features, labels, splits),
as many authors, 1/50 as many institutions and 1/100 as many fields, four relations and their reverses.
Authors, institutions and fields have no features: a learnable table per type stands in for them.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import graphtier

graphtier.configure_threads()

from graphtier.train import train  # noqa: E402  (imports torch)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000, help="papers of the generated graph (default 2000)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None, help="folder for the dataset and model (default: temporary)")
    return parser


def run(nodes: int, epochs: int, work: Path) -> float:
    """Train HeteroSAGE on a generated MAG-like graph; returns the exact test accuracy of ``predict``."""
    ds = graphtier.generate_mag(
        work / "mag", nodes=nodes, feature_dim=32, train_fraction=0.3, test_fraction=0.2, overwrite=True
    )
    for node_type in ds.schema.node_types:
        print(f"  {node_type.name}: {node_type.count:,} nodes, {node_type.feature_dim} features")
    for relation in ds.schema.relations:
        print(f"  ({relation.src}, {relation.name}, {relation.dst}): {relation.num_edges:,} edges")
    result = train(
        ds, model="hsage", fanouts=(5, 5), fanouts_per_relation="writes=3", featureless="embedding", hidden=32,
        epochs=epochs, batch_size=256, save_model=work / "hsage.pt", quiet=True,
    )  # fmt: skip
    print(f"sampled test accuracy {result['final']['test_acc']:.3f}")
    preds = graphtier.predict(graphtier.load_model(work / "hsage.pt"), ds)  # one row per paper (local ids)
    test = ds.test_idx  # local paper ids
    accuracy = float((preds.classes[test] == ds.labels[test]).mean())
    print(f"exact test accuracy {accuracy:.3f} over {len(test)} papers")
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
