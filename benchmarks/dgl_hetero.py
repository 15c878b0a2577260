"""The DGL side of ``bench_hetero.py``: a sampled R-GCN with DGL 2.1 on a graphtier typed dataset.

Runs only inside the DGL baseline venv (``../shared/baselines/make-dgl-venv.sh VENV``); graphtier never imports
DGL, and this script reads the dataset directory with numpy alone (docs/dataset-format.md,
``graphtier/dataset/schema.py``): ``meta.json["hetero"]`` lists the node types (consecutive ranges of one global
id space, in order) and relations; relation r's in-edge CSC is rows ``row_offset(r) .. + count(dst)`` of
``indptr.npy`` (row offsets accumulate the destination counts in relation order) and ``indices.npy`` holds GLOBAL
source ids; ``features_<type>.npy`` per featured type, ``labels.npy`` / ``<split>_idx.npy`` in local ids of the
target type.

It is written as a DGL user writes a minibatch R-GCN (DGL's ``examples/pytorch/rgcn-hetero/entity_classify_mb.py``):
``dgl.heterograph`` from one CSC per relation, ``MultiLayerNeighborSampler`` with a fanout per relation and hop,
the classic ``DataLoader`` over the target type's training ids, ``HeteroGraphConv({rel: GraphConv(norm="right")},
aggregate="sum")`` layers (per relation: the mean of the in-neighbours times W_r, summed over relations) plus a
self-loop weight per node type, ReLU and dropout between layers, a learnable ``nn.Embedding(count, hidden,
sparse=True)`` input (trained with ``SparseAdam``) for every featureless type, cross-entropy, Adam. Fanouts are
given seeds first, as graphtier's, and reversed for DGL; ``--fanouts-per-relation`` overrides some relations
(``NAME=F`` at every hop or ``NAME=F1/F2/...`` per hop, seed hop first; NAME a relation name or
``src___name___dst``), as graphtier's option of that name.

Test accuracy: the same sampler (the same fanouts) over the test ids, batches of 4096, as ``dgl_epoch.py``.

    VENV/bin/python benchmarks/dgl_hetero.py DATASET --fanouts 10,10 --batch-size 1024 --hidden 64 --epochs 3 \
        --threads 2 --dropout 0 --lr 0.01

Prints one JSON line: ``epoch_seconds``, ``epoch_losses``, ``batches`` (per epoch), ``test_acc``, ``dgl`` and
``torch`` versions.
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


def load_graph(directory: str) -> tuple[dgl.DGLGraph, dict, dict]:
    """The typed dataset as a ``dgl.heterograph`` (local ids per type), its ``meta.json`` and the featured types'
    float32 features {type: [count, dim]}."""
    with open(f"{directory}/meta.json") as handle:
        meta = json.load(handle)
    hetero = meta["hetero"]
    counts = {t["name"]: int(t["count"]) for t in hetero["node_types"]}
    offsets, total = {}, 0
    for name, count in counts.items():
        offsets[name], total = total, total + count
    indptr = np.load(f"{directory}/indptr.npy", mmap_mode="r")
    indices = np.load(f"{directory}/indices.npy", mmap_mode="r")
    data, row = {}, 0
    for relation in hetero["relations"]:
        src, name, dst = relation["type"]
        rows = np.asarray(indptr[row : row + counts[dst] + 1], dtype=np.int64)
        row += counts[dst]
        local = np.asarray(indices[rows[0] : rows[-1]], dtype=np.int64) - offsets[src]
        empty = torch.zeros(0, dtype=torch.int64)
        data[(src, name, dst)] = ("csc", (torch.from_numpy(rows - rows[0]), torch.from_numpy(local), empty))
    graph = dgl.heterograph(data, num_nodes_dict=counts)
    features = {
        t["name"]: torch.from_numpy(np.load(f"{directory}/features_{t['name']}.npy").astype(np.float32))
        for t in hetero["node_types"]
        if t.get("feature_dim", 0)
    }
    return graph, meta, features


def relation_fanouts(text: str, fanouts: list[int], relations: list[tuple[str, str, str]]) -> list[dict]:
    """DGL's fanouts: one {canonical etype: k} per layer, input layer first (``fanouts`` are seed hop first)."""
    per_hop = {rel: list(fanouts) for rel in relations}
    for entry in filter(None, (part.strip() for part in (text or "").split(","))):
        name, _, values = entry.partition("=")
        found = [rel for rel in relations if name in (rel[1], "___".join(rel))]
        if len(found) != 1:
            raise SystemExit(f"--fanouts-per-relation: {name!r} names {len(found)} relations, expected one")
        hops = [int(v) for v in values.split("/")]
        per_hop[found[0]] = hops * len(fanouts) if len(hops) == 1 else hops
        if len(per_hop[found[0]]) != len(fanouts):
            raise SystemExit(f"--fanouts-per-relation: {entry!r} expected {len(fanouts)} hops")
    return [{rel: per_hop[rel][hop] for rel in relations} for hop in reversed(range(len(fanouts)))]


class RGCN(nn.Module):
    """R-GCN: per layer, sum over relations of mean(in-neighbours) W_r, plus h_v W_0 of the node's type; the output
    of ``target``, or with ``target`` None a dict of every type's output (a link encoder)."""

    def __init__(self, graph, in_dims: dict, hidden: int, out_dim: int, layers: int, dropout: float, target: str):
        super().__init__()
        self.target = target
        self.embeds = nn.ModuleDict(
            {t: nn.Embedding(graph.num_nodes(t), hidden, sparse=True) for t in graph.ntypes if not in_dims.get(t)}
        )
        dims = {t: in_dims.get(t) or hidden for t in graph.ntypes}
        self.convs = nn.ModuleList()
        self.loops = nn.ModuleList()
        for layer in range(layers):
            out = out_dim if layer == layers - 1 else hidden
            self.convs.append(
                dglnn.HeteroGraphConv(
                    {
                        name: dglnn.GraphConv(dims[src], out, norm="right", allow_zero_in_degree=True)
                        for src, name, _ in graph.canonical_etypes
                    },
                    aggregate="sum",
                )
            )
            self.loops.append(nn.ModuleDict({t: nn.Linear(dims[t], out, bias=False) for t in graph.ntypes}))
            dims = dict.fromkeys(graph.ntypes, out)
        self.dropout = nn.Dropout(dropout)

    def inputs(self, input_nodes: dict, features: dict) -> dict:
        """The first layer's input rows of every type: features, or the featureless type's embedding rows."""
        return {t: features[t][ids] if t in features else self.embeds[t](ids) for t, ids in input_nodes.items()}

    def forward(self, blocks, x: dict):
        for k, (block, conv, loops) in enumerate(zip(blocks, self.convs, self.loops)):
            messages = conv(block, x)
            out = {}
            for t in block.dsttypes:
                n = block.num_dst_nodes(t)
                if n == 0 or t not in x:
                    continue
                own = loops[t](x[t][:n])
                out[t] = own + messages[t] if t in messages else own
            if k < len(self.convs) - 1:
                out = {t: self.dropout(F.relu(h)) for t, h in out.items()}
            x = out
        return x if self.target is None else x[self.target]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("--fanouts", default="10,10")
    parser.add_argument("--fanouts-per-relation", default="")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    d = args.dataset
    graph, meta, features = load_graph(d)
    target = meta["hetero"]["target"]
    labels = torch.from_numpy(np.load(f"{d}/labels.npy").astype(np.int64))
    train_idx = torch.from_numpy(np.load(f"{d}/train_idx.npy").astype(np.int64))
    test_idx = torch.from_numpy(np.load(f"{d}/test_idx.npy").astype(np.int64))
    fanouts = [int(f) for f in args.fanouts.split(",")]
    sampler = dgl.dataloading.MultiLayerNeighborSampler(
        relation_fanouts(args.fanouts_per_relation, fanouts, graph.canonical_etypes)
    )
    in_dims = {t: int(f.shape[1]) for t, f in features.items()}
    model = RGCN(graph, in_dims, args.hidden, int(meta["num_classes"]), len(fanouts), args.dropout, target)
    dense = [p for name, p in model.named_parameters() if not name.startswith("embeds.")]
    optimizers = [torch.optim.Adam(dense, lr=args.lr)]
    if len(model.embeds):
        optimizers.append(torch.optim.SparseAdam(list(model.embeds.parameters()), lr=args.lr))
    loader = dgl.dataloading.DataLoader(
        graph, {target: train_idx}, sampler, batch_size=args.batch_size, shuffle=True, drop_last=False, num_workers=0
    )
    epoch_seconds, epoch_losses, epoch_batches = [], [], []
    for _ in range(args.epochs):
        start = time.perf_counter()
        model.train()
        loss_sum, batches = 0.0, 0
        for input_nodes, output_nodes, blocks in loader:
            logits = model(blocks, model.inputs(input_nodes, features))
            loss = F.cross_entropy(logits, labels[output_nodes[target]])
            for optimizer in optimizers:
                optimizer.zero_grad()
            loss.backward()
            for optimizer in optimizers:
                optimizer.step()
            loss_sum, batches = loss_sum + float(loss.detach()), batches + 1
        epoch_seconds.append(time.perf_counter() - start)
        epoch_losses.append(loss_sum / max(1, batches))
        epoch_batches.append(batches)
    model.eval()
    correct = 0
    test_loader = dgl.dataloading.DataLoader(
        graph, {target: test_idx}, sampler, batch_size=4096, shuffle=False, num_workers=0
    )
    with torch.no_grad():
        for input_nodes, output_nodes, blocks in test_loader:
            predicted = model(blocks, model.inputs(input_nodes, features)).argmax(1)
            correct += int((predicted == labels[output_nodes[target]]).sum())
    print(
        json.dumps(
            {
                "epoch_seconds": epoch_seconds,
                "epoch_losses": epoch_losses,  # mean training loss per epoch (nan shows a diverged run)
                "batches": epoch_batches,
                "test_acc": correct / max(1, len(test_idx)),
                "dgl": dgl.__version__,
                "torch": torch.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
