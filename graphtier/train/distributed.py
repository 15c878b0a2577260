"""Multi-process training over ``torch.distributed``: CPU and GPU trainer ranks at once (seed 002).

``graphtier train DATASET --devices cpu,cuda:0`` starts one trainer process per listed device (spawned
here with ``torch.multiprocessing``, or started by ``torchrun``, in which case the ranks come from the
environment). Every rank opens the dataset through memory maps (no copy per rank), samples and trains
its share of every global mini-batch, and the ranks sum their gradients with an all-reduce before each
identical optimizer step (synchronous SGD). The process group is gloo whenever a CPU rank takes part
(NCCL cannot reduce CPU tensors) and NCCL when every rank is a GPU.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from graphtier.errors import GraphtierError, OptionError

SLOW_RANK_ENV = "GRAPHTIER_TEST_SLOW_RANK"  # test-only hook: "RANK:FACTOR" slows one rank's whole iteration
FAIL_RANK_ENV = "GRAPHTIER_TEST_FAIL_RANK"  # test-only hook: "RANK:ITERATION" makes one rank raise


class RankFailed(GraphtierError):
    """A trainer rank stopped with an error; the message names the rank, its device and the error."""


def parse_devices(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"cpu,cuda:0"`` -> ``("cpu", "cuda:0")``; checks each entry names cpu or an existing CUDA device."""
    items = [d.strip() for d in (text.split(",") if isinstance(text, str) else text) if str(d).strip()]
    if not items:
        raise OptionError(f"--devices expected a list like cpu,cuda:0, found {text!r}")
    out = []
    for item in items:
        if item == "cpu":
            out.append(item)
            continue
        if not item.startswith("cuda"):
            raise OptionError(f"--devices expected entries cpu or cuda[:N], found {item!r}")
        if not torch.cuda.is_available():
            raise OptionError(f"--devices {item}: CUDA is not available on this machine")
        index = torch.device(item).index or 0
        if index >= torch.cuda.device_count():
            raise OptionError(f"--devices {item}: only {torch.cuda.device_count()} CUDA device(s) present")
        out.append(f"cuda:{index}")
    return tuple(out)


def parse_shares(text: str) -> tuple[float, ...]:
    """``"0.3,0.7"`` -> ``(0.3, 0.7)``: one positive number per rank."""
    values = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        try:
            values.append(float(part))
        except ValueError:
            raise OptionError(f"--shares expected numbers like 0.3,0.7, found {part!r}") from None
    if not values or any(not v > 0 for v in values):
        raise OptionError(f"--shares expected positive numbers like 0.3,0.7, found {text!r}")
    check_shares_sum(values)
    return tuple(values)


SHARES_SUM_TOLERANCE = 1e-6


def check_shares_sum(values: "tuple[float, ...] | list[float]") -> None:
    """Raise OptionError unless the shares sum to 1 (within 1e-6): they are not silently rescaled."""
    total = float(sum(values))
    if abs(total - 1.0) > SHARES_SUM_TOLERANCE:
        raise OptionError(
            f"--shares expected values summing to 1, found {','.join(f'{v:g}' for v in values)} (sum {total:g})"
        )


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


# ---------------------------------------------------------------------------------------------- launch
def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_rank(ctx: DistContext, dataset_path: str, config: Any) -> dict[str, Any] | None:
    from graphtier.dataset import Dataset
    from graphtier.train.trainer import Trainer

    device = ctx.device
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    rank_config = replace(config, device=device)
    if not ctx.is_main:  # rank 0 writes the report and the checkpoint; every rank resumes from it
        rank_config = replace(rank_config, report=None, quiet=True)
    from graphtier.train.report import epoch_summary

    dataset = Dataset.open(dataset_path)

    def on_epoch(record: dict[str, Any]) -> None:
        shares = ", ".join(f"{d} {s:.3f}" for d, s in zip(ctx.devices, record["shares"]))
        print(f"{epoch_summary(record, config.epochs)}  shares {shares}", flush=True)

    show = ctx.is_main and not config.quiet
    trainer = Trainer(dataset, rank_config, dist=ctx, on_epoch=on_epoch if show else None)
    report = trainer.fit()
    return report if ctx.is_main else None


def _spawn_entry(rank: int, world: int, devices: tuple[str, ...], dataset_path: str, config: Any,
                 port: int, error_dir: str) -> None:
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    backend = backend_for(devices)
    ctx = DistContext(rank=rank, world=world, devices=devices, backend=backend)
    try:
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=_timeout())
        try:
            _run_rank(ctx, dataset_path, config)
        except BaseException as error:
            # written before the group is torn down: the first file written names the rank that failed first
            _record_failure(error_dir, rank, error)
            raise
        finally:
            dist.destroy_process_group()
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except BaseException as error:  # noqa: BLE001 - reported to the parent, then the rank exits non-zero
        _record_failure(error_dir, rank, error)
        raise SystemExit(2) from None


def _record_failure(error_dir: str, rank: int, error: BaseException) -> None:
    """Write this rank's error as one line to ``error_dir/rank{rank}.txt`` (once)."""
    path = Path(error_dir, f"rank{rank}.txt")
    if path.exists() or isinstance(error, KeyboardInterrupt):
        return
    message = " ".join(str(error).split()) or type(error).__name__
    if not isinstance(error, GraphtierError):
        message = f"{type(error).__name__}: {message}"
        traceback.print_exception(error)
    path.write_text(message)


def _timeout() -> Any:
    from datetime import timedelta

    return timedelta(seconds=float(os.environ.get("GRAPHTIER_DIST_TIMEOUT", "600")))


def under_torchrun() -> bool:
    """True when the process was started by ``torchrun`` (RANK and WORLD_SIZE in the environment)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def launch(dataset_path: str, config: Any) -> dict[str, Any] | None:
    """Run ``config`` on ``config.devices`` and return rank 0's report (None on other torchrun ranks).

    Under ``torchrun`` this process is one rank: rank and world come from the environment, every node
    runs ``len(devices)`` processes (``--nproc-per-node``) and local rank ``i`` uses ``devices[i]``. Otherwise one process per device is
    spawned here; the first failing rank's error is raised as :class:`RankFailed` after all ranks stop.
    """
    devices = tuple(config.devices)
    if under_torchrun():
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", len(devices)))
        if local_world != len(devices):
            raise OptionError(
                f"--devices lists {len(devices)} device(s) but torchrun started {local_world} process(es) per "
                f"node (use --nproc-per-node {len(devices)})"
            )
        per_rank = tuple(devices[r % len(devices)] for r in range(world))
        ctx = DistContext(rank=rank, world=world, devices=per_rank, backend=backend_for(per_rank))
        dist.init_process_group(ctx.backend, rank=rank, world_size=world, timeout=_timeout())
        try:
            return _run_rank(ctx, dataset_path, config)
        finally:
            dist.destroy_process_group()
    import torch.multiprocessing as mp

    world = len(devices)
    with tempfile.TemporaryDirectory(prefix="graphtier-ranks-") as error_dir:
        report_path = config.report or str(Path(error_dir) / "report.json")
        run_config = replace(config, report=report_path)
        try:
            mp.start_processes(
                _spawn_entry,
                args=(world, devices, str(dataset_path), run_config, _free_port(), error_dir),
                nprocs=world,
                join=True,
                start_method="spawn",
            )
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as error:
            # the rank that failed first is the cause; the others only lost their peer
            messages = sorted(Path(error_dir).glob("rank*.txt"), key=lambda path: path.stat().st_mtime_ns)
            if messages:
                first = messages[0]
                rank = int(first.stem[4:])
                raise RankFailed(f"rank {rank} ({devices[rank]}) failed: {first.read_text()}") from None
            raise RankFailed(f"a trainer rank stopped: {' '.join(str(error).split())}") from None
        import json

        return json.loads(Path(report_path).read_text())
