"""Models on sampled blocks: shapes, GCN normalisation, and agreement with full-graph PyG layers."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.nn import GCNConv

from graphtier import OptionError
from graphtier.dataset.csc import edges_to_csc
from graphtier.sampling import NeighborSampler
from graphtier.train.nn.models import BlockGNN, build_model


def _graph(n: int = 60, e: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return edges_to_csc(
        rng.integers(0, n, e),
        rng.integers(0, n, e),
        n,
        dedup=True,
        drop_self_loops=True,
    )


@pytest.mark.parametrize("name", ["sage", "gcn", "gat", "mlp"])
def test_output_shape_and_backward(name: str) -> None:
    indptr, indices = _graph()
    sampler = NeighborSampler(indptr, indices, [4, 3], seed=1)
    batch = sampler.sample(np.array([0, 5, 5, 7]))
    model = build_model(name, 8, 16, 3, 2, dropout=0.1, norm="batch")
    x = torch.randn(batch.num_nodes, 8)
    degree = torch.from_numpy(np.diff(indptr)[batch.n_id.numpy()].astype(np.float32))
    out = model(x, batch.blocks, degree)
    assert out.shape == (batch.blocks[-1].num_dst, 3)
    logits = out[batch.seed_index]
    assert logits.shape == (4, 3)
    torch.testing.assert_close(logits[1], logits[2])
    logits.sum().backward()
    assert all(p.grad is not None for p in model.parameters() if p.requires_grad)


def test_gcn_with_all_neighbours_equals_full_graph_gcn() -> None:
    """With fanout -1 and full-graph degrees, a block GCN layer is exactly PyG's normalised GCNConv."""
    indptr, indices = _graph(40, 200, seed=3)
    n = 40
    torch.manual_seed(0)
    model = BlockGNN("gcn", 5, 7, 7, 1, dropout=0.0)
    reference = GCNConv(5, 7)
    reference.lin.weight.data.copy_(model.convs[0].conv.lin.weight.data)
    reference.bias.data.copy_(model.convs[0].conv.bias.data)
    x_all = torch.randn(n, 5)
    src = torch.from_numpy(indices.astype(np.int64))
    dst = torch.repeat_interleave(torch.arange(n), torch.from_numpy(np.diff(indptr)))
    expected = reference(x_all, torch.stack([src, dst]))
    seeds = np.array([3, 0, 17, 39])
    batch = NeighborSampler(indptr, indices, [-1], seed=0).sample(seeds)
    degree = torch.from_numpy(np.diff(indptr).astype(np.float32))[batch.n_id]
    got = model(x_all[batch.n_id], batch.blocks, degree)[batch.seed_index]
    torch.testing.assert_close(got, expected[torch.from_numpy(seeds)], rtol=1e-5, atol=1e-5)


def test_bad_options() -> None:
    with pytest.raises(OptionError, match="model="):
        build_model("transformer", 4, 4, 2, 2)
    with pytest.raises(OptionError, match="norm="):
        build_model("sage", 4, 4, 2, 2, norm="group")
    with pytest.raises(OptionError, match="heads"):
        build_model("gat", 4, 6, 2, 2, heads=4)
    model = build_model("sage", 4, 4, 2, 2)
    with pytest.raises(OptionError, match="2 layers"):
        model(torch.zeros(1, 4), [])


@pytest.mark.parametrize("kind", ["sage", "gcn"])
@pytest.mark.parametrize("dropout", [0.0, 0.5])
@pytest.mark.parametrize("norm", ["none", "batch"])
def test_fused_activation_backward_equals_layer_by_layer(kind: str, dropout: float, norm: str) -> None:
    """forward() hands each ReLU/dropout backward to the next aggregation; layer() does not: same numbers."""
    indptr, indices = _graph(80, 500, seed=5)
    batch = NeighborSampler(indptr, indices, [5, 4, 3], seed=2).sample(np.array([1, 2, 3, 40, 41]))
    degree = torch.from_numpy(np.diff(indptr).astype(np.float32))[batch.n_id]
    torch.manual_seed(0)
    model = BlockGNN(kind, 10, 16, 4, 3, dropout=dropout, norm=norm)
    x = torch.randn(batch.num_nodes, 10)
    results = []
    for fused in (True, False):
        torch.manual_seed(7)  # the same dropout masks on both passes
        model.zero_grad()
        xi = x.clone().requires_grad_(True)
        if fused:
            out = model(xi, batch.blocks, degree)
        else:
            h = xi
            for index, block in enumerate(batch.blocks):
                h = model.layer(index, h, block, degree)
            out = h
        (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        results.append(
            (
                out.detach(),
                xi.grad.clone(),
                {n: p.grad.clone() for n, p in model.named_parameters()},
            )
        )
    (out_a, gx_a, ga), (out_b, gx_b, gb) = results
    torch.testing.assert_close(out_a, out_b)
    torch.testing.assert_close(gx_a, gx_b, rtol=1e-5, atol=1e-6)
    assert gx_a.abs().sum() > 0
    for name in ga:
        torch.testing.assert_close(ga[name], gb[name], rtol=1e-5, atol=1e-6, msg=name)


def test_batch_norm_of_one_row_uses_running_statistics() -> None:
    from graphtier.train.nn.models import BatchNorm

    norm = BatchNorm(4)
    norm.train()
    norm(torch.randn(16, 4) * 3 + 1)  # some running statistics
    mean, var = norm.running_mean.clone(), norm.running_var.clone()
    row = torch.randn(1, 4, requires_grad=True)
    out = norm(row)
    out.sum().backward()
    assert torch.equal(norm.running_mean, mean) and torch.equal(norm.running_var, var)
    norm.eval()
    torch.testing.assert_close(out, norm(row))
    assert norm.weight.grad is not None and row.grad is not None
    assert set(norm.state_dict()) == set(torch.nn.BatchNorm1d(4).state_dict())


@pytest.mark.parametrize("model", ["mlp", "sage"])
def test_norm_batch_trains_with_a_last_batch_of_one_seed(tmp_path, model: str) -> None:  # type: ignore[no-untyped-def]
    """A train set of k * batch_size + 1 nodes (k = 1 here): the last mini-batch has one seed."""
    from graphtier.train import train
    from tests.conftest import write_labelled_graph

    data = write_labelled_graph(tmp_path / "ds", num_nodes=120, feature_dim=8)
    train_idx = np.asarray(data.train_idx)
    assert len(train_idx) > 2
    result = train(
        data, model=model, norm="batch", batch_size=len(train_idx) - 1, fanouts=(3, 3), hidden=8, epochs=1, quiet=True
    )
    assert np.isfinite(result.report["epochs"][0]["loss"])


def test_block_size_bounds_hold_for_sampled_blocks() -> None:
    from graphtier.train.options.gat_memory import block_size_bounds

    indptr, indices = _graph(n=200, e=2000, seed=3)
    degrees = np.diff(indptr)
    for fanouts in ((3, 2), (-1, 4), (50, -1)):
        bounds = block_size_bounds(16, fanouts, degrees)
        sampler = NeighborSampler(indptr, indices, fanouts=list(fanouts), seed=0)
        for start in range(0, 200, 16):
            batch = sampler.sample(np.arange(start, min(start + 16, 200)))
            blocks = list(reversed(batch.blocks))  # seed hop first, like the fanouts
            for (dst_bound, edge_bound), block in zip(bounds, blocks):
                assert block.num_dst <= dst_bound and block.edge_index.shape[1] <= edge_bound


def test_gat_training_bytes_grows_with_fanouts_heads_and_hidden() -> None:
    from graphtier.train.options.gat_memory import gat_training_bytes

    degrees = np.full(10_000, 100)
    small = gat_training_bytes(64, (5, 5), degrees, 64, 4, 10)
    assert gat_training_bytes(64, (-1, -1), degrees, 64, 4, 10) > small
    assert gat_training_bytes(64, (5, 5), degrees, 256, 4, 10) > small
    assert gat_training_bytes(64, (5, 5), degrees, 64, 8, 10) > small
    # hop 1: 64 x 5 edges; hop 2: (64 + 320) x 5 edges; per edge 4 * (2 * 64 + 10 * 4) + 16 bytes (hidden layer)
    edges_hidden, edges_last = 384 * 5 + 384, 64 * 5 + 64
    assert small == edges_hidden * (4 * (2 * 64 + 40) + 16) + edges_last * (4 * (2 * 10 + 10) + 16)
    # edge inputs of width 7: per edge its vector, its projection (heads x channels) and one attention term per head
    with_edges = gat_training_bytes(64, (5, 5), degrees, 64, 4, 10, edge_width=7)
    assert with_edges - small == edges_hidden * 4 * (7 + 64 + 4) + edges_last * 4 * (7 + 10 + 1)
