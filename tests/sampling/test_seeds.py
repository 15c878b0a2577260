"""iter_seed_batches: coverage, reproducibility per (seed, epoch), drop_last, option checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.sampling import iter_seed_batches


@settings(deadline=None)
@given(size=st.integers(0, 300), batch_size=st.integers(1, 64), shuffle=st.booleans(), drop_last=st.booleans())
def test_batches_cover_the_ids(size, batch_size, shuffle, drop_last):
    ids = np.arange(1000, 1000 + size, dtype=np.int64)
    batches = list(iter_seed_batches(ids, batch_size, shuffle=shuffle, seed=1, epoch=0, drop_last=drop_last))
    assert all(b.dtype == np.int64 and b.size <= batch_size for b in batches)
    joined = np.concatenate(batches) if batches else np.empty(0, np.int64)
    if drop_last:
        assert all(b.size == batch_size for b in batches) and joined.size == size - size % batch_size
    else:
        assert joined.size == size
    assert np.unique(joined).size == joined.size and np.isin(joined, ids).all()
    if not shuffle:
        assert np.array_equal(joined, ids[: joined.size])


def test_reproducible_per_seed_and_epoch():
    ids = np.arange(500)

    def run(seed, epoch):
        return np.concatenate(list(iter_seed_batches(ids, 64, shuffle=True, seed=seed, epoch=epoch)))

    assert np.array_equal(run(3, 1), run(3, 1))
    assert not np.array_equal(run(3, 1), run(3, 2))
    assert not np.array_equal(run(3, 1), run(4, 1))


@pytest.mark.parametrize("batch_size", [0, -3, 2.0, True])
def test_invalid_batch_size(batch_size):
    with pytest.raises(OptionError, match="batch_size"):
        list(iter_seed_batches(np.arange(5), batch_size, shuffle=False, seed=0, epoch=0))


def test_invalid_ids():
    with pytest.raises(OptionError, match="train_idx"):
        list(iter_seed_batches(np.zeros((2, 2), dtype=np.int64), 4, shuffle=False, seed=0, epoch=0))
