"""OutputSet: the outputs of one command replaced together; a signal at any step of the commit leaves all of the
old files or all of the new ones (SIGKILL: once the next write into the folder has recovered the commit)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.outputs import OutputSet, remove_stale_temporaries

REPO = Path(__file__).resolve().parents[2]
# Writes three outputs (two folders: two journals) as one set; the STEP-th os.replace onto a .npy or a journal
# first sends SIGNUM to this process.
CHILD = r"""
import os, sys
import numpy as np
from pathlib import Path
from graphtier.dataset.outputs import OutputSet
*paths, step, signum, value = sys.argv[1:]
step, signum, value = int(step), int(signum), int(value)
real, calls = os.replace, [0]
def replace(src, dst):
    if str(dst).endswith((".npy", ".json")):
        calls[0] += 1
        if calls[0] == step:
            os.kill(os.getpid(), signum)
    return real(src, dst)
os.replace = replace
with OutputSet() as outputs:
    for option, path in zip(("output", "scores", "embeddings"), paths):
        outputs.save_npy(path, np.full(1000, value), option)
    outputs.commit()
print("committed")
"""
STEPS = 2 + 3  # two journals, three files


def _targets(tmp_path: Path) -> list[Path]:
    return [tmp_path / "a" / "ids.npy", tmp_path / "a" / "scores.npy", tmp_path / "b" / "emb.npy"]


def _write(targets: list[Path], value: int, step: int = 0, signum: int = 0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    argv = [sys.executable, "-c", CHILD, *map(str, targets), str(step), str(signum), str(value)]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)


def _values(targets: list[Path]) -> set[int]:
    found = set()
    for path in targets:
        array = np.load(path)
        assert array.shape == (1000,) and (array == array[0]).all(), path
        found.add(int(array[0]))
    return found


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob(".*"))


def test_commit_replaces_every_file_and_an_abandoned_set_none(tmp_path: Path) -> None:
    targets = _targets(tmp_path)
    with OutputSet() as outputs:
        for target in targets:
            outputs.save_npy(target, np.full(1000, 1), "output")
        assert all(not t.exists() for t in targets)  # nothing in place before the commit
        assert outputs.commit() == targets
    assert _values(targets) == {1} and _leftovers(tmp_path) == []
    with pytest.raises(RuntimeError), OutputSet() as outputs:
        outputs.save_npy(targets[0], np.full(1000, 2), "output")
        raise RuntimeError("the command failed before its last output")
    assert _values(targets) == {1} and _leftovers(tmp_path) == []


@pytest.mark.parametrize("step", range(1, STEPS + 1))
def test_sigint_during_the_commit_takes_effect_after_it(tmp_path: Path, step: int) -> None:
    targets = _targets(tmp_path)
    assert _write(targets, 1).returncode == 0
    result = _write(targets, 2, step, signal.SIGINT)
    assert result.returncode == -signal.SIGINT and "KeyboardInterrupt" in result.stderr  # raised after the commit
    assert _values(targets) == {2} and _leftovers(tmp_path) == []


@pytest.mark.parametrize("step", range(1, STEPS + 1))
def test_sigkill_during_the_commit_is_rolled_forward_by_the_next_write(tmp_path: Path, step: int) -> None:
    targets = _targets(tmp_path)
    assert _write(targets, 1).returncode == 0
    result = _write(targets, 2, step, signal.SIGKILL)
    assert result.returncode == -signal.SIGKILL
    for target in targets[::-1]:  # the folder of the last journal first: its journal may be half-written
        remove_stale_temporaries(target)  # what the next write of that file does first
    assert _values(targets) == ({1} if step == 1 else {2}), step
    assert _leftovers(tmp_path) == []
