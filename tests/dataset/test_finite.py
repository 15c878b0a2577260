"""NonFiniteGuard and find_non_finite against plain numpy on random matrices."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset import finite
from graphtier.errors import DatasetError, OptionError


@st.composite
def poisoned(draw: st.DrawFn) -> np.ndarray:
    rows, dim = draw(st.integers(1, 60)), draw(st.integers(1, 5))
    dtype = draw(st.sampled_from([np.float32, np.float16, np.float64]))
    a = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).standard_normal((rows, dim)).astype(dtype)
    for _ in range(draw(st.integers(0, 4))):
        a[draw(st.integers(0, rows - 1)), draw(st.integers(0, dim - 1))] = draw(
            st.sampled_from([np.nan, np.inf, -np.inf])
        )
    return a


@settings(max_examples=60, deadline=None)
@given(a=poisoned(), first_row=st.integers(0, 1000))
def test_guard_matches_numpy(a: np.ndarray, first_row: int) -> None:
    bad = ~np.isfinite(a)
    replace = finite.NonFiniteGuard(Path("f.npy"), "replace")
    fixed = replace.apply(a.copy(), first_row)
    assert replace.replaced == int(bad.sum())
    assert np.array_equal(fixed, np.where(bad, 0, a))
    if bad.any():
        first = first_row + int(np.flatnonzero(bad.any(axis=1))[0])
        with pytest.raises(DatasetError, match=f"first in row {first}\\)"):
            finite.NonFiniteGuard(Path("f.npy")).apply(a, first_row)
    else:
        assert finite.NonFiniteGuard(Path("f.npy")).apply(a, first_row) is a


@settings(max_examples=60, deadline=None)
@given(a=poisoned())
def test_find_non_finite_matches_numpy(a: np.ndarray) -> None:
    bad_rows = np.flatnonzero(~np.isfinite(a).all(axis=1))
    found = finite.find_non_finite(a)
    assert (found is None) == (bad_rows.size == 0)
    if found is not None:
        assert found == (int(bad_rows[0]), False)


def test_find_non_finite_scans_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(finite, "SCAN_BLOCK_BYTES", 16)  # one row of 4 float32 per block
    a = np.ones((50, 4), np.float32)
    a[37, 3] = np.nan
    assert finite.find_non_finite(a) == (37, False)


def test_integer_features_are_finite_and_modes_checked() -> None:
    assert finite.find_non_finite(np.ones((3, 2), np.int64)) is None
    with pytest.raises(OptionError, match="--non-finite"):
        finite.NonFiniteGuard(Path("f"), "ignore")


def test_stored_non_finite_features_hint_names_the_import_argument(tiny_dataset) -> None:
    """The re-import hint names ``non_finite='replace'`` for a Python caller and ``--non-finite replace`` on the CLI."""
    from graphtier.dataset import Dataset

    features = np.load(tiny_dataset.path / "features.npy")
    features[1, 0] = np.nan
    np.save(tiny_dataset.path / "features.npy", features)
    with pytest.raises(DatasetError, match=r"re-import with non_finite='replace'$") as info:
        Dataset.open(tiny_dataset.path)
    assert "--" not in str(info.value)
    assert info.value.render(cli=True).endswith("re-import with --non-finite replace")
