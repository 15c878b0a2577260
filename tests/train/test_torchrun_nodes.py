"""Several machines through torchrun (issue 27 item 2): two "nodes" on localhost, one CPU rank each over gloo, give the
per-epoch losses of ``--devices cpu,cpu`` on one node with the same seed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.conftest import write_labelled_graph


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _losses(report: Path) -> list[float]:
    return [epoch["loss"] for epoch in json.loads(report.read_text())["epochs"]]


def test_two_torchrun_nodes_train_like_two_local_ranks(tmp_path: Path) -> None:
    dataset = write_labelled_graph(tmp_path / "g", num_nodes=600).path
    train = ["-m", "graphtier", "train", str(dataset), "--epochs", "2", "--balance", "off", "--seed", "3"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    port = _free_port()
    nodes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nnodes",
                "2",
                "--nproc-per-node",
                "1",
                "--node-rank",
                str(rank),
                "--rdzv-backend",
                "static",
                "--master-addr",
                "127.0.0.1",
                "--master-port",
                str(port),
                *train,
                "--devices",
                "cpu",
                "--report",
                str(tmp_path / f"node{rank}.json"),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        for rank in (0, 1)
    ]
    outputs = [node.communicate(timeout=240)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    local = subprocess.run(
        [sys.executable, *train, "--devices", "cpu,cpu", "--report", str(tmp_path / "local.json")],
        env=env, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert local.returncode == 0, local.stderr
    two_nodes = _losses(tmp_path / "node0.json")
    assert len(two_nodes) == 2
    assert two_nodes == _losses(tmp_path / "local.json")
