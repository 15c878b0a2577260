"""Link prediction and recommendations: hold out edges, train a GNN encoder, score pairs, recommend top-K.

    python examples/link_prediction.py --nodes 5000

The held-out validation and test edges leave the graph the model sees; ``top_k`` recommends for each node
the destinations it is not yet linked to.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import graphtier

graphtier.configure_threads()

import numpy as np  # noqa: E402

from graphtier.train import train  # noqa: E402  (imports torch)
from graphtier.train.infer.link_predict import pair_scores, top_k  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000, help="nodes of the generated graph (default 2000)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--work", type=Path, default=None, help="folder for the dataset and model (default: temporary)")
    return parser


def run(nodes: int, epochs: int, work: Path) -> float:
    """Train on a generated graph with a held-out edge split; returns the exact test AUC."""
    ds = graphtier.generate(
        work / "graph", nodes=nodes, avg_degree=8, feature_dim=32, edge_split="0.85,0.05,0.1", overwrite=True
    )
    result = train(
        ds, task="link", model="sage", fanouts=(10, 5), hidden=64, epochs=epochs, batch_size=512,
        save_model=work / "link.pt", quiet=True,
    )  # fmt: skip
    final = result["final"]
    print(
        f"test auc {final['test_auc']:.3f}  ap {final['test_ap']:.3f}  (popularity auc {final['test_popularity_auc']:.3f})"
    )
    saved = graphtier.load_model(work / "link.pt")
    embeddings = graphtier.predict(saved, ds).logits  # float32 [N, hidden]: exact layer-wise node embeddings
    scores = pair_scores(saved.model, embeddings, np.array([[0, 1], [2, 3]]))  # float32 [2]: logits of two pairs
    ids, logits = top_k(saved.model, embeddings, ds, np.array([0, 1, 2]), 5)  # int64 [3, 5], float32 [3, 5]
    print(f"pair logits {np.round(scores, 3)}")
    for node, row in zip((0, 1, 2), ids):
        print(f"node {node}: recommended {row.tolist()}")
    return float(final["test_auc"])


def main(argv: list[str] | None = None) -> float:
    args = build_parser().parse_args(argv)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        return run(args.nodes, args.epochs, args.work)
    with tempfile.TemporaryDirectory() as work:
        return run(args.nodes, args.epochs, Path(work))


if __name__ == "__main__":
    main()
