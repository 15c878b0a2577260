"""Node-pair files of an edge split given as files: ``--edge-split-files train=FILE,valid=FILE,test=FILE``.

A pair file is plain text, ``src dst`` per line as ``prepare edgelist`` reads it (blank, tab or comma
separated, gzip, ``#``/``%`` comments, an optional header, extra columns ignored), a ``.npy`` integer
array [P, 2], or ``PATH:KEY``, such an array inside an ``.npz`` or ``.mat`` (GAE's ``val_edges``). Negatives (``valid_neg``, ``test_neg``) are [Q, 2] pairs, or with ``--eval-negatives K``
[P, K] destinations (line / row i: the K negative destinations of positive i, whose source they share).

Ids are the input's node ids: when the importer renumbered them (an edge list with gaps), they go through
the same id map, and an id the graph does not have is a one-line error naming the file and the line (row of
a ``.npy``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphtier.dataset.importers.common import node_data, textio
from graphtier.dataset.importers.common.members import file_or_member
from graphtier.errors import DatasetError, OptionError

POSITIVE_KEYS = ("train", "valid", "test")
NEGATIVE_KEYS = ("valid_neg", "test_neg")
SPLIT_FILE_KEYS = POSITIVE_KEYS + NEGATIVE_KEYS
OPTION = "edge_split_files"

IdLookup = Callable[[np.ndarray], np.ndarray]
"""Original ids (int64 [K]) -> dense node ids (int64 [K]), -1 where the graph has no such node."""


@dataclass(frozen=True)
class EdgeSplitFiles:
    """The files of an edge split: ``valid`` and ``test`` positives (required), ``train`` positives (default:
    every edge left in the graph once the held-out pairs are removed), ``valid_neg``/``test_neg`` negatives
    (default: drawn). ``entries``: ``(key, path)`` in :data:`SPLIT_FILE_KEYS` order."""

    entries: tuple[tuple[str, Path], ...]

    @classmethod
    def of(cls, value: "EdgeSplitFiles | str | Mapping[str, str | os.PathLike[str]]") -> "EdgeSplitFiles":
        """Parse ``"train=FILE,valid=FILE,test=FILE[,valid_neg=FILE,test_neg=FILE]"`` or a mapping of the
        same keys; :class:`OptionError` naming ``edge_split_files`` for an unknown, repeated or missing key."""
        if isinstance(value, EdgeSplitFiles):
            return value
        if isinstance(value, str):
            mapping: dict[str, str | os.PathLike[str]] = {}
            for item in value.split(","):
                key, sep, path = item.partition("=")
                key = key.strip()
                if not sep or not path.strip():
                    raise OptionError.invalid(OPTION, "KEY=FILE items separated by commas", item)
                if key in mapping:
                    raise OptionError.invalid(OPTION, "each key once", key)
                mapping[key] = path.strip()
        else:
            mapping = dict(value)
        unknown = sorted(set(mapping) - set(SPLIT_FILE_KEYS))
        if unknown:
            raise OptionError.invalid(OPTION, f"keys among {', '.join(SPLIT_FILE_KEYS)}", unknown[0])
        missing = [key for key in ("valid", "test") if key not in mapping]
        if missing:
            raise OptionError(
                f"{{{OPTION}}} expected valid=FILE and test=FILE, found no {missing[0]}=", options=(OPTION,)
            )
        return cls(tuple((key, file_or_member(mapping[key])) for key in SPLIT_FILE_KEYS if key in mapping))

    def get(self, key: str) -> Path | None:
        """The path given for ``key`` (None when not given)."""
        return dict(self.entries).get(key)

    def check_exist(self) -> None:
        """Every file exists (:class:`DatasetError` naming the first that does not)."""
        for key, path in self.entries:
            textio.require_file(path, f"--edge-split-files {key}= file")

    def to_meta(self) -> dict[str, str]:
        """``{key: absolute path}`` for ``meta.json``."""
        return {key: str(path.resolve()) for key, path in self.entries}


def read_pair_file(
    path: Path, columns: int, *, num_nodes: int, lookup: IdLookup | None = None, allow_extra_columns: bool = True
) -> np.ndarray:
    """The rows of the pair file ``path`` as dense node ids: int64 [R, columns].

    ``lookup`` maps the file's original ids to node ids (the importer's id map; None: ids are node ids and
    must lie in ``[0, num_nodes)``). ``allow_extra_columns``: text lines may carry more columns (weights,
    timestamps), which are ignored. Errors (:class:`DatasetError`) name the file and the line or row.
    """
    if path.suffix == ".npy" or node_data.sniff(path)[0] == "npy":
        raw = _read_npy(path, columns)
        skip_header = False
    else:
        skip_header = textio.has_header(path, "auto", columns, allow_extra_columns)
        raw = textio.read_int_rows(
            path,
            columns,
            allow_extra_columns=allow_extra_columns,
            skip_header=skip_header,
            expected=f"{columns} integer node ids per line",
        )
    flat = raw.reshape(-1)
    mapped = lookup(flat) if lookup is not None else np.where((flat >= 0) & (flat < num_nodes), flat, -1)
    bad = np.flatnonzero(mapped < 0)
    if bad.size:
        row, value = int(bad[0]) // columns, int(flat[bad[0]])
        where = row_location(path, row, skip_header)
        if lookup is None:
            raise DatasetError(f"{path}: {where}: expected node ids in [0, {num_nodes}), found {value}")
        raise DatasetError(f"{path}: {where}: node id {value} is not a node of the graph (no edge of the input has it)")
    return mapped.astype(np.int64, copy=False).reshape(raw.shape)


def _read_npy(path: Path, columns: int) -> np.ndarray:
    array = node_data.load_npy(path, "--edge-split-files")
    if array.dtype.kind not in "iu":
        raise DatasetError(f"{path}: expected an integer array, found dtype {array.dtype}")
    if array.ndim != 2 or array.shape[1] != columns:
        raise DatasetError(f"{path}: expected shape [R, {columns}], found {list(array.shape)}")
    if array.dtype.kind == "u" and array.size and int(array.max()) >= 2**63:
        raise DatasetError(f"{path}: expected node ids below 2^63, found {int(array.max())}")
    return np.asarray(array, dtype=np.int64)


def row_location(path: Path, row: int, skip_header: bool = False) -> str:
    """``"row R"`` of a ``.npy``, ``"line L"`` (1-based, counting comments and blanks) of the ``row``-th data
    line of a text file."""
    if path.suffix == ".npy" or node_data.sniff(path)[0] == "npy":
        return f"row {row}"
    target = row + (1 if skip_header else 0)
    for index, (number, _) in enumerate(textio.enumerate_data_lines(path)):
        if index == target:
            return f"line {number}"
    return f"row {row}"
