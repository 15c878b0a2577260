"""The numba kernels of the importers against their plain references, on random inputs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.importers.common import kernels
from graphtier.dataset.importers.common._column_kernels import (
    parse_float_rows_reference,
    parse_int_rows,
    parse_int_rows_reference,
)

SEPARATORS = [" ", "\t", ",", ", ", " ,\t", "  "]


@st.composite
def int_tables(draw: st.DrawFn) -> tuple[bytes, int, bool]:
    """Text of integer records with random separators, comments, blank lines and noise."""
    num_columns = draw(st.integers(1, 3))
    lines = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["row", "row", "row", "comment", "blank", "extra", "short", "bad"]))
        if kind == "comment":
            lines.append(draw(st.sampled_from(["#", "%", "  #"])) + "note 1 2")
            continue
        if kind == "blank":
            lines.append(draw(st.sampled_from(["", "  ", "\t", "\r"])))
            continue
        count = num_columns + (1 if kind == "extra" else 0) - (1 if kind == "short" else 0)
        values = [str(draw(st.integers(-(2**40), 2**40))) for _ in range(max(count, 0))]
        if kind == "bad" and values:
            values[draw(st.integers(0, len(values) - 1))] += draw(st.sampled_from(["x", ".5", "e"]))
        text = draw(st.sampled_from(["", " ", "\t"])) + ""
        for k, v in enumerate(values):
            text += (draw(st.sampled_from(SEPARATORS)) if k else "") + v
        text += draw(st.sampled_from(["", " ", "\r", "\t"]))
        lines.append(text)
    body = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
    return body.encode(), num_columns, draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(int_tables())
def test_parse_int_rows_matches_reference(case: tuple[bytes, int, bool]) -> None:
    text, num_columns, allow_extra = case
    buf = np.frombuffer(text, dtype=np.uint8)
    out = np.empty((text.count(b"\n") + 1, num_columns), dtype=np.int64)
    rows, code, offset = parse_int_rows(buf, num_columns, allow_extra, out)
    expected, expected_code, expected_offset = parse_int_rows_reference(text, num_columns, allow_extra)
    assert (code, offset) == (expected_code, expected_offset)
    np.testing.assert_array_equal(out[:rows], expected)


def test_parse_int_rows_limits_and_errors() -> None:
    def parse(text: bytes, columns: int = 2, extra: bool = True) -> tuple[list[list[int]], int, int]:
        buf = np.frombuffer(text, dtype=np.uint8)
        out = np.empty((text.count(b"\n") + 1, columns), dtype=np.int64)
        rows, code, offset = parse_int_rows(buf, columns, extra, out)
        return out[:rows].tolist(), code, offset

    assert parse(b"9223372036854775807 -9223372036854775807\n") == ([[2**63 - 1, -(2**63 - 1)]], kernels.PARSE_OK, -1)
    assert parse(b"1 2\n9223372036854775808 1\n")[1:] == (kernels.PARSE_OVERFLOW, 4)
    assert parse(b"1 2\n3\n")[1:] == (kernels.PARSE_TOO_FEW_COLUMNS, 4)
    assert parse(b"1,2,\n", extra=False)[1] == kernels.PARSE_TOO_MANY_COLUMNS
    assert parse(b"1 2 0.5 extra\n") == ([[1, 2]], kernels.PARSE_OK, -1)
    assert parse(b"a b\n")[1] == kernels.PARSE_BAD_TOKEN
    assert parse(b"1,,2\n")[1] == kernels.PARSE_BAD_TOKEN
    assert parse(b"") == ([], kernels.PARSE_OK, -1)


@st.composite
def float_tables(draw: st.DrawFn) -> tuple[bytes, np.ndarray]:
    num_columns = draw(st.integers(1, 4))
    values = draw(
        st.lists(
            st.lists(
                st.one_of(
                    st.floats(allow_nan=False, allow_infinity=False, width=32),
                    st.integers(-(10**6), 10**6).map(float),
                    st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-30, 3.4e38]),
                ),
                min_size=num_columns,
                max_size=num_columns,
            ),
            max_size=20,
        )
    )
    style = draw(st.sampled_from(["repr", "e", "f", "g"]))
    lines = []
    for row in values:
        cells = []
        for v in row:
            if style == "repr" or not np.isfinite(v):
                cells.append(repr(v))
            else:
                cells.append(format(v, {"e": ".7e", "f": ".6f", "g": ".9g"}[style]))
        lines.append(draw(st.sampled_from([",", " ", "\t"])).join(cells))
    table = np.array([[float(c) for c in line.replace("\t", ",").replace(" ", ",").split(",")] for line in lines])
    return ("\n".join(lines) + "\n").encode(), table.reshape(len(lines), num_columns)


@settings(max_examples=200, deadline=None)
@given(float_tables())
def test_parse_float_rows_matches_reference(case: tuple[bytes, np.ndarray]) -> None:
    text, expected = case
    num_columns = expected.shape[1]
    buf = np.frombuffer(text, dtype=np.uint8)
    out = np.empty((text.count(b"\n") + 1, num_columns), dtype=np.float64)
    rows, code, _ = kernels.parse_float_rows(buf, out)
    reference, ref_code, _ = parse_float_rows_reference(text, num_columns)
    assert code == ref_code == kernels.PARSE_OK
    np.testing.assert_allclose(out[:rows], reference, rtol=1e-15, atol=0)
    np.testing.assert_allclose(out[:rows], expected, rtol=1e-15, atol=0)
    # stored as float32 the values are identical to a float32 cast of the exact value
    out32 = np.empty((text.count(b"\n") + 1, num_columns), dtype=np.float32)
    kernels.parse_float_rows(buf, out32)
    np.testing.assert_array_equal(out32[:rows], expected.astype(np.float32))


def test_parse_float_rows_errors() -> None:
    out = np.empty((3, 2), dtype=np.float32)
    for text, code in [
        (b"1.0,2.0\n1.0\n", kernels.PARSE_TOO_FEW_COLUMNS),
        (b"1.0,2.0,3.0\n", kernels.PARSE_TOO_MANY_COLUMNS),
        (b"1.0,abc\n", kernels.PARSE_BAD_TOKEN),
        (b"1.0,2e\n", kernels.PARSE_BAD_TOKEN),
        (b"1.0,.\n", kernels.PARSE_BAD_TOKEN),
    ]:
        _, got, _ = kernels.parse_float_rows(np.frombuffer(text, dtype=np.uint8), out)
        assert got == code, text
        assert parse_float_rows_reference(text, 2)[1] == code, text


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40), st.integers(0, 300), st.integers(1, 4), st.integers(0, 2**31))
def test_chunked_count_and_scatter_match_references(n: int, e: int, parts: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, e)
    dst = rng.integers(0, n, e)
    bounds = np.linspace(0, e, parts + 1).astype(int)
    counts = np.zeros(n, np.int64)
    counts_ref = np.zeros(n, np.int64)
    for a, b in zip(bounds[:-1], bounds[1:]):
        kernels.count_destinations(dst[a:b], counts)
        kernels.count_destinations_reference(dst[a:b], counts_ref)
    np.testing.assert_array_equal(counts, counts_ref)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    out = np.empty(e, np.int32)
    out_ref = np.empty(e, np.int32)
    cursor, cursor_ref = indptr[:-1].copy(), indptr[:-1].copy()
    for a, b in zip(bounds[:-1], bounds[1:]):
        kernels.scatter_sources(src[a:b].astype(np.int32), dst[a:b], cursor, out)
        kernels.scatter_sources_reference(src[a:b].astype(np.int32), dst[a:b], cursor_ref, out_ref)
    np.testing.assert_array_equal(out, out_ref)  # both keep input order within a node
    np.testing.assert_array_equal(cursor, indptr[1:])
    kernels.sort_neighbour_lists(indptr, out)
    kernels.sort_neighbour_lists_reference(indptr, out_ref)
    np.testing.assert_array_equal(out, out_ref)
