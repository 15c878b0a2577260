"""CSR block aggregation: kernels against numpy references, and models against PyG's per-edge path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import edges_to_csc
from graphtier.sampling import NeighborSampler
from graphtier.sampling.batch import Block
from graphtier.train.nn import _aggregate_kernels as kernels
from graphtier.train.nn.aggregate import (
    _spmm_torch,
    aggregate,
    aggregate_with_root,
    block_csr,
    gcn_weights,
    mean_weights,
    spmm,
)
from graphtier.train.nn.models import BlockGNN


def random_block(
    rng: np.random.Generator,
    num_dst: int,
    extra_src: int,
    max_degree: int,
    grouped: bool,
) -> Block:
    """A block with some zero-degree destinations (degree drawn from 0..max_degree), from edges optionally shuffled."""
    num_src = num_dst + extra_src
    degrees = rng.integers(0, max_degree + 1, num_dst)
    if num_dst:
        degrees[rng.random(num_dst) < 0.3] = 0
    dst = np.repeat(np.arange(num_dst), degrees)
    src = rng.integers(0, max(num_src, 1), dst.shape[0]) if num_src else np.zeros(0, dtype=np.int64)
    if not grouped:
        order = rng.permutation(dst.shape[0])
        src, dst = src[order], dst[order]
    edge_index = torch.from_numpy(np.stack([src, dst]).astype(np.int64).reshape(2, -1))
    return Block.from_edge_index(edge_index, num_src, num_dst)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    num_dst=st.integers(0, 40),
    extra=st.integers(0, 40),
    max_degree=st.integers(0, 6),
    dim=st.integers(1, 9),
    grouped=st.booleans(),
)
def test_spmm_and_transpose_match_references(
    seed: int, num_dst: int, extra: int, max_degree: int, dim: int, grouped: bool
) -> None:
    rng = np.random.default_rng(seed)
    block = random_block(rng, num_dst, extra, max_degree, grouped)
    csr = block_csr(block)
    rowptr, col = csr.rowptr.numpy(), csr.col.numpy()
    assert rowptr[-1] == block.num_edges and np.all(np.diff(rowptr) >= 0)
    weight = rng.random(col.shape[0]).astype(np.float32)
    x = rng.standard_normal((block.num_src, dim)).astype(np.float32)
    diag = rng.random(rng.integers(0, num_dst + 1)).astype(np.float32)  # a self-loop term on a prefix of rows
    own = rng.standard_normal((rng.integers(0, num_dst + 1), dim)).astype(np.float32)  # dense term on a prefix
    out = np.full((num_dst, dim), np.nan, dtype=np.float32)
    cut = int(rng.integers(0, num_dst + 1))  # any split of the rows gives the same result
    gated = bool(rng.integers(0, 2))  # a ReLU/dropout backward gate on the output, or none
    gate = rng.standard_normal((num_dst if gated else 0, dim)).astype(np.float32)
    gate_scale = float(rng.choice([1.0, 2.0]))
    kernels.csr_spmm_rows(rowptr, col, weight, diag, own, gate, gate_scale, x, out, cut, num_dst)
    kernels.csr_spmm_rows(rowptr, col, weight, diag, own, gate, gate_scale, x, out, 0, cut)
    expected = kernels.csr_spmm_reference(rowptr, col, weight, diag, x, own, gate if gated else None, gate_scale)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    got = kernels.csr_transpose(rowptr, col, block.num_src)
    want = kernels.csr_transpose_reference(rowptr, col, block.num_src)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def _edge_reference(x: torch.Tensor, block: Block, weight_of_edge: torch.Tensor) -> torch.Tensor:
    """sum over edges of weight * x[src] into the destinations, the per-edge message way."""
    src, dst = block.edge_index
    out = torch.zeros(block.num_dst, x.shape[1], dtype=x.dtype)
    return out.index_add(0, dst, x[src] * weight_of_edge.unsqueeze(1))


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    num_dst=st.integers(0, 30),
    extra=st.integers(0, 30),
    grouped=st.booleans(),
)
def test_aggregate_forward_and_gradient_equal_edge_path(seed: int, num_dst: int, extra: int, grouped: bool) -> None:
    rng = np.random.default_rng(seed)
    block = random_block(rng, num_dst, extra, 5, grouped)
    csr = block_csr(block)
    assert block_csr(block) is csr  # cached on the block
    weight = torch.from_numpy(rng.random(csr.num_edges).astype(np.float32))  # edge_index is in CSR order too
    loops = torch.from_numpy(rng.random(num_dst).astype(np.float32)) if seed % 2 else None
    x = torch.randn(block.num_src, 6, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_(True)
    out = aggregate(x, csr, weight, loops)
    ref = _edge_reference(x_ref, block, weight)
    if loops is not None:
        ref = ref + x_ref[:num_dst] * loops.unsqueeze(1)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    grad = torch.randn_like(out)
    out.backward(grad)
    ref.backward(grad)
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-5, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    num_dst=st.integers(0, 30),
    extra=st.integers(0, 30),
    uses=st.sampled_from(["both", "agg", "root"]),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_aggregate_with_root_gradient_equals_separate_ops(
    seed: int, num_dst: int, extra: int, uses: str, dtype: torch.dtype
) -> None:
    """The fused (aggregate, x[:num_dst]) pair: same values and the same summed gradient as two separate ops."""
    rng = np.random.default_rng(seed)
    block = random_block(rng, num_dst, extra, 5, bool(seed % 2))
    csr = block_csr(block)
    weight = mean_weights(csr, dtype)
    x = torch.randn(block.num_src + 2, 5, dtype=dtype, requires_grad=True)  # rows past the sources: no gradient
    x_ref = x.detach().clone().requires_grad_(True)
    agg, root = aggregate_with_root(x, csr, weight)
    agg_ref, root_ref = aggregate(x_ref, csr, weight), x_ref[:num_dst]
    torch.testing.assert_close(agg, agg_ref)
    torch.testing.assert_close(root, root_ref)
    g_agg, g_root = torch.randn_like(agg), torch.randn_like(root)
    terms = {
        "both": (agg * g_agg).sum() + (root * g_root).sum(),
        "agg": (agg * g_agg).sum(),
        "root": (root * g_root).sum(),
    }
    terms_ref = {
        "both": (agg_ref * g_agg).sum() + (root_ref * g_root).sum(),
        "agg": (agg_ref * g_agg).sum(),
        "root": (root_ref * g_root).sum(),
    }
    if num_dst == 0 and uses != "agg":  # nothing flows back; both sides have no gradient path or a zero one
        return
    terms[uses].backward()
    terms_ref[uses].backward()
    torch.testing.assert_close(x.grad, x_ref.grad, rtol=1e-5, atol=1e-5)


def test_torch_sparse_path_equals_kernel() -> None:
    """The path used on CUDA (torch.sparse CSR) computes the same product as the numba kernel."""
    rng = np.random.default_rng(5)
    block = random_block(rng, 50, 30, 6, True)
    csr = block_csr(block)
    weight = mean_weights(csr, torch.float32)
    x = torch.randn(block.num_src, 7)
    kernel = aggregate(x, csr, weight)
    via_torch = _spmm_torch(csr.rowptr, csr.col, weight, None, x, csr.num_dst)
    torch.testing.assert_close(kernel, via_torch, rtol=1e-5, atol=1e-5)
    loops = torch.rand(csr.num_dst)
    torch.testing.assert_close(
        aggregate(x, csr, weight, loops),
        _spmm_torch(csr.rowptr, csr.col, weight, loops, x, csr.num_dst),
        rtol=1e-5,
        atol=1e-5,
    )
    own = torch.randn(csr.num_dst, 7)
    torch.testing.assert_close(
        _spmm_torch(csr.rowptr, csr.col, weight, None, x, csr.num_dst, own),
        via_torch + own,
        rtol=1e-5,
        atol=1e-5,
    )
    # the gated backward (ReLU/dropout of the input applied in the product): torch path = numba kernel
    gate = torch.relu(torch.randn(csr.num_dst, 7))
    torch.testing.assert_close(
        _spmm_torch(csr.rowptr, csr.col, weight, loops, x, csr.num_dst, own, gate, 2.0),
        spmm(csr.rowptr, csr.col, weight, x, csr.num_dst, loops, own, gate, 2.0),
        rtol=1e-5,
        atol=1e-5,
    )
    assert bool((spmm(csr.rowptr, csr.col, weight, x, csr.num_dst, None, None, gate, 2.0)[gate <= 0] == 0).all())
    colptr, rows, order = csr.transposed()
    grad = torch.randn(csr.num_dst, 7)
    torch.testing.assert_close(
        _spmm_torch(colptr, rows, weight[order], None, grad, csr.num_src),
        _spmm_torch(csr.rowptr, csr.col, weight, None, torch.eye(csr.num_src), csr.num_dst).T @ grad,
        rtol=1e-5,
        atol=1e-5,
    )


def test_mean_weights_average_and_empty_rows_are_zero() -> None:
    edge_index = torch.tensor([[3, 4, 4, 0], [0, 0, 2, 2]])
    block = Block.from_edge_index(edge_index, 5, 3)
    csr = block_csr(block)
    x = torch.arange(10.0).reshape(5, 2)
    out = aggregate(x, csr, mean_weights(csr, x.dtype))
    torch.testing.assert_close(out, torch.tensor([[7.0, 8.0], [0.0, 0.0], [4.0, 5.0]]))


def _graph(n: int = 80, e: int = 500, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return edges_to_csc(
        rng.integers(0, n, e),
        rng.integers(0, n, e),
        n,
        dedup=True,
        drop_self_loops=True,
    )


@pytest.mark.parametrize("kind", ["sage", "gcn"])
@pytest.mark.parametrize("with_degree", [True, False])
def test_model_equals_pyg_edge_path(kind: str, with_degree: bool) -> None:
    """Outputs and every parameter/input gradient of the CSR path equal PyG's per-edge path (1e-5)."""
    indptr, indices = _graph()
    batch = NeighborSampler(indptr, indices, [5, 3, 2], seed=4).sample(np.array([1, 2, 3, 50, 60, 61]))
    torch.manual_seed(0)
    model = BlockGNN(kind, 12, 16, 5, 3, dropout=0.0, norm="none")
    degree = torch.from_numpy(np.diff(indptr).astype(np.float32))[batch.n_id] if with_degree else None
    x = torch.randn(batch.num_nodes, 12)
    results = []
    for use_csr in (True, False):
        model.use_csr = use_csr
        model.zero_grad()
        xi = x.clone().requires_grad_(True)
        out = model(xi, batch.blocks, degree)
        (out * torch.linspace(-1, 1, out.numel()).reshape(out.shape)).sum().backward()
        grads = {name: p.grad.clone() for name, p in model.named_parameters()}
        results.append((out.detach(), xi.grad.clone(), grads))
    (out_a, gx_a, ga), (out_b, gx_b, gb) = results
    torch.testing.assert_close(out_a, out_b, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gx_a, gx_b, rtol=1e-5, atol=1e-5)
    for name in ga:
        torch.testing.assert_close(ga[name], gb[name], rtol=1e-5, atol=1e-5, msg=name)


def test_gcn_weights_match_block_gcn_conv_edges() -> None:
    """The CSR weights are, edge for edge, those BlockGCNConv.forward_edges builds (exact)."""
    rng = np.random.default_rng(2)
    block = random_block(rng, 20, 15, 4, False)
    degree = torch.from_numpy(rng.integers(0, 9, block.num_src).astype(np.float32))
    csr = block_csr(block)
    weight, loops = gcn_weights(csr, degree, torch.float32)
    src, dst = block.edge_index
    sampled = torch.zeros(block.num_dst).index_add_(0, dst, torch.ones(block.num_edges))
    full = degree
    scale = full[: block.num_dst] / sampled.clamp(min=1.0)
    inv_sqrt = (full + 1.0).rsqrt()
    expected = scale[dst] * inv_sqrt[dst] * inv_sqrt[src]
    torch.testing.assert_close(weight, expected, rtol=0, atol=0)  # bit for bit
    torch.testing.assert_close(loops, 1.0 / (full[: block.num_dst] + 1.0), rtol=0, atol=0)


def _block_gcn_reference(block: Block) -> tuple[np.ndarray, np.ndarray]:
    """``--gcn-degrees block`` by hand, edge by edge in ``edge_index`` order: float64 (edge weights, self-loops).

    The block's own in-degree ``b``: a destination's number of edges, 0 for a source that is not a destination.
    Edge ``j -> i``: ``1 / sqrt((b_i + 1)(b_j + 1))``; self-loop of ``i``: ``1 / (b_i + 1)``.
    """
    src, dst = block.edge_index.numpy()
    own = np.zeros(block.num_src, dtype=np.float64)
    for i in dst:
        own[i] += 1.0
    weights = np.array([1.0 / np.sqrt((own[i] + 1.0) * (own[j] + 1.0)) for j, i in zip(src, dst)])
    return weights, 1.0 / (own[: block.num_dst] + 1.0)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    num_dst=st.integers(0, 30),
    extra=st.integers(0, 30),
    max_degree=st.integers(0, 6),
    grouped=st.booleans(),
)
def test_block_gcn_weights_equal_the_reference(
    seed: int, num_dst: int, extra: int, max_degree: int, grouped: bool
) -> None:
    """``gcn_weights(csr, None)`` on random blocks (empty rows, zero in-degree destinations, no edges at all)."""
    block = random_block(np.random.default_rng(seed), num_dst, extra, max_degree, grouped)
    csr = block_csr(block)
    weight, loops = gcn_weights(csr, None, torch.float64)
    expected, expected_loops = _block_gcn_reference(block)
    np.testing.assert_allclose(weight.numpy(), expected, rtol=1e-12, atol=0)
    np.testing.assert_allclose(loops.numpy(), expected_loops, rtol=1e-12, atol=0)
    assert weight.shape == (block.num_edges,) and loops.shape == (block.num_dst,)


def test_block_gcn_layer_equals_the_dense_reference() -> None:
    """A GCN layer with ``degree=None`` computes ``(A_b x + diag(loops) x[:num_dst]) W + b`` with the reference weights."""
    rng = np.random.default_rng(7)
    block = random_block(rng, 25, 20, 5, False)
    torch.manual_seed(0)
    model = BlockGNN("gcn", 6, 8, 3, 1, dropout=0.0).double()
    x = torch.randn(block.num_src, 6, dtype=torch.float64)
    weights, loops = _block_gcn_reference(block)
    dense = np.zeros((block.num_dst, block.num_src))
    for (j, i), w in zip(block.edge_index.numpy().T, weights):
        dense[i, j] += w
    dense[np.arange(block.num_dst), np.arange(block.num_dst)] += loops
    conv = model.convs[0].conv
    expected = torch.from_numpy(dense) @ x @ conv.lin.weight.detach().t() + conv.bias.detach()
    for use_csr in (True, False):
        model.use_csr = use_csr
        with torch.no_grad():
            out = model(x, [block], None)
        torch.testing.assert_close(out, expected, rtol=1e-10, atol=1e-10)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), num_dst=st.integers(0, 30), max_degree=st.integers(0, 5), grouped=st.booleans())
def test_block_from_edge_index_is_the_stable_csr_of_its_edges(
    seed: int, num_dst: int, max_degree: int, grouped: bool
) -> None:
    """The CSR of any edge list: the counting reference's row pointer, the edges (and their ids, features and ages)
    in a stable sort by destination; the edge index derived back from the CSR is the sorted one."""
    rng = np.random.default_rng(seed)
    degrees = rng.integers(0, max_degree + 1, num_dst)
    dst = np.repeat(np.arange(num_dst), degrees)
    if not grouped:
        dst = rng.permutation(dst)
    src = rng.integers(0, 7, dst.shape[0])
    ids = rng.permutation(dst.shape[0])
    attr = rng.standard_normal((dst.shape[0], 3)).astype(np.float32)
    edge_index = torch.from_numpy(np.stack([src, dst]).astype(np.int64).reshape(2, -1))
    block = Block.from_edge_index(
        edge_index, 7, num_dst, edge_id=torch.from_numpy(ids), edge_attr=torch.from_numpy(attr),
        edge_age=torch.from_numpy(attr[:, 0].copy()),
    )  # fmt: skip
    order = np.argsort(dst, kind="stable")
    np.testing.assert_array_equal(
        block.rowptr.numpy(), np.concatenate([[0], np.cumsum(np.bincount(dst, minlength=num_dst))])
    )
    np.testing.assert_array_equal(block.col.numpy(), src[order])
    np.testing.assert_array_equal(block.edge_id.numpy(), ids[order])
    np.testing.assert_array_equal(block.edge_attr.numpy(), attr[order])
    np.testing.assert_array_equal(block.edge_age.numpy(), attr[order, 0])
    assert (block.num_src, block.num_dst, block.num_edges) == (7, num_dst, dst.shape[0])
    derived = Block(block.rowptr, block.col, 7)  # no edge index: derived from the row pointer
    np.testing.assert_array_equal(derived.edge_index.numpy(), np.stack([src[order], dst[order]]).reshape(2, -1))
    assert torch.equal(derived.destinations(), block.destinations())
    if grouped:  # grouped edges keep their order, and their edge index is the block's own
        assert block.edge_index.data_ptr() == edge_index.data_ptr()


def test_block_from_edge_index_refuses_a_destination_out_of_range() -> None:
    with pytest.raises(ValueError, match=r"destinations must lie in \[0, 2\), found \[0, 2\]"):
        Block.from_edge_index(torch.tensor([[0, 1], [0, 2]]), 3, 2)


def test_block_to_its_own_device_is_itself_and_keeps_the_cached_csr() -> None:
    block = random_block(np.random.default_rng(3), 10, 4, 3, True)
    csr = block_csr(block)
    assert block.to("cpu") is block and block_csr(block.to("cpu")) is csr
