"""Triton row-gather kernels for the GPU feature paths, and their plain torch references.

* :func:`gather_rows_naive_kernel`: one program per (row, column block); column block k reads
  elements [k * BLOCK_D, (k + 1) * BLOCK_D) of the row, so when a row does not start on a 128-byte
  line, every block straddles lines (PyTorch-Direct §4.5, Figure 4).
* :func:`gather_rows_aligned_kernel`: one program per row, walking the row in blocks that start
  on 128-byte boundaries of the *source address*: the row start is shifted left by its misalignment
  ``shift`` (in elements) and the out-of-row lanes are masked (the circular-shift alignment of seed
  003 §4.5, Figure 5). Over PCIe (zero-copy reads of registered host memory) this saves the
  partial-line requests.
* :func:`tiered_gather_kernel`: the aligned gather over two sources chosen per row by id, the
  "gpu" tier (rows [0, local_rows) in device memory) and the "host" tier (rows [host_start, host_end)
  in registered host memory, read zero-copy), writing row ``i`` to ``out[positions[i]]``; rows of
  other tiers are skipped (Data Tiering §4.1, Listing 1).

Importing this module needs ``triton``; the store imports it only on CUDA. Tests run the kernels
on the CPU with ``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

CACHE_LINE_BYTES = 128
MAX_BLOCK_BYTES = 4096


@triton.jit
def gather_rows_naive_kernel(table, ids, out, dim, BLOCK_D: tl.constexpr):
    """out[i, :] = table[ids[i], :]; grid (num_ids, cdiv(dim, BLOCK_D)); table/out row-contiguous [*, dim]."""
    row = tl.program_id(0)
    block = tl.program_id(1)
    source_row = tl.load(ids + row).to(tl.int64)
    cols = block * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = cols < dim
    values = tl.load(table + source_row * dim + cols, mask=mask)
    tl.store(out + row.to(tl.int64) * dim + cols, values, mask=mask)


@triton.jit
def gather_rows_aligned_kernel(table, ids, out, dim, base_shift, ALIGN: tl.constexpr, BLOCK_D: tl.constexpr):
    """out[i, :] = table[ids[i], :] reading 128-byte-aligned blocks; grid (num_ids,).

    ``base_shift`` = (table address % 128) / itemsize; ALIGN = 128 / itemsize; BLOCK_D a multiple of ALIGN.
    """
    row = tl.program_id(0)
    source_row = tl.load(ids + row).to(tl.int64)
    start = source_row * dim
    shift = (start + base_shift) % ALIGN
    out_row = out + row.to(tl.int64) * dim
    for block_start in range(0, dim + ALIGN, BLOCK_D):
        cols = block_start - shift + tl.arange(0, BLOCK_D)
        mask = (cols >= 0) & (cols < dim)
        values = tl.load(table + start + cols, mask=mask)
        tl.store(out_row + cols, values, mask=mask)


@triton.jit
def tiered_gather_kernel(
    local,
    host,
    ids,
    positions,
    out,
    dim,
    local_rows,
    host_start,
    host_end,
    local_shift,
    host_shift,
    ALIGN: tl.constexpr,
    BLOCK_D: tl.constexpr,
):
    """out[positions[i], :] = row ids[i] from ``local`` (id < local_rows) or ``host`` (host_start <= id < host_end).

    ``local`` is [local_rows, dim] (device), ``host`` is [host_end - host_start, dim] (registered host
    memory); ids of other tiers are left untouched. grid (num_ids,). ``*_shift`` as in the aligned kernel.
    """
    i = tl.program_id(0)
    row_id = tl.load(ids + i).to(tl.int64)
    target = tl.load(positions + i).to(tl.int64)
    is_local = row_id < local_rows
    is_host = (row_id >= host_start) & (row_id < host_end)
    if is_local | is_host:
        host_row = tl.where(is_host, row_id - host_start, 0)
        local_row = tl.where(is_local, row_id, 0)
        start = tl.where(is_local, local_row * dim, host_row * dim)
        shift = tl.where(is_local, (start + local_shift) % ALIGN, (start + host_shift) % ALIGN)
        out_row = out + target * dim
        for block_start in range(0, dim + ALIGN, BLOCK_D):
            cols = block_start - shift + tl.arange(0, BLOCK_D)
            mask = (cols >= 0) & (cols < dim)
            source = tl.where(is_local, local + start + cols, host + start + cols)
            values = tl.load(source, mask=mask)
            tl.store(out_row + cols, values, mask=mask)


# ---------------------------------------------------------------------------------------------- launchers
def _block_elements(dim: int, itemsize: int) -> tuple[int, int]:
    """(ALIGN, BLOCK_D) in elements: ALIGN = 128 B of elements, BLOCK_D a power of two >= ALIGN covering dim."""
    align = CACHE_LINE_BYTES // itemsize
    block = max(align, min(triton.next_power_of_2(max(dim, 1)), MAX_BLOCK_BYTES // itemsize))
    return align, block


def _base_shift(tensor: torch.Tensor) -> int:
    """Elements between ``tensor``'s first element and the 128-byte line below it."""
    return (tensor.data_ptr() % CACHE_LINE_BYTES) // tensor.element_size()


def _check_table(table: torch.Tensor, ids: torch.Tensor, out: torch.Tensor) -> None:
    if table.dim() != 2 or not table.is_contiguous():
        raise ValueError(f"table must be a contiguous 2-d tensor, found shape {tuple(table.shape)}")
    if out.dtype != table.dtype or out.dim() != 2 or out.shape[1] != table.shape[1] or not out.is_contiguous():
        raise ValueError("out must be a contiguous [B, D] tensor of the table's dtype")
    if ids.dtype != torch.int64 or ids.dim() != 1 or not ids.is_contiguous():
        raise ValueError("ids must be a contiguous int64 [B] tensor")


def gather_rows_triton(
    table: torch.Tensor, ids: torch.Tensor, out: torch.Tensor, *, aligned: bool = True
) -> torch.Tensor:
    """Launch the aligned (or naive) gather: out[:B] = table[ids].

    table [N, D] float32/float16 on the device or registered host memory; ids int64 [B] and out [>=B, D]
    on the device (the current CUDA device must be set by the caller). Ids are not range-checked here.
    """
    _check_table(table, ids, out)
    num_ids, dim = int(ids.shape[0]), int(table.shape[1])
    if num_ids == 0 or dim == 0:
        return out
    align, block = _block_elements(dim, table.element_size())
    if aligned:
        gather_rows_aligned_kernel[(num_ids,)](table, ids, out, dim, _base_shift(table), ALIGN=align, BLOCK_D=block)
    else:
        gather_rows_naive_kernel[(num_ids, triton.cdiv(dim, block))](table, ids, out, dim, BLOCK_D=block)
    return out


def tiered_gather_triton(
    local: torch.Tensor,
    host: torch.Tensor,
    ids: torch.Tensor,
    positions: torch.Tensor,
    out: torch.Tensor,
    *,
    host_start: int,
) -> torch.Tensor:
    """Launch :func:`tiered_gather_kernel`: rows of the "gpu" and "host" tiers into ``out[positions]``.

    local [L, D] (device), host [H, D] (registered host memory) holding rows [host_start, host_start + H);
    ids and positions int64 [B], out [>=B, D], all on the device. Other ids are skipped.
    """
    _check_table(host, ids, out)
    if local.dtype != host.dtype or local.dim() != 2 or local.shape[1] != host.shape[1] or not local.is_contiguous():
        raise ValueError("local must be a contiguous [L, D] tensor of the host tier's dtype")
    num_ids, dim = int(ids.shape[0]), int(host.shape[1])
    if num_ids == 0 or dim == 0:
        return out
    align, block = _block_elements(dim, host.element_size())
    tiered_gather_kernel[(num_ids,)](
        local,
        host,
        ids,
        positions,
        out,
        dim,
        int(local.shape[0]),
        host_start,
        host_start + int(host.shape[0]),
        _base_shift(local),
        _base_shift(host),
        ALIGN=align,
        BLOCK_D=block,
    )
    return out


# ---------------------------------------------------------------------------------------------- references
def gather_rows_reference(table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Plain torch reference: ``table[ids]``."""
    return table[ids]


def tiered_gather_reference(
    local: torch.Tensor,
    host: torch.Tensor,
    ids: torch.Tensor,
    positions: torch.Tensor,
    out: torch.Tensor,
    *,
    host_start: int,
) -> torch.Tensor:
    """Plain torch reference of :func:`tiered_gather_triton` (same arguments, same effect on ``out``)."""
    is_local = ids < local.shape[0]
    is_host = (ids >= host_start) & (ids < host_start + host.shape[0])
    out[positions[is_local]] = local[ids[is_local]]
    out[positions[is_host]] = host[ids[is_host] - host_start]
    return out
