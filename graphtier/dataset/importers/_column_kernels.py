"""Parse integer columns of text records: the first C columns (:func:`parse_int_rows`, every integer table of the
importers) or chosen ones (:func:`parse_int_columns`; ``prepare edgelist --time-column K``: ids in columns 0 and 1,
the time in column K, the columns between skipped whatever they hold).

One kernel serves both; their references (:func:`parse_int_columns_reference`,
:func:`graphtier.dataset.importers.kernels.parse_int_rows_reference`) are compared with it on random input in
tests/dataset/importers/test_time_column.py and test_kernels.py.
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier.dataset.importers.kernels import (
    _COMMA,
    _CR,
    _FLOAT_TOKEN,
    _NL,
    PARSE_BAD_TOKEN,
    PARSE_OK,
    PARSE_OVERFLOW,
    PARSE_TOO_FEW_COLUMNS,
    PARSE_TOO_MANY_COLUMNS,
    _at_line_end,
    _column_error,
    _data_lines,
    _is_blank,
    _next_line,
    _next_record,
    _parse_float,
    _skip_separator,
    parse_int_token,
)

PARSE_NON_FINITE = 100
"""Error code of :func:`parse_float_columns` for a NaN/Inf value when ``finite_only``."""


@numba.njit(cache=True, nogil=True)
def parse_int_rows(
    buf: np.ndarray, num_columns: int, allow_extra_columns: bool, out: np.ndarray
) -> tuple[int, int, int]:
    """Parse integer records from the bytes ``buf`` into ``out``: :func:`parse_int_columns` of the first
    ``num_columns`` columns.

    Args:
        buf: uint8 [B], whole lines of text (the last line may lack its newline).
        num_columns: columns stored per record (C).
        allow_extra_columns: ignore columns after the first C (for example edge weights); when
            False a record with more than C columns is an error.
        out: int64 [R, C] with R >= the number of lines in ``buf``; filled with the records.

    Returns:
        ``(records, error_code, error_offset)``: the number of records parsed, ``PARSE_OK`` or an
        error code, and the byte offset of the start of the offending line (-1 without error).
    """
    return parse_int_columns(buf, np.arange(num_columns, dtype=np.int64), allow_extra_columns, out)


@numba.njit(cache=True, nogil=True)
def parse_int_columns(
    buf: np.ndarray, columns: np.ndarray, allow_extra_columns: bool, out: np.ndarray
) -> tuple[int, int, int]:
    """Parse the integer columns ``columns`` (int64 [C], ascending) of every record of ``buf`` into ``out``.

    Args:
        buf: uint8 [B], whole lines of text (the last line may lack its newline).
        columns: the 0-based column indices to keep, ascending; a column before the last one that is not kept is
            skipped (any text up to the next separator).
        allow_extra_columns: ignore columns after the last one; when False a record with more is an error.
        out: int64 [R, C] with R >= the number of lines in ``buf``.

    Returns:
        ``(records, error_code, error_offset)`` as :func:`parse_int_rows`.
    """
    n = buf.shape[0]
    last = columns[columns.shape[0] - 1]
    i = 0
    rows = 0
    while True:
        i, line_start = _next_record(buf, i, n)
        if i >= n:
            break
        kept = 0
        for col in range(last + 1):
            if col > 0:
                i, skipped = _skip_separator(buf, i, n)
                if i >= n or buf[i] == _NL or buf[i] == _CR:
                    return rows, PARSE_TOO_FEW_COLUMNS, line_start
                if not skipped:
                    return rows, PARSE_BAD_TOKEN, line_start
            if columns[kept] == col:
                value, i, code = parse_int_token(buf, i, n)
                if code != PARSE_OK:
                    return rows, code, line_start
                out[rows, kept] = value
                kept += 1
            else:
                start = i
                while i < n and not (_is_blank(buf[i]) or buf[i] == _NL or buf[i] == _COMMA):
                    i += 1
                if i == start:
                    return rows, PARSE_BAD_TOKEN, line_start
        if not _at_line_end(buf, i, n):
            if not allow_extra_columns:
                return rows, PARSE_TOO_MANY_COLUMNS, line_start
            # the next column must still be separated from the last parsed one
            _, skipped = _skip_separator(buf, i, n)
            if not skipped:
                return rows, PARSE_BAD_TOKEN, line_start
        rows += 1
        i = _next_line(buf, i, n)
    return rows, PARSE_OK, -1


@numba.njit(cache=True, nogil=True)
def parse_float_columns(
    buf: np.ndarray, columns: np.ndarray, finite_only: bool, out: np.ndarray, bad_column: np.ndarray
) -> tuple[int, int, int]:
    """Parse the decimal float columns ``columns`` (int64 [C], ascending) of every record of ``buf`` into ``out``
    (float64 [R, C]); the other columns before the last one are skipped whatever they hold and later ones ignored
    (``prepare edgelist --edge-feature-columns``/``--label-column``: the ids may be names). With ``finite_only``
    a NaN/Inf is the error :data:`PARSE_NON_FINITE`. ``bad_column`` (int64 [1]) receives the column of an error.

    Returns:
        ``(records, error_code, error_offset)`` as :func:`parse_int_rows` (the offset is the record's start).
    """
    n = buf.shape[0]
    last = columns[columns.shape[0] - 1]
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
            if columns[kept] == col:
                value, i, ok = _parse_float(buf, i, n)
                if not ok or (i < n and not (_is_blank(buf[i]) or buf[i] == _NL or buf[i] == _COMMA)):
                    return rows, PARSE_BAD_TOKEN, line_start
                if finite_only and not np.isfinite(value):
                    return rows, PARSE_NON_FINITE, line_start
                out[rows, kept] = value
                kept += 1
            else:
                start = i
                while i < n and not (_is_blank(buf[i]) or buf[i] == _NL or buf[i] == _COMMA):
                    i += 1
                if i == start:
                    return rows, PARSE_BAD_TOKEN, line_start
        rows += 1
        i = _next_line(buf, i, n)
    return rows, PARSE_OK, -1


def parse_int_columns_reference(buf: bytes, columns: list[int]) -> tuple[np.ndarray, int, int]:
    """Plain-Python reference of :func:`parse_int_columns`: ``(int64 [R, C], error_code, error_offset)``."""
    rows: list[list[int]] = []

    def result(code: int, offset: int) -> tuple[np.ndarray, int, int]:
        return np.array(rows, dtype=np.int64).reshape(len(rows), len(columns)), code, offset

    for offset, tokens in _data_lines(buf.decode("ascii")):
        values = []
        for col in range(max(columns) + 1):
            code = _column_error(tokens, col)
            if code != PARSE_OK:
                return result(code, offset)
            if col not in columns:
                continue
            token = tokens[col]
            body = token[1:] if token[:1] in "+-" else token
            if not (body.isascii() and body.isdigit()):
                return result(PARSE_BAD_TOKEN, offset)
            value = int(token)
            if abs(value) > 2**63 - 1:
                return result(PARSE_OVERFLOW, offset)
            values.append(value)
        rows.append(values)
    return result(PARSE_OK, -1)


def parse_float_columns_reference(
    buf: bytes, columns: list[int], finite_only: bool
) -> tuple[np.ndarray, int, int, int]:
    """Plain-Python reference of :func:`parse_float_columns`: ``(float64 [R, C], error_code, error_offset,
    error_column)`` (the column -1 without an error)."""
    rows: list[list[float]] = []

    def result(code: int, offset: int, col: int) -> tuple[np.ndarray, int, int, int]:
        return np.array(rows, dtype=np.float64).reshape(len(rows), len(columns)), code, offset, col

    for offset, tokens in _data_lines(buf.decode("ascii")):
        values = []
        for col in range(max(columns) + 1):
            code = _column_error(tokens, col)
            if code != PARSE_OK:
                return result(code, offset, col)
            if col not in columns:
                continue
            if not _FLOAT_TOKEN.fullmatch(tokens[col]):
                return result(PARSE_BAD_TOKEN, offset, col)
            value = float(tokens[col])
            if finite_only and not np.isfinite(value):
                return result(PARSE_NON_FINITE, offset, col)
            values.append(value)
        rows.append(values)
    return result(PARSE_OK, -1, -1)
