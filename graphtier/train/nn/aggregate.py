"""Block aggregation without per-edge messages: a sparse (CSR) x dense product per block.

PyG's message path gathers one feature row per edge (``x[src]``, E x d) and scatter-adds them into
the destinations; on sampled blocks that gather/scatter was over half of a training step. Here a
block is a CSR matrix over its destinations already (:class:`~graphtier.sampling.batch.Block`: a row pointer
plus the source column; :class:`BlockCSR` adds each edge's row, the transpose and the weights, built once per
block and cached on it) and ``out = A @ x`` is computed row by row:

* CPU (float32/float64): the numba kernel of :mod:`graphtier.train.nn._aggregate_kernels`, rows split
  between torch's thread count of threads; the backward pass is the product with the transposed
  matrix (``grad_x = A^T @ grad_out``), whose CSR is built once per block by a counting sort.
* other devices / dtypes: ``torch.sparse.mm`` with CSR tensors (cuSPARSE on CUDA), same transpose.

The edge weights are constants (no gradient). :func:`mean_weights` gives GraphSAGE's mean and
:func:`gcn_weights` the GCN normalisation of :class:`graphtier.train.nn.models.BlockGCNConv`.
The measurements behind this choice are in docs/decisions.md (benchmarks/bench_aggregate.py).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from graphtier.sampling.batch import Block
from graphtier.sampling.typed_batch import TypedMiniBatch
from graphtier.train.nn import _aggregate_kernels as kernels
from graphtier.train.nn.kernel_threads import run_split

_CACHE_ATTR = "_graphtier_csr"
_KERNEL_DTYPES = (torch.float32, torch.float64)


@dataclass
class BlockCSR:
    """A block's edges as a CSR matrix [num_dst, num_src] (all int64 tensors on the block's device).

    Attributes:
        rowptr: [num_dst + 1]; the edges of destination ``r`` are ``rowptr[r] <= e < rowptr[r + 1]``.
        col: [E] source local id of each edge (CSR order).
        row: [E] destination local id of each edge (CSR order, non-decreasing).
    """

    rowptr: Tensor
    col: Tensor
    row: Tensor
    num_src: int
    num_dst: int
    _transposed: tuple[Tensor, Tensor, Tensor] | None = field(default=None, repr=False)
    _weights: dict[Any, Tensor] = field(default_factory=dict, repr=False)

    @property
    def num_edges(self) -> int:
        return int(self.col.shape[0])

    def in_degree(self) -> Tensor:
        """int64 [num_dst]: sampled in-degree of every destination."""
        return self.rowptr[1:] - self.rowptr[:-1]

    def transposed(self) -> tuple[Tensor, Tensor, Tensor]:
        """``(colptr [num_src + 1], row [E], order [E])``: the transpose in CSR (built once, cached).

        Entry ``t`` of the transpose is CSR entry ``order[t]``; its weight is ``weight[order[t]]``.
        """
        if self._transposed is None:
            if self.col.device.type == "cpu":
                colptr, rows, order = kernels.csr_transpose(self.rowptr.numpy(), self.col.numpy(), self.num_src)
                self._transposed = (
                    torch.from_numpy(colptr),
                    torch.from_numpy(rows),
                    torch.from_numpy(order),
                )
            else:
                order = torch.argsort(self.col, stable=True)
                colptr = torch.zeros(self.num_src + 1, dtype=torch.int64, device=self.col.device)
                torch.cumsum(torch.bincount(self.col, minlength=self.num_src), 0, out=colptr[1:])
                self._transposed = (colptr, self.row[order], order)
        return self._transposed


class FirstLayerInput(NamedTuple):
    """A GraphSAGE first layer's inputs computed by the producer straight from the feature table.

    ``agg`` float32 [num_dst, D]: the mean of each destination's sampled neighbours' rows (the floats
    :func:`aggregate_with_root` gives on the gathered rows with :func:`mean_weights`); ``root`` float32
    [num_dst, D]: the destinations' own rows. The input block's [num_src, D] rows are never gathered.
    """

    agg: Tensor
    root: Tensor


def block_csr(block: Block) -> BlockCSR:
    """The :class:`BlockCSR` of ``block`` (a layer's block, or one relation's block of a typed layer), built on first
    use and cached on the block object: its own ``rowptr`` and ``col``, no copy."""
    csr = getattr(block, _CACHE_ATTR, None)
    if csr is None or csr.rowptr is not block.rowptr:
        csr = BlockCSR(block.rowptr, block.col.contiguous(), block.destinations(), int(block.num_src), block.num_dst)
        setattr(block, _CACHE_ATTR, csr)
    return csr


def prepare_typed_csrs(batch: TypedMiniBatch, *, transpose: bool, dtype: torch.dtype = torch.float32) -> None:
    """Build (and cache) every relation CSR of ``batch``'s blocks with its mean weights in ``dtype`` (and, for
    training, its ``transpose``), as the producer does for homogeneous blocks: off the training loop, which then
    finds them."""
    for blk in batch.blocks:
        for (_, _, dst), rel in blk.relations.items():
            if rel.num_edges and blk.num_dst[dst]:
                csr = block_csr(rel)
                mean_weights(csr, dtype)
                if transpose:  # a learnable table's rows need the input gradient of the first layer too
                    csr.transposed()


def mean_weights(csr: BlockCSR, dtype: torch.dtype) -> Tensor:
    """[E] ``1 / in_degree(row)``: the weights of the mean over each destination's sampled neighbours."""
    key = ("mean", dtype)
    weight = csr._weights.get(key)
    if weight is None:
        inv = 1.0 / csr.in_degree().clamp(min=1).to(dtype)
        weight = csr._weights[key] = inv[csr.row]
    return weight


def gcn_weights(csr: BlockCSR, degree: Tensor | None, dtype: torch.dtype) -> tuple[Tensor, Tensor]:
    """GCN weights of the block: ``(edge weight [E] in CSR order, self-loop weight [num_dst])``.

    Edge ``j -> i``: ``(d_i / s_i) / sqrt((d_i + 1)(d_j + 1))``, self-loop ``1 / (d_i + 1)``, with ``d``
    the full-graph in-degrees ``degree`` [>= num_src] (``--gcn-degrees full``) and ``s_i`` the sampled
    in-degree. ``degree`` None (``--gcn-degrees block``): ``d`` is the block's own in-degree, ``s_i``
    for a destination and 0 for a source that is not one, so edge ``j -> i`` weighs
    ``1 / sqrt((s_i + 1)(d_j + 1))`` and the self-loop ``1 / (s_i + 1)``. The same float operations as
    :class:`~graphtier.train.nn.models.BlockGCNConv`; an ``s_i = 0`` row has only its self-loop.
    """
    num_dst, num_src = csr.num_dst, csr.num_src
    device = csr.rowptr.device
    sampled = csr.in_degree().to(dtype)
    if degree is None:
        full = torch.zeros(num_src, dtype=dtype, device=device)
        full[:num_dst] = sampled
    else:
        full = degree[:num_src].to(dtype)
    scale = full[:num_dst] / sampled.clamp(min=1.0)
    inv_sqrt = (full + 1.0).rsqrt()
    # (scale * inv_sqrt)[row] holds the same floats as scale[row] * inv_sqrt[row], with one gather fewer
    weight = (scale * inv_sqrt[:num_dst])[csr.row] * inv_sqrt[csr.col]
    return weight, 1.0 / (full[:num_dst] + 1.0)


def _spmm_cpu(
    rowptr: Tensor,
    col: Tensor,
    weight: Tensor,
    diag: Tensor | None,
    own: Tensor | None,
    gate: Tensor | None,
    gate_scale: float,
    x: Tensor,
    num_rows: int,
) -> Tensor:
    x = x.detach().contiguous()
    out = torch.empty((num_rows, x.shape[1]), dtype=x.dtype)
    rp, cl, wt, xn, on = (
        rowptr.numpy(),
        col.numpy(),
        weight.detach().to(x.dtype).numpy(),
        x.numpy(),
        out.numpy(),
    )
    dg = np.zeros(0, dtype=wt.dtype) if diag is None else diag.detach().to(x.dtype).contiguous().numpy()
    empty = np.zeros((0, xn.shape[1]), dtype=xn.dtype)
    ow = empty if own is None else own.detach().to(x.dtype).contiguous().numpy()
    gt = empty if gate is None else gate.detach().to(x.dtype).contiguous().numpy()

    def work(first: int, stop: int) -> None:
        kernels.csr_spmm_rows(rp, cl, wt, dg, ow, gt, gate_scale, xn, on, first, stop)

    # ~ rows x (fanout + 1) x d flops per chunk; 512-row chunks balance two cores on a busy box
    run_split(work, num_rows, 512)
    return out


def _spmm_torch(
    rowptr: Tensor,
    col: Tensor,
    weight: Tensor,
    diag: Tensor | None,
    x: Tensor,
    num_rows: int,
    own: Tensor | None = None,
    gate: Tensor | None = None,
    gate_scale: float = 1.0,
) -> Tensor:
    x = x.detach()
    if col.shape[0] == 0:
        out = torch.zeros((num_rows, x.shape[1]), dtype=x.dtype, device=x.device)
    else:
        with warnings.catch_warnings():  # "sparse CSR support is in beta state"
            warnings.simplefilter("ignore", UserWarning)
            matrix = torch.sparse_csr_tensor(rowptr, col, weight.detach().to(x.dtype), (num_rows, x.shape[0]))
        out = torch.sparse.mm(matrix, x)
    if diag is not None and diag.shape[0]:
        count = diag.shape[0]
        out[:count] += diag.detach().to(x.dtype).unsqueeze(1) * x[:count]
    if own is not None and own.shape[0]:
        out[: own.shape[0]] += own.detach().to(x.dtype)
    if gate is not None:
        out = torch.where(
            gate.detach() > 0,
            out * gate_scale,
            torch.zeros((), dtype=out.dtype, device=out.device),
        )
    return out


def spmm(
    rowptr: Tensor,
    col: Tensor,
    weight: Tensor,
    x: Tensor,
    num_rows: int,
    diag: Tensor | None = None,
    own: Tensor | None = None,
    gate: Tensor | None = None,
    gate_scale: float = 1.0,
) -> Tensor:
    """``A @ x`` (+ ``diag[r] * x[r]`` + ``own[r]`` on the first rows) for CSR ``A`` [num_rows, x.shape[0]].

    ``x`` dense [n, d]; ``diag`` [<= num_rows]; ``own`` dense [<= num_rows, d]; ``gate`` [num_rows, d]
    or None: where ``gate <= 0`` the result is 0, elsewhere it is scaled by ``gate_scale`` (the
    backward pass of the ReLU + dropout whose output is ``gate``). No autograd.
    """
    if x.device.type == "cpu" and x.dtype in _KERNEL_DTYPES and x.dim() == 2:
        return _spmm_cpu(rowptr, col, weight, diag, own, gate, gate_scale, x, num_rows)
    return _spmm_torch(rowptr, col, weight, diag, x, num_rows, own, gate, gate_scale)


class _Aggregate(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        x: Tensor,
        weight: Tensor,
        loop_weight: Tensor | None,
        csr: BlockCSR,
        gate_scale: float | None,
    ) -> Tensor:
        ctx.csr = csr
        ctx.loop_weight = loop_weight
        ctx.gate_scale = gate_scale
        ctx.save_for_backward(weight, x if gate_scale is not None else None)
        return spmm(csr.rowptr, csr.col, weight, x, csr.num_dst, loop_weight)

    @staticmethod
    def backward(ctx: Any, grad_out: Tensor) -> tuple[Tensor | None, None, None, None, None]:  # type: ignore[override]
        if not ctx.needs_input_grad[0]:
            return None, None, None, None, None
        weight, gate = ctx.saved_tensors
        colptr, rows, order = ctx.csr.transposed()
        # the self-loop term of destination r goes back to source r (destinations are a prefix of sources)
        grad_x = spmm(
            colptr,
            rows,
            weight[order],
            grad_out,
            ctx.csr.num_src,
            ctx.loop_weight,
            None,
            gate,
            ctx.gate_scale or 1.0,
        )
        return grad_x, None, None, None, None


class _AggregateWithRoot(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any, x: Tensor, weight: Tensor, csr: BlockCSR, gate_scale: float | None
    ) -> tuple[Tensor, Tensor]:
        ctx.csr = csr
        ctx.gate_scale = gate_scale
        ctx.save_for_backward(weight, x if gate_scale is not None else None)
        return spmm(csr.rowptr, csr.col, weight, x, csr.num_dst), x[: csr.num_dst]

    @staticmethod
    def backward(  # type: ignore[override]
        ctx: Any, grad_agg: Tensor | None, grad_root: Tensor | None
    ) -> tuple[Tensor | None, None, None, None]:
        if not ctx.needs_input_grad[0]:
            return None, None, None, None
        weight, gate = ctx.saved_tensors
        csr = ctx.csr
        if grad_agg is None:
            assert grad_root is not None
            grad_agg = grad_root.new_zeros((csr.num_dst, grad_root.shape[1]))
        colptr, rows, order = csr.transposed()
        # one pass: A^T grad_agg, plus the root rows' gradient on the destination prefix of the sources
        grad_x = spmm(
            colptr,
            rows,
            weight[order],
            grad_agg,
            csr.num_src,
            None,
            grad_root,
            gate,
            ctx.gate_scale or 1.0,
        )
        return grad_x, None, None, None


def _check_rows(x: Tensor, csr: BlockCSR) -> Tensor:
    if x.shape[0] < csr.num_src:
        raise ValueError(f"aggregate: x has {x.shape[0]} rows, the block has {csr.num_src} sources")
    if x.shape[0] > csr.num_src:
        x = x[: csr.num_src]  # rows past the block's sources receive no gradient (0, gated or not)
    return x


def aggregate_with_root(
    x: Tensor, csr: BlockCSR, weight: Tensor, gate_scale: float | None = None
) -> tuple[Tensor, Tensor]:
    """``(aggregate(x, csr, weight), x[:num_dst])`` with one backward pass for both (GraphSAGE's two inputs).

    ``x`` float [>= num_src, d] -> ([num_dst, d], [num_dst, d] view of ``x``). Autograd through the
    pair sums both gradients into ``x``'s inside the aggregation kernel, instead of a zero-filled
    [num_src, d] gradient for the slice plus an addition. ``gate_scale``: see :func:`aggregate`.
    """
    return _AggregateWithRoot.apply(_check_rows(x, csr), weight, csr, gate_scale)


def aggregate(
    x: Tensor,
    csr: BlockCSR,
    weight: Tensor,
    loop_weight: Tensor | None = None,
    gate_scale: float | None = None,
) -> Tensor:
    """``out[i] = loop_weight[i] * x[i] + sum_e weight[e] * x[col[e]]`` over destination ``i``'s edges.

    ``x`` float [>= num_src, d] on the block's device -> [num_dst, d]. ``weight`` [E] in CSR order,
    ``loop_weight`` [num_dst] or None (no self-loop term). Differentiable in ``x`` (not in the weights).

    ``gate_scale`` (not None): ``x`` is the output of a ReLU + dropout with keep scale ``gate_scale``
    whose own backward is the identity (:func:`graphtier.train.nn.dropout.relu_dropout_gated`, used when
    this aggregation is its only consumer); the gradient returned for ``x`` is then already the
    activation's input gradient (0 where ``x <= 0``, times ``gate_scale`` elsewhere), one pass fewer.
    """
    x = _check_rows(x, csr)
    if loop_weight is not None and loop_weight.shape[0] != csr.num_dst:
        raise ValueError(
            f"aggregate: loop_weight has {loop_weight.shape[0]} entries, the block {csr.num_dst} destinations"
        )
    return _Aggregate.apply(x, weight, loop_weight, csr, gate_scale)
