"""The splitmix64 finaliser: the one hash behind graphtier's counter-based random streams.

The samplers and the synthetic generator derive every random number from ``mix64`` of a key plus a
counter, so results do not depend on thread count or chunking. ``mix64_int`` is the same function on
Python ints (for deriving keys outside numba).
"""

from __future__ import annotations

import numba
import numpy as np

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB

_U_MIX1 = np.uint64(MIX1)
_U_MIX2 = np.uint64(MIX2)
_U30 = np.uint64(30)
_U27 = np.uint64(27)
_U31 = np.uint64(31)


def mix64_int(z: int) -> int:
    """splitmix64 finaliser on a Python int (taken modulo 2^64)."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    return z ^ (z >> 31)


@numba.njit(cache=True, nogil=True, inline="always")
def mix64(z: np.uint64) -> np.uint64:
    """splitmix64 finaliser on a uint64 (numba); equals :func:`mix64_int`."""
    z = (z ^ (z >> _U30)) * _U_MIX1
    z = (z ^ (z >> _U27)) * _U_MIX2
    return z ^ (z >> _U31)
