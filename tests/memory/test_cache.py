"""RowCache: hits are never stale, and replacement is CLOCK (checked against a sequential model)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.memory.features.cache import RowCache


@settings(max_examples=60, deadline=None)
@given(
    capacity=st.integers(1, 9),
    ways=st.integers(1, 4),
    steps=st.lists(st.lists(st.integers(0, 30), max_size=10), min_size=1, max_size=10),
)
def test_hits_are_never_stale(capacity: int, ways: int, steps: list[list[int]]) -> None:
    table = torch.randn(31, 4)
    cache = RowCache(capacity, 4, torch.float32, torch.device("cpu"), ways=ways)
    lookups = hits = 0
    for batch in steps:
        ids = torch.tensor(batch, dtype=torch.int64)
        hit, slots = cache.lookup(ids)
        assert torch.equal(cache.read(slots[hit]), table[ids[hit]])
        lookups += len(batch)
        hits += int(hit.sum())
        misses = ids[~hit]
        cache.insert(misses, table[misses])
        held = cache.tags >= 0
        assert torch.equal(cache.rows[held], table[cache.tags[held]])
        assert cache.tags[held].unique().numel() == int(held.sum())  # an id is cached at most once
    assert cache.lookups == lookups and cache.hits == hits
    assert cache.hit_ratio == (hits / lookups if lookups else 0.0)


def _clock_model(state: tuple[list[list[int]], list[list[bool]], list[int]], new_ids: list[int], sets: int) -> None:
    """Sequential CLOCK, rows admitted in one batch protected from each other."""
    tags, referenced, hands = state
    ways = len(tags[0])
    taken: dict[int, set[int]] = {s: set() for s in range(sets)}
    for row in new_ids:
        s = row % sets
        if row in tags[s]:
            continue
        while True:
            hand = hands[s]
            hands[s] = (hand + 1) % ways
            if hand in taken[s]:
                continue
            if referenced[s][hand]:
                referenced[s][hand] = False
                continue
            tags[s][hand] = row
            taken[s].add(hand)
            break


@settings(max_examples=80, deadline=None)
@given(
    sets=st.integers(1, 3),
    ways=st.integers(1, 4),
    steps=st.lists(st.lists(st.integers(0, 39), max_size=6), min_size=1, max_size=8),
)
def test_replacement_is_clock(sets: int, ways: int, steps: list[list[int]]) -> None:
    cache = RowCache(sets * ways, 1, torch.float32, torch.device("cpu"), ways=ways)
    table = torch.arange(40, dtype=torch.float32).view(40, 1)
    state = ([[-1] * ways for _ in range(sets)], [[False] * ways for _ in range(sets)], [0] * sets)
    for batch in steps:
        ids = torch.tensor(batch, dtype=torch.int64)
        hit, _ = cache.lookup(ids)
        for row in batch:
            if row in state[0][row % sets]:
                state[1][row % sets][state[0][row % sets].index(row)] = True
        new = list(dict.fromkeys(ids[~hit].tolist()))
        if any(sum(1 for r in new if r % sets == s) > ways for s in range(sets)):
            continue  # more new rows than ways in a set: the bulk insert keeps the last ones (not modelled)
        cache.insert(ids[~hit], table[ids[~hit]])
        _clock_model(state, new, sets)
        assert sorted(t for t in cache.tags.tolist() if t >= 0) == sorted(t for row in state[0] for t in row if t >= 0)


def test_referenced_rows_get_a_second_chance() -> None:
    table = torch.arange(20, dtype=torch.float32).view(20, 1)
    cache = RowCache(2, 1, torch.float32, torch.device("cpu"), ways=2)  # one set of two slots
    cache.insert(torch.tensor([1, 2]), table[[1, 2]])
    cache.lookup(torch.tensor([1]))  # 1 is used again
    cache.insert(torch.tensor([3]), table[[3]])  # evicts 2, not 1
    assert sorted(cache.tags.tolist()) == [1, 3]


def test_overfull_set_keeps_the_last_rows_and_clear_forgets() -> None:
    table = torch.arange(40, dtype=torch.float32).view(20, 2)
    cache = RowCache(4, 2, torch.float32, torch.device("cpu"), ways=2)  # 2 sets of 2
    ids = torch.tensor([1, 3, 5, 7, 2, 2])  # 1, 3, 5, 7 all map to set 1
    cache.insert(ids, table[ids])
    held = cache.tags >= 0
    assert torch.equal(cache.rows[held], table[cache.tags[held]])
    assert sorted(cache.tags[held].tolist()) == [2, 5, 7]
    cache.clear()
    assert not bool((cache.tags >= 0).any())


def test_zero_capacity_is_refused() -> None:
    with pytest.raises(OptionError, match="--cache-budget"):
        RowCache(0, 2, torch.float32, torch.device("cpu"))
