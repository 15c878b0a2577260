"""ThreadTeam: every index covered exactly once, errors re-raised, empty ranges."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier._threads import ThreadTeam

TEAM = ThreadTeam(2)


@settings(deadline=None, max_examples=30)
@given(total=st.integers(0, 5000), min_chunk=st.integers(1, 700))
def test_ranges_cover_every_index_once(total, min_chunk):
    hits = np.zeros(total, dtype=np.int64)
    lock = threading.Lock()

    def work(first: int, stop: int) -> None:
        assert 0 <= first < stop <= total
        with lock:
            hits[first:stop] += 1

    TEAM.run(work, total, min_chunk)
    assert (hits == 1).all()


def test_chunk_errors_are_raised_in_the_caller():
    def work(first: int, stop: int) -> None:
        if first > 0:
            raise ValueError("chunk failed")

    with pytest.raises(ValueError, match="chunk failed"):
        TEAM.run(work, 10_000, 100)
    TEAM.run(lambda first, stop: None, 10_000, 100)  # still usable afterwards
