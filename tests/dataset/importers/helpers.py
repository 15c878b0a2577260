"""Helpers of the importer tests: paths of the real data and running the CLI."""

from __future__ import annotations

import contextlib
import io
import pickle
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

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
    lines = [
        line
        for line in result.stderr.splitlines()
        if line.strip() and "NumbaWarning" not in line and "numba.njit" not in line
    ]
    errors = [line for line in lines if line.startswith("graphtier: error:")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])


def write_planetoid(root: Path, prefix: str, rng: np.random.Generator) -> None:
    """A tiny Planetoid dataset whose test.index range has holes (like CiteSeer)."""
    classes, dim, n_labelled, n_all = 3, 5, 6, 527
    test_index = np.array([535, 530, 528, 532, 527, 534])  # range 527..535 misses 529, 531, 533

    def csr(rows: int) -> sp.csr_matrix:
        return sp.csr_matrix((rng.random((rows, dim)) < 0.4).astype(np.float32))

    def onehot(rows: int) -> np.ndarray:
        return np.eye(classes, dtype=np.int64)[rng.integers(0, classes, rows)]

    n = 536
    graph = defaultdict(list)
    for _ in range(1500):
        u, v = (int(x) for x in rng.integers(0, n, 2))
        graph[u].append(v)
    graph[3].append(3)  # a self-loop, dropped
    parts = {
        "x": csr(n_labelled),
        "y": onehot(n_labelled),
        "allx": csr(n_all),
        "ally": onehot(n_all),
        "tx": csr(test_index.size),
        "ty": onehot(test_index.size),
        "graph": graph,
    }
    parts["x"] = parts["allx"][:n_labelled]
    parts["y"] = parts["ally"][:n_labelled]
    for name, value in parts.items():
        with open(root / f"ind.{prefix}.{name}", "wb") as f:
            pickle.dump(value, f, protocol=2)
    (root / f"ind.{prefix}.test.index").write_text("\n".join(str(i) for i in test_index) + "\n")
