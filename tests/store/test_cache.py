"""RowCache against a dictionary model: a hit always returns the row of the requested id."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.store.cache import RowCache


@settings(max_examples=60, deadline=None)
@given(
    capacity=st.integers(1, 9),
    steps=st.lists(st.lists(st.integers(0, 30), max_size=10), min_size=1, max_size=10),
)
def test_hits_are_never_stale(capacity: int, steps: list[list[int]]) -> None:
    table = torch.randn(31, 4)
    cache = RowCache(capacity, 4, torch.float32, torch.device("cpu"))
    lookups = hits = 0
    for batch in steps:
        ids = torch.tensor(batch, dtype=torch.int64)
        hit, slots = cache.lookup(ids)
        assert torch.equal(cache.read(slots[hit]), table[ids[hit]])
        lookups += len(batch)
        hits += int(hit.sum())
        misses = ids[~hit]
        cache.insert(misses, table[misses])
        if misses.numel():  # one id per slot was admitted: its slot now holds its row
            held = cache.tags >= 0
            assert torch.equal(cache.rows[held], table[cache.tags[held]])
            assert bool(torch.isin(cache.tags[cache.slots_of(misses)], misses).all())
    assert cache.lookups == lookups and cache.hits == hits
    assert cache.hit_ratio == (hits / lookups if lookups else 0.0)


def test_conflicting_ids_in_one_insert_keep_tag_and_row_together() -> None:
    table = torch.arange(40, dtype=torch.float32).view(20, 2)
    cache = RowCache(4, 2, torch.float32, torch.device("cpu"))
    ids = torch.tensor([1, 5, 9, 2, 2])  # 1, 5 and 9 share slot 1
    cache.insert(ids, table[ids])
    held = cache.tags >= 0
    assert torch.equal(cache.rows[held], table[cache.tags[held]])
    assert int(cache.tags[1]) == 9  # the last one wins
    cache.clear()
    assert not bool((cache.tags >= 0).any())


def test_zero_capacity_is_refused() -> None:
    with pytest.raises(OptionError, match="--cache-budget"):
        RowCache(0, 2, torch.float32, torch.device("cpu"))
