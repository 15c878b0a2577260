"""Ctrl-C and SIGTERM during `graphtier train`: every process ends within 5 s, with one line and exit code 130.

Ctrl-C in a terminal sends SIGINT to the whole foreground process group (the CLI and its trainer ranks);
``kill PID`` sends SIGTERM to the CLI process only, which must then stop its ranks itself. Each run starts
the CLI in a new session (its own process group) so that the signal reaches nothing else.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from graphtier import Dataset
from graphtier.train import TrainConfig, Trainer
from tests.conftest import default_sigint, write_labelled_graph

REPO = Path(__file__).resolve().parents[2]
EXIT_WITHIN = 5.0


@pytest.fixture(scope="module")
def dataset_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_labelled_graph(tmp_path_factory.mktemp("interrupt") / "g", num_nodes=2000).path


def _start(dataset: Path, *options: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), GRAPHTIER_DIST_TIMEOUT="60", GRAPHTIER_PROGRESS_INTERVAL="off")
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "graphtier",
            "train",
            str(dataset),
            "--epochs",
            "10000",
            "--batch-size",
            "64",
            "--hidden",
            "16",
            *options,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
        start_new_session=True,
        preexec_fn=default_sigint,
    )


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _command_line(process: psutil.Process) -> str:
    """The command line of ``process``, empty for a short-lived child that has already exited (a zombie)."""
    try:
        return " ".join(process.cmdline())
    except (psutil.ZombieProcess, psutil.NoSuchProcess):
        return ""


def _interrupt(
    process: subprocess.Popen[str], signum: int, to_group: bool, after_lines: int, delay: float, ranks: int
) -> tuple[float, str]:
    """Wait for ``after_lines`` epoch lines (and the ranks to exist), sleep ``delay``, send ``signum``.

    Returns the seconds from the signal to the exit of the CLI, and its stderr. Every process of the run
    (ranks included) must be gone by then; a test that fails kills the whole group.
    """
    assert process.stdout is not None and process.stderr is not None
    stderr: list[str] = []
    reader = threading.Thread(target=lambda: stderr.extend(process.stderr), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        seen = 0
        while seen < after_lines:
            line = process.stdout.readline()
            assert line, f"the run ended before {after_lines} epoch line(s): {''.join(stderr)}"
            seen += line.startswith("epoch ")
        deadline = time.monotonic() + 60
        while len([p for p in _descendants(process.pid) if "spawn_main" in _command_line(p)]) < ranks:
            assert time.monotonic() < deadline, "the trainer ranks did not start"
            time.sleep(0.05)
        threading.Thread(target=lambda: process.stdout.read(), daemon=True).start()  # type: ignore[union-attr]
        time.sleep(delay)
        children = _descendants(process.pid)
        sent = time.monotonic()
        if to_group:
            os.killpg(process.pid, signum)
        else:
            process.send_signal(signum)
        try:
            process.wait(timeout=EXIT_WITHIN + 20)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - sent
        reader.join(timeout=5)
        # the trainer ranks must be gone (multiprocessing's resource tracker leaves when its pipe closes)
        _, alive = psutil.wait_procs(children, timeout=2)
        assert not alive, [" ".join(p.cmdline())[:120] for p in alive]
        return took, "".join(stderr)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _check(process: subprocess.Popen[str], took: float, stderr: str) -> None:
    assert took < EXIT_WITHIN, (took, stderr[-3000:])
    assert process.returncode == 130, (process.returncode, stderr[-3000:])
    assert "Traceback" not in stderr, stderr[-3000:]
    assert stderr.strip() == "graphtier: interrupted", stderr[-3000:]  # one line (click adds a blank one before)


_MOMENTS = [(1, 0.0), (2, random.Random(21).uniform(0.0, 0.5)), (0, random.Random(8).uniform(0.0, 0.3))]


@pytest.mark.slow
@pytest.mark.parametrize("after_lines, delay", _MOMENTS)
def test_ctrl_c_ends_every_rank(dataset_path: Path, after_lines: int, delay: float) -> None:
    """SIGINT to the process group (Ctrl-C in a terminal) at several moments of a two-rank run."""
    process = _start(dataset_path, "--devices", "cpu,cpu")
    took, stderr = _interrupt(process, signal.SIGINT, True, after_lines, delay, ranks=2)
    _check(process, took, stderr)


@pytest.mark.slow
@pytest.mark.parametrize("after_lines, delay", _MOMENTS[:2])
def test_sigterm_to_the_parent_stops_its_ranks(dataset_path: Path, after_lines: int, delay: float) -> None:
    """SIGTERM to the CLI process only (``kill PID``): the CLI stops the ranks, which did not get it."""
    process = _start(dataset_path, "--devices", "cpu,cpu")
    took, stderr = _interrupt(process, signal.SIGTERM, False, after_lines, delay, ranks=2)
    _check(process, took, stderr)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_single_process_interrupt_mid_epoch(dataset_path: Path, signum: int) -> None:
    """One process: a signal in the middle of an epoch ends the run at once; the producer thread does not
    keep the process alive."""
    process = _start(dataset_path, "--prefetch", "2")
    took, stderr = _interrupt(process, signum, True, 1, random.Random(signum).uniform(0.0, 0.2), ranks=0)
    _check(process, took, stderr)


def test_an_interrupt_turned_into_system_error_by_numba_is_an_interrupt(tiny_dataset: Dataset) -> None:
    """Ctrl-C whose handler runs inside a numba dispatcher call surfaces as ``SystemError: ... returned a
    result with an exception set`` (seen with the CSR transpose in backward); fit() raises the interrupt."""
    trainer = Trainer(tiny_dataset, TrainConfig(epochs=1, hidden=8, fanouts=(2, 2), quiet=True))

    def interrupted_epoch(epoch: int) -> dict:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise SystemError("CPUDispatcher(csr_transpose) returned a result with an exception set") from interrupt

    trainer.train_epoch = interrupted_epoch  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        trainer.fit()
