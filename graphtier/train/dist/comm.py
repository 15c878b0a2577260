"""Process-group pieces of multi-process training (Unified CPU-GPU Protocol): the rank context, collectives, share schedule.

Used by the trainer (:mod:`graphtier.train.loop.trainer`) inside every rank; it imports nothing of the
trainer. The launcher that starts the ranks and runs a trainer in each is :mod:`graphtier.train.loop.launch`.
The process group is gloo whenever a CPU rank takes part (NCCL cannot reduce CPU tensors) and NCCL when
every rank is a GPU.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from graphtier.errors import GraphtierError


class RankFailed(GraphtierError):
    """A trainer rank stopped with an error; the message names the rank, its device and the error."""


@dataclass
class DistContext:
    """This process's place in the process group."""

    rank: int
    world: int
    devices: tuple[str, ...]
    backend: str

    @property
    def device(self) -> str:
        return self.devices[self.rank]

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def backend_for(devices: Sequence[str]) -> str:
    """gloo when any rank is a CPU, NCCL when all are GPUs."""
    return "nccl" if all(d.startswith("cuda") for d in devices) else "gloo"


def collective_device(ctx: DistContext) -> torch.device:
    """Where this rank's collectives run: its own GPU (``ctx.device``) under NCCL, the CPU under gloo.

    NCCL reduces only tensors on the rank's own CUDA device; gloo only CPU tensors.
    """
    return torch.device(ctx.device) if ctx.backend == "nccl" else torch.device("cpu")


def barrier(ctx: DistContext) -> None:
    """Wait for every rank (under NCCL on this rank's device, so NCCL does not guess it)."""
    if ctx.backend == "nccl":
        dist.barrier(device_ids=[collective_device(ctx).index or 0])
    else:
        dist.barrier()


def all_reduce_sum(ctx: DistContext, values: torch.Tensor) -> torch.Tensor:
    """Sum ``values`` over all ranks: a tensor of the same shape, dtype and device as ``values``.

    ``values`` may live on any device; it is copied to :func:`collective_device` for the reduction and back.
    """
    buffer = values.to(collective_device(ctx), copy=True)
    dist.all_reduce(buffer, op=dist.ReduceOp.SUM)
    return buffer.to(values.device)


def all_gather_floats(ctx: DistContext, values: Sequence[float]) -> torch.Tensor:
    """float64 [world, len(values)] on the CPU: every rank's ``values``."""
    mine = torch.tensor(list(values), dtype=torch.float64, device=collective_device(ctx))
    gathered = [torch.empty_like(mine) for _ in range(ctx.world)]
    dist.all_gather(gathered, mine)
    return torch.stack(gathered).cpu()


def broadcast_tensor(ctx: DistContext, tensor: torch.Tensor) -> torch.Tensor:
    """Rank 0's ``tensor`` on every rank (same shape and dtype on each), returned on ``tensor``'s device."""
    moved = tensor.detach().to(collective_device(ctx)).contiguous()
    dist.broadcast(moved, src=0)
    return moved.to(tensor.device)


def all_gather_rows(ctx: DistContext, ids: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every rank's ``ids`` (int64 [k_r]) and ``rows`` (float [k_r, D]) concatenated in rank order, on the CPU:
    int64 [sum k_r] and float [sum k_r, D] (the ranks may hold different counts; padded for the collective)."""
    device = collective_device(ctx)
    count = torch.tensor([ids.shape[0]], dtype=torch.int64, device=device)
    counts = [torch.empty_like(count) for _ in range(ctx.world)]
    dist.all_gather(counts, count)
    sizes = [int(c.item()) for c in counts]
    most = max(sizes)
    padded_ids = torch.zeros(most, dtype=torch.int64, device=device)
    padded_rows = torch.zeros((most, rows.shape[1]), dtype=rows.dtype, device=device)
    padded_ids[: ids.shape[0]] = ids.to(device)
    padded_rows[: rows.shape[0]] = rows.to(device)
    all_ids = [torch.empty_like(padded_ids) for _ in range(ctx.world)]
    all_rows = [torch.empty_like(padded_rows) for _ in range(ctx.world)]
    dist.all_gather(all_ids, padded_ids)
    dist.all_gather(all_rows, padded_rows)
    return (
        torch.cat([part[:size].cpu() for part, size in zip(all_ids, sizes)]),
        torch.cat([part[:size].cpu() for part, size in zip(all_rows, sizes)]),
    )


def all_reduce_gradients(ctx: DistContext, model: nn.Module) -> float:
    """Sum every parameter's gradient over the ranks in one flat all-reduce; returns seconds spent.

    Parameters without a gradient on this rank (an empty sub-batch) contribute zeros. The summed
    gradients end up on each parameter's device, whatever device the collective ran on.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flat = torch.cat([g.reshape(-1) for g in grads])
    start = time.perf_counter()
    reduced = all_reduce_sum(ctx, flat)
    waited = time.perf_counter() - start
    offset = 0
    for param in params:
        count = param.numel()
        param.grad = reduced[offset : offset + count].view_as(param).to(param.dtype)
        offset += count
    return waited


def broadcast_parameters(ctx: DistContext, model: nn.Module) -> None:
    """Make every rank's parameters and buffers (BatchNorm running statistics included) equal to rank 0's.

    Called once before training and again at every rebalance window: CPU and CUDA kernels round
    differently, and each rank's BatchNorm sees only its own sub-batch, so the replicas would drift apart
    otherwise. One flat broadcast per dtype, on :func:`collective_device`.
    """
    target = collective_device(ctx)
    by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}
    for tensor in list(model.parameters()) + list(model.buffers()):
        by_dtype.setdefault(tensor.dtype, []).append(tensor)
    for tensors in by_dtype.values():
        flat = torch.cat([t.detach().reshape(-1).to(target) for t in tensors])
        dist.broadcast(flat, src=0)
        offset = 0
        with torch.no_grad():
            for tensor in tensors:
                count = tensor.numel()
                tensor.copy_(flat[offset : offset + count].view(tensor.shape))
                offset += count


class ScheduleCancelled(Exception):
    """The training loop stopped while the producer waited for the next window's shares."""


class ShareSchedule:
    """Workload shares per rebalance window: published by the training loop, read by the producer thread.

    The producer may prepare batches of a window only once that window's shares are known, so every
    rank cuts every global batch with the same shares.
    """

    def __init__(self, first: np.ndarray) -> None:
        self._windows: dict[int, np.ndarray] = {0: np.asarray(first, dtype=np.float64).copy()}
        self._condition = threading.Condition()
        self._cancelled = False

    def shares_for(self, window: int) -> np.ndarray:
        """The shares of ``window`` (blocks until published; raises ScheduleCancelled after cancel())."""
        with self._condition:
            while window not in self._windows:
                if self._cancelled:
                    raise ScheduleCancelled
                self._condition.wait(timeout=0.1)
            return self._windows[window]

    def publish(self, window: int, shares: np.ndarray) -> None:
        with self._condition:
            self._windows[window] = np.asarray(shares, dtype=np.float64).copy()
            self._condition.notify_all()

    def cancel(self) -> None:
        with self._condition:
            self._cancelled = True
            self._condition.notify_all()
