"""Numba kernels of the importers: text parsing and chunked CSC construction.

Each kernel is a small pure function with a plain numpy/Python reference implementation
(``*_reference``) that the tests compare against on random inputs (those of the text parsers are in
:mod:`graphtier.dataset.importers.common._column_kernels`).

Text format understood by the parsers: one record per line (``\\n``, optional ``\\r`` before it);
blank lines and lines whose first non-blank character is ``#`` or ``%`` are skipped; the columns
are separated by runs of spaces/tabs, optionally with one comma (``1,2``, ``1 2``, ``1\\t2``,
``1, 2`` are all two columns).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from graphtier.dataset.csc import sort_neighbour_lists  # noqa: F401  (re-exported: the importers sort with it)

# Error codes returned by the parsers (0 = success).
PARSE_OK = 0
PARSE_BAD_TOKEN = 1
PARSE_TOO_FEW_COLUMNS = 2
PARSE_TOO_MANY_COLUMNS = 3
PARSE_OVERFLOW = 4
PARSE_NON_FINITE = 100
"""Error code of a float parser for a NaN/Inf value when ``finite_only``."""

PARSE_ERROR_TEXT = {
    PARSE_BAD_TOKEN: "a value that is not a number",
    PARSE_TOO_FEW_COLUMNS: "too few columns",
    PARSE_TOO_MANY_COLUMNS: "too many columns",
    PARSE_OVERFLOW: "an integer outside the int64 range",
}

_NL = 10
_CR = 13
_SPACE = 32
_TAB = 9
_COMMA = 44
_HASH = 35
_PERCENT = 37
_MINUS = 45
_PLUS = 43
_DOT = 46
_ZERO = 48
_NINE = 57

# Exact powers of ten as float64 (10^k is exact for k <= 22).
_POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)


@numba.njit(cache=True, nogil=True, inline="always")
def _is_blank(c: np.uint8) -> bool:
    return c == _SPACE or c == _TAB or c == _CR


@numba.njit(cache=True, nogil=True)
def _skip_separator(buf: np.ndarray, i: int, n: int) -> tuple[int, bool]:
    """Skip blanks with at most one comma; return (new position, whether anything was skipped)."""
    start = i
    while i < n and (buf[i] == _SPACE or buf[i] == _TAB):
        i += 1
    if i < n and buf[i] == _COMMA:
        i += 1
        while i < n and (buf[i] == _SPACE or buf[i] == _TAB):
            i += 1
    return i, i > start


@numba.njit(cache=True, nogil=True)
def _at_line_end(buf: np.ndarray, i: int, n: int) -> bool:
    j = i
    while j < n and _is_blank(buf[j]):
        j += 1
    return j >= n or buf[j] == _NL


@numba.njit(cache=True, nogil=True)
def _next_line(buf: np.ndarray, i: int, n: int) -> int:
    while i < n and buf[i] != _NL:
        i += 1
    return i + 1


@numba.njit(cache=True, nogil=True, inline="always")
def _next_record(buf: np.ndarray, i: int, n: int) -> tuple[int, int]:
    """``(first token, line start)`` of the first record at or after ``i``: blank lines and ``#`` / ``%`` comment
    lines skipped, leading blanks too; ``(n, n)`` past the last one."""
    while i < n:
        line_start = i
        while i < n and _is_blank(buf[i]):
            i += 1
        if i >= n:
            break
        c = buf[i]
        if c == _NL:
            i += 1
        elif c == _HASH or c == _PERCENT:
            i = _next_line(buf, i, n)
        else:
            return i, line_start
    return n, n


@numba.njit(cache=True, nogil=True)
def parse_int_token(buf: np.ndarray, i: int, n: int) -> tuple[np.int64, int, int]:
    """Parse one integer column starting at ``i`` (optional sign, digits, then a separator or the line end);
    return ``(value, end position, PARSE_OK or an error code)``."""
    negative = False
    if buf[i] == _MINUS or buf[i] == _PLUS:
        negative = buf[i] == _MINUS
        i += 1
    digits = 0
    value = np.int64(0)
    while i < n and _ZERO <= buf[i] <= _NINE:
        d = np.int64(buf[i] - _ZERO)
        if value > (np.int64(9223372036854775807) - d) // 10:
            return value, i, PARSE_OVERFLOW
        value = value * 10 + d
        digits += 1
        i += 1
    if digits == 0:
        return value, i, PARSE_BAD_TOKEN
    if i < n and not (_is_blank(buf[i]) or buf[i] == _NL or buf[i] == _COMMA):
        return value, i, PARSE_BAD_TOKEN
    return (-value if negative else value), i, PARSE_OK


@numba.njit(cache=True, nogil=True)
def _parse_float(buf: np.ndarray, i: int, n: int) -> tuple[float, int, bool]:
    """Parse one decimal float starting at ``i``; return (value, end position, ok)."""
    negative = False
    if i < n and (buf[i] == _MINUS or buf[i] == _PLUS):
        negative = buf[i] == _MINUS
        i += 1
    # nan / inf (case-insensitive)
    if i < n and (buf[i] | 32) == 110:  # 'n'
        if i + 2 < n and (buf[i + 1] | 32) == 97 and (buf[i + 2] | 32) == 110:
            return math.nan, i + 3, True
        return 0.0, i, False
    if i < n and (buf[i] | 32) == 105:  # 'i'
        if i + 2 < n and (buf[i + 1] | 32) == 110 and (buf[i + 2] | 32) == 102:
            j = i + 3
            if (
                j + 4 < n
                and (buf[j] | 32) == 105
                and (buf[j + 1] | 32) == 110
                and (buf[j + 2] | 32) == 105
                and (buf[j + 3] | 32) == 116
                and (buf[j + 4] | 32) == 121
            ):  # "inity"
                j += 5
            return (-math.inf if negative else math.inf), j, True
        return 0.0, i, False
    mantissa = np.int64(0)
    significant = 0
    exponent = 0
    digits = 0
    while i < n and _ZERO <= buf[i] <= _NINE:
        if significant < 18:
            mantissa = mantissa * 10 + np.int64(buf[i] - _ZERO)
            if mantissa > 0:
                significant += 1
        else:
            exponent += 1
        digits += 1
        i += 1
    if i < n and buf[i] == _DOT:
        i += 1
        while i < n and _ZERO <= buf[i] <= _NINE:
            if significant < 18:
                mantissa = mantissa * 10 + np.int64(buf[i] - _ZERO)
                if mantissa > 0:
                    significant += 1
                exponent -= 1
            digits += 1
            i += 1
    if digits == 0:
        return 0.0, i, False
    if i < n and (buf[i] == 101 or buf[i] == 69):  # e / E
        i += 1
        exp_negative = False
        if i < n and (buf[i] == _MINUS or buf[i] == _PLUS):
            exp_negative = buf[i] == _MINUS
            i += 1
        exp_digits = 0
        exp_value = 0
        while i < n and _ZERO <= buf[i] <= _NINE:
            if exp_value < 100000:
                exp_value = exp_value * 10 + (buf[i] - _ZERO)
            exp_digits += 1
            i += 1
        if exp_digits == 0:
            return 0.0, i, False
        exponent += -exp_value if exp_negative else exp_value
    value = float(mantissa)
    if exponent < 0:
        k = -exponent
        while k > 22:
            value /= 1e22
            k -= 22
        value /= _POW10[k]
    elif exponent > 0:
        k = exponent
        while k > 22:
            value *= 1e22
            k -= 22
        value *= _POW10[k]
    return (-value if negative else value), i, True


EXTRA_COLUMNS_ERROR = 0
"""``extra_columns`` of :func:`parse_columns`: a record with a column after the last kept one is an error."""
EXTRA_COLUMNS_SEPARATED = 1
"""``extra_columns`` of :func:`parse_columns`: later columns are ignored but must be separated from the last one."""
EXTRA_COLUMNS_IGNORED = 2
"""``extra_columns`` of :func:`parse_columns`: whatever follows the last kept column is ignored."""


@numba.njit(cache=True, nogil=True)
def parse_columns(
    buf: np.ndarray,
    columns: np.ndarray,
    floats: bool,
    finite_only: bool,
    extra_columns: int,
    int_out: np.ndarray,
    float_out: np.ndarray,
    bad_column: np.ndarray,
) -> tuple[int, int, int]:
    """Parse the columns ``columns`` of every record of ``buf``: the one kernel of every integer and float parser.

    Args:
        buf: uint8 [B], whole lines of text (the last line may lack its newline).
        columns: int64 [C], the 0-based column indices to keep, ascending; a column before the last one that is
            not kept is skipped (any text up to the next separator).
        floats: parse decimal floats (``nan``/``inf`` allowed) into ``float_out``, else integers into ``int_out``.
        finite_only: with ``floats``, a NaN/Inf is the error :data:`PARSE_NON_FINITE`.
        extra_columns: what a column after the last kept one is: :data:`EXTRA_COLUMNS_ERROR`,
            :data:`EXTRA_COLUMNS_SEPARATED` or :data:`EXTRA_COLUMNS_IGNORED`.
        int_out: int64 [R, C] with R >= the number of lines in ``buf`` (unused with ``floats``).
        float_out: float32 or float64 [R, C] likewise (unused without ``floats``).
        bad_column: int64 [1]; receives the column of an error.

    Returns:
        ``(records, error_code, error_offset)``: the number of records parsed, ``PARSE_OK`` or an error code,
        and the byte offset of the start of the offending line (-1 without error).
    """
    n = buf.shape[0]
    last = columns[columns.shape[0] - 1] if columns.shape[0] > 0 else -1
    i = 0
    rows = 0
    while True:
        i, line_start = _next_record(buf, i, n)
        if i >= n:
            break
        kept = 0
        for col in range(last + 1):
            bad_column[0] = col
            if col > 0:
                i, skipped = _skip_separator(buf, i, n)
                if i >= n or buf[i] == _NL or buf[i] == _CR:
                    return rows, PARSE_TOO_FEW_COLUMNS, line_start
                if not skipped:
                    return rows, PARSE_BAD_TOKEN, line_start
            if columns[kept] != col:
                start = i
                while i < n and not (_is_blank(buf[i]) or buf[i] == _NL or buf[i] == _COMMA):
                    i += 1
                if i == start:
                    return rows, PARSE_BAD_TOKEN, line_start
                continue
            if floats:
                float_value, i, ok = _parse_float(buf, i, n)
                if not ok or (i < n and not (_is_blank(buf[i]) or buf[i] == _NL or buf[i] == _COMMA)):
                    return rows, PARSE_BAD_TOKEN, line_start
                if finite_only and not np.isfinite(float_value):
                    return rows, PARSE_NON_FINITE, line_start
                float_out[rows, kept] = float_value
            else:
                int_value, i, code = parse_int_token(buf, i, n)
                if code != PARSE_OK:
                    return rows, code, line_start
                int_out[rows, kept] = int_value
            kept += 1
        if extra_columns != EXTRA_COLUMNS_IGNORED and not _at_line_end(buf, i, n):
            if extra_columns == EXTRA_COLUMNS_ERROR:
                return rows, PARSE_TOO_MANY_COLUMNS, line_start
            # the next column must still be separated from the last parsed one
            _, skipped = _skip_separator(buf, i, n)
            if not skipped:
                return rows, PARSE_BAD_TOKEN, line_start
        rows += 1
        i = _next_line(buf, i, n)
    return rows, PARSE_OK, -1


@numba.njit(cache=True, nogil=True)
def parse_float_rows(buf: np.ndarray, out: np.ndarray) -> tuple[int, int, int]:
    """Parse records of exactly ``C = out.shape[1]`` decimal floats (``nan``/``inf`` allowed): :func:`parse_columns`
    of the first C columns.

    Args:
        buf: uint8 [B], whole lines of text.
        out: float32 or float64 [R, C], R >= the number of lines in ``buf``.

    Returns:
        ``(records, error_code, error_offset)`` as :func:`parse_columns`.
    """
    columns = np.arange(out.shape[1], dtype=np.int64)
    no_ints = np.empty((0, 0), np.int64)
    return parse_columns(buf, columns, True, False, EXTRA_COLUMNS_ERROR, no_ints, out, np.zeros(1, np.int64))


# ---------------------------------------------------------------------------- CSC from chunks


@numba.njit(cache=True, nogil=True)
def count_destinations(dst: np.ndarray, counts: np.ndarray) -> None:
    """``counts[d] += 1`` for every ``d`` in ``dst`` (int [E] -> int64 [N], in place)."""
    for e in range(dst.shape[0]):
        counts[dst[e]] += 1


def count_destinations_reference(dst: np.ndarray, counts: np.ndarray) -> None:
    """numpy reference of :func:`count_destinations`."""
    counts += np.bincount(dst, minlength=counts.shape[0]).astype(np.int64)


@numba.njit(cache=True, nogil=True)
def scatter_sources(src: np.ndarray, dst: np.ndarray, cursor: np.ndarray, indices: np.ndarray) -> None:
    """Place ``src[e]`` at ``indices[cursor[dst[e]]]`` and advance that cursor (all in place).

    ``src``/``dst``: int [E]; ``cursor``: int64 [N] (next free slot of each node's list, carried
    across chunks); ``indices``: int32/int64 [total edges].
    """
    for e in range(src.shape[0]):
        d = dst[e]
        indices[cursor[d]] = src[e]
        cursor[d] += 1


def scatter_sources_reference(src: np.ndarray, dst: np.ndarray, cursor: np.ndarray, indices: np.ndarray) -> None:
    """numpy reference of :func:`scatter_sources` (stable: keeps the input order within a node)."""
    order = np.argsort(dst, kind="stable")
    d_sorted = dst[order]
    counts = np.bincount(d_sorted, minlength=cursor.shape[0])
    starts = np.zeros(cursor.shape[0] + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    rank = np.arange(d_sorted.shape[0]) - starts[d_sorted]
    indices[cursor[d_sorted] + rank] = src[order]
    cursor += counts


def sort_neighbour_lists_reference(indptr: np.ndarray, indices: np.ndarray) -> None:
    """numpy reference of :func:`sort_neighbour_lists`."""
    for v in range(indptr.shape[0] - 1):
        indices[indptr[v] : indptr[v + 1]].sort()


@numba.njit(cache=True, nogil=True)
def mark_present(ids: np.ndarray, offset: int, present: np.ndarray) -> None:
    """``present[id - offset] = True`` for every id in ``ids`` (int64 [K] -> bool [M], in place)."""
    for k in range(ids.shape[0]):
        present[ids[k] - offset] = True
