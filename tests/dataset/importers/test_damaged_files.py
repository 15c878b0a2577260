"""Damaged or mislabelled binary inputs: one error line naming the file, no traceback, no big allocation."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

from .helpers import assert_user_error, run_cli


def _edges(tmp_path: Path) -> Path:
    path = tmp_path / "edges.txt"
    path.write_text("0 1\n1 2\n")
    return path


def _npy_header(shape: tuple[int, ...], descr: str) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


@pytest.mark.parametrize("option", ["--features", "--labels"])
@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (lambda: b"1 2 3\n", ("expected a .npy file (numpy.save), got text",)),
        (lambda: _npy_header((1000,), "<i8") + b"\0" * 80, ("shorter than its header says",)),
        (lambda: _npy_header((1000,), "<i8")[:30], ("not a readable .npy array",)),
        # a 200-byte file whose header promises 80 TB: refused from the header, nothing allocated
        (lambda: _npy_header((10**13,), "<i8") + b"\0" * 64, ("shorter than its header says",)),
    ],
)
def test_damaged_npy_node_data(tmp_path: Path, option: str, content, fragments: tuple[str, ...]) -> None:
    path = tmp_path / "data.npy"
    path.write_bytes(content())
    result = run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "out"), option, str(path))
    assert_user_error(result, "data.npy", option, *fragments)
    assert "allocate" not in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (lambda: b"0 1\n1 2\n", ("expected an .npz archive", "got text")),
        (lambda: b"\x93NUMPY" + b"\0" * 40, ("expected an .npz archive", "got a .npy array")),
        (lambda: _zip_head()[:100], ("not a readable .npz archive",)),
    ],
)
def test_npz_that_is_not_a_zip(tmp_path: Path, content, fragments: tuple[str, ...]) -> None:
    path = tmp_path / "graph.npz"
    path.write_bytes(content())
    assert_user_error(run_cli("prepare", "csr-npz", str(path), str(tmp_path / "out")), "graph.npz", *fragments)
    assert not (tmp_path / "out").exists()


def _zip_head() -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, indptr=np.array([0, 1, 2]), indices=np.array([1, 0]))
    return buffer.getvalue()
