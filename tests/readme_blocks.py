"""The code blocks of README.md and of the documentation pages, and the graphtier commands in their shell blocks
(tests/test_readme.py, tests/test_docs.py).

A fenced block may be preceded (blank lines allowed) by one marker that says what the README test does
with it; without one, a ``python`` block is executed and a ``bash`` block is only checked (every
``graphtier`` command must resolve to a command with these options and arguments):

    <!-- readme-test: run -->             a bash block whose graphtier commands are executed, in order
    <!-- readme-test: skip (reason) -->   neither executed nor checked; the reason is required
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from tests.cli.helpers import run

README = Path(__file__).resolve().parents[1] / "README.md"

MARKER = re.compile(r"^<!--\s*readme-test:\s*(?P<action>\w+)\s*(?P<reason>\(.*\))?\s*-->$")
FENCE = re.compile(r"^```(?P<lang>[\w+-]*)\s*$")
ACTIONS = ("run", "skip")
SHELL_SEPARATORS = ("&&", "||", ";", "|")


@dataclass(frozen=True)
class Block:
    """One fenced block: its language (``""`` for output), text, first line (1-based) and marker action."""

    lang: str
    text: str
    line: int
    action: str | None = None
    reason: str | None = None
    source: str = "README.md"

    def where(self) -> str:
        return f"{self.source}:{self.line} ({self.lang or 'text'} block)"


def read_blocks(text: str, source: str = "README.md") -> list[Block]:
    """Every fenced block of the markdown ``text`` (the file ``source``, for messages) in order; ValueError on a
    bad or dangling marker or fence."""
    blocks: list[Block] = []
    lines = text.splitlines()
    marker: tuple[str, str | None, int] | None = None
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        found = MARKER.match(line)
        if line.startswith("<!--") and "readme-test" in line and found is None:
            raise ValueError(f"{source}:{index + 1}: unreadable readme-test marker {line!r}")
        if found is not None:
            action, reason = found["action"], found["reason"]
            if action not in ACTIONS:
                raise ValueError(f"{source}:{index + 1}: readme-test action {action!r} is not one of {ACTIONS}")
            if action == "skip" and not reason:
                raise ValueError(f"{source}:{index + 1}: 'readme-test: skip' needs a (reason)")
            marker = (action, reason, index + 1)
            index += 1
            continue
        fence = FENCE.match(line)
        if fence is None:
            if line and marker is not None:
                raise ValueError(f"{source}:{marker[2]}: readme-test marker not followed by a code block")
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{source}:{index + 1}: code block never closed")
        action, reason = (marker[0], marker[1]) if marker else (None, None)
        blocks.append(Block(fence["lang"], "\n".join(lines[index + 1 : end]), index + 2, action, reason, source))
        marker = None
        index = end + 1
    return blocks


def shell_commands(script: str) -> list[list[str]]:
    """The simple commands of a bash block (``\\`` continuations joined, comments dropped, split at ``&&``, ``;`` ...)."""
    commands: list[list[str]] = []
    for logical in script.replace("\\\n", " ").splitlines():
        current: list[str] = []
        for token in shlex.split(logical, comments=True):
            if token in SHELL_SEPARATORS:
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(token)
        if current:
            commands.append(current)
    return commands


def graphtier_arguments(command: list[str]) -> list[str] | None:
    """The arguments after ``graphtier`` (or ``-m graphtier``, as in ``python -m`` and ``torchrun -m``), else None."""
    if command and command[0] == "graphtier":
        return command[1:]
    for position in range(len(command) - 1):
        if command[position] == "-m" and command[position + 1] == "graphtier":
            return command[position + 2 :]
    return None


def resolve(
    command: click.Command, args: list[str], name: str = "graphtier", parent: click.Context | None = None
) -> click.Context:
    """Parse ``args`` as click would run them, down to the leaf command; click's UsageError on an unknown
    command or option, a missing argument or a value its type refuses. Nothing is executed."""
    ctx = command.make_context(name, list(args), parent=parent)
    if isinstance(command, click.Group):
        protected = ctx._protected_args if hasattr(ctx, "_protected_args") else ctx.protected_args  # click 8.2+ / 8.1
        sub_name, sub_command, rest = command.resolve_command(ctx, [*protected, *ctx.args])
        assert sub_name is not None and sub_command is not None
        return resolve(sub_command, rest, sub_name, ctx)
    return ctx


def run_block(block: Block, namespace: dict[str, object], capsys: pytest.CaptureFixture[str]) -> None:
    """Run one block as a reader would: a python block in ``namespace``, a run block's graphtier commands
    in-process (each must exit 0)."""
    if block.lang == "python":
        try:
            exec(compile(block.text, block.where(), "exec"), namespace)  # noqa: S102
        finally:
            capsys.readouterr()
    elif block.action == "run":
        for command in shell_commands(block.text):
            arguments = graphtier_arguments(command)
            assert arguments is not None
            code, _, err = run(arguments, capsys)
            assert code == 0, f"{block.where()}: graphtier {' '.join(arguments)} exited {code}: {err}"
