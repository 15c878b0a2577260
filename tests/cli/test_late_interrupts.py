"""Interrupts at the edges of a run: before a dataset writer's ``with`` block is set up (its temporary must still go),
and after the command has finished (the interpreter's shutdown must not print a traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import graphtier.cli as cli
from graphtier.dataset import swap
from graphtier.dataset.writer import DatasetWriter


def test_an_interrupt_before_the_writers_with_block_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted_right_after_the_writer_was_made(argv: list[str]) -> int:
        DatasetWriter(tmp_path / "out")  # its temporary exists; the interrupt comes before any `with`
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_invoke", interrupted_right_after_the_writer_was_made)
    with pytest.raises(SystemExit) as ended:
        cli.main(["generate"])
    assert ended.value.code == 130
    assert capsys.readouterr().err.strip() == "graphtier: interrupted"
    assert list(tmp_path.iterdir()) == []


def test_a_finished_writer_is_no_longer_tracked(tmp_path: Path) -> None:
    with DatasetWriter(tmp_path / "out") as writer:
        temp = writer.tmp
        assert temp in swap._TRACKED
    assert temp not in swap._TRACKED and not temp.exists()


def test_a_signal_after_the_command_finished_is_ignored() -> None:
    script = (
        "import os, signal, sys, time\n"
        "from graphtier.cli import main\n"
        "sys.argv = ['graphtier', '--version']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "time.sleep(0.2)\n"
        "print('still here')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "still here" in done.stdout, done.stderr
    assert "Traceback" not in done.stderr
