"""The variables of a MATLAB ``.mat`` file, read safely, and the graph parts they hold.

:func:`load_mat` reads the file with :func:`scipy.io.loadmat` (MATLAB v4 to v7.2; v7.3 files are HDF5 and are
refused with a message saying how to re-save them); the readers check an adjacency, a feature matrix and labels.
Used by ``prepare mat`` (:mod:`~graphtier.dataset.importers.formats.mat`), its typed mode and ``PATH:KEY`` members.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset.importers.common.filekind import sniff_file
from graphtier.dataset.importers.common.labels import (
    Labels,
    check_class_count,
    label_column,
    mark_unlabelled,
    renumber_codes,
)
from graphtier.dataset.importers.common.mat_splits import NONE
from graphtier.dataset.importers.common.sparse import DenseRows, checked_sparse
from graphtier.errors import DatasetError, OptionError

ADJACENCY_KEYS = ("network", "Network", "adjacency", "adj", "A", "net", "homo", "graph", "W", "G")
"""Default adjacency keys, tried in this order."""

FEATURE_KEYS = ("features", "feature", "attributes", "Attributes", "attrb", "feats", "X", "x")
"""Default feature keys, tried in this order (none present: no features)."""

LABEL_KEYS = ("labels", "label", "Label", "group", "gnd", "class", "y", "Y")
"""Default label keys, tried in this order (none present: no labels)."""


def load_mat(path: Path, variable_names: Sequence[str] | None = None) -> dict[str, Any]:
    """The variables of the ``.mat`` file ``path`` (``__header__`` and friends removed); only those of
    ``variable_names`` (the others' data is skipped, not read) when given."""
    import scipy.io

    kind, description = sniff_file(path)
    if kind == "hdf5":
        raise DatasetError(
            f"{path}: expected a MATLAB .mat file of version 7.2 or older, got {description}; "
            "re-save it in MATLAB with save(..., '-v7')"
        )
    if kind not in ("mat", "binary"):
        raise DatasetError(f"{path}: expected a MATLAB .mat file (scipy.io.loadmat), got {description}")
    try:
        variables = scipy.io.loadmat(str(path), variable_names=variable_names)
    except NotImplementedError as exc:  # v7.3
        raise DatasetError(f"{path}: cannot read this .mat version ({exc})") from None
    except Exception as exc:  # scipy raises ValueError/MatReadError/TypeError on damaged files
        raise DatasetError(f"{path}: not a readable MATLAB .mat file ({type(exc).__name__}: {exc})") from None
    return {k: v for k, v in variables.items() if not k.startswith("__")}


def pick_variable(
    variables: dict[str, Any], path: Path, key: str | None, defaults: Sequence[str], option: str, required: bool
) -> str | None:
    """The variable ``key`` (checked to exist), else the first of ``defaults`` present; ``"none"`` or nothing
    found (when not ``required``) gives None."""
    if key is not None:
        if key == NONE:
            if required:
                raise OptionError(f"{option}: expected a variable name, found {NONE!r}")
            return None
        if key not in variables:
            raise DatasetError(f"{path}: {option} {key!r}: no such variable; the file has {sorted(variables)}")
        return key
    for candidate in defaults:
        if candidate in variables:
            return candidate
    if required:
        raise DatasetError(
            f"{path}: expected an adjacency matrix under one of {', '.join(defaults)}, found variables "
            f"{sorted(variables)}; pass {option} NAME"
        )
    return None


def _numeric_matrix(value: Any, path: Path, key: str) -> Any:
    """A scipy CSR matrix or a 2-d numeric ndarray, else :class:`DatasetError`."""
    import scipy.sparse as sp

    if sp.issparse(value):  # checked first: loadmat does not check the ids, scipy's kernels trust them
        return sp.csr_matrix(checked_sparse(value, f"{path}: variable {key!r}"))
    array = np.asarray(value)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise DatasetError(
            f"{path}: variable {key!r}: expected a numeric matrix, found {array.dtype} (a cell or struct?)"
        )
    if array.ndim != 2:
        raise DatasetError(f"{path}: variable {key!r}: expected a 2-d matrix, found shape {array.shape}")
    return array


def read_adjacency(value: Any, path: Path, key: str) -> tuple[np.ndarray, np.ndarray, int]:
    """``(indptr int64 [N + 1], indices int [E], N)``: row ``u`` lists ``v`` with ``value[u, v] != 0``."""
    import scipy.sparse as sp

    matrix = _numeric_matrix(value, path, key)
    if matrix.shape[0] != matrix.shape[1]:
        raise DatasetError(f"{path}: variable {key!r}: expected a square adjacency matrix, found shape {matrix.shape}")
    csr = sp.csr_matrix(matrix)
    csr.eliminate_zeros()
    csr.sort_indices()
    return csr.indptr.astype(np.int64), csr.indices, int(csr.shape[0])


def read_features(value: Any, path: Path, key: str, num_nodes: int) -> DenseRows:
    """The feature matrix ``value`` [N, D] (sparse or dense), checked against the adjacency."""
    matrix = _numeric_matrix(value, path, key)
    if matrix.shape[0] != num_nodes:
        hint = " (transposed? it has one column per node)" if matrix.shape[1] == num_nodes else ""
        raise DatasetError(
            f"{path}: variable {key!r}: expected {num_nodes} feature rows (one per node of the adjacency), "
            f"found shape {tuple(matrix.shape)}{hint}"
        )
    if matrix.shape[1] == 0:
        raise DatasetError(
            f"{path}: variable {key!r}: expected at least one feature column, found shape {matrix.shape}"
        )
    return DenseRows(matrix)


def read_mat_labels(
    value: Any, path: Path, key: str, num_nodes: int, *, column: int | None = None, unlabelled: float | None = None
) -> Labels:
    """Labels from a class-id vector ([N], [N, 1] or [1, N]), one column of a matrix, or a one-hot matrix [N, K].

    Class ids that are not ``0..K-1`` (MATLAB's 1-based ids, years, ...) are renumbered in ascending
    order and their original values kept as class names; negative or NaN ids, and ids equal to
    ``unlabelled`` (``--unlabelled-value``), mean unlabelled. ``column`` (``--labels-column``, 0-based)
    takes that column of a 2-d variable [N, C] (Facebook100's ``local_info``). A one-hot row without a
    1 is unlabelled; a row with several (multi-label) is an error.
    """
    import scipy.sparse as sp

    where = f"{path}: variable {key!r}"
    matrix = _numeric_matrix(value, path, key)
    shape = tuple(matrix.shape)
    if column is not None:
        dense = np.asarray(matrix.toarray() if sp.issparse(matrix) else matrix)
        matrix = label_column(dense, column, where)[:, None]
        shape = tuple(matrix.shape)
        if shape[0] != num_nodes:
            raise DatasetError(f"{where}: expected {num_nodes} rows (one per node), found shape {tuple(dense.shape)}")
    if shape in ((num_nodes, 1), (1, num_nodes)) or (num_nodes == 1 and shape == (1, 1)):
        raw = np.asarray(matrix.toarray() if sp.issparse(matrix) else matrix, dtype=np.float64).reshape(-1)
        raw = mark_unlabelled(raw, unlabelled)
        labelled = np.isfinite(raw) & (raw >= 0)
        if np.any(raw[labelled] != np.round(raw[labelled])):
            raise DatasetError(f"{where}: expected integer class ids, found fractional values")
        values, num_classes, names = renumber_codes(np.where(labelled, raw, -1).astype(np.int64))
        return Labels(values, num_classes, names)
    if shape[0] != num_nodes:
        raise DatasetError(
            f"{where}: expected labels for {num_nodes} nodes (a vector or a one-hot "
            f"[{num_nodes}, K] matrix), found shape {shape}"
        )
    check_class_count(where, shape[1], f"a one-hot matrix of {shape[1]:,} columns")
    binary = sp.csr_matrix(matrix)
    binary.eliminate_zeros()
    column_hint = "; pass --labels-column C (0-based) to use one column as the labels"
    if binary.data.size and not np.all(binary.data == 1):
        raise DatasetError(
            f"{where}: expected a class-id vector or a one-hot [{num_nodes}, K] matrix, found a {shape[0]} x {shape[1]} "
            f"matrix with values other than 0 and 1 (an attribute table?){column_hint}"
        )
    per_row = np.diff(binary.indptr)
    several = int(np.count_nonzero(per_row > 1))
    if several:
        raise DatasetError(
            f"{where}: expected one class per node (one-hot rows), found {several} rows with "
            f"several labels (multi-label data is not supported){column_hint}"
        )
    values = np.full(num_nodes, -1, dtype=np.int64)
    rows = np.flatnonzero(per_row == 1)
    values[rows] = binary.indices[binary.indptr[rows]]
    return Labels(values, int(shape[1]))


def unused_variables(variables: dict[str, Any], used: Sequence[str | None]) -> dict[str, str]:
    """``{name: "shape dtype"}`` of the variables of a ``.mat`` the import does not use (printed by ``prepare``)."""
    out = {}
    for name, value in sorted(variables.items()):
        if name in used:
            continue
        shape = getattr(value, "shape", None)
        dtype = getattr(value, "dtype", None)
        described = " x ".join(str(d) for d in shape) if shape is not None else type(value).__name__
        out[name] = f"{described} {dtype}" if dtype is not None else described
    return out
