"""The DGL side of ``bench_epoch.py``: mini-batch training epochs with DGL 2.1 on a graphtier dataset.

Runs only inside the DGL baseline venv (``../shared/baselines/make-dgl-venv.sh VENV``); graphtier never
imports DGL. It mirrors graphtier's models so the two sides do the same work: GraphSAGE (mean), GCN or GAT
layers, ReLU and dropout on hidden activations, Adam, cross-entropy, the classic
``dgl.dataloading.DataLoader`` with ``NeighborSampler`` (fanouts given seeds first, as graphtier's, and
reversed for DGL, which lists the layer next to the input first).

    VENV/bin/python benchmarks/dgl_epoch.py DATASET --model sage --fanouts 15,10,5 --batch-size 1024 \
        --hidden 128 --epochs 3 --threads 2 --dropout 0.5 --lr 0.003

Prints one JSON line: ``epoch_seconds`` and ``epoch_losses`` (each epoch), ``test_acc`` (sampled inference with the training
fanouts, final model), ``dgl`` and ``torch`` versions.
"""

import argparse
import json
import time

import dgl
import dgl.nn as dglnn
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(
        self, model: str, in_dim: int, hidden: int, out_dim: int, layers: int, dropout: float, heads: int = 4
    ) -> None:
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.model = model
        if model == "sage":
            convs = [dglnn.SAGEConv(a, b, "mean") for a, b in zip(dims[:-1], dims[1:])]
        elif model == "gat":
            # graphtier's (PyG's) GAT: hidden layers concatenate `heads` heads of hidden // heads, the last has one;
            # attention dropout = dropout; self-loops are in the graph (main() adds them, as DGL's GAT examples do)
            convs = [
                dglnn.GATConv(a, b // heads, heads, attn_drop=dropout, allow_zero_in_degree=True)
                for a, b in zip(dims[:-2], dims[1:-1])
            ] + [dglnn.GATConv(dims[-2], dims[-1], 1, attn_drop=dropout, allow_zero_in_degree=True)]
        else:
            convs = [dglnn.GraphConv(a, b, norm="both", allow_zero_in_degree=True) for a, b in zip(dims[:-1], dims[1:])]
        self.layers = nn.ModuleList(convs)
        self.dropout = nn.Dropout(dropout)

    def forward(self, blocks, x):
        for k, (layer, block) in enumerate(zip(self.layers, blocks)):
            x = layer(block, x)
            if self.model == "gat":
                x = x.flatten(1) if k < len(self.layers) - 1 else x.mean(1)  # [N, heads, d] -> concat / average
            if k < len(self.layers) - 1:
                x = self.dropout(F.relu(x))
        return x


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("--model", choices=("sage", "gcn", "gat"), default="sage")
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    fanouts = [int(f) for f in args.fanouts.split(",")]
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    d = args.dataset
    indptr = torch.from_numpy(np.load(f"{d}/indptr.npy").astype(np.int64))
    indices = torch.from_numpy(np.load(f"{d}/indices.npy").astype(np.int64))
    graph = dgl.graph(("csc", (indptr, indices, torch.tensor([], dtype=torch.int64))))
    if args.model == "gat":  # PyG's GATConv attends to each node itself too; a DGL user adds the self-loops
        graph = dgl.add_self_loop(dgl.remove_self_loop(graph))
    features = torch.from_numpy(np.load(f"{d}/features.npy"))
    labels = torch.from_numpy(np.load(f"{d}/labels.npy").astype(np.int64))
    train_idx = torch.from_numpy(np.load(f"{d}/train_idx.npy").astype(np.int64))
    test_idx = torch.from_numpy(np.load(f"{d}/test_idx.npy").astype(np.int64))
    num_classes = int(labels.max()) + 1
    model = Net(args.model, features.shape[1], args.hidden, num_classes, len(fanouts), args.dropout)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    sampler = dgl.dataloading.NeighborSampler(list(reversed(fanouts)))
    loader = dgl.dataloading.DataLoader(
        graph, train_idx, sampler, batch_size=args.batch_size, shuffle=True, drop_last=False, num_workers=0
    )
    epoch_seconds = []
    epoch_losses = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        model.train()
        loss_sum, batches = 0.0, 0
        for input_nodes, output_nodes, blocks in loader:
            loss = F.cross_entropy(model(blocks, features[input_nodes]), labels[output_nodes])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum, batches = loss_sum + float(loss), batches + 1
        epoch_seconds.append(time.perf_counter() - start)
        epoch_losses.append(loss_sum / max(1, batches))
    model.eval()
    correct = 0
    test_loader = dgl.dataloading.DataLoader(graph, test_idx, sampler, batch_size=4096, shuffle=False, num_workers=0)
    with torch.no_grad():
        for input_nodes, output_nodes, blocks in test_loader:
            correct += int((model(blocks, features[input_nodes]).argmax(1) == labels[output_nodes]).sum())
    print(
        json.dumps(
            {
                "epoch_seconds": epoch_seconds,
                "epoch_losses": epoch_losses,  # mean training loss per epoch (nan shows a diverged run)
                "test_acc": correct / max(1, len(test_idx)),
                "dgl": dgl.__version__,
                "torch": torch.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
