"""Non-finite (NaN / ±Inf) feature values: found while importing or when a dataset is opened.

A NaN in one feature row turns every loss and gradient it touches into NaN, silently. Importers
pass each block of feature rows through a :class:`NonFiniteGuard` (mode ``error``: refuse, naming
the file and the first row; mode ``replace``: replace the values by 0 and count them), and
:meth:`Dataset.open <graphtier.dataset.format.Dataset.open>` scans ``features.npy`` with
:func:`find_non_finite` (every row up to :data:`FULL_CHECK_BYTES`, else :data:`SAMPLE_BLOCKS`
evenly spaced blocks of :data:`SAMPLE_BLOCK_BYTES`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphtier.errors import DatasetError, OptionError

NON_FINITE_MODES = ("error", "replace")
"""``--non-finite`` values: refuse the import, or replace NaN/±Inf feature values by 0."""

FULL_CHECK_BYTES = 1 << 30
"""Feature matrices up to this size are checked completely by :meth:`Dataset.open`."""

SAMPLE_BLOCKS = 64
SAMPLE_BLOCK_BYTES = 16 << 20
"""Larger matrices: this many evenly spaced blocks of this many bytes (first and last included)."""

SCAN_BLOCK_BYTES = 16 << 20
"""Bytes of rows tested at a time (bounds the temporary boolean mask)."""


def check_mode(mode: str) -> str:
    """``mode`` if it is one of :data:`NON_FINITE_MODES`, else :class:`OptionError`."""
    if mode not in NON_FINITE_MODES:
        raise OptionError(f"--non-finite: expected one of {', '.join(NON_FINITE_MODES)}, found {mode!r}")
    return mode


@dataclass
class NonFiniteGuard:
    """Checks blocks of feature rows read from ``path``; counts what ``replace`` mode replaced."""

    path: Path
    mode: str = "error"
    replaced: int = 0

    def __post_init__(self) -> None:
        check_mode(self.mode)

    def apply(self, block: np.ndarray, first_row: int) -> np.ndarray:
        """``block`` (float [R, D], rows ``first_row..``) with NaN/±Inf refused or replaced by 0.

        Returns ``block`` itself when it is clean, else a repaired copy (``replace``) or raises
        :class:`DatasetError` naming the file, the first bad row and how to repair (``error``).
        """
        if block.dtype.kind != "f":
            return block
        finite = np.isfinite(block)
        if finite.all():
            return block
        bad = int(finite.size - np.count_nonzero(finite))
        if self.mode == "error":
            row = first_row + int(np.flatnonzero(~finite.all(axis=tuple(range(1, block.ndim))))[0])
            raise DatasetError(
                f"{self.path}: expected finite feature values, found {bad} NaN/Inf in rows {first_row}.."
                f"{first_row + block.shape[0] - 1} (first in row {row}); "
                "pass --non-finite replace to replace them by 0"
            )
        self.replaced += bad
        return np.where(finite, block, block.dtype.type(0))


def find_non_finite(features: np.ndarray) -> tuple[int, bool] | None:
    """The first row of ``features`` (float [N, D], may be a memory map) holding NaN/±Inf, or None.

    Returns ``(row, sampled)``: ``sampled`` tells that only :data:`SAMPLE_BLOCKS` blocks were read
    because the matrix is larger than :data:`FULL_CHECK_BYTES`. Cost: one read of at most
    ``min(nbytes, FULL_CHECK_BYTES)`` bytes (``SAMPLE_BLOCKS * SAMPLE_BLOCK_BYTES`` = 1 GiB when sampled).
    """
    if features.dtype.kind != "f" or features.size == 0:
        return None
    num_rows = features.shape[0]
    row_bytes = max(1, features.nbytes // max(1, num_rows))
    sampled = features.nbytes > FULL_CHECK_BYTES
    if sampled:
        rows_per_block = max(1, SAMPLE_BLOCK_BYTES // row_bytes)
        starts = np.unique(np.linspace(0, max(0, num_rows - rows_per_block), SAMPLE_BLOCKS).astype(np.int64))
        ranges = [(int(s), min(num_rows, int(s) + rows_per_block)) for s in starts]
    else:
        ranges = [(0, num_rows)]
    step = max(1, SCAN_BLOCK_BYTES // row_bytes)
    for lo, hi in ranges:
        for start in range(lo, hi, step):
            block = np.asarray(features[start : min(hi, start + step)])
            finite = np.isfinite(block)
            if not finite.all():
                return start + int(np.flatnonzero(~finite.reshape(block.shape[0], -1).all(axis=1))[0]), sampled
    return None
