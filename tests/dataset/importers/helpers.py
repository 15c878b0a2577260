"""Helpers of the importer tests: paths of the real data and running the CLI."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED_DATA = REPO_ROOT / ".." / "shared" / "data"


def shared(relative: str) -> Path:
    """Path of ``relative`` under ../shared/data; skips the test when it is absent."""
    path = (SHARED_DATA / relative).resolve()
    if not path.exists():
        pytest.skip(f"real data {path} not available")
    return path


@dataclass
class CliResult:
    """Exit code and captured output of one CLI run."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str) -> CliResult:
    """Run ``graphtier ARGS`` in this process (fast); an unexpected exception propagates as a test failure."""
    from graphtier.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return CliResult(code, out.getvalue(), err.getvalue())


def run_cli_process(*args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m graphtier ARGS`` in a fresh process (checks the real exit code and stderr)."""
    return subprocess.run(
        [sys.executable, "-m", "graphtier", *args],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
    )


def assert_user_error(result: CliResult | subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Exit code 2, one ``graphtier: error:`` line on stderr that contains every fragment, no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip() and "NumbaWarning" not in line
             and "numba.njit" not in line]
    errors = [line for line in lines if line.startswith("graphtier: error:")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
