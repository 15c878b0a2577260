"""Parse integer columns of text records: the first C columns (:func:`parse_int_rows`, every integer table of the
importers) or chosen ones (:func:`parse_int_columns`; ``prepare edgelist --time-column K``: ids in columns 0 and 1,
the time in column K, the columns between skipped whatever they hold), and chosen float columns
(:func:`parse_float_columns`).

One kernel serves them all (:func:`graphtier.dataset.importers.common.kernels.parse_columns`, also behind
:func:`~graphtier.dataset.importers.common.kernels.parse_float_rows`); the plain-Python references of them all, here
(:func:`parse_int_rows_reference`, :func:`parse_float_rows_reference`, :func:`parse_int_columns_reference`,
:func:`parse_float_columns_reference`, all :func:`parse_columns_reference`), are compared with it on random input
in tests/dataset/importers/test_time_column.py, test_edge_columns.py and test_kernels.py.
"""

from __future__ import annotations

import re

import numba
import numpy as np

from graphtier.dataset.importers.common.kernels import (
    EXTRA_COLUMNS_ERROR,
    EXTRA_COLUMNS_IGNORED,
    EXTRA_COLUMNS_SEPARATED,
    PARSE_BAD_TOKEN,
    PARSE_NON_FINITE,
    PARSE_OK,
    PARSE_OVERFLOW,
    PARSE_TOO_FEW_COLUMNS,
    PARSE_TOO_MANY_COLUMNS,
    parse_columns,
)


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
    extra = EXTRA_COLUMNS_SEPARATED if allow_extra_columns else EXTRA_COLUMNS_ERROR
    no_floats = np.empty((0, 0), np.float64)
    return parse_columns(buf, columns, False, False, extra, out, no_floats, np.zeros(1, np.int64))


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
    no_ints = np.empty((0, 0), np.int64)
    return parse_columns(buf, columns, True, finite_only, EXTRA_COLUMNS_IGNORED, no_ints, out, bad_column)


def parse_int_columns_reference(buf: bytes, columns: list[int]) -> tuple[np.ndarray, int, int]:
    """Plain-Python reference of :func:`parse_int_columns`: ``(int64 [R, C], error_code, error_offset)``."""
    return parse_columns_reference(buf, columns, False, False, EXTRA_COLUMNS_IGNORED)[:3]


def parse_float_columns_reference(
    buf: bytes, columns: list[int], finite_only: bool
) -> tuple[np.ndarray, int, int, int]:
    """Plain-Python reference of :func:`parse_float_columns`: ``(float64 [R, C], error_code, error_offset,
    error_column)`` (the column -1 without an error)."""
    return parse_columns_reference(buf, columns, True, finite_only, EXTRA_COLUMNS_IGNORED)


_SEPARATOR = re.compile(r"[ \t]*,[ \t]*|[ \t]+")


def _data_lines(text: str) -> list[tuple[int, list[str]]]:
    """(byte offset, columns) of every non-blank, non-comment line of ASCII ``text``."""
    lines = []
    offset = 0
    for raw in text.split("\n"):
        stripped = raw.strip(" \t\r")
        if stripped and stripped[0] not in "#%":
            lines.append((offset, _SEPARATOR.split(stripped)))
        offset += len(raw) + 1
    return lines


def _column_error(tokens: list[str], col: int) -> int:
    """The parse error of column ``col`` that is missing or empty, else PARSE_OK."""
    if col >= len(tokens):
        return PARSE_TOO_FEW_COLUMNS
    if tokens[col] == "":
        return PARSE_TOO_FEW_COLUMNS if col == len(tokens) - 1 else PARSE_BAD_TOKEN
    return PARSE_OK


def parse_columns_reference(
    buf: bytes, columns: list[int], floats: bool, finite_only: bool, extra_columns: int
) -> tuple[np.ndarray, int, int, int]:
    """Plain-Python reference of :func:`~graphtier.dataset.importers.common.kernels.parse_columns`: ``(int64 or float64 [R, C], error_code, error_offset,
    error_column)`` (the column -1 without an error or for too many columns). ``EXTRA_COLUMNS_SEPARATED`` is
    checked as ``EXTRA_COLUMNS_IGNORED`` (the tokens here are already split at separators)."""
    rows: list[list[float]] = []

    def result(code: int, offset: int, col: int) -> tuple[np.ndarray, int, int, int]:
        values = np.array(rows, dtype=np.float64 if floats else np.int64)
        return values.reshape(len(rows), len(columns)), code, offset, col

    for offset, tokens in _data_lines(buf.decode("ascii")):
        values = []
        for col in range(max(columns, default=-1) + 1):
            code = _column_error(tokens, col)
            if code != PARSE_OK:
                return result(code, offset, col)
            if col not in columns:
                continue
            value, code = (
                _float_token_reference(tokens[col], finite_only) if floats else _int_token_reference(tokens[col])
            )
            if code != PARSE_OK:
                return result(code, offset, col)
            values.append(value)
        if len(tokens) > len(columns) and extra_columns == EXTRA_COLUMNS_ERROR:
            return result(PARSE_TOO_MANY_COLUMNS, offset, -1)
        rows.append(values)
    return result(PARSE_OK, -1, -1)


def _int_token_reference(token: str) -> tuple[int, int]:
    """``(value, PARSE_OK)`` of the integer column ``token``, else ``(0, error code)``."""
    body = token[1:] if token[:1] in "+-" else token
    if not (body.isascii() and body.isdigit()):
        return 0, PARSE_BAD_TOKEN
    value = int(token)
    if abs(value) > 2**63 - 1:
        return 0, PARSE_OVERFLOW
    return value, PARSE_OK


def _float_token_reference(token: str, finite_only: bool) -> tuple[float, int]:
    """``(value, PARSE_OK)`` of the decimal float column ``token``, else ``(0.0, error code)``."""
    if not _FLOAT_TOKEN.fullmatch(token):
        return 0.0, PARSE_BAD_TOKEN
    value = float(token)
    if finite_only and not np.isfinite(value):
        return 0.0, PARSE_NON_FINITE
    return value, PARSE_OK


def parse_int_rows_reference(buf: bytes, num_columns: int, allow_extra_columns: bool) -> tuple[np.ndarray, int, int]:
    """Plain-Python reference of :func:`parse_int_rows`: ``(int64 [R, C], error_code, error_offset)``."""
    extra = EXTRA_COLUMNS_SEPARATED if allow_extra_columns else EXTRA_COLUMNS_ERROR
    return parse_columns_reference(buf, list(range(num_columns)), False, False, extra)[:3]


def parse_float_rows_reference(buf: bytes, num_columns: int) -> tuple[np.ndarray, int, int]:
    """Plain-Python reference of :func:`~graphtier.dataset.importers.common.kernels.parse_float_rows`: ``(float64 [R, C], error_code, error_offset)``."""
    return parse_columns_reference(buf, list(range(num_columns)), True, False, EXTRA_COLUMNS_ERROR)[:3]


_FLOAT_TOKEN = re.compile(r"[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[nN][aA][nN]|[iI][nN][fF]([iI][nN][iI][tT][yY])?)")
