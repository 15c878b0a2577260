"""Validate a scipy sparse matrix read from a file before any scipy routine touches its arrays.

scipy's C++ kernels (``toarray``, ``tocsr``, ...) trust ``indptr``/``indices``: a matrix whose
column ids are out of range makes them write out of bounds, and the process dies with SIGSEGV. A
pickle (Planetoid) sets a matrix's arrays directly, and :func:`scipy.io.loadmat` builds sparse
matrices with only a light check, so a crafted file can do exactly that. :func:`checked_sparse`
reads the raw arrays of such a matrix (CSR, CSC, COO or LIL), checks every invariant scipy relies
on, and rebuilds a fresh CSR/CSC matrix from them (then runs scipy's own full check), or raises a
one-line :class:`~graphtier.errors.DatasetError` naming the file and the array.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from graphtier.dataset.checks import index_range, is_non_decreasing
from graphtier.errors import DatasetError

MAX_DIMENSION = 1 << 40
"""Largest number of rows or columns accepted for a sparse matrix (about 10^12): a bigger value is damage."""


_LAYOUTS = {
    "csr": (sp.csr_matrix, sp.csr_array),
    "csc": (sp.csc_matrix, sp.csc_array),
    "coo": (sp.coo_matrix, sp.coo_array),
    "lil": (sp.lil_matrix, sp.lil_array),
}


def _fail(where: str, field: str, expected: str, found: object) -> DatasetError:
    return DatasetError(f"{where}: sparse matrix {field!r}: expected {expected}, found {found}")


def _shape(where: str, state: dict[str, Any]) -> tuple[int, int]:
    raw = state.get("_shape", state.get("shape"))
    if (
        not isinstance(raw, tuple)
        or len(raw) != 2
        or not all(isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) for d in raw)
    ):
        raise _fail(where, "shape", "two integers (rows, columns)", f"{raw!r:.60}")
    rows, cols = int(raw[0]), int(raw[1])
    if not (0 <= rows <= MAX_DIMENSION and 0 <= cols <= MAX_DIMENSION):
        raise _fail(where, "shape", f"two integers in [0, {MAX_DIMENSION}]", (rows, cols))
    return rows, cols


def _int_vector(where: str, field: str, value: Any) -> np.ndarray:
    if not isinstance(value, np.ndarray) or value.ndim != 1 or value.dtype.kind not in "iu":
        found = f"{value.dtype} array of shape {value.shape}" if isinstance(value, np.ndarray) else type(value).__name__
        raise _fail(where, field, "a 1-d integer array", found)
    return value.astype(value.dtype.newbyteorder("="), copy=False)


def _data_vector(where: str, value: Any, length: int) -> np.ndarray:
    if not isinstance(value, np.ndarray) or value.ndim != 1 or value.dtype.kind not in "biuf":
        found = f"{value.dtype} array of shape {value.shape}" if isinstance(value, np.ndarray) else type(value).__name__
        raise _fail(where, "data", "a 1-d numeric array", found)
    if value.shape[0] < length:
        raise _fail(where, "data", f"at least {length} values (one per stored index)", value.shape[0])
    return value[:length].astype(value.dtype.newbyteorder("="), copy=False)


def _check_ids(where: str, field: str, ids: np.ndarray, bound: int) -> None:
    if ids.size:
        low, high = index_range(ids)
        if low < 0 or high >= bound:
            raise _fail(where, field, f"ids in [0, {bound})", f"ids in [{low}, {high}]")


def _compressed(where: str, state: dict[str, Any], layout: str) -> sp.spmatrix:
    rows, cols = _shape(where, state)
    major, minor = (rows, cols) if layout == "csr" else (cols, rows)
    indptr = _int_vector(where, "indptr", state.get("indptr"))
    indices = _int_vector(where, "indices", state.get("indices"))
    if indptr.shape[0] != major + 1:
        raise _fail(
            where, "indptr", f"{major + 1} entries ({'rows' if layout == 'csr' else 'columns'} + 1)", indptr.shape[0]
        )
    first, last = int(indptr[0]), int(indptr[-1])
    if first != 0 or not 0 <= last <= indices.shape[0]:
        raise _fail(
            where, "indptr", f"to run from 0 to at most len(indices) = {indices.shape[0]}", f"{first} .. {last}"
        )
    if not is_non_decreasing(indptr):
        raise _fail(where, "indptr", "non-decreasing values", "a decrease")
    indices = indices[:last]
    _check_ids(where, "indices", indices, minor)
    data = _data_vector(where, state.get("data"), last)
    cls = sp.csr_matrix if layout == "csr" else sp.csc_matrix
    return cls((data, indices, indptr), shape=(rows, cols))


def _coordinates(where: str, state: dict[str, Any]) -> sp.spmatrix:
    rows, cols = _shape(where, state)
    coords = state.get("coords")
    if coords is None:
        coords = (state.get("row"), state.get("col"))
    if not isinstance(coords, tuple) or len(coords) != 2:
        raise _fail(where, "coords", "(row, col) arrays", f"{type(coords).__name__}")
    row = _int_vector(where, "row", coords[0])
    raw_data = state.get("data")
    if isinstance(raw_data, np.ndarray) and raw_data.shape != row.shape:
        raise _fail(where, "data", f"{row.shape[0]} values (one per 'row' entry)", f"shape {raw_data.shape}")
    col = _int_vector(where, "col", coords[1])
    if row.shape != col.shape:
        raise _fail(where, "col", f"{row.shape[0]} entries (as many as 'row')", col.shape[0])
    _check_ids(where, "row", row, rows)
    _check_ids(where, "col", col, cols)
    data = _data_vector(where, raw_data, row.shape[0])
    return sp.coo_matrix((data, (row, col)), shape=(rows, cols)).tocsr()


def _lists(where: str, state: dict[str, Any]) -> sp.spmatrix:
    rows, cols = _shape(where, state)
    row_ids, row_values = state.get("rows"), state.get("data")
    for field, value in (("rows", row_ids), ("data", row_values)):
        if not isinstance(value, np.ndarray) or value.dtype != object or value.shape != (rows,):
            found = (
                f"{value.dtype} array of shape {value.shape}" if isinstance(value, np.ndarray) else type(value).__name__
            )
            raise _fail(where, field, f"an object array of {rows} lists", found)
    indptr = np.zeros(rows + 1, dtype=np.int64)
    id_parts, value_parts = [], []
    for r in range(rows):
        ids, values = row_ids[r], row_values[r]
        if not isinstance(ids, list) or not isinstance(values, list) or len(ids) != len(values):
            raise _fail(where, "rows", f"row {r} as two lists of equal length (ids, values)", type(ids).__name__)
        try:
            id_parts.append(np.array(ids, dtype=np.int64))
            value_parts.append(np.array(values, dtype=np.float64))
        except (TypeError, ValueError, OverflowError) as exc:
            raise _fail(where, "rows", f"row {r} of integer ids and numbers", f"({exc})") from None
        indptr[r + 1] = indptr[r] + len(ids)
    indices = np.concatenate(id_parts) if id_parts else np.empty(0, np.int64)
    _check_ids(where, "rows", indices, cols)
    data = np.concatenate(value_parts) if value_parts else np.empty(0, np.float64)
    return sp.csr_matrix((data, indices, indptr), shape=(rows, cols))


def checked_sparse(value: Any, where: str | Path) -> sp.spmatrix:
    """A fresh CSR or CSC matrix equal to the scipy sparse matrix ``value``, after checking its arrays.

    ``value`` comes from an untrusted file (a pickle's state or :func:`scipy.io.loadmat`). Checked:
    the shape (two integers in ``[0, MAX_DIMENSION]``), ``indptr`` (``rows + 1`` (CSR) or
    ``columns + 1`` (CSC) integers from 0 to at most ``len(indices)``, non-decreasing), ``indices``/
    ``row``/``col`` within the shape, ``data`` numeric and as long as the indices. ``where`` names
    the file (and variable) in the :class:`DatasetError` raised for any violation. The result has
    passed ``check_format(full_check=True)``, so scipy's kernels may use it.
    """
    where = str(where)
    if not sp.issparse(value):
        raise DatasetError(f"{where}: expected a sparse matrix, found {type(value).__name__}")
    # by class, not value.format: that property reads the instance state, which the file sets
    layout = next((name for name, classes in _LAYOUTS.items() if isinstance(value, classes)), None)
    state = vars(value)
    try:
        if layout in ("csr", "csc"):
            matrix = _compressed(where, state, layout)
        elif layout == "coo":
            matrix = _coordinates(where, state)
        elif layout == "lil":
            matrix = _lists(where, state)
        else:
            raise DatasetError(f"{where}: expected a CSR, CSC, COO or LIL sparse matrix, found {type(value).__name__}")
        matrix.check_format(full_check=True)
    except DatasetError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:  # scipy's own check of what we built
        raise DatasetError(f"{where}: not a valid sparse matrix ({type(exc).__name__}: {exc})") from None
    return matrix


def load_sparse_npz(path: Path) -> sp.spmatrix:
    """The scipy sparse matrix of a ``scipy.sparse.save_npz`` file (CSR, CSC or COO), read without pickles.

    The archive's arrays are read with ``allow_pickle=False`` and checked like :func:`checked_sparse`
    (ids within the shape, ``indptr`` consistent), so a damaged or crafted file is a one-line
    :class:`DatasetError` naming ``path``, never an out-of-bounds write. Returns a CSR or CSC matrix.
    """
    where = str(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise DatasetError(f"{where}: not a readable .npz archive ({exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise DatasetError(f"{where}: expected a scipy.sparse .npz archive, found a single array")
    with archive:
        try:
            arrays = {key: archive[key] for key in archive.files}
        except Exception as exc:  # a damaged or pickled member
            raise DatasetError(f"{where}: not a readable .npz archive ({exc})") from None
    raw_format = arrays.get("format")
    if raw_format is None or raw_format.ndim != 0 or raw_format.dtype.kind not in "SU":
        raise _fail(
            where,
            "format",
            "'csr', 'csc' or 'coo' (scipy.sparse.save_npz; PATH:KEY takes one array of any .npz)",
            f"{sorted(arrays)}",
        )
    layout = raw_format.item()
    layout = layout.decode("latin-1") if isinstance(layout, bytes) else str(layout)
    shape = arrays.get("shape")
    if shape is None or shape.ndim != 1 or shape.shape[0] != 2 or shape.dtype.kind not in "iu":
        raise _fail(where, "shape", "two integers (rows, columns)", None if shape is None else shape.shape)
    state: dict[str, Any] = {key: value for key, value in arrays.items() if key not in ("format", "shape")}
    state["shape"] = (int(shape[0]), int(shape[1]))
    if layout in ("csr", "csc"):
        matrix = _compressed(where, state, layout)
    elif layout == "coo":
        matrix = _coordinates(where, state)
    else:
        raise _fail(where, "format", "'csr', 'csc' or 'coo'", repr(layout))
    try:
        matrix.check_format(full_check=True)
    except (TypeError, ValueError, OverflowError) as exc:
        raise DatasetError(f"{where}: not a valid sparse matrix ({type(exc).__name__}: {exc})") from None
    return matrix


class DenseRows:
    """Row blocks of a sparse (or dense) feature matrix [N, D] as dense arrays, for the block-wise copy of
    :func:`~graphtier.dataset.importers.common.features.write_feature_file`: ``rows[a:b]`` or ``rows[ids]`` is a dense
    float32 (float16 kept) array, so the whole matrix is never densified at once."""

    def __init__(self, matrix: Any) -> None:
        self.matrix = matrix
        self.shape = tuple(int(d) for d in matrix.shape)
        self.ndim = 2
        dtype = np.dtype(matrix.dtype)
        self.dtype = dtype if dtype in (np.float16, np.float32) else np.dtype(np.float32)

    def __getitem__(self, rows: Any) -> np.ndarray:
        block = self.matrix[rows]
        block = block.toarray() if hasattr(block, "toarray") else np.asarray(block)
        return block.astype(self.dtype, copy=False)
