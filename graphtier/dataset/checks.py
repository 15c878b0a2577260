"""Parallel checks over (possibly memory-mapped) arrays, used to validate datasets.

Arrays are processed in chunks so that a memory-mapped array larger than RAM can be scanned.
Reference implementations: ``arr.min()``, ``arr.max()`` and ``np.all(np.diff(arr) >= 0)``.
"""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np

from graphtier.errors import DatasetError

CHUNK = 1 << 24
INT64_MAX = 9223372036854775807
INT64_MIN = -9223372036854775808


@numba.njit(parallel=True, cache=True, nogil=True)
def _min_max(values: np.ndarray) -> tuple[int, int]:
    low = INT64_MAX
    high = INT64_MIN
    for i in numba.prange(values.shape[0]):
        v = np.int64(values[i])
        low = min(low, v)
        high = max(high, v)
    return low, high


@numba.njit(parallel=True, cache=True, nogil=True)
def _count_decreases(values: np.ndarray) -> int:
    total = 0
    for i in numba.prange(values.shape[0] - 1):
        if values[i + 1] < values[i]:
            total += 1
    return total


def index_range(values: np.ndarray) -> tuple[int, int]:
    """(min, max) of a non-empty 1-d integer array, as Python ints; chunked for memory maps."""
    low, high = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    for start in range(0, values.shape[0], CHUNK):
        chunk_low, chunk_high = _min_max(np.asarray(values[start : start + CHUNK]))
        low, high = min(low, int(chunk_low)), max(high, int(chunk_high))
    return low, high


def is_non_decreasing(values: np.ndarray) -> bool:
    """True when ``values[i] <= values[i + 1]`` for every i; chunked for memory maps."""
    n = values.shape[0]
    for start in range(0, max(n - 1, 0), CHUNK):
        chunk = np.asarray(values[start : min(n, start + CHUNK + 1)])
        if _count_decreases(chunk) > 0:
            return False
    return True


def missing_ids(values: np.ndarray, n: int) -> int:
    """How many ids of ``[0, n)`` the 1-d integer array ``values`` (ids in that range, :func:`index_range`) leaves
    out: 0 for a permutation of ``[0, n)`` when ``values`` has ``n`` entries. Chunked for memory maps; an n-byte
    mask."""
    seen = np.zeros(n, dtype=np.bool_)
    for start in range(0, values.shape[0], CHUNK):
        seen[np.asarray(values[start : start + CHUNK])] = True
    return n - int(np.count_nonzero(seen))


def check_permutation(path: Path, values: np.ndarray, n: int, what: str = "ids") -> None:
    """:class:`DatasetError` naming ``path`` unless ``values`` (1-d integers, ``n`` of them) are a permutation of
    ``[0, n)``; ``what`` names the entries in the message."""
    if n == 0:
        return
    lo, hi = index_range(values)
    if lo < 0 or hi >= n:
        raise DatasetError(f"{path}: expected a permutation of [0, {n}), found values in [{lo}, {hi}]")
    missing = missing_ids(values, n)
    if missing:
        raise DatasetError(
            f"{path}: expected a permutation of [0, {n}), found {missing} repeated {what} ({missing} {what} missing)"
        )
