"""Node data files of the importers: ``--features`` and ``--labels`` in the formats users have.

* features: a ``.npy`` [rows, D] (``numpy.save``) or a dense text matrix, one row per node, numbers
  separated by blanks or commas (optionally gzip; ``#``/``%`` comment lines);
* labels: a ``.npy`` int [rows], or text in one of two layouts: ``pairs`` (``id,label`` lines) or
  ``lines`` (line k holds the label of node k); ``auto`` picks by the number of columns;
* in every dense form row ``k`` belongs to original node id ``k``.

Files are recognised by their content (magic bytes), so a text file named ``.npy`` or a ``.npz``
passed as features gets an error that names the expected and the found format. The rows a file
covers become nodes even when they have no edge (see :class:`NodeCoverage`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphtier.dataset.importers.common import kernels, textio
from graphtier.dataset.importers.common.edges import IdMap, gather_rows
from graphtier.dataset.importers.common.labels import (
    MAX_CLASSES,
    Labels,
    class_count,
    label_column,
    labels_from_pairs,
    mark_unlabelled,
    renumber_codes,
)
from graphtier.dataset.importers.common.members import MemberPath, load_dense_member, load_member, sniff
from graphtier.dataset.importers.common.sparse import DenseRows, load_sparse_npz
from graphtier.errors import DatasetError, OptionError

# Random streams of generated node data, drawn as np.random.default_rng([seed, stream]): feature row block k
# uses stream k (features.synthetic_features), the class centroids and the synthetic labels these two.
CENTROIDS_STREAM = 2**32 - 1
SYNTHETIC_LABELS_STREAM = 2**32 - 2

LABEL_LAYOUTS = ("auto", "pairs", "lines")


def load_npy(path: Path, option: str) -> np.ndarray:
    """The ``.npy`` ``path`` given to ``option``, memory-mapped read-only; an error naming the format found otherwise.

    Memory-mapping checks the file's length against its header before anything is allocated, so a
    small damaged file that claims a huge shape is refused instead of allocating that shape. A ``PATH:KEY``
    (:class:`~graphtier.dataset.importers.common.members.MemberPath`) is read into memory instead.
    """
    if isinstance(path, MemberPath):
        return load_dense_member(path, option)
    kind, description = sniff(path)
    if kind != "npy":
        raise DatasetError(f"{path}: {option}: expected a .npy file (numpy.save), got {description}")
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc) or "Python objects" in str(exc):
            raise DatasetError(
                f"{path}: {option}: expected a numeric .npy array, found an object (pickled) array"
            ) from None
        if "mmap length is greater than file size" in str(exc):
            raise DatasetError(
                f"{path}: {option}: not a readable .npy array (the file is shorter than its header says: truncated?)"
            ) from None
        raise DatasetError(f"{path}: {option}: not a readable .npy array ({exc})") from None
    except Exception as exc:  # numpy raises OSError/EOFError on damaged files
        raise DatasetError(f"{path}: {option}: not a readable .npy array ({exc})") from None


# ---------------------------------------------------------------------------- features


def read_feature_matrix(path: str | os.PathLike[str], scratch: Path) -> np.ndarray:
    """The ``--features`` matrix [rows, D] of ``path``: a ``.npy`` (memory-mapped), a text matrix, a
    ``scipy.sparse.save_npz`` archive or a sparse ``PATH:KEY`` member (both as :class:`DenseRows`: densified
    block by block as the rows are copied, never whole), or a dense ``PATH:KEY`` member (in memory).

    A text matrix is parsed chunk by chunk into the raw float32 file ``scratch`` (removed by the
    caller's writer) and returned memory-mapped, so it never exists as Python objects.
    """
    p = textio.require_file(path, "--features file")
    kind, description = sniff(p)
    if isinstance(p, MemberPath) or (kind == "npz" and p.suffix != ".npy"):
        try:
            member = load_member(p) if isinstance(p, MemberPath) else load_sparse_npz(p)
        except DatasetError as exc:
            raise DatasetError(f"{exc} (--features)") from None
        feats = member if isinstance(member, np.ndarray) else DenseRows(member)
    elif p.suffix == ".npy" or kind == "npy":
        feats = load_npy(p, "--features")
    elif kind in ("text", "gzip"):
        feats = _read_text_matrix(p, scratch)
    else:
        raise DatasetError(
            f"{p}: --features: expected a .npy array, a scipy.sparse .npz, PATH:KEY of an .npz or .mat, or a "
            f"text matrix (one row per node), got {description}"
        )
    if feats.ndim != 2:
        raise DatasetError(f"{p}: --features: expected a 2-d array [nodes, dim], found shape {tuple(feats.shape)}")
    if not (np.issubdtype(feats.dtype, np.number) or feats.dtype == np.bool_) or np.iscomplexobj(feats):
        raise DatasetError(f"{p}: --features: expected a numeric array, found dtype {feats.dtype}")
    if feats.shape[1] == 0:
        raise DatasetError(f"{p}: --features: expected at least one feature column, found shape {tuple(feats.shape)}")
    return feats


def _read_text_matrix(path: Path, scratch: Path) -> np.ndarray:
    first = textio.first_data_lines(path, 1)
    if not first:
        raise DatasetError(
            f"{path}: --features: expected a text matrix (one row of numbers per node), found no data line"
        )
    dim = textio.count_columns(first[0])
    rows = 0
    with open(scratch, "wb") as out:
        for block in textio.iter_float_rows(
            path, dim, expected=f"{dim} numbers per line (blank- or comma-separated, one row per node)"
        ):
            out.write(memoryview(np.ascontiguousarray(block)).cast("B"))
            rows += block.shape[0]
    if rows == 0:
        return np.empty((0, dim), dtype=np.float32)
    return np.memmap(scratch, dtype=np.float32, mode="r", shape=(rows, dim))


# ---------------------------------------------------------------------------- labels


@dataclass
class RawLabels:
    """Labels in original-id space, before the node ids are known.

    ``ids`` is None for the dense layouts (``classes[k]`` is the label of node id ``k``), else the
    int64 [K] node ids of the ``pairs`` lines. ``classes`` is int64 (< 0 = unlabelled).
    """

    classes: np.ndarray
    ids: np.ndarray | None = None
    class_names: list[str] | None = None
    layout: str = "pairs"

    @property
    def dense_rows(self) -> int:
        """Node ids ``0..dense_rows-1`` covered by a dense layout (0 for pairs)."""
        return int(self.classes.shape[0]) if self.ids is None else 0

    def to_labels(self, path: Path, idmap: IdMap) -> Labels:
        """The labels of every node of ``idmap`` (int64 [N], -1 = unlabelled)."""
        if self.ids is None:
            rows = gather_rows(path, self.classes.shape[0], idmap, "--labels")
            values = self.classes.astype(np.int64) if rows is None else self.classes[rows].astype(np.int64)
            values[values < 0] = -1
            labels = Labels(values, class_count(path, values))
        else:
            labels = labels_from_pairs(path, self.ids, self.classes, idmap)
        if self.class_names is not None:
            labels.class_names = self.class_names
            labels.num_classes = len(self.class_names)
        return labels


def _codes(names: list[str]) -> tuple[np.ndarray, list[str]]:
    class_names = sorted(set(names))
    code = {c: i for i, c in enumerate(class_names)}
    return np.array([code[n] for n in names], dtype=np.int64), class_names


def read_raw_labels(
    path: str | os.PathLike[str],
    layout: str = "auto",
    header: str = "auto",
    *,
    column: int | None = None,
    unlabelled: int | None = None,
) -> RawLabels:
    """Read ``--labels`` in ``layout`` (``auto``, ``pairs``, ``lines``) with integer node ids.

    ``.npy``: int [rows] (or [rows, C] with ``column``), row k = node id k. ``pairs``: ``id,label``
    lines. ``lines``: one label per line, line k (counting data lines; blank and ``#`` lines are
    skipped) = node id k. Labels are integers (negative = unlabelled) or class names (numbered in
    sorted name order). ``column`` (``--labels-column``, 0-based) takes one column of a 2-d
    ``.npy`` or of a text matrix (one row of integers per node); ``unlabelled``
    (``--unlabelled-value``) marks that class id as unlabelled (-1).
    """
    if layout not in LABEL_LAYOUTS:
        raise OptionError(f"--labels-layout: expected one of {', '.join(LABEL_LAYOUTS)}, found {layout!r}")
    p = textio.require_file(path, "--labels file")
    kind, description = sniff(p)
    if p.suffix == ".npy" or kind == "npy":
        if layout == "pairs":
            raise OptionError(f"{p}: --labels-layout pairs expects a text file of 'id,label' lines, found a .npy array")
        raw = label_column(load_npy(p, "--labels"), column, p)
        if raw.ndim != 1 or not np.issubdtype(raw.dtype, np.integer):
            hint = "; pass --labels-column C to take one column" if raw.ndim == 2 else ""
            raise DatasetError(
                f"{p}: --labels: expected a 1-d integer array, found {raw.dtype} shape {tuple(raw.shape)}{hint}"
            )
        if column is not None:
            return _codes_of_column(mark_unlabelled(raw.astype(np.int64), unlabelled), "npy")
        return RawLabels(classes=mark_unlabelled(raw.astype(np.int64), unlabelled), layout="npy")
    if kind not in ("text", "gzip"):
        raise DatasetError(
            f"{p}: --labels: expected a .npy array or a text file ('id,label' lines or one label per line), "
            f"got {description}"
        )
    if column is not None:
        if layout == "pairs":
            raise OptionError("--labels-column: expected a text matrix (one row per node), found --labels-layout pairs")
        return _read_label_matrix(p, header, column, unlabelled)
    if layout == "auto":
        lines = textio.first_data_lines(p, 2)
        if not lines:
            raise DatasetError(f"{p}: --labels: expected labels, found no data line")
        probe = lines[1] if len(lines) > 1 else lines[0]
        layout = "lines" if textio.count_columns(probe) == 1 else "pairs"
    raw_labels = _read_label_lines(p, header) if layout == "lines" else _read_label_pairs(p, header)
    if unlabelled is not None and raw_labels.class_names is None:
        raw_labels.classes = mark_unlabelled(raw_labels.classes, unlabelled)
    elif unlabelled is not None:
        raise OptionError(f"--unlabelled-value: expected integer labels in {p}, found class names")
    return raw_labels


def _read_label_matrix(path: Path, header: str, column: int, unlabelled: int | None) -> RawLabels:
    """Column ``column`` of a text matrix of integers, row k = node id k."""
    lines = textio.first_data_lines(path, 2)
    if not lines:
        raise DatasetError(f"{path}: --labels: expected labels, found no data line")
    num_columns = textio.count_columns(lines[-1])
    label_column(np.empty((0, num_columns)), column, path)  # the range check
    skip = textio.has_header(path, header, num_columns, allow_extra_columns=False)
    classes = textio.read_int_rows(
        path,
        num_columns,
        allow_extra_columns=False,
        skip_header=skip,
        expected=f"{num_columns} integers per line (one row per node)",
        column=column,
    )
    return _codes_of_column(mark_unlabelled(classes, unlabelled), "lines")


def _codes_of_column(codes: np.ndarray, layout: str) -> RawLabels:
    """A column of an attribute table holds codes (years, ids), not 0..K-1: renumber them, keep them as names."""
    values, _, names = renumber_codes(codes)
    return RawLabels(classes=values, class_names=names, layout=layout)


def _read_label_lines(path: Path, header: str) -> RawLabels:
    skip = textio.has_header(path, header, 1, allow_extra_columns=False)
    lines = textio.first_data_lines(path, 2)
    data_lines = lines[1:] if skip else lines
    if data_lines and textio.line_parses_as_ints(data_lines[0], 1, False) == kernels.PARSE_OK:
        classes = textio.read_int_rows(
            path,
            1,
            allow_extra_columns=False,
            skip_header=skip,
            expected="one integer label per line (line k = node k)",
            column=0,
        )
        return RawLabels(classes=classes, layout="lines")
    names: list[str] = []
    for number, line in textio.enumerate_data_lines(path, skip):
        if len(re.split(r"[ \t]*,[ \t]*|[ \t]+", line)) != 1:
            raise DatasetError(f"{path}: line {number}: expected one label per line (line k = node k), found {line!r}")
        names.append(line)
    codes, class_names = _codes(names)
    return RawLabels(classes=codes, class_names=class_names, layout="lines")


def _read_label_pairs(path: Path, header: str) -> RawLabels:
    skip = textio.has_header(path, header, 2, allow_extra_columns=False)
    lines = textio.first_data_lines(path, 3)
    data_lines = lines[1:] if skip else lines
    if data_lines and textio.line_parses_as_ints(data_lines[0], 2, False) == kernels.PARSE_BAD_TOKEN:
        ids: list[int] = []
        names: list[str] = []
        for number, line in textio.enumerate_data_lines(path, skip):
            tokens = re.split(r"[ \t]*,[ \t]*|[ \t]+", line)
            if len(tokens) != 2 or not tokens[1]:
                raise DatasetError(f"{path}: line {number}: expected two columns 'node_id,label', found {line!r}")
            try:
                ids.append(int(tokens[0]))
            except ValueError:
                raise DatasetError(f"{path}: line {number}: expected an integer node id, found {tokens[0]!r}") from None
            names.append(tokens[1])
        codes, class_names = _codes(names)
        return RawLabels(classes=codes, ids=np.array(ids, dtype=np.int64), class_names=class_names)
    id_parts, class_parts = [], []
    for block in textio.iter_int_rows(
        path, 2, allow_extra_columns=False, skip_header=skip, expected="two integers 'node_id,label'"
    ):
        id_parts.append(block[:, 0].copy())
        class_parts.append(block[:, 1].copy())
    ids_arr = np.concatenate(id_parts) if id_parts else np.empty(0, np.int64)
    classes = np.concatenate(class_parts) if class_parts else np.empty(0, np.int64)
    return RawLabels(classes=classes, ids=ids_arr)


# ---------------------------------------------------------------------------- coverage


@dataclass
class NodeCoverage:
    """The node ids that node data files cover: ``0..dense_rows-1`` plus the listed ``ids``."""

    dense_rows: int = 0
    ids: np.ndarray | None = None

    @classmethod
    def of(cls, features: np.ndarray | None, labels: RawLabels | None) -> NodeCoverage:
        rows = max(
            int(features.shape[0]) if features is not None else 0,
            labels.dense_rows if labels is not None else 0,
        )
        listed = labels.ids if labels is not None and labels.ids is not None and labels.ids.size else None
        return cls(dense_rows=rows, ids=listed)

    @property
    def empty(self) -> bool:
        return self.dense_rows == 0 and self.ids is None

    def bounds(self) -> tuple[int, int] | None:
        """``(low, high)`` of the covered ids, or None when nothing is covered."""
        lows, highs = [], []
        if self.dense_rows:
            lows.append(0)
            highs.append(self.dense_rows - 1)
        if self.ids is not None:
            lows.append(int(self.ids.min()))
            highs.append(int(self.ids.max()))
        return (min(lows), max(highs)) if lows else None


def synthetic_labels(num_nodes: int, num_classes: int, seed: int) -> np.ndarray:
    """int64 [N]: uniformly random labels in ``[0, num_classes)``, a pure function of the arguments.

    They carry no information about the graph: a model's accuracy on them is about ``1/K``. Use
    them to run (and time) training on an unlabelled graph.
    """
    if not 2 <= num_classes <= MAX_CLASSES:
        raise OptionError(f"--synthetic-labels: expected 2 to {MAX_CLASSES:,} classes, found {num_classes:,}")
    rng = np.random.default_rng([seed, SYNTHETIC_LABELS_STREAM])
    return rng.integers(0, num_classes, num_nodes, dtype=np.int64)
