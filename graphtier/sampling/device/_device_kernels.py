"""Triton kernel of the GPU neighbour sampler: Floyd's algorithm in a register tile, on the CPU sampler's stream.

:func:`floyd_picks_kernel` draws, for a block of destinations per program, ``fanout`` distinct
positions in each destination's neighbour list with Floyd's algorithm, using exactly the random
numbers of :func:`graphtier.sampling.neighbor._neighbor_kernels.floyd_positions` keyed by
``node_key(stream, j)``: pick ``i`` draws ``j = uniform_below(key, i, t + 1)`` for
``t = degree - fanout + i`` (a 32-bit multiply-shift of a half of ``mix64``, high half first; a
64-bit modulo when ``t + 1 >= 2^32``) and keeps ``t`` if ``j`` was picked before, else ``j``. The
picks so far live in a ``[BLOCK, FANOUT_P2]`` register tile, so the membership test is a compare
against the tile: no atomics, no hash table, and only the picked edges are ever read (by the caller).

Keys are uint64 in the kernel: multiplications wrap modulo 2^64 and shifts of unsigned values are
logical, as in numba. The 64-bit stream key reaches the kernel as the int64 bit pattern in a
one-element tensor (bitcast inside), so no argument specialisation can change its type.

Importing this module needs ``triton``; :mod:`graphtier.sampling.device.sampler` imports it on first use.
Tests run the kernel on the CPU with ``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl

from graphtier._splitmix import GOLDEN, MASK64, MIX1, MIX2
from graphtier.sampling.neighbor import _neighbor_kernels as cpu_kernels

# Elements of the pick tile per program: BLOCK = TILE_ELEMENTS // FANOUT_P2 destinations (at most MAX_BLOCK).
# ptxas for sm_90 (run here, without a GPU) gives <= 94 registers and no spills for fanouts 1..1024 at this
# size; at 4096 the tile spilled from fanout 40 on (255 registers + stack).
TILE_ELEMENTS = 1024
MAX_BLOCK = 64
# Fanouts above this would need a tile wider than TILE_ELEMENTS for a single destination; the sampler draws
# such hops with the numba kernel instead.
MAX_FANOUT = 1024

_GOLDEN = tl.constexpr(GOLDEN)
_MIX1 = tl.constexpr(MIX1)
_MIX2 = tl.constexpr(MIX2)
_LOW32 = tl.constexpr(0xFFFFFFFF)
_TWO32 = tl.constexpr(1 << 32)
# The combine function of tl.max, called through tl.reduce: the interpreter recognises it and reduces with
# numpy, whereas tl.max itself is a jit function compiled when triton was imported, which a module
# interpreted on its own (tests load this one with TRITON_INTERPRET=1 set only while importing it) cannot call.
_ANY = tl.standard._elementwise_max


@triton.jit
def _mix64(z):
    """splitmix64 finaliser on a uint64 tensor (wrapping multiplies, logical shifts)."""
    z = (z ^ (z >> 30)) * _MIX1
    z = (z ^ (z >> 27)) * _MIX2
    return z ^ (z >> 31)


@triton.jit
def floyd_picks_kernel(
    dst_index,
    starts,
    degrees,
    offsets,
    stream,
    out,
    num_picked,
    fanout,
    BLOCK: tl.constexpr,
    FANOUT_P2: tl.constexpr,
    WIDE: tl.constexpr,
):
    """out[offsets[j] + i] = starts[j] + (pick i of Floyd's algorithm) for j = dst_index[r], i < fanout.

    dst_index int64 [num_picked] (destinations with fanout < degree), starts/degrees int64 [D],
    offsets int64 [D + 1], stream int64 [1] (bit pattern of the uint64 hop key), out int64 [E].
    grid (cdiv(num_picked, BLOCK),); FANOUT_P2 a power of two >= fanout; WIDE: some degree may be >= 2^32.
    """
    rows = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    row_mask = rows < num_picked
    j = tl.load(dst_index + rows, mask=row_mask, other=0)
    start = tl.load(starts + j, mask=row_mask, other=0)
    # masked rows get a degree that keeps every bound positive (nothing of theirs is stored)
    degree = tl.load(degrees + j, mask=row_mask, other=FANOUT_P2 + 1)
    first = tl.load(offsets + j, mask=row_mask, other=0)
    stream_key = tl.load(stream).to(tl.uint64, bitcast=True)
    key = _mix64(stream_key + j.to(tl.uint64, bitcast=True) * _GOLDEN)
    wide_key = key ^ _GOLDEN
    k = degree * 0 + fanout  # int64 [BLOCK]
    cols = tl.arange(0, FANOUT_P2)
    # the picks so far; a list of < 2^32 entries has positions < 2^32 - 1, so 32 bits hold them (and the
    # empty marker 2^32 - 1) unless some list is wide: half the registers of an int64 tile
    if WIDE:
        picks = tl.full([BLOCK, FANOUT_P2], -1, tl.int64)
    else:
        picks = tl.full([BLOCK, FANOUT_P2], 0xFFFFFFFF, tl.uint32)
    for i in range(fanout):
        step = k * 0 + i  # i as an int64 tensor, in compiled and interpreted runs alike
        t = degree - k + step
        bound = (t + 1).to(tl.uint64, bitcast=True)
        word = _mix64(key + ((step >> 1) + 1).to(tl.uint64, bitcast=True) * _MIX2)
        half = tl.where((step & 1) == 0, word >> 32, word & _LOW32)
        position = ((half * bound) >> 32).to(tl.int64, bitcast=True)
        if WIDE:
            wide = _mix64(wide_key + (step + 1).to(tl.uint64, bitcast=True) * _MIX1) % bound
            position = tl.where(t + 1 >= _TWO32, wide.to(tl.int64, bitcast=True), position)
        found = tl.reduce((picks == position.to(picks.dtype)[:, None]).to(tl.int32), 1, _ANY) > 0
        pick = tl.where(found, t, position)
        picks = tl.where(cols[None, :] == i, pick.to(picks.dtype)[:, None], picks)
        tl.store(out + first + step, start + pick, mask=row_mask)


# ---------------------------------------------------------------------------------------------- launcher
def tile_shape(fanout: int) -> tuple[int, int]:
    """(BLOCK, FANOUT_P2) of the pick tile for ``fanout``: FANOUT_P2 >= fanout, BLOCK shrinks as it grows."""
    fanout_p2 = triton.next_power_of_2(fanout)
    return max(1, min(MAX_BLOCK, TILE_ELEMENTS // fanout_p2)), fanout_p2


def _check_index(name: str, tensor: torch.Tensor, device: torch.device, length: int | None = None) -> None:
    if not isinstance(tensor, torch.Tensor) or tensor.dtype != torch.int64 or tensor.dim() != 1:
        raise ValueError(f"{name} must be a 1-d int64 tensor")
    if not tensor.is_contiguous() or tensor.device != device:
        raise ValueError(f"{name} must be contiguous and on {device}, found on {tensor.device}")
    if length is not None and tensor.shape[0] != length:
        raise ValueError(f"{name} must have {length} elements, found {tensor.shape[0]}")


def floyd_picks_triton(
    dst_index: torch.Tensor,
    starts: torch.Tensor,
    degrees: torch.Tensor,
    offsets: torch.Tensor,
    stream: int,
    fanout: int,
    out: torch.Tensor,
    *,
    max_degree: int | None = None,
) -> torch.Tensor:
    """Launch :func:`floyd_picks_kernel`: absolute positions of the picks of ``dst_index``'s destinations.

    dst_index int64 [M] (destinations with fanout < degree; not checked here), starts/degrees int64 [D],
    offsets int64 [D + 1] (prefix sum of the counts), out int64 [>= offsets[-1]], all on one device;
    ``stream`` the uint64 hop key (``stream_key``), ``1 <= fanout <= MAX_FANOUT``. ``max_degree`` bounds the
    degrees (e.g. the edge count; None: read ``degrees.max()``, a device sync): the 64-bit modulo draws
    for lists of >= 2^32 entries are compiled in only when it reaches 2^32. Returns ``out``.
    """
    device = out.device
    _check_index("out", out, device)
    _check_index("dst_index", dst_index, device)
    _check_index("starts", starts, device)
    _check_index("degrees", degrees, device, starts.shape[0])
    _check_index("offsets", offsets, device, starts.shape[0] + 1)
    if isinstance(fanout, bool) or not isinstance(fanout, (int, np.integer)) or not 1 <= fanout <= MAX_FANOUT:
        raise ValueError(f"fanout must be an integer in [1, {MAX_FANOUT}], found {fanout!r}")
    if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)) or not 0 <= int(stream) <= MASK64:
        raise ValueError(f"stream must be an integer in [0, 2^64), found {stream!r}")
    num_picked = int(dst_index.shape[0])
    if num_picked == 0:
        return out
    stream = int(stream)
    stream_bits = torch.tensor([stream - (1 << 64) if stream >= 1 << 63 else stream], dtype=torch.int64, device=device)
    if max_degree is None:
        max_degree = int(degrees.max()) if degrees.numel() else 0
    block, fanout_p2 = tile_shape(int(fanout))
    grid = (triton.cdiv(num_picked, block),)
    floyd_picks_kernel[grid](
        dst_index,
        starts,
        degrees,
        offsets,
        stream_bits,
        out,
        num_picked,
        int(fanout),
        BLOCK=block,
        FANOUT_P2=fanout_p2,
        WIDE=int(max_degree) >= 1 << 32,
    )
    return out


# ---------------------------------------------------------------------------------------------- reference
def floyd_picks_reference(
    dst_index: torch.Tensor,
    starts: torch.Tensor,
    degrees: torch.Tensor,
    offsets: torch.Tensor,
    stream: int,
    fanout: int,
    out: torch.Tensor,
    *,
    max_degree: int | None = None,
) -> torch.Tensor:
    """Plain-Python reference of :func:`floyd_picks_triton` (same arguments, CPU tensors, same effect on ``out``)."""
    for j in dst_index.tolist():
        key = cpu_kernels.node_key_py(int(stream), j)
        first, start = int(offsets[j]), int(starts[j])
        for i, pick in enumerate(cpu_kernels.floyd_positions_py(key, int(degrees[j]), fanout)):
            out[first + i] = start + pick
    return out
