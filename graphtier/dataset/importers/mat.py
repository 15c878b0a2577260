"""Import a MATLAB ``.mat`` file: ``graphtier prepare mat SOURCE OUTPUT``.

Many attributed-graph datasets (ACM, BlogCatalog, Flickr, the fraud graphs, ...) are shared as a
``.mat`` holding a square adjacency matrix (sparse or dense; entry ``[u, v] != 0`` is an edge
``u -> v``), a feature matrix [N, D] (sparse or dense) and labels: a vector of class ids or a
one-hot matrix [N, K]. The file is read with :func:`scipy.io.loadmat` (MATLAB v4 to v7.2; v7.3
files are HDF5 and are refused with a message saying how to re-save them).

Keys default to the first present of :data:`ADJACENCY_KEYS`, :data:`FEATURE_KEYS` and
:data:`LABEL_KEYS`; ``adjacency_key``/``features_key``/``labels_key`` pick others, and ``"none"``
skips features or labels.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers import edges, finish, node_data, textio
from graphtier.dataset.importers.csr_npz import compressed_edge_chunks
from graphtier.dataset.importers.labels import (
    Labels,
    check_class_count,
    label_column,
    mark_unlabelled,
    renumber_codes,
)
from graphtier.dataset.importers.mat_splits import NONE, choose_split_keys, read_split_variables
from graphtier.dataset.importers.options import ImportOptions
from graphtier.dataset.importers.sparse import DenseRows, checked_sparse
from graphtier.dataset.importers.splits import save_splits
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError

ADJACENCY_KEYS = ("network", "Network", "adjacency", "adj", "A", "net", "homo", "graph", "W", "G")
"""Default adjacency keys, tried in this order."""

FEATURE_KEYS = ("features", "feature", "attributes", "Attributes", "attrb", "feats", "X", "x")
"""Default feature keys, tried in this order (none present: no features)."""

LABEL_KEYS = ("labels", "label", "Label", "group", "gnd", "class", "y", "Y")
"""Default label keys, tried in this order (none present: no labels)."""


def load_mat(path: Path) -> dict[str, Any]:
    """The variables of the ``.mat`` file ``path`` (``__header__`` and friends removed)."""
    import scipy.io

    kind, description = node_data.sniff(path)
    if kind == "hdf5":
        raise DatasetError(
            f"{path}: expected a MATLAB .mat file of version 7.2 or older, got {description}; "
            "re-save it in MATLAB with save(..., '-v7')"
        )
    if kind not in ("mat", "binary"):
        raise DatasetError(f"{path}: expected a MATLAB .mat file (scipy.io.loadmat), got {description}")
    try:
        variables = scipy.io.loadmat(str(path))
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


def import_mat(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    name: str | None = None,
    overwrite: bool = False,
    adjacency_key: str | Sequence[str] | None = None,
    features_key: str | None = None,
    labels_key: str | None = None,
    split_keys: str | Sequence[str] | None = None,
    options: ImportOptions | None = None,
    progress: Progress = NO_PROGRESS,
    **option_values: Any,
) -> Dataset:
    """Import the graph in the MATLAB file ``source`` into the dataset directory ``output``.

    Args:
        source: a ``.mat`` (v4 to v7.2) file.
        adjacency_key, features_key, labels_key: variable names (default: the first present of
            :data:`ADJACENCY_KEYS`, :data:`FEATURE_KEYS`, :data:`LABEL_KEYS`); ``"none"`` skips
            features or labels. Several adjacency keys (HAN's ``["PAP", "PLP"]``) make a typed dataset: one
            node type, one relation per key (:func:`~graphtier.dataset.importers.mat_typed.import_mat_relations`).
        split_keys: the file's own split, ``"train_idx,val_idx,test_idx"`` or three names (0- or 1-based
            detected, see :func:`read_split_variables`); ``"none"``: not read. Default: the variables of
            :data:`SPLIT_GUESSES` when all three are present and no random ``split`` is asked for; what
            happened to a split the file holds is said in ``meta.json`` (``source.split``).
        options, option_values: the shared :class:`ImportOptions`, as for the edge-list importer;
            ``labels``/``features`` files replace the variables (row k = node k of the adjacency),
            ``labels_column`` takes a column of a 2-d labels variable or file, ``unlabelled_value`` is the
            class id that means "no label" (Facebook100 uses 0); synthetic features or labels need the
            file to have none (``features_key``/``labels_key`` ``"none"``).
        progress: reports building the CSC, copying the features and validating.

    Returns:
        The written :class:`Dataset` (``meta.source.options`` names the variables used,
        ``meta.source.unused_variables`` the others with their shapes).
    """
    path = textio.require_file(source, ".mat file")
    options = ImportOptions.of(options, option_values)
    labels, features = options.labels, options.features
    if labels is not None and labels_key not in (None, NONE):
        raise OptionError(f"--labels and --labels-key: expected at most one, found both ({labels}, {labels_key!r})")
    if features is not None and features_key not in (None, NONE):
        raise OptionError(
            f"--features and --features-key: expected at most one, found both ({features}, {features_key!r})"
        )
    variables = load_mat(path)
    adjacency_keys = [adjacency_key] if adjacency_key is None or isinstance(adjacency_key, str) else list(adjacency_key)
    if len(adjacency_keys) > 1:
        from graphtier.dataset.importers.mat_typed import import_mat_relations

        return import_mat_relations(
            path,
            variables,
            output,
            name=name,
            overwrite=overwrite,
            adjacency_keys=adjacency_keys,
            features_key=features_key,
            labels_key=labels_key,
            split_keys=split_keys,
            options=options,
            progress=progress,
        )
    split_vars, split_note = choose_split_keys(variables, split_keys, options.split)
    adj_key = pick_variable(
        variables, path, adjacency_keys[0] if adjacency_keys else None, ADJACENCY_KEYS, "--adjacency-key", required=True
    )
    feat_key = (
        None
        if features is not None
        else pick_variable(variables, path, features_key, FEATURE_KEYS, "--features-key", required=False)
    )
    lab_key = (
        None
        if labels is not None
        else pick_variable(variables, path, labels_key, LABEL_KEYS, "--labels-key", required=False)
    )
    assert adj_key is not None
    if feat_key is not None and options.synthetic_features:
        raise OptionError(
            f"--synthetic-features: {path} already has features ({feat_key!r}); pass --features-key none to replace them"
        )
    if lab_key is not None and options.synthetic_labels:
        raise OptionError(
            f"--synthetic-labels: {path} already has labels ({lab_key!r}); pass --labels-key none to replace them"
        )
    options.check_inputs(labels_in_source=lab_key is not None, label_sources=("labels_key", "labels"))
    indptr_in, indices_in, n = read_adjacency(variables[adj_key], path, adj_key)
    idmap = edges.IdMap(num_nodes=n)
    feature_rows = read_features(variables[feat_key], path, feat_key, n) if feat_key is not None else None
    if lab_key is not None:
        parsed_labels = read_mat_labels(
            variables[lab_key], path, lab_key, n, column=options.labels_column, unlabelled=options.unlabelled_value
        )
    elif labels is not None:
        parsed_labels = node_data.read_raw_labels(
            labels, options.labels_layout, column=options.labels_column, unlabelled=options.unlabelled_value
        ).to_labels(labels, idmap)
    else:
        parsed_labels = None
    splits = None
    if split_vars is not None:
        splits, split_note = read_split_variables(variables, path, split_vars, n)
    unused = unused_variables(variables, (adj_key, feat_key, lab_key, *(split_vars or ())))
    del variables
    built = edges.build_csc(
        compressed_edge_chunks(indptr_in, indices_in, "csr"),
        n,
        undirected=options.undirected,
        keep_duplicates=options.keep_duplicates,
        drop_self_loops=options.drop_self_loops,
        progress=progress,
        num_input_edges=int(indptr_in[-1]),
    )
    del indptr_in, indices_in
    indptr, indices, edge_counts = built.indptr, built.indices, built.counts
    del built
    format_options = {
        "adjacency_key": adj_key,
        "features_key": feat_key,
        "labels_key": lab_key,
        "split_keys": list(split_vars) if split_vars else None,
    }
    with DatasetWriter(output, overwrite=overwrite) as writer:
        writer.source_notes["unused_variables"] = unused
        if split_note:
            writer.source_notes["split"] = split_note
        if splits is not None:
            save_splits(writer, splits)
        feature_source: Any = feature_rows
        if features is not None:
            feature_source = node_data.read_feature_matrix(features, writer.tmp / "features.scratch")
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        num_edges = int(indices.shape[0])
        del indices
        return finish.finish_edge_import(
            writer,
            idmap,
            importer="mat",
            source=path,
            name=name,
            num_edges=num_edges,
            edge_counts=edge_counts,
            labels=parsed_labels,
            features=feature_source,
            options=options,
            format_options=format_options,
            progress=progress,
        )
