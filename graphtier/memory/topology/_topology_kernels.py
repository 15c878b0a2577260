"""Triton kernel reading entries of a tiered ``indices`` array by absolute position, and its torch reference.

:func:`tiered_positions_kernel` serves the two tiers a GPU kernel can read directly: positions
``< local_rows`` from the device prefix ``local`` and positions in ``[host_start, host_end)`` from
``host``, registered host memory read zero-copy over PCIe. One element per lane, ``BLOCK`` lanes
per program; every offset is int64, so arrays of more than 2^31 entries work. Positions of other
tiers (the disk tier) are left untouched in ``out``, for the caller to fill.

Importing this module needs ``triton``; :mod:`graphtier.memory.topology.topology` imports it only on CUDA.
Tests run the kernel on the CPU with ``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def tiered_positions_kernel(
    local, host, positions, out, num_positions, local_rows, host_start, host_end, BLOCK: tl.constexpr
):
    """out[i] = local[p] (0 <= p < local_rows) or host[p - host_start] (host_start <= p < host_end), p = positions[i].

    ``local``/``host`` int32 or int64 (cast to int64), ``positions``/``out`` int64; grid (cdiv(num_positions, BLOCK),).
    """
    lanes = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    live = lanes < num_positions
    position = tl.load(positions + lanes, mask=live, other=-1).to(tl.int64)
    is_local = live & (position >= 0) & (position < local_rows)
    is_host = live & (position >= host_start) & (position < host_end)
    from_local = tl.load(local + tl.where(is_local, position, 0), mask=is_local, other=0).to(tl.int64)
    from_host = tl.load(host + tl.where(is_host, position - host_start, 0), mask=is_host, other=0).to(tl.int64)
    tl.store(out + lanes, tl.where(is_local, from_local, from_host), mask=is_local | is_host)


def _check(local: torch.Tensor, host: torch.Tensor, positions: torch.Tensor, out: torch.Tensor) -> None:
    for name, tensor in (("local", local), ("host", host)):
        if tensor.dim() != 1 or not tensor.is_contiguous() or tensor.dtype not in (torch.int32, torch.int64):
            raise ValueError(
                f"{name} must be a contiguous int32/int64 [n] tensor, found {tensor.dtype} {tuple(tensor.shape)}"
            )
    if positions.dtype != torch.int64 or positions.dim() != 1 or not positions.is_contiguous():
        raise ValueError("positions must be a contiguous int64 [M] tensor")
    if out.dtype != torch.int64 or out.dim() != 1 or out.shape[0] < positions.shape[0] or not out.is_contiguous():
        raise ValueError("out must be a contiguous int64 [>= M] tensor")


def gather_positions_triton(
    local: torch.Tensor, host: torch.Tensor, positions: torch.Tensor, out: torch.Tensor, *, host_start: int
) -> torch.Tensor:
    """Launch :func:`tiered_positions_kernel`: ``out[i]`` for every position in the "gpu" or "host" tier.

    local int32/int64 [L] (device) holds positions [0, L); host (same dtype, registered host memory)
    holds [host_start, host_start + H); positions int64 [M] and out int64 [>= M] on the device (the
    current CUDA device set by the caller). Other positions are skipped; nothing is range-checked.
    """
    _check(local, host, positions, out)
    num_positions = int(positions.shape[0])
    if num_positions == 0:
        return out
    host_end = host_start + int(host.shape[0])
    grid = (triton.cdiv(num_positions, BLOCK),)
    tiered_positions_kernel[grid](
        local, host, positions, out, num_positions, int(local.shape[0]), int(host_start), host_end, BLOCK=BLOCK
    )
    return out


def gather_positions_reference(
    local: torch.Tensor, host: torch.Tensor, positions: torch.Tensor, out: torch.Tensor, *, host_start: int
) -> torch.Tensor:
    """Plain torch reference of :func:`gather_positions_triton` (same arguments, same effect on ``out``)."""
    count = positions.shape[0]
    is_local = (positions >= 0) & (positions < local.shape[0])
    is_host = (positions >= host_start) & (positions < host_start + host.shape[0])
    out[:count][is_local] = local[positions[is_local]].to(torch.int64)
    out[:count][is_host] = host[positions[is_host] - host_start].to(torch.int64)
    return out
