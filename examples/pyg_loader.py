"""PyG's own model and training loop, fed by graphtier's sampler and stores (no pyg-lib, no torch-sparse).

    python examples/pyg_loader.py --nodes 5000

``neighbor_loader`` is PyG's ``NodeLoader`` over ``GraphtierFeatureStore`` / ``GraphtierGraphStore`` and
graphtier's sampler: each batch is a ``torch_geometric.data.Data`` in ``NeighborLoader``'s layout.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import graphtier

graphtier.configure_threads()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch_geometric.nn import GraphSAGE  # noqa: E402

from graphtier.pyg import neighbor_loader  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3000, help="nodes of the generated graph (default 3000)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None, help="folder for the dataset (default: temporary)")
    return parser


def run(nodes: int, epochs: int, work: Path) -> float:
    """Train PyG's GraphSAGE; returns the test accuracy of sampled inference through the same loader."""
    ds = graphtier.generate(
        work / "graph", nodes=nodes, avg_degree=10, feature_dim=32, train_fraction=0.3, test_fraction=0.2,
        overwrite=True,
    )  # fmt: skip
    model = GraphSAGE(ds.feature_dim, hidden_channels=64, num_layers=2, out_channels=ds.num_classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loader = neighbor_loader(ds, [10, 5], input_nodes="train", batch_size=256, shuffle=True)
    for epoch in range(1, epochs + 1):
        model.train()
        for batch in loader:  # torch_geometric.data.Data: x, edge_index, y, batch_size (seeds first)
            out = model(batch.x, batch.edge_index)[: batch.batch_size]
            loss = F.cross_entropy(out, batch.y[: batch.batch_size])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}  loss {loss.item():.4f}")
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in neighbor_loader(ds, [10, 5], input_nodes="test", batch_size=512):
            pred = model(batch.x, batch.edge_index)[: batch.batch_size].argmax(dim=1)
            correct += int((pred == batch.y[: batch.batch_size]).sum())
            total += batch.batch_size
    print(f"test accuracy {correct / total:.3f} ({total} nodes, sampled)")
    return correct / total


def main(argv: list[str] | None = None) -> float:
    args = build_parser().parse_args(argv)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        return run(args.nodes, args.epochs, args.work)
    with tempfile.TemporaryDirectory() as work:
        return run(args.nodes, args.epochs, Path(work))


if __name__ == "__main__":
    main()
