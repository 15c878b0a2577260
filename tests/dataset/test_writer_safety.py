"""DatasetWriter safety: nothing at OUTPUT is lost that the run was not asked to replace, and an interrupt at
the final rename leaves the old or the complete new dataset (issue 21)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset, DatasetError, DatasetWriter
from graphtier.dataset import swap
from tests.conftest import write_labelled_graph

REPO = Path(__file__).resolve().parents[2]


def _meta(num_nodes: int, **extra: object) -> dict:
    return {
        "name": "w",
        "num_nodes": num_nodes,
        "num_edges": 0,
        "directed": True,
        "feature_dim": 0,
        "feature_dtype": "float32",
        "num_classes": 0,
        "source": {"importer": "test"},
        **extra,
    }


def _fill(writer: DatasetWriter, num_nodes: int) -> None:
    writer.save("indptr", np.zeros(num_nodes + 1, dtype=np.int64))
    writer.save("indices", np.zeros(0, dtype=np.int32))


def _write(out: Path, num_nodes: int, *, overwrite: bool = False) -> Dataset:
    with DatasetWriter(out, overwrite=overwrite) as writer:
        _fill(writer, num_nodes)
        return writer.finish(_meta(num_nodes))


def _temps(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".tmp-" in p.name)


@pytest.fixture(params=["renameat2", "fallback"])
def rename_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a test with the kernel's renameat2 and with the portable fallback (mkdir claim, two renames)."""
    if request.param == "renameat2" and swap.renameat2 is None:
        pytest.skip("no renameat2 on this system")
    if request.param == "fallback":
        monkeypatch.setattr(swap, "renameat2", None)
    yield request.param


def test_output_created_during_the_run_is_kept(tmp_path: Path, rename_mode: str) -> None:
    out = tmp_path / "ds"
    with pytest.raises(DatasetError, match="appeared while this run was writing"):
        with DatasetWriter(out) as writer:
            _fill(writer, 3)
            out.mkdir()
            (out / "notes.txt").write_text("mine")
            writer.finish(_meta(3))
    assert (out / "notes.txt").read_text() == "mine"
    assert _temps(tmp_path) == []


def test_output_created_between_the_last_check_and_the_rename_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rename_mode: str
) -> None:
    out = tmp_path / "ds"
    check = DatasetWriter.check_output

    def racing_check(self: DatasetWriter, *args: object, finishing: bool = False) -> None:
        check(self, *args, finishing=finishing)
        if finishing:  # another process wins the race right after the last check
            out.mkdir()
            (out / "notes.txt").write_text("mine")

    monkeypatch.setattr(DatasetWriter, "check_output", racing_check)
    with pytest.raises(DatasetError, match="appeared while this run was writing"):
        with DatasetWriter(out) as writer:
            _fill(writer, 3)
            writer.finish(_meta(3))
    assert (out / "notes.txt").read_text() == "mine"
    assert _temps(tmp_path) == []


def test_two_runs_into_one_output_one_wins(tmp_path: Path, rename_mode: str) -> None:
    out = tmp_path / "ds"
    first, second = DatasetWriter(out), DatasetWriter(out)
    with first:
        _fill(first, 2)
        first.finish(_meta(2))
    with pytest.raises(DatasetError, match="--overwrite"), second:
        _fill(second, 5)
        second.finish(_meta(5))
    assert Dataset.open(out).num_nodes == 2
    assert _temps(tmp_path) == []


@pytest.mark.parametrize("foreign", ["edges.txt", "runs"])
def test_overwrite_refuses_a_folder_holding_other_files(tmp_path: Path, foreign: str) -> None:
    out = tmp_path / "ds"
    write_labelled_graph(out, num_nodes=30)
    if foreign == "runs":
        (out / "runs").mkdir()
        (out / "runs" / "model.pt").write_bytes(b"model")
    else:
        (out / foreign).write_text("0 1\n")
    with pytest.raises(DatasetError, match=f"{foreign}: not a dataset file"):
        DatasetWriter(out, overwrite=True)
    assert (out / foreign).exists() and Dataset.open(out).num_nodes == 30
    assert _temps(tmp_path) == []


def test_overwrite_rechecks_the_folder_before_replacing(tmp_path: Path, rename_mode: str) -> None:
    out = tmp_path / "ds"
    write_labelled_graph(out, num_nodes=30)
    with pytest.raises(DatasetError, match="edges.txt: not a dataset file"):
        with DatasetWriter(out, overwrite=True) as writer:
            _fill(writer, 3)
            (out / "edges.txt").write_text("0 1\n")
            writer.finish(_meta(3))
    assert (out / "edges.txt").exists() and Dataset.open(out).num_nodes == 30
    assert _temps(tmp_path) == []


def test_overwrite_keeps_an_input_of_the_run(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    write_labelled_graph(out, num_nodes=30)
    np.save(out / "my_labels.npy", np.zeros(30, dtype=np.int64))
    inputs = [str((out / "my_labels.npy").resolve())]
    with pytest.raises(DatasetError, match="my_labels.npy: an input of this run"):
        with DatasetWriter(out, overwrite=True) as writer:
            _fill(writer, 3)
            writer.finish(_meta(3, source={"importer": "test", "inputs": inputs}))
    assert (out / "my_labels.npy").exists()


def test_overwrite_replaces_a_dataset(tmp_path: Path, rename_mode: str) -> None:
    out = tmp_path / "ds"
    write_labelled_graph(out, num_nodes=30)
    assert _write(out, 4, overwrite=True).num_nodes == 4
    assert Dataset.open(out).num_nodes == 4 and not (out / "features.npy").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


def test_overwrite_through_a_symlink_replaces_its_target_and_keeps_the_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "ds"
    write_labelled_graph(target, num_nodes=30)
    link = tmp_path / "link"
    link.symlink_to(target)
    dataset = _write(link, 4, overwrite=True)
    assert dataset.path == link and link.is_symlink() and Dataset.open(target).num_nodes == 4
    assert _temps(tmp_path) == [] and _temps(tmp_path / "real") == []


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, rename_mode: str, calls: int) -> None:
    """Raise KeyboardInterrupt right after the ``calls``-th rename of the final swap returns."""
    count = [0]
    if rename_mode == "renameat2":
        real: Callable[..., int] = swap.renameat2  # type: ignore[assignment]
        name, owner = "renameat2", swap
    else:
        real, name, owner = os.rename, "rename", os

    def interrupting(*args: object) -> object:
        result = real(*args)
        count[0] += 1
        if count[0] == calls:
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(owner, name, interrupting)


@pytest.mark.parametrize("calls", [1, 2, 3])
def test_interrupt_at_the_swap_leaves_old_or_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rename_mode: str, calls: int
) -> None:
    if rename_mode == "renameat2" and calls > 1:
        pytest.skip("one rename only")
    out = tmp_path / "ds"
    write_labelled_graph(out, num_nodes=30)
    with pytest.raises(KeyboardInterrupt):
        with DatasetWriter(out, overwrite=True) as writer:
            _fill(writer, 4)
            _interrupt_after(monkeypatch, rename_mode, calls)
            writer.finish(_meta(4))
    monkeypatch.undo()
    assert Dataset.open(out).num_nodes in (30, 4)
    assert Dataset.open(out).num_nodes == (30 if (rename_mode, calls) == ("fallback", 1) else 4)
    assert _temps(tmp_path) == []


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_next_writer_removes_temps_of_dead_processes_only(tmp_path: Path) -> None:
    dead, alive = tmp_path / f".ds.tmp-{_dead_pid()}-0123abcd", tmp_path / f".ds.tmp-{os.getpid()}-0123abcd"
    other = tmp_path / f".other.tmp-{_dead_pid()}-0123abcd"
    for path in (dead, alive, other):
        path.mkdir()
        (path / "features.npy").write_bytes(b"x" * 100)
    _write(tmp_path / "ds", 2)
    assert not dead.exists() and alive.exists() and other.exists()


KILL_AT_SWAP = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from graphtier import DatasetWriter
    from graphtier.dataset import swap
    mode, out = sys.argv[1], sys.argv[2]
    if mode == "fallback":
        swap.renameat2 = None
        real, owner, name = os.rename, os, "rename"
    else:
        real, owner, name = swap.renameat2, swap, "renameat2"
    def killing(*args):
        real(*args)
        os.kill(os.getpid(), signal.SIGKILL)
    with DatasetWriter(out, overwrite=True) as writer:
        writer.save("indptr", np.zeros(5, dtype=np.int64))
        writer.save("indices", np.zeros(0, dtype=np.int32))
        setattr(owner, name, killing)
        writer.finish({"name": "w", "num_nodes": 4, "num_edges": 0, "directed": True, "feature_dim": 0,
                       "feature_dtype": "float32", "num_classes": 0, "source": {}})
""")


def test_sigkill_at_the_swap_is_recovered(tmp_path: Path, rename_mode: str) -> None:
    """Killed right after the first rename of the swap: Dataset.open (or the next run) finds a whole dataset."""
    out = tmp_path / "ds"
    write_labelled_graph(out, num_nodes=30)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run(
        [sys.executable, "-c", KILL_AT_SWAP, rename_mode, str(out)], env=env, timeout=120, check=False
    )
    assert result.returncode == -signal.SIGKILL
    assert _temps(tmp_path) != []
    assert Dataset.open(out).num_nodes == (30 if rename_mode == "fallback" else 4)
    _write(tmp_path / "ds", 2, overwrite=True)
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]
