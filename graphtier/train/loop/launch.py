"""Multi-process training over ``torch.distributed``: CPU and GPU trainer ranks at once (Unified CPU-GPU Protocol).

``graphtier train DATASET --devices cpu,cuda:0`` starts one trainer process per listed device (spawned
here, or started by ``torchrun``, in which case the ranks come from the
environment). Every rank opens the dataset through memory maps (no copy per rank), samples and trains
its share of every global mini-batch, and the ranks sum their gradients with an all-reduce before each
identical optimizer step (synchronous SGD). The process group is gloo whenever a CPU rank takes part
(NCCL cannot reduce CPU tensors) and NCCL when every rank is a GPU.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import multiprocessing.connection as mp_connection
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from graphtier._process import configure_process
from graphtier._signals import Terminated
from graphtier.dataset import Dataset
from graphtier.errors import GraphtierError
from graphtier.train.dist.comm import DistContext, RankFailed, backend_for
from graphtier.train.dist.heartbeat import Heartbeat, lost_message
from graphtier.train.dist.torchrun import exchange_devices, rendezvous_store, torchrun_rank
from graphtier.train.loop.collective import StepHook, StepSeconds, rank_threads
from graphtier.train.loop.report import epoch_summary
from graphtier.train.loop.trainer import Trainer
from graphtier.train.options.spec import parse_devices, parse_shares  # noqa: F401 - re-exported

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}
RANK_GRACE_SECONDS = 2.5  # an interrupted run ends within 5 s: ranks still running after this are killed
EXIT_INTERRUPTED = 130
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_rank(
    ctx: DistContext,
    dataset_path: str,
    config: Any,
    step_seconds: StepSeconds | None = None,
    step_hook: StepHook | None = None,
    progress: _RunProgress | None = None,
) -> dict[str, Any] | None:
    threads = rank_threads(config, ctx.world)
    # the cores split between the ranks; the wait policy is the launching process's (inherited environment)
    configure_process(threads, numba_threads=threads, passive_wait=False)
    device = ctx.device
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    rank_config = config.with_options(device=device)
    if not ctx.is_main:  # rank 0 writes the report and the checkpoint; every rank resumes from it
        rank_config = rank_config.with_options(report=None, quiet=True)
    dataset = Dataset.open(dataset_path)

    def on_epoch(record: dict[str, Any]) -> None:
        if progress is not None:
            progress.epoch = int(record["epoch"]) + 1
        if not show:
            return
        shares = ", ".join(f"{d} {s:.3f}" for d, s in zip(ctx.devices, record["shares"]))
        print(f"{epoch_summary(record, config.optim.epochs)}  shares {shares}", flush=True)

    show = ctx.is_main and not config.run.quiet
    trainer = Trainer(
        dataset, rank_config, dist=ctx, on_epoch=on_epoch if show or progress is not None else None,
        step_seconds=step_seconds, step_hook=step_hook,
    )  # fmt: skip
    if progress is not None:
        progress.epoch = trainer.start_epoch
    report = trainer.fit()
    return report if ctx.is_main else None


def _spawn_entry(
    rank: int,
    world: int,
    devices: tuple[str, ...],
    dataset_path: str,
    config: Any,
    port: int,
    error_dir: str,
    step_seconds: StepSeconds | None = None,
    step_hook: StepHook | None = None,
) -> None:
    interrupts = _RankInterrupts()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    backend = backend_for(devices)
    ctx = DistContext(rank=rank, world=world, devices=devices, backend=backend)
    try:
        interrupts.install()
        dist.init_process_group(backend, rank=rank, world_size=world, timeout=_timeout())
        try:
            _run_rank(ctx, dataset_path, config, step_seconds, step_hook)
        except BaseException as error:
            # written before the group is torn down: the first file written names the rank that failed first
            if not interrupts.received:  # after a signal, a lost peer is no failure of this rank
                _record_failure(error_dir, rank, error)
            raise
        finally:
            if not interrupts.received:  # an interrupted rank exits at once (_exit_quietly)
                dist.destroy_process_group()
    except BaseException as error:  # noqa: BLE001 - reported to the parent, then the rank exits non-zero
        if interrupts.received or isinstance(error, KeyboardInterrupt):
            _exit_quietly(EXIT_INTERRUPTED)
        _record_failure(error_dir, rank, error)
        raise SystemExit(2) from None


class _RankInterrupts:
    """SIGINT and SIGTERM in a trainer rank: the first raises KeyboardInterrupt, later ones are ignored.

    Ctrl-C reaches every rank (the terminal signals the whole process group) and the parent then also asks
    the ranks to stop: the second signal must not interrupt the clean-up that the first one started.
    """

    def __init__(self) -> None:
        self.received = False

    def install(self) -> None:
        """Set the handlers (SIGINT was ignored since the rank started, SIGTERM ended it silently)."""
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_signal)
        _die_with_parent()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.received:
            return
        self.received = True
        raise Terminated(f"signal {signum}") if signum == signal.SIGTERM else KeyboardInterrupt


def _die_with_parent() -> None:
    """Linux: this rank gets SIGTERM when the launching process dies (even by SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def _exit_quietly(code: int) -> NoReturn:
    """End an interrupted rank now: no interpreter shutdown that could wait on threads or peers."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


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
    return timedelta(seconds=float(os.environ.get("GRAPHTIER_DIST_TIMEOUT", "600")))


def under_torchrun() -> bool:
    """True when the process was started by ``torchrun`` (RANK and WORLD_SIZE in the environment)."""
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def launch(
    dataset_path: str, config: Any, *, step_seconds: StepSeconds | None = None, step_hook: StepHook | None = None
) -> dict[str, Any] | None:
    """Run ``config`` on ``config.distributed.devices`` and return rank 0's report (None on other torchrun ranks).

    Under ``torchrun`` this process is one rank: rank and world come from the environment, every node
    runs ``len(devices)`` processes (``--nproc-per-node``) and local rank ``i`` uses ``devices[i]``. Otherwise one process per device is
    spawned here; the first failing rank's error is raised as :class:`RankFailed` after all ranks stop.
    ``step_seconds`` (a module-level function, so that spawned ranks can import it) replaces each rank's
    measured step time by a simulated one (deterministic tests of the load balancer); ``step_hook`` (also
    module-level) is called on every rank after each backward pass (tests make a rank fail there).
    """
    devices = tuple(config.distributed.devices)
    if under_torchrun():
        return _run_torchrun_rank(devices, dataset_path, config, step_seconds, step_hook)
    world = len(devices)
    with tempfile.TemporaryDirectory(prefix="graphtier-ranks-") as error_dir:
        report_path = config.run.report or str(Path(error_dir) / "report.json")
        run_config = config.with_options(report=report_path)
        args = (world, devices, str(dataset_path), run_config, _free_port(), error_dir, step_seconds, step_hook)
        failed = _run_spawned(world, args)
        if failed is not None:
            # the rank that failed first is the cause; the others only lost their peer
            messages = sorted(Path(error_dir).glob("rank*.txt"), key=lambda path: path.stat().st_mtime_ns)
            if messages:
                first = messages[0]
                rank = int(first.stem[4:])
                raise RankFailed(f"rank {rank} ({devices[rank]}) failed: {first.read_text()}")
            raise RankFailed(f"a trainer rank stopped: rank {failed[0]} ({devices[failed[0]]}) exit code {failed[1]}")
        return json.loads(Path(report_path).read_text())


def _run_torchrun_rank(
    devices: tuple[str, ...],
    dataset_path: str,
    config: Any,
    step_seconds: StepSeconds | None,
    step_hook: StepHook | None,
) -> dict[str, Any] | None:
    """This process is one rank of a ``torchrun`` launch (:mod:`graphtier.train.dist.torchrun`), watched by a heartbeat.

    A collective that fails because another rank was lost (:mod:`graphtier.train.dist.heartbeat`) becomes a
    :class:`RankFailed` naming that rank; a rank that hangs instead ends this process from the heartbeat.
    """
    place = torchrun_rank(os.environ, devices)
    all_devices = exchange_devices(rendezvous_store(_timeout()), place)
    ctx = DistContext(rank=place.rank, world=place.world, devices=all_devices, backend=backend_for(all_devices))
    progress = _RunProgress(config.optim.epochs)
    heartbeat = Heartbeat(place.rank, place.world, place.store_ranks, progress.where)
    dist.init_process_group(ctx.backend, rank=ctx.rank, world_size=ctx.world, timeout=_timeout())
    try:
        heartbeat.start()
        report = _run_rank(ctx, dataset_path, config, step_seconds, step_hook, progress)
        heartbeat.finish()
        return report
    except RuntimeError as error:  # gloo and NCCL raise RuntimeError (DistBackendError, ...) for a lost peer
        lost = heartbeat.lost_ranks()
        if not lost or not heartbeat.claim_report():
            raise
        heartbeat.stop()
        raise RankFailed(lost_message(lost, progress.where())) from error
    finally:
        heartbeat.stop()
        dist.destroy_process_group()


class _RunProgress:
    """Where a rank's run is (the epoch it trains), for the message about a lost rank."""

    def __init__(self, epochs: int) -> None:
        self.epochs = epochs
        self.epoch: int | None = None  # None: the run has not started training

    def where(self) -> str:
        """``during epoch 3``, ``while the run started`` or ``after the last epoch``."""
        if self.epoch is None:
            return "while the run started"
        return f"during epoch {self.epoch}" if self.epoch <= self.epochs else "after the last epoch"


def _run_spawned(world: int, args: tuple[Any, ...]) -> tuple[int, int] | None:
    """Start one process per rank and wait for all; returns (rank, exit code) of the first that failed.

    The ranks start with SIGINT ignored (a Python process keeps an ignored SIGINT), so Ctrl-C while they
    import torch prints no traceback there: this process then stops them (SIGTERM, which ends a rank
    without a word until it has set its handlers, :class:`_RankInterrupts`). However this function is
    left (the ranks ended, a rank failed, Ctrl-C, SIGTERM to this process only), no rank outlives it: the
    ranks still running are asked to stop, and killed after :data:`RANK_GRACE_SECONDS`.
    """
    context = mp.get_context("spawn")
    ranks: list[Any] = []
    try:
        for rank in range(world):
            process = context.Process(target=_spawn_entry, args=(rank, *args), name=f"graphtier-rank{rank}")
            with _ignoring(signal.SIGINT):
                process.start()
            ranks.append(process)
        while True:
            for rank, process in enumerate(ranks):
                if process.exitcode not in (None, 0):
                    return rank, process.exitcode
            if all(process.exitcode == 0 for process in ranks):
                return None
            mp_connection.wait([process.sentinel for process in ranks if process.exitcode is None], timeout=1.0)
    finally:
        _stop_ranks(ranks)


def _stop_ranks(ranks: list[Any]) -> None:
    """SIGTERM to the ranks still running (handled like Ctrl-C there), SIGKILL after the grace period.

    A second Ctrl-C meanwhile is ignored (in the main thread): it must not leave ranks running.
    """
    with _ignoring(*STOP_SIGNALS):
        _terminate_then_kill(ranks)


@contextlib.contextmanager
def _ignoring(*signums: int) -> Iterator[None]:
    """Ignore ``signums`` in this block (only the main thread can; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in signums}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _terminate_then_kill(ranks: list[Any]) -> None:
    for process in ranks:
        if process.exitcode is None:
            try:
                os.kill(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + RANK_GRACE_SECONDS
    for process in ranks:
        process.join(timeout=max(0.0, deadline - time.monotonic()))
    for process in ranks:
        if process.exitcode is None:
            process.kill()
            process.join(timeout=5.0)
