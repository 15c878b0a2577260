"""Node labels in new-id order (:class:`Labels`) and their mapping from (original id, class) pairs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphtier.dataset.importers.common.edges import IdMap
from graphtier.dataset.resources import human_bytes
from graphtier.errors import DatasetError, OptionError

MAX_CLASSES = 1 << 24
"""Most classes a dataset may have: class ids are ``0 .. 2^24 - 1`` (16,777,216 classes).

Class ids are meant to be numbered ``0..K-1``; a larger id is a node id or a hash used as a label.
Every class costs the model an output row of ``hidden`` weights (16 GiB of float32 at ``--hidden``
256 at this bound) plus per-class tables, and 2^24 is where float32 (OGB label files, MATLAB
singles) stops representing every integer, so a larger id may already have been rounded.
"""

REFERENCE_HIDDEN = 256
"""The ``--hidden`` default, used to state the output layer size in the error."""


@dataclass
class Labels:
    """Node labels in new-id order: int64 [N] with -1 for unlabelled, and the class count."""

    values: np.ndarray
    num_classes: int
    class_names: list[str] | None = None


def labels_from_pairs(path: Path, ids: np.ndarray, classes: np.ndarray, idmap: IdMap) -> Labels:
    """Labels of original ``ids`` (int [K]) with integer ``classes`` (int [K]; < 0 = unlabelled)."""
    new = idmap.lookup(ids)
    unknown = np.flatnonzero(new < 0)
    if unknown.size:
        raise DatasetError(
            f"{path}: expected labels for node ids of the graph, found {unknown.size} unknown id(s), "
            f"first {int(ids[unknown[0]])}"
        )
    values = np.full(idmap.num_nodes, -1, dtype=np.int64)
    classes = np.asarray(classes, dtype=np.int64)
    values[new] = np.where(classes >= 0, classes, -1)
    return Labels(values, class_count(path, values))


def labels_from_values(where: str | Path, raw: np.ndarray) -> Labels:
    """:class:`Labels` of one class id per node, ``raw`` [N] of integers or floats.

    Floats must be integral (``2.0``; heco-acm's ``labels.npy`` is float64): a fractional value is a
    :class:`DatasetError` naming ``where`` and the first such row. NaN and negative values mean unlabelled (-1).
    """
    raw = np.asarray(raw)
    if raw.ndim != 1 or not (np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)):
        raise DatasetError(f"{where}: expected one class id per node (1-d numbers), found {raw.dtype} {raw.shape}")
    if np.issubdtype(raw.dtype, np.integer):
        values = raw.astype(np.int64)
        values[values < 0] = -1
        return Labels(values, class_count(where, values))
    finite = np.isfinite(raw)
    fractional = np.flatnonzero(finite & (raw != np.round(raw)))
    if fractional.size:
        row = int(fractional[0])
        raise DatasetError(
            f"{where}: expected integer class labels, found fractional value {float(raw[row]):g} in row {row} "
            f"({fractional.size:,} such rows)"
        )
    values = np.where(finite & (raw >= 0), raw, -1).astype(np.int64)
    return Labels(values, class_count(where, values))


def check_class_count(where: str | Path, num_classes: int, found: str) -> None:
    """Raise :class:`DatasetError` when ``num_classes`` exceeds :data:`MAX_CLASSES`; ``found`` says what set it."""
    if num_classes > MAX_CLASSES:
        layer = num_classes * REFERENCE_HIDDEN * 4
        raise DatasetError(
            f"{where}: expected class ids below {MAX_CLASSES:,} (2^24), found {found}: {num_classes:,} classes "
            f"would need an output layer of {human_bytes(layer)} ({layer:,} bytes) at --hidden {REFERENCE_HIDDEN}; "
            "number the classes 0..K-1"
        )


def class_count(where: str | Path, values: np.ndarray) -> int:
    """``max(values) + 1`` of int64 labels [N] (-1 = unlabelled; 0 when none is labelled), checked against
    :data:`MAX_CLASSES`."""
    high = int(values.max()) if values.size else -1
    check_class_count(where, high + 1, f"max label {high:,}")
    return max(high + 1, 0)


def label_column(values: np.ndarray, column: int | None, where: str | Path) -> np.ndarray:
    """The labels [N] in ``values`` [N] or [N, C]: column ``column`` (0-based, ``--labels-column``) of a 2-d array.

    Without ``column`` a [N, 1] array is read as its only column and anything else is returned as it
    is (the caller checks it). Bad columns are a one-line :class:`OptionError`.
    """
    if column is None:
        return values[:, 0] if values.ndim == 2 and values.shape[1] == 1 else values
    if column < 0:
        raise OptionError(f"--labels-column: expected a column number >= 0 (0-based), found {column}")
    if values.ndim != 2:
        raise OptionError(
            f"--labels-column {column}: expected a 2-d [nodes, columns] array in {where}, found shape {tuple(values.shape)}"
        )
    if column >= values.shape[1]:
        raise OptionError(
            f"--labels-column: expected a column in [0, {values.shape[1]}) of {where} "
            f"(shape {tuple(values.shape)}, 0-based), found {column}"
        )
    return values[:, column]


def mark_unlabelled(classes: np.ndarray, value: float | None) -> np.ndarray:
    """``classes`` [N] with every entry equal to ``value`` (``--unlabelled-value``) set to -1 (a copy when changed)."""
    if value is None:
        return classes
    missing = classes == value
    if not np.any(missing):
        return classes
    out = np.array(classes, dtype=np.float64 if classes.dtype.kind == "f" else np.int64)
    out[missing] = -1
    return out


def renumber_codes(codes: np.ndarray) -> tuple[np.ndarray, int, list[str] | None]:
    """Class ids ``0..K-1`` for integer codes [N] (negative = unlabelled), in ascending order of code.

    Returns ``(values int64 [N] with -1 for unlabelled, K, names)``; ``names`` are the original codes
    as text, or None when the codes already are ``0..K-1``.
    """
    codes = np.asarray(codes, dtype=np.int64)
    labelled = codes >= 0
    classes = np.unique(codes[labelled])
    values = np.full(codes.shape[0], -1, dtype=np.int64)
    values[labelled] = np.searchsorted(classes, codes[labelled])
    names = None if np.array_equal(classes, np.arange(classes.size)) else [str(int(c)) for c in classes]
    return values, int(classes.size), names
