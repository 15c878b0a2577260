"""Sparse matrices from untrusted files are checked before scipy's kernels touch them (no SIGSEGV).

A crafted Planetoid pickle or ``.mat`` file can hold a CSR/CSC matrix whose ids are out of range;
scipy's ``toarray``/``tocsr`` then write out of bounds and kill the process. The CLI runs go through
a subprocess, so that a crash shows as a failed test (exit -11/139), not a dead pytest.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from graphtier.dataset.importers.common.sparse import MAX_DIMENSION, checked_sparse, load_sparse_npz
from graphtier.errors import DatasetError

from .helpers import assert_user_error, run_cli_process, write_planetoid


def _csr(rows: int = 3, cols: int = 4) -> sp.csr_matrix:
    return sp.csr_matrix(np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) % 3)


def test_planetoid_csr_with_out_of_range_columns_is_one_line_not_a_crash(tmp_path: Path) -> None:
    root = tmp_path / "raw"
    root.mkdir()
    write_planetoid(root, "evil", np.random.default_rng(0))
    allx = pickle.loads((root / "ind.evil.allx").read_bytes())
    allx.indices[:] = 10**8  # scipy's csr_todense would write 10^8 columns past each row
    (root / "ind.evil.allx").write_bytes(pickle.dumps(allx, protocol=2))
    result = run_cli_process("prepare", "planetoid", str(root), str(tmp_path / "out"))
    assert_user_error(result, "ind.evil.allx", "'indices'", "[0, 5)", "100000000")
    assert not (tmp_path / "out").exists()


def test_mat_csc_with_out_of_range_rows_is_one_line_not_a_crash(tmp_path: Path) -> None:
    matrix = sp.csc_matrix((np.ones(3), (np.array([0, 1, 2]), np.array([1, 2, 0]))), shape=(3, 3))
    buffer = io.BytesIO()
    scipy.io.savemat(buffer, {"A": matrix})
    row_ids = np.array([2, 0, 1], dtype=np.int32).tobytes()  # the row ids of columns 0, 1, 2
    raw = buffer.getvalue()
    assert raw.count(row_ids) == 1
    path = tmp_path / "bad.mat"
    path.write_bytes(raw.replace(row_ids, np.array([2, 0, 10**6], dtype=np.int32).tobytes()))
    result = run_cli_process("prepare", "mat", str(path), str(tmp_path / "out"), "--adjacency-key", "A")
    assert_user_error(result, "bad.mat", "variable 'A'", "'indices'", "[0, 3)", "1000000")
    assert not (tmp_path / "out").exists()


def _set(field: str, value: Any) -> Callable[[Any], Any]:
    def damage(matrix: Any) -> Any:
        vars(matrix)[field] = value
        return matrix

    return damage


def _lil_column(value: Any) -> Callable[[Any], Any]:
    def damage(matrix: Any) -> Any:
        matrix.rows[1][0] = value
        return matrix

    return damage


@pytest.mark.parametrize(
    ("make", "damage", "fragments"),
    [
        (_csr, _set("indices", np.array([0, 1, 2, 3, -1, 0, 1, 2], np.int32)), ("'indices'", "[0, 4)", "[-1, 3]")),
        (_csr, _set("indptr", np.array([0, 5, 3, 8], np.int32)), ("'indptr'", "non-decreasing")),
        (_csr, _set("indptr", np.array([0, 8], np.int32)), ("'indptr'", "4 entries", "found 2")),
        (_csr, _set("indptr", np.array([0, 3, 6, 99], np.int32)), ("'indptr'", "at most len(indices) = 8")),
        (_csr, _set("indptr", np.array([1, 3, 6, 8], np.int32)), ("'indptr'", "from 0")),
        (_csr, _set("data", np.ones(2, np.float32)), ("'data'", "at least 8 values")),
        (_csr, _set("data", np.array(["a"] * 8)), ("'data'", "numeric")),
        (_csr, _set("indices", [0, 1]), ("'indices'", "1-d integer array", "list")),
        (_csr, _set("indices", np.zeros(8, np.float64)), ("'indices'", "1-d integer array", "float64")),
        (_csr, _set("_shape", (-3, 4)), ("'shape'", f"[0, {MAX_DIMENSION}]")),
        (_csr, _set("_shape", (3, 2**62)), ("'shape'", f"[0, {MAX_DIMENSION}]")),
        (_csr, _set("_shape", "3x4"), ("'shape'", "two integers")),
        (lambda: _csr().tocsc(), _set("indices", np.full(8, 7, np.int32)), ("'indices'", "[0, 3)")),
        (lambda: _csr().tocoo(), _set("coords", (np.array([0] * 7 + [9]), np.arange(8) % 4)), ("'row'", "[0, 3)")),
        (lambda: _csr().tocoo(), _set("coords", (np.arange(8) % 3, np.arange(7) % 4)), ("'col'", "8 entries")),
        (lambda: sp.lil_matrix(_csr()), _lil_column(9), ("'rows'", "[0, 4)", "[0, 9]")),
        (lambda: sp.lil_matrix(_csr()), _lil_column("x"), ("'rows'", "row 1 of integer ids")),
        (lambda: np.eye(2), lambda m: m, ("expected a sparse matrix", "ndarray")),
    ],
)
def test_damaged_sparse_matrices_are_refused(
    make: Callable[[], Any], damage: Callable[[Any], Any], fragments: tuple[str, ...]
) -> None:
    matrix = pickle.loads(pickle.dumps(damage(make())))  # as a pickle would hand it over
    with pytest.raises(DatasetError) as info:
        checked_sparse(matrix, "/data/file.pkl")
    message = str(info.value)
    assert "\n" not in message and message.startswith("/data/file.pkl: ")
    for fragment in fragments:
        assert fragment in message, (fragment, message)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo", "lil"])
def test_valid_sparse_matrices_round_trip(fmt: str) -> None:
    matrix = _csr().asformat(fmt)
    checked = checked_sparse(pickle.loads(pickle.dumps(matrix)), "f")
    assert checked.format in ("csr", "csc")
    np.testing.assert_array_equal(checked.toarray(), matrix.toarray())


def test_unused_tail_of_indices_is_pruned() -> None:
    matrix = _csr()
    vars(matrix)["indices"] = np.concatenate([matrix.indices, np.array([99, 99], np.int32)])
    vars(matrix)["data"] = np.concatenate([matrix.data, np.ones(2, np.float32)])
    np.testing.assert_array_equal(checked_sparse(matrix, "f").toarray(), _csr().toarray())


def test_layout_is_taken_from_the_class_not_the_pickled_state() -> None:
    matrix = _csr()
    vars(matrix)["_format"] = "coo"  # what value.format would report
    vars(matrix)["indices"] = np.full(8, 50, np.int32)
    with pytest.raises(DatasetError, match="'indices': expected ids in \\[0, 4\\)"):
        checked_sparse(matrix, "f")


def test_a_crafted_sparse_npz_is_one_line_never_unpickled_or_out_of_bounds(tmp_path: Path) -> None:
    """``load_sparse_npz`` (manifest features): a pickled member is refused without running it, and ids beyond the
    shape are a DatasetError naming the file, not an out-of-bounds densify."""

    good = sp.random(5, 4, density=0.5, format="csr", random_state=0)
    sp.save_npz(tmp_path / "good.npz", good)
    assert (load_sparse_npz(tmp_path / "good.npz").toarray() == good.toarray()).all()
    arrays = {"format": np.array(b"csr"), "shape": np.array([5, 4]), "indptr": good.indptr, "data": good.data}
    np.savez(tmp_path / "pickled.npz", indices=np.array([object()], dtype=object), **arrays)
    with pytest.raises(DatasetError, match="pickled.npz: not a readable .npz archive"):
        load_sparse_npz(tmp_path / "pickled.npz")
    np.savez(tmp_path / "beyond.npz", indices=np.full(good.nnz, 99, dtype=np.int32), **arrays)
    with pytest.raises(DatasetError, match="beyond.npz"):
        load_sparse_npz(tmp_path / "beyond.npz")
