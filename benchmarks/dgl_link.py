"""The DGL side of ``bench_link.py``: link-prediction training epochs with DGL 2.1 on a graphtier dataset.

Runs only inside the DGL baseline venv (``../shared/baselines/make-dgl-venv.sh VENV``); graphtier never
imports DGL, and this script reads the dataset directory's ``.npy`` files directly (docs/dataset-format.md):
``indptr.npy``/``indices.npy`` (CSC, the message-passing graph: held-out valid/test edges are not in it),
``features.npy``, ``link_train.npy`` int64 [P, 2] (the supervision pairs, each an edge of the graph, listed once
per undirected edge), ``link_test.npy`` int64 [P, 2] and ``link_test_neg.npy`` ([Q, 2] negative pairs, or
[P, K] negative destinations per positive when ``meta.json`` ``link.eval_negatives`` is K > 0).

It is written as a DGL user writes link prediction (DGL's ``examples/pytorch/graphsage/link_pred.py`` and its
"Stochastic Training of GNN for Link Prediction" tutorial): ``NeighborSampler`` wrapped by
``as_edge_prediction_sampler(exclude='reverse_id', reverse_eids=..., negative_sampler=Uniform(k))`` (each
batch's target edges and their reverses leave message passing; k uniform negative destinations per positive,
source kept), the classic ``DataLoader`` over the training edge ids, a GraphSAGE-mean encoder (``SAGEConv``,
ReLU and dropout between layers, the last layer gives ``hidden``-wide embeddings), a dot-product decoder,
binary cross-entropy on logits, Adam. Fanouts are given seeds first, as graphtier's, and reversed for DGL.

The test numbers come from exact layer-wise inference (every node's embedding over the full message-passing
graph, one layer at a time with ``MultiLayerFullNeighborSampler(1)``), then dot scores of the test positive
and negative pairs: ROC AUC (Mann-Whitney U, a tied positive/negative pair counts half) and average precision
(scikit-learn's step definition), the formulas of graphtier's link metrics.

    VENV/bin/python benchmarks/dgl_link.py DATASET --fanouts 15,10,5 --batch-size 1024 --num-negatives 1 \
        --hidden 128 --epochs 3 --threads 2 --dropout 0 --lr 0.003

Prints one JSON line: ``epoch_seconds``, ``epoch_losses``, ``batches`` (per epoch), ``test_auc``, ``test_ap``,
``inference_seconds``, ``dgl`` and ``torch`` versions.
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


class SAGE(nn.Module):
    """GraphSAGE-mean encoder: ``layers`` SAGEConv, ReLU + dropout between them, ``hidden``-wide output."""

    def __init__(self, in_dim: int, hidden: int, layers: int, dropout: float) -> None:
        super().__init__()
        dims = [in_dim] + [hidden] * layers
        self.layers = nn.ModuleList(dglnn.SAGEConv(a, b, "mean") for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = nn.Dropout(dropout)
        self.hidden = hidden

    def forward(self, blocks, x):
        for k, (layer, block) in enumerate(zip(self.layers, blocks)):
            x = layer(block, x)
            if k < len(self.layers) - 1:
                x = self.dropout(F.relu(x))
        return x

    @torch.no_grad()
    def inference(self, graph, features, batch_size: int):
        """Exact embeddings of all nodes, layer by layer over full neighbourhoods (DGL's examples' way)."""
        sampler = dgl.dataloading.MultiLayerFullNeighborSampler(1)
        loader = dgl.dataloading.DataLoader(
            graph, torch.arange(graph.num_nodes()), sampler, batch_size=batch_size, shuffle=False, num_workers=0
        )
        x = features
        for k, layer in enumerate(self.layers):
            y = torch.empty(graph.num_nodes(), self.hidden)
            for input_nodes, output_nodes, blocks in loader:
                h = layer(blocks[0], x[input_nodes])
                if k < len(self.layers) - 1:
                    h = F.relu(h)
                y[output_nodes] = h
            x = y
        return x


def dot_scores(pair_graph, h):
    """One logit per edge of ``pair_graph`` (positive or negative pairs): the dot product of its endpoints."""
    with pair_graph.local_scope():
        pair_graph.ndata["h"] = h
        pair_graph.apply_edges(dgl.function.u_dot_v("h", "h", "score"))
        return pair_graph.edata["score"].reshape(-1)


def edge_ids(indptr: np.ndarray, indices: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """int64: the id of edge ``src -> dst`` in the CSC graph (DGL numbers a CSC-built graph's edges by position);
    -1 where there is none."""
    n = indptr.shape[0] - 1
    columns = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    keys = columns * n + indices
    wanted = dst.astype(np.int64) * n + src.astype(np.int64)
    if keys.shape[0] == 0:
        return np.full(wanted.shape, -1, np.int64)
    order = None
    if (keys[1:] < keys[:-1]).any():  # sources not ascending within a column (e.g. a reordered dataset)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
    position = np.minimum(np.searchsorted(keys, wanted), keys.shape[0] - 1)
    found = keys[position] == wanted
    if order is not None:
        position = order[position]
    return np.where(found, position, -1)


def auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """ROC AUC (Mann-Whitney U; a tied positive/negative pair counts half), as graphtier's link metrics."""
    pos, neg = positive.astype(np.float64).reshape(-1), negative.astype(np.float64).reshape(-1)
    values = np.concatenate([pos, neg])
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], ordered.shape[0]]
    ranks = np.empty(values.shape[0])
    ranks[order] = np.repeat((starts + ends + 1) / 2.0, ends - starts)
    return (float(ranks[: pos.size].sum()) - pos.size * (pos.size + 1) / 2.0) / (pos.size * neg.size)


def average_precision(positive: np.ndarray, negative: np.ndarray) -> float:
    """Average precision, scikit-learn's definition (one step per distinct score), as graphtier's link metrics."""
    pos, neg = positive.astype(np.float64).reshape(-1), negative.astype(np.float64).reshape(-1)
    scores = np.concatenate([pos, neg])
    labels = np.concatenate([np.ones(pos.size), np.zeros(neg.size)])
    order = np.argsort(-scores, kind="stable")
    scores, labels = scores[order], labels[order]
    last = np.r_[np.flatnonzero(scores[1:] != scores[:-1]), scores.size - 1]
    true_positives = np.cumsum(labels)[last]
    return float((np.diff(np.r_[0.0, true_positives]) / pos.size * (true_positives / (last + 1.0))).sum())


def test_pairs(directory: str, meta: dict) -> tuple[np.ndarray, np.ndarray]:
    """(positive pairs int64 [P, 2], negative pairs int64 [Q, 2]) of the test split; per-positive negatives
    [P, K] are paired with their positive's source."""
    positives = np.load(f"{directory}/link_test.npy")
    negatives = np.load(f"{directory}/link_test_neg.npy")
    if int(meta["link"].get("eval_negatives", 0)) > 0:
        k = negatives.shape[1]
        negatives = np.stack([np.repeat(positives[:, 0], k), negatives.reshape(-1)], axis=1)
    return positives, negatives


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--batch-size", type=int, default=1024, help="positive pairs per batch")
    parser.add_argument("--num-negatives", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--eval-batch-size", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    fanouts = [int(f) for f in args.fanouts.split(",")]
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dgl.seed(args.seed)
    d = args.dataset
    with open(f"{d}/meta.json") as file:
        meta = json.load(file)
    if "link" not in meta:
        raise SystemExit(f"{d}/meta.json: no 'link' entry (prepare the dataset with --edge-split)")
    indptr = np.load(f"{d}/indptr.npy").astype(np.int64)
    indices = np.load(f"{d}/indices.npy").astype(np.int64)
    graph = dgl.graph(
        ("csc", (torch.from_numpy(indptr), torch.from_numpy(indices), torch.tensor([], dtype=torch.int64)))
    )
    features = torch.from_numpy(np.load(f"{d}/features.npy"))
    train = np.load(f"{d}/link_train.npy")
    train_eids = edge_ids(indptr, indices, train[:, 0], train[:, 1])
    if (train_eids < 0).any():
        raise SystemExit(f"{d}/link_train.npy: {int((train_eids < 0).sum())} pairs are not edges of the graph")
    # reverse_eids maps every edge to its reverse (itself where a directed graph has none), as DGL asks
    all_dst = np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))
    reverse = edge_ids(indptr, indices, all_dst, indices)
    reverse = np.where(reverse < 0, np.arange(indices.shape[0]), reverse)
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.NeighborSampler(list(reversed(fanouts))),
        exclude="reverse_id",
        reverse_eids=torch.from_numpy(reverse),
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(args.num_negatives),
    )
    loader = dgl.dataloading.DataLoader(
        graph,
        torch.from_numpy(train_eids),
        sampler,
        batch_size=args.batch_size,
        shuffle=True,
        drop_last=False,
        num_workers=0,
    )
    model = SAGE(features.shape[1], args.hidden, len(fanouts), args.dropout)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    epoch_seconds, epoch_losses, epoch_batches = [], [], []
    for _ in range(args.epochs):
        start = time.perf_counter()
        model.train()
        loss_sum, batches = 0.0, 0
        for input_nodes, pair_graph, negative_graph, blocks in loader:
            h = model(blocks, features[input_nodes])
            pos, neg = dot_scores(pair_graph, h), dot_scores(negative_graph, h)
            logits = torch.cat([pos, neg])
            labels = torch.cat([torch.ones_like(pos), torch.zeros_like(neg)])
            loss = F.binary_cross_entropy_with_logits(logits, labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum, batches = loss_sum + float(loss), batches + 1
        epoch_seconds.append(time.perf_counter() - start)
        epoch_losses.append(loss_sum / max(1, batches))
        epoch_batches.append(batches)
    model.eval()
    start = time.perf_counter()
    embeddings = model.inference(graph, features, args.eval_batch_size)
    positives, negatives = test_pairs(d, meta)
    pos = (embeddings[positives[:, 0]] * embeddings[positives[:, 1]]).sum(1).numpy()
    neg = (embeddings[negatives[:, 0]] * embeddings[negatives[:, 1]]).sum(1).numpy()
    inference_seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "epoch_seconds": epoch_seconds,
                "epoch_losses": epoch_losses,  # mean training BCE per epoch (nan shows a diverged run)
                "batches": epoch_batches,
                "test_auc": auc(pos, neg),
                "test_ap": average_precision(pos, neg),
                "inference_seconds": inference_seconds,
                "dgl": dgl.__version__,
                "torch": torch.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
