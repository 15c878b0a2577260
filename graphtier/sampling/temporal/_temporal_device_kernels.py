"""Triton kernel of the GPU temporal sampler: the per-row time cut, a binary search in each list's time order.

:func:`temporal_cut_kernel` finds, for every row (node ``v``, time bound ``b``), how many of ``v``'s in-edges are
admissible: strictly earlier than ``b`` (``INCLUSIVE`` false) or at most ``b``. The graph's lists are sorted by
time through ``edge_time_order``; the kernel reads ``time_by_order`` (int64 [E], ``edge_time[edge_time_order]``:
each list's times, non-decreasing), so the admissible edges of a row are a prefix of its slice
``[indptr[v], indptr[v + 1])`` and one binary search of ``steps`` halvings (``steps`` = bit length of the largest
degree) finds its end. Rows are independent: ``BLOCK`` rows per program, the searches of a block in lock step.

The picks among the admissible prefix are not drawn here: they are the untimed sampler's Floyd picks over the
prefix (:func:`graphtier.sampling.device._device_kernels.floyd_picks_triton`, key ``node_key(stream, row)``), exactly the
CPU temporal kernel's draws. The torch twin of the cut (CPU or any device) is
:func:`graphtier.sampling.temporal.temporal_device.temporal_cuts_torch`; :func:`temporal_cuts_reference` is the plain numpy
reference. Importing this module needs ``triton``; tests run the kernel on the CPU with ``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl

BLOCK_ROWS = 256


@triton.jit
def temporal_cut_kernel(nodes, bounds, indptr, time_by_order, admitted, num_rows, steps, INCLUSIVE: tl.constexpr,
                        BLOCK: tl.constexpr):  # fmt: skip
    """admitted[r] = number of edges p in [indptr[nodes[r]], indptr[nodes[r] + 1]) with time_by_order[p] < bounds[r]
    (<= with INCLUSIVE). nodes, bounds int64 [num_rows], indptr int64 [N + 1], time_by_order int64 [E], admitted
    int64 [num_rows]; ``steps`` >= the bit length of every degree; grid (cdiv(num_rows, BLOCK),)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = rows < num_rows
    node = tl.load(nodes + rows, mask=mask, other=0)
    bound = tl.load(bounds + rows, mask=mask, other=0)
    start = tl.load(indptr + node, mask=mask, other=0)
    lo = start
    hi = tl.load(indptr + node + 1, mask=mask, other=0)
    for _ in range(steps):
        active = lo < hi
        mid = (lo + hi) >> 1
        t = tl.load(time_by_order + mid, mask=mask & active, other=0)
        if INCLUSIVE:
            admit = t <= bound
        else:
            admit = t < bound
        lo = tl.where(active & admit, mid + 1, lo)
        hi = tl.where(active & (admit == 0), mid, hi)
    tl.store(admitted + rows, lo - start, mask=mask)


def _check(name: str, tensor: torch.Tensor, device: torch.device) -> None:
    if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.int64 or tensor.dim() != 1:
        raise ValueError(f"{name} must be a 1-d int64 tensor")
    if not tensor.is_contiguous() or tensor.device != device:
        raise ValueError(f"{name} must be contiguous and on {device}, found on {tensor.device}")


def temporal_cuts_triton(
    nodes: torch.Tensor,
    bounds: torch.Tensor,
    indptr: torch.Tensor,
    time_by_order: torch.Tensor,
    inclusive: bool,
    steps: int,
) -> torch.Tensor:
    """Launch :func:`temporal_cut_kernel`: the admissible edge count of every row, int64 [R] on the rows' device.

    nodes, bounds int64 [R] (each row's node and time bound), indptr int64 [N + 1], time_by_order int64 [E]
    (``edge_time[edge_time_order]``), all contiguous on one device; ``inclusive``: admit edges at the bound;
    ``steps``: the bit length of the largest degree (more is harmless, fewer cuts short)."""
    device = nodes.device
    for name, tensor in (("nodes", nodes), ("bounds", bounds), ("indptr", indptr), ("time_by_order", time_by_order)):
        _check(name, tensor, device)
    if bounds.shape != nodes.shape:
        raise ValueError(f"bounds must have {nodes.shape[0]} elements, found {bounds.shape[0]}")
    admitted = torch.empty_like(nodes)
    num_rows = int(nodes.shape[0])
    if num_rows == 0:
        return admitted
    grid = (triton.cdiv(num_rows, BLOCK_ROWS),)
    temporal_cut_kernel[grid](nodes, bounds, indptr, time_by_order, admitted, num_rows, int(steps),
                              INCLUSIVE=bool(inclusive), BLOCK=BLOCK_ROWS)  # fmt: skip
    return admitted


def temporal_cuts_reference(
    nodes: torch.Tensor,
    bounds: torch.Tensor,
    indptr: torch.Tensor,
    time_by_order: torch.Tensor,
    inclusive: bool,
    steps: int | None = None,
) -> torch.Tensor:
    """Plain numpy reference of :func:`temporal_cuts_triton` (same arguments, CPU tensors; ``steps`` unused)."""
    ptr, times = indptr.numpy(), time_by_order.numpy()
    side = "right" if inclusive else "left"
    out = [
        int(np.searchsorted(times[ptr[v] : ptr[v + 1]], b, side=side)) for v, b in zip(nodes.tolist(), bounds.tolist())
    ]
    return torch.tensor(out, dtype=torch.int64).reshape(-1)
