"""Reading input text for the importers: plain or gzip files in line-aligned chunks, headers, int/float rows
parsed by the numba kernels, and one-line parse errors naming the file, the line and what was found.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO

import numpy as np

from graphtier.dataset.importers.common import kernels
from graphtier.dataset.importers.common._column_kernels import (
    parse_float_columns,
    parse_int_columns,
    parse_int_rows,
)
from graphtier.dataset.importers.common.members import file_or_member
from graphtier.errors import DatasetError, OptionError

CHUNK_BYTES = 64 << 20
"""Bytes of text parsed at a time."""

HEADER_MODES = ("auto", "yes", "no")

_SEPARATOR = re.compile(r"[ \t]*,[ \t]*|[ \t]+")
"""Column separators: blanks with at most one comma."""

_GZIP_MAGIC = b"\x1f\x8b"


# ---------------------------------------------------------------------------- text input


def require_file(path: str | os.PathLike[str], what: str = "input file") -> Path:
    """``Path(path)`` if it is an existing file, else :class:`DatasetError` naming it; ``PATH:KEY`` (a member of an
    ``.npz`` or ``.mat``, :func:`~graphtier.dataset.importers.common.members.file_or_member`) gives a ``MemberPath``."""
    p = file_or_member(path)
    if not p.exists():
        raise DatasetError(f"{p}: {what} not found")
    if not p.is_file():
        raise DatasetError(f"{p}: expected a file ({what}), found a directory or special file")
    return p


def open_binary(path: Path) -> IO[bytes]:
    """Open ``path`` for reading bytes, transparently decompressing gzip (detected by magic bytes)."""
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
        if magic == _GZIP_MAGIC:
            return gzip.open(path, "rb")
        return open(path, "rb")  # noqa: SIM115 - returned to the caller
    except OSError as exc:
        raise DatasetError(f"{path}: cannot open ({exc.strerror})") from None


def iter_line_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[np.ndarray, int]]:
    """Yield ``(buf, lines_before)``: uint8 [B] arrays of whole lines, and the number of lines before.

    A gzip file is decompressed as a stream; a truncated or damaged one raises :class:`DatasetError`.
    """
    carry = b""
    lines_before = 0
    with open_binary(path) as stream:
        while True:
            try:
                block = stream.read(chunk_bytes)
            except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
                raise DatasetError(f"{path}: truncated or damaged gzip data ({exc})") from None
            if not block:
                if carry:
                    yield np.frombuffer(carry, dtype=np.uint8), lines_before
                return
            data = carry + block if carry else block
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                continue
            whole, carry = data[: cut + 1], data[cut + 1 :]
            yield np.frombuffer(whole, dtype=np.uint8), lines_before
            lines_before += whole.count(b"\n")


def _line_at(buf: np.ndarray, offset: int) -> str:
    end = offset
    n = buf.shape[0]
    while end < n and end - offset < 80 and buf[end] != 10:
        end += 1
    text = bytes(buf[offset:end]).decode("utf-8", errors="replace").rstrip("\r")
    return text + ("..." if end - offset >= 80 else "")


def parse_error(path: Path, buf: np.ndarray, lines_before: int, code: int, offset: int, expected: str) -> DatasetError:
    """A one-line :class:`DatasetError` for a parse failure at byte ``offset`` of chunk ``buf``."""
    line_number = lines_before + int(np.count_nonzero(buf[:offset] == 10)) + 1
    found = kernels.PARSE_ERROR_TEXT.get(code, f"parse error {code}")
    return DatasetError(f"{path}: line {line_number}: expected {expected}, found {found}: {_line_at(buf, offset)!r}")


def first_data_lines(path: Path, count: int = 2, probe_bytes: int = 1 << 20) -> list[str]:
    """The first ``count`` non-blank, non-comment lines of ``path`` (stripped), read from its start."""
    lines: list[str] = []
    for buf, _ in iter_line_chunks(path, probe_bytes):
        for raw in bytes(buf).decode("utf-8", errors="replace").split("\n"):
            stripped = raw.strip(" \t\r")
            if stripped and stripped[0] not in "#%":
                lines.append(stripped)
                if len(lines) >= count:
                    return lines
        if len(buf) >= probe_bytes:
            break
    return lines


def line_parses_as_ints(line: str, num_columns: int, allow_extra_columns: bool) -> int:
    """The parse code of ``line`` as ``num_columns`` integers (``kernels.PARSE_OK`` when it parses)."""
    buf = np.frombuffer(line.encode("utf-8"), dtype=np.uint8)
    out = np.empty((1, num_columns), dtype=np.int64)
    _, code, _ = parse_int_rows(buf, num_columns, allow_extra_columns, out)
    return int(code)


def has_header(path: Path, mode: str, num_columns: int, allow_extra_columns: bool = True) -> bool:
    """Whether the first data line of ``path`` is a header (``mode``: ``auto``, ``yes`` or ``no``).

    ``auto``: the first line is a header when it does not parse as integers but the second does.
    """
    if mode not in HEADER_MODES:
        raise OptionError(f"--header: expected one of {', '.join(HEADER_MODES)}, found {mode!r}")
    if mode != "auto":
        return mode == "yes"
    lines = first_data_lines(path, 2)
    if len(lines) < 2:
        return False
    first = line_parses_as_ints(lines[0], num_columns, allow_extra_columns)
    second = line_parses_as_ints(lines[1], num_columns, allow_extra_columns)
    return first == kernels.PARSE_BAD_TOKEN and second == kernels.PARSE_OK


def _skip_first_data_line(buf: np.ndarray) -> np.ndarray:
    i, n = 0, buf.shape[0]
    while i < n:
        j = i
        while j < n and buf[j] in (32, 9, 13):
            j += 1
        end = i
        while end < n and buf[end] != 10:
            end += 1
        if j < end and buf[j] not in (35, 37):  # a data line: drop it
            return buf[end + 1 :]
        i = end + 1
    return buf[n:]


def iter_data_chunks(path: Path, chunk_bytes: int, skip_header: bool) -> Iterator[tuple[np.ndarray, int]]:
    """:func:`iter_line_chunks` of ``path`` (``(buf, lines before it)``) without its first data line when
    ``skip_header`` (the header: dropped from the first chunk, its lines counted in ``lines before``)."""
    first = True
    for buf, lines_before in iter_line_chunks(path, chunk_bytes):
        if first and skip_header:
            skipped = _skip_first_data_line(buf)
            lines_before += int(np.count_nonzero(buf[: buf.shape[0] - skipped.shape[0]] == 10))
            buf = skipped
        first = False
        yield buf, lines_before


def iter_int_rows(
    path: Path,
    num_columns: int,
    *,
    allow_extra_columns: bool,
    skip_header: bool,
    expected: str,
    chunk_bytes: int = CHUNK_BYTES,
    columns: Sequence[int] | None = None,
) -> Iterator[np.ndarray]:
    """Parse ``path`` into int64 [R, num_columns] blocks, one per text chunk.

    ``expected`` describes a good line for error messages (for example ``"two integer node ids"``). ``columns``
    (ascending 0-based indices, ``num_columns`` of them) picks the columns to parse, skipping the others
    (:func:`~graphtier.dataset.importers.common._column_kernels.parse_int_columns`); default: the first ``num_columns``.
    """
    picked = None if columns is None else np.asarray(columns, dtype=np.int64)
    for buf, lines_before in iter_data_chunks(path, chunk_bytes, skip_header):
        capacity = int(np.count_nonzero(buf == 10)) + 1
        out = np.empty((capacity, num_columns), dtype=np.int64)
        if picked is None:
            rows, code, offset = parse_int_rows(buf, num_columns, allow_extra_columns, out)
        else:
            rows, code, offset = parse_int_columns(buf, picked, allow_extra_columns, out)
        if code != kernels.PARSE_OK:
            raise parse_error(path, buf, lines_before, code, offset, expected)
        yield out[:rows]


def read_int_rows(
    path: Path,
    num_columns: int,
    *,
    allow_extra_columns: bool,
    skip_header: bool,
    expected: str,
    column: int | None = None,
) -> np.ndarray:
    """All of :func:`iter_int_rows` of ``path`` in one array: int64 [R, num_columns], or with ``column`` that
    column alone, int64 [R] (copied out of each block, so the whole table is never held)."""
    blocks = [
        block if column is None else block[:, column].copy()
        for block in iter_int_rows(
            path, num_columns, allow_extra_columns=allow_extra_columns, skip_header=skip_header, expected=expected
        )
    ]
    if blocks:
        return np.concatenate(blocks)
    return np.empty((0, num_columns) if column is None else 0, np.int64)


def iter_float_rows(
    path: Path, num_columns: int, *, expected: str, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[np.ndarray]:
    """Parse ``path`` into float32 [R, num_columns] blocks, one per text chunk."""
    for buf, lines_before in iter_line_chunks(path, chunk_bytes):
        capacity = int(np.count_nonzero(buf == 10)) + 1
        out = np.empty((capacity, num_columns), dtype=np.float32)
        rows, code, offset = kernels.parse_float_rows(buf, out)
        if code != kernels.PARSE_OK:
            raise parse_error(path, buf, lines_before, code, offset, expected)
        yield out[:rows]


def iter_float_columns(
    path: Path, columns: Sequence[int], *, skip_header: bool, finite_only: bool, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[np.ndarray]:
    """Parse the float columns ``columns`` (ascending 0-based indices) of every data line of ``path`` into float64
    [R, len(columns)] blocks, one per text chunk; the other columns may hold anything. A missing, non-numeric or
    (``finite_only``) NaN/Inf value is a one-line :class:`DatasetError` naming the file, line and column."""
    picked = np.asarray(columns, dtype=np.int64)
    bad = np.zeros(1, np.int64)
    for buf, lines_before in iter_data_chunks(path, chunk_bytes, skip_header):
        out = np.empty((int(np.count_nonzero(buf == 10)) + 1, picked.shape[0]), dtype=np.float64)
        rows, code, offset = parse_float_columns(buf, picked, finite_only, out, bad)
        if code != kernels.PARSE_OK:
            line_number = lines_before + int(np.count_nonzero(buf[:offset] == 10)) + 1
            found = (
                "a non-finite value (NaN/Inf)" if code == kernels.PARSE_NON_FINITE else kernels.PARSE_ERROR_TEXT[code]
            )
            raise DatasetError(
                f"{path}: line {line_number}: column {int(bad[0])}: expected a finite number, found {found}: "
                f"{_line_at(buf, offset)!r}"
            )
        yield out[:rows]


def count_columns(line: str) -> int:
    """Number of columns of a data line (separators: blanks with at most one comma)."""
    return len(_SEPARATOR.split(line.strip(" \t\r")))


def enumerate_data_lines(path: Path, skip_header: bool = False) -> Iterator[tuple[int, str]]:
    """``(line number, stripped line)`` of every non-blank, non-comment line, decoded as UTF-8; with
    ``skip_header`` all but the first such line (the header)."""
    lines = _data_lines(path)
    if skip_header:
        next(lines, None)
    yield from lines


def _data_lines(path: Path) -> Iterator[tuple[int, str]]:
    for buf, lines_before in iter_line_chunks(path):
        text = bytes(buf).decode("utf-8", errors="replace")
        for k, raw in enumerate(text.split("\n")):
            stripped = raw.strip(" \t\r")
            if stripped and stripped[0] not in "#%":
                yield lines_before + k + 1, stripped


def names_a_column(path: Path, column: int | str | None) -> bool:
    """Whether ``column`` is a name (not digits) found among the columns of the first data line of ``path`` (so
    that line is a header)."""
    if not isinstance(column, str) or re.fullmatch(r"\d+", column.strip()):
        return False
    lines = first_data_lines(path, 1)
    return bool(lines) and column in _SEPARATOR.split(lines[0])


def resolve_time_column(
    path: Path, time_column: int | str | None, has_header: bool, option: str = "{time_column}"
) -> int | None:
    """The 0-based index of ``time_column`` (an index, its digits, or a name of the header line) in the edge list
    ``path``, checked against the first data line's columns; None stays None. :class:`OptionError` names
    ``option`` (by default the option ``time_column``, as the caller spells it; or a manifest key), what was
    expected and what was found."""

    def refuse(message: str) -> OptionError:
        return OptionError(f"{option}: {message}", options=tuple(re.findall(r"\{([a-z][a-z0-9_]*)\}", option)))

    if time_column is None:
        return None
    lines = first_data_lines(path, 2)
    header_tokens = _SEPARATOR.split(lines[0]) if has_header and lines else None
    data_lines = lines[1:] if has_header else lines
    if isinstance(time_column, str) and not re.fullmatch(r"\d+", time_column.strip()):
        if header_tokens is None:
            raise refuse(
                f"expected a column index, or a column name of the header line of {path}, found "
                f"{time_column!r}, which is not a column of its first line"
            )
        if time_column not in header_tokens:
            raise refuse(
                f"expected a column of the header of {path} ({', '.join(header_tokens)}), found {time_column!r}"
            )
        index = header_tokens.index(time_column)
    elif isinstance(time_column, bool) or not isinstance(time_column, (int, str)):
        raise refuse(f"expected a column index or a header name, found {time_column!r}")
    else:
        index = int(time_column)
    if index < 2:
        raise refuse(
            f"expected a column of {path} after the two node ids (index 2 or more), found {index} "
            f"(the {'source' if index == 0 else 'destination'} column)"
        )
    columns = count_columns(data_lines[0]) if data_lines else None
    if columns is not None and index >= columns:
        raise refuse(f"expected a column index in [2, {columns}) ({path} has {columns} columns), found {index}")
    return index
