"""graphtier._prefetch: the prefetch hint compiles for every table the kernels pass and changes no value."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier._prefetch import PREFETCH_DISTANCE, prefetch_row


@numba.njit(cache=False)
def _sum_rows_prefetching(table: np.ndarray, ids: np.ndarray) -> float:
    """Sum of ``table[ids[i]]`` over the in-range ids, prefetching every id (in range or not) first."""
    total = 0.0
    for i in range(ids.shape[0]):
        if i + PREFETCH_DISTANCE < ids.shape[0]:
            prefetch_row(table, ids[i + PREFETCH_DISTANCE])
        prefetch_row(table, ids[i])
        row = ids[i]
        if 0 <= row < table.shape[0]:
            for k in range(table.shape[1]):
                total += table[row, k]
    return total


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 50),
    dim=st.integers(1, 600),  # rows shorter and longer than the prefetched bytes
    dtype=st.sampled_from([np.float32, np.uint32, np.uint16, np.float64]),  # numba has no CPU float16
    layout=st.sampled_from(["C", "F", "strided"]),
    ids=st.lists(st.integers(-(10**12), 10**12), max_size=40),
)
def test_prefetch_changes_no_value_and_never_faults(
    rows: int, dim: int, dtype: type, layout: str, ids: list[int]
) -> None:
    base = np.random.default_rng(rows * 1000 + dim).normal(size=(rows, 2 * dim)).astype(dtype)
    table = {"C": np.ascontiguousarray(base[:, :dim]), "F": np.asfortranarray(base[:, :dim]), "strided": base[:, ::2]}[
        layout
    ]
    # ids far outside the table (and negative ones) are prefetched too: a prefetch is a hint and cannot fault
    ids_np = np.array(ids + [0, rows - 1], dtype=np.int64)
    in_range = ids_np[(ids_np >= 0) & (ids_np < rows)]
    expected = float(table[in_range].astype(np.float64).sum())
    assert _sum_rows_prefetching(table, ids_np) == pytest.approx(expected, rel=1e-6, abs=1e-6)


def test_prefetch_rejects_what_is_not_a_table() -> None:
    @numba.njit(cache=False)
    def on_vector(vector: np.ndarray) -> None:
        prefetch_row(vector, 0)

    with pytest.raises(numba.core.errors.TypingError):
        on_vector(np.zeros(4, np.float32))
