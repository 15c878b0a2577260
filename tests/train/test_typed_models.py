"""Typed models (R-GCN, R-GAT, HeteroSAGE, MLP) against a dense full-graph reference on full-neighbour batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import Tensor, nn

from graphtier.dataset.schema import Schema
from graphtier.errors import OptionError
from graphtier.train.nn.models import BlockGNN
from graphtier.train.nn.typed_layers import RelationGAT, _BiasOnly
from graphtier.train.nn.typed_models import TypedGNN, build_typed_model, needed_types
from tests.train.typed_graphs import TypedGraph, batch_inputs, full_batch, mag_like, make_graph

MODELS = ("rgcn", "rgat", "hsage")


# ---------------------------------------------------------------- the dense reference
def _apply(module: nn.Module, x: Tensor) -> Tensor:
    return module(x)


def _gat_dense(conv: RelationGAT, h_src: Tensor, h_dst: Tensor, adjacency: Tensor) -> Tensor:
    heads, channels = conv.heads, conv.channels
    hs = conv.lin_src(h_src).view(-1, heads, channels)
    hd = conv.lin_dst(h_dst).view(-1, heads, channels)
    score_src = (hs * conv.att_src).sum(-1)  # [n_src, H]
    score_dst = (hd * conv.att_dst).sum(-1)  # [n_dst, H]
    out = torch.zeros(h_dst.shape[0], heads, channels, dtype=h_src.dtype)
    for v in range(h_dst.shape[0]):
        neighbours = torch.nonzero(adjacency[v]).flatten()
        if neighbours.numel() == 0:
            continue
        for h in range(heads):
            logits = nn.functional.leaky_relu(score_src[neighbours, h] + score_dst[v, h], 0.2)
            alpha = torch.softmax(logits, 0)
            out[v, h] = (alpha.unsqueeze(1) * hs[neighbours, h]).sum(0)
    return out.reshape(h_dst.shape[0], -1) if conv.concat else out.mean(1)


def reference(model: TypedGNN, graph: TypedGraph) -> Tensor:
    """The model's logits of every target node, computed on the whole graph with dense matrices and loops."""
    schema = graph.schema
    h: dict[str, Tensor] = {}
    for t in model.inputs.dims:
        key = f"t{schema.type_names.index(t)}"
        if key in model.inputs.tables:
            h[t] = model.inputs.tables[key].full("weight")
        elif t in model.inputs.zeros:
            h[t] = torch.zeros(schema.node_type(t).count, 1, dtype=torch.float64)
        else:
            h[t] = graph.features[t]
    for index, layer in enumerate(model.layers):
        out = {}
        for t in layer.out_types:
            key = f"t{schema.type_names.index(t)}"
            if model.kind == "rgcn":
                total = layer.self_weight[key](h[t])
            elif model.kind == "rgat":
                total = layer.skip[key](h[t])
            else:
                total = layer.self_weight[key](h[t]) if key in layer.self_weight else torch.zeros(
                    h[t].shape[0], layer.out_dim, dtype=torch.float64)  # fmt: skip
            for r, rel in enumerate(schema.relations):
                if rel.dst != t:
                    continue
                adjacency = graph.dense[rel.type]
                mean = adjacency / adjacency.sum(1, keepdim=True).clamp(min=1) @ h[rel.src]
                if model.kind == "rgcn":
                    if f"r{r}" in layer.weight:
                        weight = layer.weight[f"r{r}"]
                    elif f"r{r}" in layer.coefficients:
                        bases = layer.bases[f"w{h[rel.src].shape[1]}"]
                        coefficients = layer.coefficients[f"r{r}"]
                        weight = sum(coefficients[b] * bases[b] for b in range(bases.shape[0]))
                    else:
                        weight = torch.eye(layer.out_dim, dtype=torch.float64)
                    total = total + mean @ weight.t()
                elif model.kind == "hsage":
                    total = total + _apply(layer.lin_l[f"r{r}"], mean) + _apply(layer.lin_r[f"r{r}"], h[t])
                else:
                    total = total + _gat_dense(layer.convs[f"r{r}"], h[rel.src], h[t], adjacency)
            out[t] = total
        h = out if index == model.num_layers - 1 else {t: torch.relu(v) for t, v in out.items()}
    return h[schema.target]


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("featureless", ["embedding", "onehot", "zeros"])
@pytest.mark.parametrize("kind", MODELS)
def test_matches_the_dense_full_graph_reference(kind: str, featureless: str) -> None:
    torch.manual_seed(0)
    graph = mag_like()
    model = build_typed_model(kind, graph.schema, in_dims=graph.in_dims, hidden=8, num_classes=3, num_layers=2,
                              dropout=0.5, featureless=featureless, heads=2).double().eval()  # fmt: skip
    seeds = np.array([3, 0, 17, 9, 22, 5])
    batch = full_batch(graph, seeds, 2)
    out = model(batch_inputs(graph, batch), batch.blocks, batch.n_id)
    assert out.shape == (batch.blocks[-1].num_dst["paper"], 3)
    expected = reference(model, graph)[torch.from_numpy(seeds)]
    torch.testing.assert_close(out[batch.seed_index], expected, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("featureless", ["embedding", "onehot"])
@pytest.mark.parametrize("kind", MODELS)
def test_gradients_equal_the_dense_reference(kind: str, featureless: str) -> None:
    """The layers' in-place sums (R-GCN adds each relation's GEMM into the root term) give the reference's gradient of
    every parameter; ``embedding`` makes featureless types' root terms the identity (a view of the input)."""
    torch.manual_seed(0)
    graph = mag_like()
    model = build_typed_model(kind, graph.schema, in_dims=graph.in_dims, hidden=8, num_classes=3, num_layers=2,
                              dropout=0.0, featureless=featureless, heads=2).double().eval()  # fmt: skip
    seeds = np.arange(24)
    batch = full_batch(graph, seeds, 2)
    upstream = torch.randn(24, 3, dtype=torch.float64)
    (model(batch_inputs(graph, batch), batch.blocks, batch.n_id)[batch.seed_index] * upstream).sum().backward()
    got = {name: param.grad.clone() for name, param in model.named_parameters() if param.grad is not None}
    model.zero_grad()
    (reference(model, graph)[torch.from_numpy(seeds)] * upstream).sum().backward()
    for name, param in model.named_parameters():  # a parameter the batch does not reach has no gradient: zero
        zero = torch.zeros_like(param)
        want = zero if param.grad is None else param.grad
        torch.testing.assert_close(got.get(name, zero), want, rtol=1e-9, atol=1e-10, msg=name)


def test_rgcn_bases_match_the_reference_and_share_weights_per_width() -> None:
    torch.manual_seed(0)
    graph = mag_like()
    model = build_typed_model("rgcn", graph.schema, in_dims=graph.in_dims, hidden=8, num_classes=3, num_layers=2,
                              dropout=0.0, num_bases=2).double().eval()  # fmt: skip
    first, second = model.layers
    # first layer: one set of bases per source width (paper 5, author 3, subject embedding 8, venue 2)
    assert sorted(first.bases.keys()) == ["w2", "w3", "w5", "w8"]
    assert list(second.bases.keys()) == ["w8"] and not second.weight
    seeds = np.arange(24)
    batch = full_batch(graph, seeds, 2)
    out = model(batch_inputs(graph, batch), batch.blocks, batch.n_id)
    torch.testing.assert_close(out, reference(model, graph), rtol=1e-9, atol=1e-10)


def test_one_layer_and_three_layers() -> None:
    graph = mag_like()
    in_dims = graph.in_dims
    for layers in (1, 3):
        for kind in MODELS:
            torch.manual_seed(layers)
            model = build_typed_model(kind, graph.schema, in_dims=in_dims, hidden=4, num_classes=2,
                                      num_layers=layers, featureless="onehot", heads=2).double().eval()  # fmt: skip
            seeds = np.array([1, 2, 3])
            batch = full_batch(graph, seeds, layers)
            out = model(batch_inputs(graph, batch), batch.blocks, batch.n_id)
            torch.testing.assert_close(out, reference(model, graph)[torch.from_numpy(seeds)], rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("featureless", ["embedding", "onehot"])
@pytest.mark.parametrize("kind", MODELS)
def test_gradients_reach_every_parameter(kind: str, featureless: str) -> None:
    torch.manual_seed(0)
    graph = mag_like(with_empty=False)
    model = build_typed_model(kind, graph.schema, in_dims=graph.in_dims, hidden=8, num_classes=3, num_layers=2,
                              dropout=0.2, featureless=featureless, num_bases=2 if kind == "rgcn" else 0,
                              heads=2, norm="batch")  # fmt: skip
    batch = full_batch(graph, np.arange(24), 2)
    x = {t: v.float() for t, v in batch_inputs(graph, batch).items()}
    out = model(x, batch.blocks, batch.n_id)
    nn.functional.cross_entropy(out, torch.randint(0, 3, (24,))).backward()
    for name, param in model.named_parameters():
        assert param.grad is not None, name
        # a destination's term of GAT attention (lin_dst, att_dst) is the same on all its edges: the softmax cancels it where
        # the LeakyReLU's slope differs between those edges, so its gradient may be exactly 0 on a small batch
        assert name.endswith(("att_dst", "lin_dst.weight")) or bool(param.grad.abs().sum() > 0), name
    # the learnable tables are not parameters (the sparse row-wise Adam updates them): their rows get a gradient
    assert not any("tables" in name for name, _ in model.named_parameters())
    for table in model.inputs.tables.values():
        ids, grad = table.pending_gradient()
        assert ids.numel() and bool(grad.abs().sum() > 0)


def test_only_what_reaches_the_target_is_built() -> None:
    graph = mag_like()
    schema = graph.schema
    # 2 layers: layer 1 computes paper only; layer 0 paper + the sources into paper
    assert needed_types(schema, 2) == [
        ["paper", "author", "subject", "venue"], ["paper", "author", "subject", "venue"], ["paper"]
    ]  # fmt: skip
    in_dims = {t.name: t.feature_dim for t in schema.node_types}
    model = build_typed_model("rgcn", schema, in_dims=in_dims, hidden=4, num_classes=2, num_layers=1)
    assert model.layers[0].out_types == ["paper"]
    assert sorted(model.layers[0].weight.keys()) == ["r0", "r2", "r3", "r5"]  # writes, cites, publishes, rev_about


def test_homogeneous_schema_hsage_is_graphsage() -> None:
    rng = np.random.default_rng(0)
    n = 30
    src, dst = rng.integers(0, n, 120), rng.integers(0, n, 120)
    graph = make_graph({"_N": (n, 6)}, {("_N", "_E", "_N"): (src, dst)}, "_N")
    schema = Schema.homogeneous(n, graph.schema.num_edges, 6)
    graph.schema = schema
    torch.manual_seed(0)
    typed = build_typed_model("hsage", schema, in_dims={"_N": 6}, hidden=8, num_classes=4, num_layers=2,
                              dropout=0.0).double().eval()  # fmt: skip
    sage = BlockGNN("sage", 6, 8, 4, 2, dropout=0.0).double().eval()
    for conv, layer in zip(sage.convs, typed.layers):
        conv.lin_l.load_state_dict(layer.lin_l["r0"].state_dict())
        conv.lin_r.load_state_dict(layer.lin_r["r0"].state_dict())
    seeds = np.array([4, 1, 7])
    batch = full_batch(graph, seeds, 2)
    out = typed(batch_inputs(graph, batch), batch.blocks, batch.n_id)
    x = graph.features["_N"][batch.n_id["_N"]]
    blocks = [b.relations[("_N", "_E", "_N")] for b in batch.blocks]  # the one block layout: a relation's Block
    torch.testing.assert_close(out, sage(x, blocks), rtol=1e-9, atol=1e-10)
    for kind in MODELS:
        model = build_typed_model(kind, schema, in_dims={"_N": 6}, hidden=8, num_classes=4, num_layers=2,
                                  heads=2).double().eval()  # fmt: skip
        torch.testing.assert_close(model(batch_inputs(graph, batch), batch.blocks, batch.n_id),
                                   reference(model, graph)[torch.from_numpy(seeds)], rtol=1e-9, atol=1e-10)  # fmt: skip


def test_mlp_reads_the_target_features_only() -> None:
    graph = mag_like()
    model = build_typed_model("mlp", graph.schema, in_dims=graph.in_dims, hidden=8, num_classes=3, num_layers=2).eval()
    batch = full_batch(graph, np.array([5, 2]), 2)
    x = {t: v.float() for t, v in batch_inputs(graph, batch).items()}
    out = model(x, batch.blocks, batch.n_id)
    torch.testing.assert_close(out, model.mlp.net(graph.features["paper"][[5, 2]].float()))
    with pytest.raises(OptionError, match="model"):
        build_typed_model(
            "mlp", graph.schema, in_dims={**graph.in_dims, "paper": 0}, hidden=8, num_classes=3, num_layers=2
        )


def test_bad_options_name_the_option() -> None:
    graph = mag_like()

    common = dict(in_dims=graph.in_dims, hidden=8, num_classes=3, num_layers=2)
    with pytest.raises(OptionError, match="model"):
        build_typed_model("sage", graph.schema, **common)
    with pytest.raises(OptionError, match="featureless"):
        build_typed_model("rgcn", graph.schema, featureless="random", **common)
    with pytest.raises(OptionError, match="num_bases"):
        build_typed_model("rgcn", graph.schema, num_bases=-1, **common)
    with pytest.raises(OptionError, match="heads"):
        build_typed_model("rgat", graph.schema, heads=3, **common)
    model = build_typed_model("rgcn", graph.schema, **common)
    batch = full_batch(graph, np.array([0]), 1)
    with pytest.raises(OptionError, match="layers"):
        model(batch_inputs(graph, batch), batch.blocks, batch.n_id)


def test_bias_only_is_identity_plus_bias() -> None:
    module = _BiasOnly(3)
    module.bias.data[:] = torch.tensor([1.0, 2.0, 3.0])
    torch.testing.assert_close(module(torch.ones(2, 3)), torch.tensor([[2.0, 3.0, 4.0]] * 2))


@pytest.mark.parametrize("kind", MODELS)
def test_learns_labels_held_by_a_neighbour_type(kind: str) -> None:
    """Paper features are noise; a paper's label is its authors' class: only the graph can tell it."""
    rng = np.random.default_rng(0)
    classes, papers, authors = 3, 120, 60
    author_class = rng.integers(0, classes, authors)
    by_class = [np.flatnonzero(author_class == c) for c in range(classes)]
    labels = rng.integers(0, classes, papers)
    src = np.concatenate([rng.choice(by_class[c], 2, replace=False) for c in labels])
    dst = np.repeat(np.arange(papers), 2)
    graph = make_graph({"paper": (papers, 4), "author": (authors, classes)},
                       {("author", "writes", "paper"): (src, dst), ("paper", "rev_writes", "author"): (dst, src)},
                       "paper")  # fmt: skip
    graph.features["author"] = torch.from_numpy(np.eye(classes)[author_class]) + 0.3 * graph.features["author"]
    torch.manual_seed(0)
    model = build_typed_model(kind, graph.schema, in_dims={"paper": 4, "author": classes}, hidden=16,
                              num_classes=classes, num_layers=2, dropout=0.1, heads=2)  # fmt: skip
    train, test = np.arange(0, papers, 2), np.arange(1, papers, 2)
    train_batch, test_batch = full_batch(graph, train, 2), full_batch(graph, test, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
    target = torch.from_numpy(labels)
    x_train = {t: v.float() for t, v in batch_inputs(graph, train_batch).items()}
    for _ in range(60):
        optimizer.zero_grad()
        out = model(x_train, train_batch.blocks, train_batch.n_id)
        nn.functional.cross_entropy(out[train_batch.seed_index], target[train]).backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        x_test = {t: v.float() for t, v in batch_inputs(graph, test_batch).items()}
        predicted = model(x_test, test_batch.blocks, test_batch.n_id)[test_batch.seed_index].argmax(1)
    accuracy = float((predicted == target[test]).float().mean())
    assert accuracy >= 0.95, accuracy
