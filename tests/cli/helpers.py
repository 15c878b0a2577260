"""Run the ``graphtier`` CLI in-process from a test."""

from __future__ import annotations

from typing import Any

import click
import pytest

from graphtier.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``graphtier ARGV`` run in this process."""
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def defaults_as_received(command: click.Command, arguments: list[str]) -> dict[str, Any]:
    """The value each parameter of COMMAND receives when its option is not given on the command line.

    Read by parsing ARGUMENTS (the required positional ones) through click itself, not from ``param.default``:
    how click stores an unset default differs between versions (8.5 keeps a ``Sentinel.UNSET`` there for a
    boolean flag), while what the command's function receives does not."""
    with command.make_context(command.name or "command", list(arguments)) as ctx:
        return dict(ctx.params)
