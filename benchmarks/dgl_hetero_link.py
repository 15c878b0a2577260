"""The DGL side of ``bench_hetero.py --task link``: link prediction on one relation of a typed dataset, DGL 2.1.

Runs only inside the DGL baseline venv (``../shared/baselines/make-dgl-venv.sh VENV``); graphtier never imports
DGL. The dataset is read as ``dgl_hetero.py`` reads it (numpy alone), with the edge split of one relation
(``graphtier generate --hetero mag ... --edge-split F --split-relation writes`` or ``prepare manifest ...
--split-relation``): ``meta.json["link"]["relation"]`` ``[SRC, REL, DST]``, ``"reverse"`` the name of its reverse
relation (or null), ``link_train.npy`` [P, 2] local ids (each an edge of REL in the message-passing graph),
``link_test.npy`` and ``link_test_neg.npy`` ([Q, 2] pairs, or [P, K] destinations per positive).

Written as a DGL user writes heterogeneous edge prediction (DGL's "Stochastic Training of GNN for Link Prediction"
on heterogeneous graphs): ``as_edge_prediction_sampler`` around ``MultiLayerNeighborSampler`` (a fanout per
relation and hop, as ``dgl_hetero.py``), ``negative_sampler.Uniform(k)`` (k destinations of type DST per positive),
``exclude`` removing each batch's target edges from REL and, turned around, from its reverse, the classic
``DataLoader`` over REL's training edge ids, ``dgl_hetero.RGCN`` returning every type's ``hidden``-wide output
(learnable ``SparseAdam`` embeddings for featureless types), a dot-product decoder, binary cross-entropy, Adam.

Test: exact embeddings of the test pairs' endpoints (``MultiLayerFullNeighborSampler``: every neighbour at every
hop), dot scores, ROC AUC and AP with ``dgl_link.py``'s formulas (graphtier's).

    VENV/bin/python benchmarks/dgl_hetero_link.py DATASET --fanouts 10,10 --batch-size 1024 --num-negatives 1 \
        --hidden 64 --epochs 3 --threads 2 --dropout 0 --lr 0.01

Prints one JSON line: ``epoch_seconds``, ``epoch_losses``, ``batches`` (per epoch), ``test_auc``, ``test_ap``,
``dgl`` and ``torch`` versions.
"""

import argparse
import json
import time

import dgl
import numpy as np
import torch
import torch.nn.functional as F
from dgl_hetero import RGCN, load_graph, relation_fanouts
from dgl_link import auc, average_precision


def relation_edge_ids(graph, relation, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """int64: the DGL id of edge ``src -> dst`` (local ids) of ``relation``; -1 where there is none."""
    esrc, edst = (t.numpy().astype(np.int64) for t in graph.edges(etype=relation, order="eid"))
    width = int(max(graph.num_nodes(relation[0]), 1))
    keys = edst * width + esrc
    order = np.argsort(keys, kind="stable")
    wanted = dst.astype(np.int64) * width + src.astype(np.int64)
    position = np.minimum(np.searchsorted(keys[order], wanted), max(keys.shape[0] - 1, 0))
    found = keys[order][position] == wanted if keys.shape[0] else np.zeros(wanted.shape, bool)
    return np.where(found, order[position], -1)


def dot_scores(pair_graph, h: dict, relation) -> torch.Tensor:
    """One logit per edge of ``relation`` in ``pair_graph``: the dot product of its endpoints' outputs."""
    with pair_graph.local_scope():
        for t, rows in h.items():
            if pair_graph.num_nodes(t):
                pair_graph.nodes[t].data["h"] = rows[: pair_graph.num_nodes(t)]
        pair_graph.apply_edges(dgl.function.u_dot_v("h", "h", "score"), etype=relation)
        return pair_graph.edges[relation].data["score"].reshape(-1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("--fanouts", default="10,10")
    parser.add_argument("--fanouts-per-relation", default="")
    parser.add_argument("--batch-size", type=int, default=1024, help="positive pairs per batch")
    parser.add_argument("--num-negatives", type=int, default=1)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dgl.seed(args.seed)
    d = args.dataset
    graph, meta, features = load_graph(d)
    link = meta.get("link") or {}
    if "relation" not in link:
        raise SystemExit(f"{d}/meta.json: no edge split of a relation ('link.relation')")
    relation = tuple(link["relation"])
    reverse = (relation[2], link["reverse"], relation[0]) if link.get("reverse") else None
    train = np.load(f"{d}/link_train.npy")
    train_eids = relation_edge_ids(graph, relation, train[:, 0], train[:, 1])
    if (train_eids < 0).any():
        raise SystemExit(f"{d}/link_train.npy: {int((train_eids < 0).sum())} pairs are not edges of {relation}")
    reverse_of = None
    if reverse is not None:  # REL's edge e -> the id of (dst -> src) in the reverse relation
        esrc, edst = (t.numpy() for t in graph.edges(etype=relation, order="eid"))
        reverse_of = torch.from_numpy(relation_edge_ids(graph, reverse, edst, esrc))

    def exclude(seed_edges: dict) -> dict:
        """The batch's target edges and their reverses: no pair is predicted from its own edge."""
        seeds = seed_edges[relation]
        out = {relation: seeds}
        if reverse_of is not None:
            back = reverse_of[seeds]
            out[reverse] = back[back >= 0]
        return out

    fanouts = [int(f) for f in args.fanouts.split(",")]
    sampler = dgl.dataloading.as_edge_prediction_sampler(
        dgl.dataloading.MultiLayerNeighborSampler(
            relation_fanouts(args.fanouts_per_relation, fanouts, graph.canonical_etypes)
        ),
        exclude=exclude,
        negative_sampler=dgl.dataloading.negative_sampler.Uniform(args.num_negatives),
    )
    loader = dgl.dataloading.DataLoader(
        graph,
        {relation: torch.from_numpy(train_eids)},
        sampler,
        batch_size=args.batch_size,
        shuffle=True,
        drop_last=False,
        num_workers=0,
    )
    in_dims = {t: int(f.shape[1]) for t, f in features.items()}
    model = RGCN(graph, in_dims, args.hidden, args.hidden, len(fanouts), args.dropout, None)
    dense = [p for name, p in model.named_parameters() if not name.startswith("embeds.")]
    optimizers = [torch.optim.Adam(dense, lr=args.lr)]
    if len(model.embeds):
        optimizers.append(torch.optim.SparseAdam(list(model.embeds.parameters()), lr=args.lr))
    epoch_seconds, epoch_losses, epoch_batches = [], [], []
    for _ in range(args.epochs):
        start = time.perf_counter()
        model.train()
        loss_sum, batches = 0.0, 0
        for input_nodes, pair_graph, negative_graph, blocks in loader:
            h = model(blocks, model.inputs(input_nodes, features))
            pos, neg = dot_scores(pair_graph, h, relation), dot_scores(negative_graph, h, relation)
            logits = torch.cat([pos, neg])
            loss = F.binary_cross_entropy_with_logits(logits, torch.cat([torch.ones_like(pos), torch.zeros_like(neg)]))
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
    positives = np.load(f"{d}/link_test.npy")
    negatives = np.load(f"{d}/link_test_neg.npy")
    if int(link.get("eval_negatives", 0)) > 0:
        k = negatives.shape[1]
        negatives = np.stack([np.repeat(positives[:, 0], k), negatives.reshape(-1)], axis=1)
    every = np.concatenate([positives, negatives])
    src_type, _, dst_type = relation
    wanted = {src_type: np.unique(every[:, 0]), dst_type: np.unique(every[:, 1])}
    if src_type == dst_type:
        wanted = {src_type: np.unique(every.reshape(-1))}
    tables = {t: torch.zeros(graph.num_nodes(t), args.hidden) for t in wanted}
    full = dgl.dataloading.MultiLayerFullNeighborSampler(len(fanouts))
    test_loader = dgl.dataloading.DataLoader(
        graph,
        {t: torch.from_numpy(ids) for t, ids in wanted.items()},
        full,
        batch_size=4096,
        shuffle=False,
        num_workers=0,
    )
    with torch.no_grad():
        for input_nodes, output_nodes, blocks in test_loader:
            h = model(blocks, model.inputs(input_nodes, features))
            for t, ids in output_nodes.items():
                if t in tables and len(ids):
                    tables[t][ids] = h[t][: len(ids)]
    scores = (tables[src_type][every[:, 0]] * tables[dst_type][every[:, 1]]).sum(1).numpy()
    pos, neg = scores[: positives.shape[0]], scores[positives.shape[0] :]
    print(
        json.dumps(
            {
                "epoch_seconds": epoch_seconds,
                "epoch_losses": epoch_losses,  # mean training BCE per epoch (nan shows a diverged run)
                "batches": epoch_batches,
                "test_auc": auc(pos, neg),
                "test_ap": average_precision(pos, neg),
                "dgl": dgl.__version__,
                "torch": torch.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
