"""A training loop of your own on graphtier's store: sample, gather, forward, backward.

    python examples/custom_loop.py --nodes 5000

``GraphStore`` holds the topology and the features where ``PlacementSpec`` puts them (tiered on a GPU when
there is one; the same plan in RAM on the CPU) and hands out mini-batches; the model and the optimiser are
plain PyTorch.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import graphtier

graphtier.configure_threads()

import torch  # noqa: E402  (after configure_threads)
import torch.nn.functional as F  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=3000, help="nodes of the generated graph (default 3000)")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None, help="folder for the dataset (default: temporary)")
    return parser


def run(nodes: int, epochs: int, work: Path) -> float:
    """Train GraphSAGE for ``epochs`` on a generated graph; returns the last epoch's mean training loss."""
    graphtier.generate(work / "graph", nodes=nodes, avg_degree=10, feature_dim=32, train_fraction=0.3, overwrite=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    placement = graphtier.PlacementSpec(
        features_on="tiered", gpu_budget="auto", sample_on="gpu" if device == "cuda" else "cpu"
    )
    mean_loss = float("nan")
    with graphtier.GraphStore.open(work / "graph", placement, device=device) as store:
        ds = store.dataset
        model = graphtier.build_model("sage", ds.feature_dim, 64, ds.num_classes, num_layers=2).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        labels = torch.from_numpy(ds.labels).to(device)  # int64 [N]
        for epoch in range(1, epochs + 1):
            model.train()
            losses = []
            for seeds in graphtier.iter_seed_batches(ds.train_idx, 256, shuffle=True, seed=0, epoch=epoch):
                batch = store.sample(seeds, fanouts=[10, 5])  # MiniBatch: n_id (seeds first) + 2 blocks
                x = store.gather(batch.n_id).float()  # float32 [len(n_id), 32] on `device`
                logits = model(x, batch.blocks)[batch.seed_index]  # [len(seeds), num_classes]
                loss = F.cross_entropy(logits, labels[batch.seeds.to(device)])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            mean_loss = sum(losses) / len(losses)
            print(f"epoch {epoch}  loss {mean_loss:.4f}  ({len(losses)} batches)")
        print("bytes per tier:", store.traffic()["features"])
    return mean_loss


def main(argv: list[str] | None = None) -> float:
    args = build_parser().parse_args(argv)
    if args.work is not None:
        args.work.mkdir(parents=True, exist_ok=True)
        return run(args.nodes, args.epochs, args.work)
    with tempfile.TemporaryDirectory() as work:
        return run(args.nodes, args.epochs, Path(work))


if __name__ == "__main__":
    main()
