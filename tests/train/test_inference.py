"""Exact layer-wise inference: a GCN's degrees are the full graph's, whatever the chunk size."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.scratch import scratch_array
from graphtier.sampling import NeighborSampler
from graphtier.train.infer import layerwise
from graphtier.train.infer._inference_kernels import neighbour_rows, neighbour_rows_reference
from graphtier.train.infer.inference import full_in_degree, layerwise_outputs
from graphtier.train.infer.layerwise import chunk_bounds
from graphtier.train.nn.models import BlockGNN


def _graph(seed: int, num_nodes: int = 120, num_edges: int = 700) -> tuple[np.ndarray, np.ndarray]:
    """A random CSC graph (``indptr`` [N + 1], ``indices`` [E]) with some zero in-degree nodes."""
    rng = np.random.default_rng(seed)
    dst = np.sort(rng.integers(0, num_nodes, num_edges))
    dst = dst[dst % 7 != 3]  # nodes 3, 10, 17, ... have no in-neighbours
    src = rng.integers(0, num_nodes, dst.shape[0])
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=num_nodes), out=indptr[1:])
    return indptr, src.astype(np.int64)


def _dense_gcn_reference(model: BlockGNN, x: torch.Tensor, indptr: np.ndarray, indices: np.ndarray) -> torch.Tensor:
    """The symmetric-normalised GCN of the whole graph with self-loops, by dense matrices (float64)."""
    n = indptr.shape[0] - 1
    adj = torch.zeros((n, n), dtype=torch.float64)
    for i in range(n):
        for j in indices[indptr[i] : indptr[i + 1]]:
            adj[i, j] += 1.0
    degree = torch.from_numpy(np.diff(indptr)).double()
    inv_sqrt = (degree + 1.0).rsqrt()
    norm = inv_sqrt[:, None] * (adj + torch.eye(n, dtype=torch.float64)) * inv_sqrt[None, :]
    h = x.double()
    for index, conv in enumerate(model.convs):
        h = norm @ h @ conv.conv.lin.weight.detach().double().t() + conv.conv.bias.detach().double()
        if index < len(model.convs) - 1:
            h = torch.relu(h)
    return h


@pytest.mark.parametrize("degree_given", [True, False])
def test_gcn_inference_is_the_full_graph_gcn_for_every_chunk_size(degree_given: bool) -> None:
    indptr, indices = _graph(3)
    n = indptr.shape[0] - 1
    torch.manual_seed(1)
    model = BlockGNN("gcn", 6, 10, 4, 2, dropout=0.0)
    x = torch.randn(n, 6)
    degree = full_in_degree(indptr) if degree_given else None
    cpu = torch.device("cpu")
    outputs = [
        layerwise_outputs(model, x.__getitem__, indptr, indices, num_nodes=n, device=cpu, degree=degree, chunk_size=c)[
            0
        ]
        for c in (1, 7, 50, 1000)
    ]
    for out in outputs[1:]:
        torch.testing.assert_close(out, outputs[0], rtol=1e-5, atol=1e-5)
    expected = _dense_gcn_reference(model, x, indptr, indices).float()
    torch.testing.assert_close(outputs[0], expected, rtol=1e-4, atol=1e-5)


def test_full_in_degree() -> None:
    indptr = np.array([0, 2, 2, 5])
    degree = full_in_degree(indptr)
    assert degree.dtype == torch.float32 and degree.tolist() == [2.0, 0.0, 3.0]


@pytest.mark.parametrize("layers", [1, 3])
def test_outputs_on_scratch_files_equal_those_in_ram(
    layers: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    indptr, indices = _graph(5)
    n = indptr.shape[0] - 1
    torch.manual_seed(2)
    model = BlockGNN("sage", 6, 10, 4, layers, dropout=0.0)
    x = torch.randn(n, 6)
    cpu = torch.device("cpu")
    maps: list[np.ndarray] = []

    def recording_scratch(*args: object, **kwargs: object) -> np.ndarray:
        array = scratch_array(*args, **kwargs)  # type: ignore[arg-type]
        maps.append(array)
        return array

    for chunk_size in (1, 7, 1000):  # (the chunk size may change the last bits: compare at one chunk size)
        expected, expected_embeddings = layerwise_outputs(
            model, x.__getitem__, indptr, indices, num_nodes=n, device=cpu, chunk_size=chunk_size, keep_embeddings=True
        )
        with monkeypatch.context() as patch:
            patch.setattr(layerwise, "scratch_array", recording_scratch)
            logits, embeddings = layerwise_outputs(
                model, x.__getitem__, indptr, indices, num_nodes=n, device=cpu, chunk_size=chunk_size,
                keep_embeddings=True, scratch_dir=tmp_path,
            )  # fmt: skip
        assert torch.equal(logits, expected) and embeddings is not None and torch.equal(embeddings, expected_embeddings)
        assert np.shares_memory(logits.numpy(), maps[-1])  # the last layer's output is a map, not a RAM copy
    # every layer's output on disk (and the projected inputs of a layer that projects first: the last one,
    # 10 -> 4), and a one-layer model's embeddings (its input rows) too
    assert len(maps) == 3 * (layers + 1 + (1 if layers == 1 else 0))
    assert list(tmp_path.iterdir()) == []


def test_chunk_bounds_cap_the_nodes_and_the_edges_of_a_step() -> None:
    indptr = np.cumsum([0, 1, 9, 2, 2, 30, 1, 1, 1])  # degrees 1, 9, 2, 2, 30, 1, 1, 1
    assert chunk_bounds(indptr, 8, 4).tolist() == [0, 4, 8]
    assert chunk_bounds(indptr, 8, 4, max_chunk_edges=10).tolist() == [0, 2, 4, 5, 8]  # node 4 alone: 30 edges
    assert chunk_bounds(indptr, 8, 100, max_chunk_edges=4).tolist() == [0, 1, 2, 4, 5, 8]
    assert chunk_bounds(indptr[:1], 0, 4).tolist() == [0]


@pytest.mark.parametrize("kind", ["sage", "gcn"])
def test_steps_split_by_edges_give_the_same_outputs(kind: str) -> None:
    indptr, indices = _graph(7)
    n = indptr.shape[0] - 1
    torch.manual_seed(3)
    model = BlockGNN(kind, 6, 10, 4, 2, dropout=0.0)
    x = torch.randn(n, 6)
    cpu = torch.device("cpu")
    whole, split = (
        layerwise_outputs(
            model, x.__getitem__, indptr, indices, num_nodes=n, device=cpu, chunk_size=64, max_chunk_edges=cap
        )[0]
        for cap in (10**9, 9)
    )
    assert len(chunk_bounds(indptr, n, 64, 9)) > 2 * len(chunk_bounds(indptr, n, 64))
    torch.testing.assert_close(split, whole, rtol=1e-5, atol=1e-6)  # (the last bits may differ)


@pytest.mark.parametrize("kind", ["sage", "gcn"])
@pytest.mark.parametrize(("in_dim", "hidden", "layers"), [(12, 5, 3), (6, 10, 3), (12, 5, 1), (3, 8, 2)])
@pytest.mark.parametrize("chunk_size", [1, 9, 1000])
def test_layers_from_the_tables_equal_the_block_path(
    kind: str, in_dim: int, hidden: int, layers: int, chunk_size: int
) -> None:
    # the CPU GraphSAGE and GCN paths read neighbour means / sums straight from each layer's table, projecting
    # first where a layer narrows (12 -> 5, 5 -> 4, 8 -> 4): the same outputs as one-hop blocks through PyG's
    # per-edge SAGEConv / GCNConv
    indptr, indices = _graph(11)
    n = indptr.shape[0] - 1
    torch.manual_seed(4)
    model = BlockGNN(kind, in_dim, hidden, 4, layers, dropout=0.0)
    x = torch.randn(n, in_dim)
    cpu = torch.device("cpu")
    fast, fast_embeddings = layerwise_outputs(
        model, x.__getitem__, indptr, indices, num_nodes=n, device=cpu, chunk_size=chunk_size, keep_embeddings=True
    )
    model.use_csr = False  # PyG's per-edge layer over a block per step: the reference
    expected, expected_embeddings = layerwise_outputs(
        model, x.__getitem__, indptr, indices, num_nodes=n, device=cpu, chunk_size=chunk_size, keep_embeddings=True
    )
    torch.testing.assert_close(fast, expected, rtol=1e-5, atol=1e-5)
    assert fast_embeddings is not None and expected_embeddings is not None
    torch.testing.assert_close(fast_embeddings, expected_embeddings, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["sage", "gcn"])
def test_layer_from_a_table_rejects_neighbours_outside_it(kind: str) -> None:
    indptr, indices = _graph(12, num_nodes=30, num_edges=100)
    indices = indices.copy()
    indices[5] = 30
    model = BlockGNN(kind, 6, 3, 2, 1, dropout=0.0)  # one layer that projects (6 -> 2)
    x = torch.randn(30, 6)
    with pytest.raises(IndexError, match=r"1 in-edges .* outside \[0, 30\)"):
        layerwise_outputs(model, x.__getitem__, indptr, indices, num_nodes=30, device=torch.device("cpu"))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    width=st.integers(1, 5),
    first=st.integers(0, 40),
    span=st.integers(0, 40),
    mean=st.booleans(),
    base=st.sampled_from([0, 7, 1000]),
)
def test_neighbour_rows_matches_reference(seed: int, width: int, first: int, span: int, mean: bool, base: int) -> None:
    """Sums and means of a table's rows by source id - base (a typed graph's source type starts at base)."""
    indptr, indices = _graph(seed % 1000, num_nodes=80, num_edges=300)
    indices = indices + base
    stop = min(80, first + span)
    table = np.random.default_rng(seed).standard_normal((80, width)).astype(np.float32)
    out = np.full((stop - first, width), np.nan, dtype=np.float32)
    for graph in (indices, indices.astype(np.int32)):
        assert neighbour_rows(table, indptr, graph, first, stop, out, mean, base) == 0
        expected = neighbour_rows_reference(table, indptr, graph, first, stop, mean, base)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    if stop > first and indptr[stop] > indptr[first]:  # ids below base are outside the table: counted, skipped
        assert neighbour_rows(table, indptr, indices, first, stop, out, mean, base + 1000) > 0


@pytest.mark.parametrize("kind", ["gat", "sage", "gcn"])
def test_layerwise_outputs_equal_the_model_on_all_neighbour_blocks(kind: str) -> None:
    """Exact inference is the model on blocks that hold every in-neighbour (GAT's attention included; nodes 3, 10,
    ... have none), whatever the chunking."""
    indptr, indices = _graph(5, num_nodes=60, num_edges=400)
    n = indptr.shape[0] - 1
    torch.manual_seed(1)
    model = BlockGNN(kind, 6, 8, 3, 2, dropout=0.0, heads=2).eval()
    x = torch.randn(n, 6)
    exact, _ = layerwise_outputs(model, x.__getitem__, indptr, indices, num_nodes=n, device=torch.device("cpu"),
                                 chunk_size=7)  # fmt: skip
    batch = NeighborSampler(indptr, indices, [-1, -1]).sample(np.arange(n))
    with torch.no_grad():
        blocks = model(x[batch.n_id], batch.blocks, full_in_degree(indptr)[batch.n_id] if kind == "gcn" else None)
    torch.testing.assert_close(exact, blocks[batch.seed_index], rtol=1e-5, atol=1e-5)
