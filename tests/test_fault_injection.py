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
from graphtier.train.persist.saved import load_model
from graphtier.train.persist.torch_file import load_torch_file
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


# ---------------------------------------------------------------- predict --task link: three outputs, one result
LINK_OUTPUTS = ("ids.npy", "scores.npy", "emb.npy")
LINK_SIGNALS = (signal.SIGINT, signal.SIGKILL)
LINK_TRIALS_PER_SIGNAL = 4


def _link_predict_args(dataset: Path, model: Path, nodes: Path, folder: Path) -> list[str]:
    ids, scores, emb = (folder / name for name in LINK_OUTPUTS)
    return ["predict", str(dataset), "--model", str(model), "--top-k", "20", "--for-nodes", str(nodes),
            "--output", str(ids), "--scores", str(scores), "--embeddings", str(emb), "--quiet"]  # fmt: skip


def _link_outputs_fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in LINK_OUTPUTS:
        digest.update(np.ascontiguousarray(np.load(folder / name)).tobytes())
    return digest.hexdigest()


def _first_temporary_after(process: subprocess.Popen, folder: Path, started: float) -> float:
    """Poll ``folder`` until ``process`` ends; the time from ``started`` at which a temporary first appeared."""
    seen = None
    while process.poll() is None:
        if seen is None and any(".tmp-" in name for name in os.listdir(folder)):
            seen = time.perf_counter() - started
        time.sleep(0.002)
    return seen if seen is not None else time.perf_counter() - started


def test_link_predict_outputs_are_all_old_or_all_new_after_signals(tmp_path: Path) -> None:
    """SIGINT and SIGKILL at random moments of ``predict --task link --output --scores --embeddings`` over the old
    outputs of another model: afterwards the three files are all the old ones or all the new ones (after SIGKILL:
    once the next write into the folder has run), and no temporary or journal is left."""
    from graphtier.train import train
    from tests.conftest import write_labelled_graph, write_link_dataset

    dataset = write_link_dataset(tmp_path / "link", write_labelled_graph(tmp_path / "graph", num_nodes=6000))
    options = dict(task="link", epochs=1, batch_size=512, hidden=64, fanouts=(5, 5), quiet=True)
    for seed, name in ((1, "old.pt"), (0, "new.pt")):
        train(dataset, seed=seed, save_model=str(tmp_path / name), **options)
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("\n".join(map(str, range(dataset.num_nodes))))
    old, new, work = tmp_path / "old", tmp_path / "new", tmp_path / "work"
    for folder, model in ((old, "old.pt"), (new, "new.pt")):
        folder.mkdir()
        result = _run(_link_predict_args(dataset.path, tmp_path / model, nodes, folder))
        assert result.returncode == 0, result.stderr
    expected = {_link_outputs_fingerprint(old): "old", _link_outputs_fingerprint(new): "new"}
    assert len(expected) == 2
    argv = _link_predict_args(dataset.path, tmp_path / "new.pt", nodes, work)
    shutil.copytree(old, work)
    started = time.perf_counter()  # timed: when the outputs start being written, when the run ends
    process = subprocess.Popen([sys.executable, "-m", "graphtier", *argv], env=_env(), stderr=subprocess.DEVNULL)
    writing = _first_temporary_after(process, work, started)
    duration = time.perf_counter() - started
    assert process.returncode == 0
    rng = np.random.default_rng(SEED)
    seen = []
    for signum in LINK_SIGNALS:
        for trial in range(LINK_TRIALS_PER_SIGNAL):
            shutil.rmtree(work)
            shutil.copytree(old, work)
            # half of the trials anywhere in the run, half while its outputs are written and renamed
            lo = 0.0 if trial % 2 == 0 else max(0.0, writing - 0.05)
            delay = float(rng.uniform(lo, duration * 1.05))
            process = subprocess.Popen(
                [sys.executable, "-m", "graphtier", *argv], env=_env(), stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
            )  # fmt: skip
            time.sleep(delay)
            process.send_signal(signum)
            _, stderr = process.communicate(timeout=300)
            what = f"{signal.Signals(signum).name} after {delay:.2f}s (exit {process.returncode})"
            if signum == signal.SIGKILL:
                for name in LINK_OUTPUTS:
                    remove_stale_temporaries(work / name)  # what the next run's writes do first
            else:
                assert process.returncode in (0, 130, -signum) and "Traceback" not in stderr, f"{what}: {stderr}"
            found = expected.get(_link_outputs_fingerprint(work))
            assert found is not None, f"{what}: the three outputs are neither all old nor all new"
            assert sorted(p.name for p in work.iterdir()) == sorted(LINK_OUTPUTS), f"{what}: left temporaries"
            seen.append(found)
    assert "old" in seen  # the trials interrupted runs, not only finished ones
