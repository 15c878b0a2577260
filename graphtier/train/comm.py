"""Process-group pieces of multi-process training (seed 002): the rank context, collectives, share schedule.

Used by the trainer (:mod:`graphtier.train.trainer`) inside every rank; it imports nothing of the
trainer. The launcher that starts the ranks and runs a trainer in each is :mod:`graphtier.train.launch`.
The process group is gloo whenever a CPU rank takes part (NCCL cannot reduce CPU tensors) and NCCL when
every rank is a GPU.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from graphtier.errors import GraphtierError

SLOW_RANK_ENV = "GRAPHTIER_TEST_SLOW_RANK"  # test-only hook: "RANK:FACTOR" makes one rank a FACTOR times slower device per seed
FAIL_RANK_ENV = "GRAPHTIER_TEST_FAIL_RANK"  # test-only hook: "RANK:ITERATION" makes one rank raise


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


def _reduce_device(ctx: DistContext, device: torch.device) -> torch.device:
    return device if ctx.backend == "nccl" else torch.device("cpu")


def all_reduce_sum(ctx: DistContext, values: torch.Tensor) -> torch.Tensor:
    """Sum ``values`` over all ranks (moved to where the backend can reduce them and back)."""
    target = _reduce_device(ctx, values.device)
    buffer = values.to(target).clone()
    dist.all_reduce(buffer, op=dist.ReduceOp.SUM)
    return buffer.to(values.device)


def all_gather_floats(ctx: DistContext, values: Sequence[float]) -> torch.Tensor:
    """float64 [world, len(values)]: every rank's ``values``."""
    target = torch.device(ctx.device) if ctx.backend == "nccl" else torch.device("cpu")
    mine = torch.tensor(list(values), dtype=torch.float64, device=target)
    gathered = [torch.empty_like(mine) for _ in range(ctx.world)]
    dist.all_gather(gathered, mine)
    return torch.stack(gathered).cpu()


def all_reduce_gradients(ctx: DistContext, model: nn.Module) -> float:
    """Sum every parameter's gradient over the ranks in one flat all-reduce; returns seconds spent.

    Parameters without a gradient on this rank (an empty sub-batch) contribute zeros.
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
    """Make every rank's parameters and buffers equal to rank 0's."""
    for tensor in list(model.parameters()) + list(model.buffers()):
        target = _reduce_device(ctx, tensor.device)
        buffer = tensor.detach().to(target).clone()
        dist.broadcast(buffer, src=0)
        with torch.no_grad():
            tensor.copy_(buffer.to(tensor.device))


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


def slowdown_factor(rank: int) -> float:
    """The test-only slowdown of ``rank`` from ``GRAPHTIER_TEST_SLOW_RANK=RANK:FACTOR`` (1.0 = none)."""
    spec = os.environ.get(SLOW_RANK_ENV, "")
    if not spec:
        return 1.0
    slow_rank, _, factor = spec.partition(":")
    return float(factor) if int(slow_rank) == rank else 1.0


def fail_now(rank: int, iteration: int) -> bool:
    """Test-only: True when ``GRAPHTIER_TEST_FAIL_RANK=RANK:ITERATION`` names this rank and iteration."""
    spec = os.environ.get(FAIL_RANK_ENV, "")
    if not spec:
        return False
    fail_rank, _, fail_iteration = spec.partition(":")
    return int(fail_rank) == rank and int(fail_iteration or 0) == iteration
