"""Several machines through torchrun (issue 27 item 2): two "nodes" on localhost, one CPU rank each over gloo, give the
per-epoch losses of ``--devices cpu,cpu`` on one node with the same seed; a node killed mid-run ends the other node
within 30 s with one line naming the lost rank."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import write_labelled_graph

LOST_RANK_SECONDS = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _losses(report: Path) -> list[float]:
    return [epoch["loss"] for epoch in json.loads(report.read_text())["epochs"]]


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}


def _start_node(rank: int, port: int, train: list[str], *, nodes: int = 2, per_node: int = 1) -> subprocess.Popen[str]:
    """One torchrun "machine" on localhost (its own session, so that a test can kill all of it)."""
    return subprocess.Popen(
        [
            sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nodes), "--nproc-per-node", str(per_node),
            "--node-rank", str(rank), "--rdzv-backend", "static", "--master-addr", "127.0.0.1",
            "--master-port", str(port), *train,
        ],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    "per_node", [1, pytest.param(2, marks=pytest.mark.slow)], ids=["1-rank-per-node", "2-ranks-per-node"]
)
def test_two_torchrun_nodes_train_like_local_ranks(tmp_path: Path, per_node: int) -> None:
    """2 nodes x ``per_node`` CPU ranks (the multi-node path of ``--devices cuda:0,cuda:1`` with NCCL, over gloo)
    give the losses of ``2 * per_node`` local ranks."""
    dataset = write_labelled_graph(tmp_path / "g", num_nodes=600).path
    train = ["-m", "graphtier", "train", str(dataset), "--epochs", "2", "--balance", "off", "--seed", "3"]
    node_devices = ",".join(["cpu"] * per_node)
    port = _free_port()
    nodes = [
        _start_node(
            rank,
            port,
            [*train, "--devices", node_devices, "--report", str(tmp_path / f"node{rank}.json")],
            per_node=per_node,
        )  # fmt: skip
        for rank in (0, 1)
    ]
    outputs = [node.communicate(timeout=240)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    local_devices = ",".join(["cpu"] * 2 * per_node)
    local = subprocess.run(
        [sys.executable, *train, "--devices", local_devices, "--report", str(tmp_path / "local.json")],
        env=_env(), capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert local.returncode == 0, local.stderr
    two_nodes = _losses(tmp_path / "node0.json")
    assert len(two_nodes) == 2
    assert two_nodes == _losses(tmp_path / "local.json")
    assert [rank["device"] for rank in json.loads((tmp_path / "node0.json").read_text())["ranks"]] == ["cpu"] * (
        2 * per_node
    )


def _signal_machine(node: subprocess.Popen[str], signum: int) -> None:
    """``signum`` to a torchrun agent and every process under it at once: SIGKILL as if its machine lost power,
    SIGSTOP as if it dropped off the network (its sockets stay open, nothing answers)."""
    try:
        processes = [psutil.Process(node.pid), *psutil.Process(node.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for process in processes:
        try:
            process.send_signal(signum)
        except psutil.NoSuchProcess:
            pass


@pytest.mark.parametrize(
    "signum", [signal.SIGKILL, pytest.param(signal.SIGSTOP, marks=pytest.mark.slow)], ids=["killed", "frozen"]
)
def test_a_node_lost_mid_run_ends_the_other_within_30_s_with_one_line(tmp_path: Path, signum: int) -> None:
    dataset = write_labelled_graph(tmp_path / "g", num_nodes=600).path
    train = ["-m", "graphtier", "train", str(dataset), "--epochs", "500", "--balance", "off", "--devices", "cpu"]
    port = _free_port()
    survivor, doomed = (_start_node(rank, port, train) for rank in (0, 1))
    lines: queue.Queue[str | None] = queue.Queue()

    def read_survivor() -> None:
        assert survivor.stdout is not None
        for line in survivor.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read_survivor, daemon=True).start()
    output: list[str] = []
    try:
        while True:  # until rank 0 has finished epoch 1: both ranks are then training epoch 2
            line = lines.get(timeout=240)
            assert line is not None, "".join(output)
            output.append(line)
            if line.startswith("epoch 1/"):
                break
        _signal_machine(doomed, signum)
        killed = time.monotonic()
        survivor.wait(timeout=LOST_RANK_SECONDS + 30)
        ended = time.monotonic() - killed
    finally:
        for node in (survivor, doomed):
            _signal_machine(node, signal.SIGKILL)
            node.wait(timeout=10)
    while (line := lines.get(timeout=10)) is not None:
        output.append(line)
    text = "".join(output)
    assert survivor.returncode != 0, text
    assert ended < LOST_RANK_SECONDS, (ended, text)
    errors = [line for line in text.splitlines() if line.startswith("graphtier: error:")]
    assert len(errors) == 1, text
    assert re.search(r"\brank 1\b.*\blost\b", errors[0]), errors[0]
    assert not re.search(r'File ".*graphtier/', text), text  # no traceback through graphtier's code
