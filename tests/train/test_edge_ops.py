"""Edge-wise gathers, per-destination sums and the edge softmax of R-GAT: right, and the same bits on every run."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
import torch
from torch_geometric.utils import softmax

from graphtier.sampling.batch import Block
from graphtier.train.nn.aggregate import BlockCSR, block_csr
from graphtier.train.nn.edge_ops import edge_softmax, gather_destinations, gather_sources, sum_by_destination
from graphtier.train.nn.typed_layers import RelationGAT


def _csr(num_dst: int, num_src: int, num_edges: int, seed: int = 0) -> BlockCSR:
    g = torch.Generator().manual_seed(seed)
    row = torch.sort(torch.randint(0, num_dst, (num_edges,), generator=g)).values
    col = torch.randint(0, num_src, (num_edges,), generator=g)
    rowptr = torch.zeros(num_dst + 1, dtype=torch.int64)
    rowptr[1:] = torch.cumsum(torch.bincount(row, minlength=num_dst), 0)
    return block_csr(Block(rowptr, col, num_src))


def test_gathers_sums_and_softmax_match_torch_with_their_gradients() -> None:
    csr = _csr(50, 80, 600)
    g = torch.Generator().manual_seed(1)
    x_src = torch.randn(80, 3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    x_dst = torch.randn(50, 3, generator=g, dtype=torch.float64, requires_grad=True)
    scores = gather_sources(x_src, csr)[:, :, 0] + gather_destinations(x_dst, csr)
    alpha = edge_softmax(scores, csr)
    out = sum_by_destination(gather_sources(x_src, csr) * alpha.unsqueeze(-1), csr)
    weight = torch.randn(out.shape, generator=g, dtype=torch.float64)
    grads = torch.autograd.grad((out * weight).sum(), (x_src, x_dst))

    ref_scores = x_src[csr.col][:, :, 0] + x_dst[csr.row]
    ref_alpha = softmax(ref_scores, csr.row, num_nodes=csr.num_dst)
    messages = x_src[csr.col] * ref_alpha.unsqueeze(-1)
    ref_out = x_src.new_zeros((50, 3, 4)).index_add(0, csr.row, messages)
    ref_grads = torch.autograd.grad((ref_out * weight).sum(), (x_src, x_dst))
    torch.testing.assert_close(alpha, ref_alpha)
    torch.testing.assert_close(out, ref_out)
    for got, want in zip(grads, ref_grads):
        torch.testing.assert_close(got, want)
    assert torch.all(out[csr.in_degree() == 0] == 0)


def test_shapes_that_do_not_match_the_block_are_refused() -> None:
    csr = _csr(5, 8, 20)
    with pytest.raises(ValueError, match="gather_sources: x has 7 rows, the block has 8"):
        gather_sources(torch.zeros(7, 2), csr)
    with pytest.raises(ValueError, match="sum_by_destination"):
        sum_by_destination(torch.zeros(19, 2), csr)


@pytest.fixture
def busy_core() -> Iterator[None]:
    """Another process spinning on a core while the test runs (the threads' timing then varies run to run)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        spinner.kill()
        spinner.wait()


def test_relation_gat_gradients_are_the_same_bits_on_every_run_with_two_threads_on_a_busy_cpu(busy_core: None) -> None:
    # before edge_ops: torch's parallel index_put_ (the backward of h_src[col]) added with atomics, and the
    # lin_src gradient differed between runs in the last bits (every run of 5 on 2 busy cores)
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.manual_seed(0)
        conv = RelationGAT(24, 24, 16, 4, concat=True, dropout=0.0)
        csr = _csr(20_000, 40_000, 200_000)
        x_src = torch.randn(40_000, 24)
        x_dst = torch.randn(20_000, 24)

        def run() -> list[torch.Tensor]:
            conv.zero_grad()
            conv(x_src, x_dst, csr).square().sum().backward()
            return [p.grad.clone() for p in conv.parameters()]

        first = run()
        for _ in range(4):
            again = run()
            assert all(torch.equal(a, b) for a, b in zip(first, again))
    finally:
        torch.set_num_threads(previous)
