"""Fault injection: SIGINT, SIGTERM and SIGKILL at random moments of the CLI's writing commands.

Every command runs as ``python -m graphtier ...`` with ``--overwrite`` onto an existing (old) output; a signal
arrives after a delay drawn from a fixed-seed RNG over the command's measured run time. Afterwards OUTPUT must
hold the old output or the complete new one (the case's checker opens it and returns its fingerprint), and no
temporary ``.tmp-`` sibling may remain (after SIGKILL: once the next run that writes there has started).

A :class:`Case` describes one command: ``generate``, ``prepare``, ``reorder`` write a dataset; ``train`` writes
a saved model, a report and a checkpoint directory into OUTPUT (a folder), each of which must be whole.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset, DatasetWriter
from graphtier.dataset.outputs import remove_stale_temporaries
from graphtier.train.saved import load_model
from graphtier.train.torch_file import load_torch_file
from tests.conftest import default_sigint

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
TRIALS_PER_SIGNAL = 2
SEED = 21


def dataset_fingerprint(path: Path) -> str:
    """Open the dataset at ``path`` (validated) and hash its arrays: equal for the same content."""
    dataset = Dataset.open(path)
    digest = hashlib.sha256()
    for file in sorted(path.glob("*.npy")):
        digest.update(file.name.encode())
        digest.update(np.ascontiguousarray(np.load(file, mmap_mode="r")).tobytes())
    return f"{dataset.num_nodes}:{digest.hexdigest()}"


def clear_stale_temps(output: Path) -> None:
    """What the next writing run does first: start a writer there (it removes dead processes' temporaries)."""
    with DatasetWriter(output, overwrite=True):
        pass


@dataclass
class Case:
    """A writing command under test.

    ``argv(inputs, output)``: the arguments after ``python -m graphtier`` that write ``output`` with
    ``--overwrite``; ``make_old(inputs, output)`` writes the output that is there before; ``check(output)``
    raises unless the output is whole and returns its fingerprint; ``next_run(output)`` starts the next run
    that writes there (the SIGKILL clean-up).
    """

    name: str
    argv: Callable[[Path, Path], list[str]]
    make_old: Callable[[Path, Path], None]
    check: Callable[[Path], str] = dataset_fingerprint
    next_run: Callable[[Path], None] = clear_stale_temps


def _run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphtier", *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _generate_args(output: Path, nodes: int, seed: int) -> list[str]:
    return [
        "generate",
        str(output),
        "--nodes",
        str(nodes),
        "--avg-degree",
        "5",
        "--feature-dim",
        "8",
        "--seed",
        str(seed),
        "-q",
    ]


def _copy_input_graph(inputs: Path, output: Path) -> None:
    shutil.copytree(inputs / "graph", output)


def _edge_file(inputs: Path) -> Path:
    path = inputs / "edges.txt"
    if not path.exists():
        dataset = Dataset.open(inputs / "graph")
        dst = np.repeat(np.arange(dataset.num_nodes), np.diff(dataset.indptr))
        np.savetxt(path, np.stack([np.asarray(dataset.indices), dst], axis=1), fmt="%d")
    return path


def _train_args(inputs: Path, output: Path, seed: int) -> list[str]:
    return [
        "train",
        str(inputs / "graph"),
        "--epochs",
        "3",
        "--fanouts",
        "5,5",
        "--hidden",
        "16",
        "--batch-size",
        "256",
        "--seed",
        str(seed),
        "--save-model",
        str(output / "model.pt"),
        "--report",
        str(output / "run.json"),
        "--checkpoint",
        str(output / "ckpt"),
        "--quiet",
    ]


def _make_old_training(inputs: Path, output: Path) -> None:
    """A finished earlier run's model and report (seed 1; the run under test uses seed 0), no checkpoint."""
    output.mkdir()
    result = _run(_train_args(inputs, output, 1))
    assert result.returncode == 0, result.stderr
    shutil.rmtree(output / "ckpt")


def training_fingerprint(output: Path) -> str:
    """The saved model's weights (the file must load); the report must be valid JSON without NaN; a checkpoint,
    if the run got that far, must read whole (every zip member's CRC)."""
    saved = load_model(output / "model.pt")
    digest = hashlib.sha256()
    for name, tensor in sorted(saved.model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.numpy().tobytes())
    json.loads((output / "run.json").read_text(), parse_constant=lambda c: pytest.fail(f"run.json holds {c}"))
    checkpoint = output / "ckpt" / "checkpoint.pt"
    if checkpoint.exists():
        load_torch_file(checkpoint, "--checkpoint", "checkpoint")
    return digest.hexdigest()


def _clear_training_temps(output: Path) -> None:
    """What the next run's writes do first: remove the temporaries dead writers left beside each output file."""
    for target in (output / "model.pt", output / "run.json", output / "ckpt" / "checkpoint.pt"):
        remove_stale_temporaries(target)


CASES = [
    Case("generate", lambda inputs, out: [*_generate_args(out, 3000, 0), "--overwrite"], _copy_input_graph),
    Case(
        "prepare",
        lambda inputs, out: [
            "prepare",
            "edgelist",
            str(_edge_file(inputs)),
            str(out),
            "--synthetic-features",
            "8",
            "--overwrite",
        ],
        _copy_input_graph,
    ),
    Case(
        "reorder",
        lambda inputs, out: ["reorder", str(inputs / "graph"), str(out), "--score", "degree", "--overwrite"],
        _copy_input_graph,
    ),
    Case(
        "train",
        lambda inputs, out: _train_args(inputs, out, 0),
        _make_old_training,
        training_fingerprint,
        _clear_training_temps,
    ),
]


def _temporaries(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if ".tmp-" in p.name)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated graph the prepare and reorder cases read."""
    folder = tmp_path_factory.mktemp("inputs")
    result = _run(_generate_args(folder / "graph", 3000, 1))
    assert result.returncode == 0, result.stderr
    return folder


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_signals_leave_old_or_complete_new_output(case: Case, inputs: Path, tmp_path: Path) -> None:
    old, new, output = tmp_path / "old" / "ds", tmp_path / "new" / "ds", tmp_path / "work" / "ds"
    for folder in (old, new, output):
        folder.parent.mkdir()
    case.make_old(inputs, old)
    for _ in range(2):  # the second run is timed: the first may compile kernels
        started = time.perf_counter()
        result = _run(case.argv(inputs, new))
        duration = time.perf_counter() - started
        assert result.returncode == 0, result.stderr
    expected = {case.check(old): "old", case.check(new): "new"}
    assert len(expected) == 2, "the old and the new output must differ"
    rng = np.random.default_rng(SEED)
    for signum in SIGNALS:
        for _ in range(TRIALS_PER_SIGNAL):
            shutil.rmtree(output, ignore_errors=True)
            shutil.copytree(old, output)
            delay = float(rng.uniform(0.0, duration * 1.1))
            process = subprocess.Popen(
                [sys.executable, "-m", "graphtier", *case.argv(inputs, output)],
                env=_env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=default_sigint,
            )
            time.sleep(delay)
            process.send_signal(signum)
            _, stderr = process.communicate(timeout=300)
            what = f"{case.name}: {signal.Signals(signum).name} after {delay:.2f}s (exit {process.returncode})"
            if signum != signal.SIGKILL:  # finished (0), interrupted with one line (130), or killed at start-up
                assert process.returncode in (0, 130, -signum) and "Traceback" not in stderr, f"{what}: {stderr}"
            found = case.check(output)
            assert found in expected, f"{what}: OUTPUT is neither the old nor the new output"
            if signum == signal.SIGKILL:
                case.next_run(output)
            assert _temporaries(output.parent) == [], f"{what}: left {_temporaries(output.parent)}"
