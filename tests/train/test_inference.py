"""Exact layer-wise inference: a GCN's degrees are the full graph's, whatever the chunk size."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphtier.train.inference import full_in_degree, layerwise_inference
from graphtier.train.models import BlockGNN


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
        layerwise_inference(model, x.__getitem__, indptr, indices, num_nodes=n, device=cpu, degree=degree, chunk_size=c)
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
