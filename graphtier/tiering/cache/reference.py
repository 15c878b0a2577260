"""Plain-Python references of the cache-policy kernels (:mod:`graphtier.tiering.cache._kernels`): the same
policies written directly with dictionaries and deques, for the tests to compare against on random traces. Each
counts the misses from position ``start`` on (the accesses before warm the cache up)."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence


def lru_reference(trace: Sequence[int], capacity: int, start: int = 0) -> int:
    """Misses of least-recently-used."""
    cache: OrderedDict[int, None] = OrderedDict()
    misses = 0
    for i, row in enumerate(trace):
        if row in cache:
            cache.move_to_end(row)
            continue
        misses += i >= start
        if capacity == 0:
            continue
        if len(cache) == capacity:
            cache.popitem(last=False)
        cache[row] = None
    return misses


def clock_reference(trace: Sequence[int], capacity: int, start: int = 0) -> int:
    """Misses of CLOCK (second chance) over ``capacity`` slots filled in order."""
    slots: list[int] = []
    bits: list[bool] = []
    where: dict[int, int] = {}
    hand, misses = 0, 0
    for i, row in enumerate(trace):
        if row in where:
            bits[where[row]] = True
            continue
        misses += i >= start
        if capacity == 0:
            continue
        if len(slots) < capacity:
            where[row] = len(slots)
            slots.append(row)
            bits.append(False)
            continue
        while bits[hand]:
            bits[hand] = False
            hand = (hand + 1) % capacity
        del where[slots[hand]]
        slots[hand], bits[hand], where[row] = row, False, hand
        hand = (hand + 1) % capacity
    return misses


def sieve_reference(trace: Sequence[int], capacity: int, start: int = 0) -> int:
    """Misses of SIEVE: a list oldest first; the hand walks towards the newest, skipping (and clearing) visited rows."""
    queue: list[int] = []  # oldest first
    visited: dict[int, bool] = {}
    hand: int | None = None  # the row the hand points at
    misses = 0
    for i, row in enumerate(trace):
        if row in visited:
            visited[row] = True
            continue
        misses += i >= start
        if capacity == 0:
            continue
        if len(queue) == capacity:
            at = queue.index(hand) if hand is not None else 0
            while visited[queue[at]]:
                visited[queue[at]] = False
                at = at + 1 if at + 1 < len(queue) else 0
            victim = queue.pop(at)
            del visited[victim]
            hand = queue[at] if at < len(queue) else None
        queue.append(row)
        visited[row] = False
    return misses


def s3fifo_reference(trace: Sequence[int], capacity: int, small_share: float = 0.1, start: int = 0) -> int:
    """Misses of S3-FIFO (see :func:`graphtier.tiering.cache._kernels.s3fifo_misses`)."""
    small_cap = max(1, int(capacity * small_share))
    main_cap = max(1, capacity - small_cap)
    small: deque[int] = deque()  # newest on the left
    main: deque[int] = deque()
    ghost: deque[int] = deque()
    freq: dict[int, int] = {}
    misses = 0
    for i, row in enumerate(trace):
        if row in freq:
            freq[row] = min(freq[row] + 1, 3)
            continue
        misses += i >= start
        if capacity == 0:
            continue
        while len(small) + len(main) >= capacity:
            if len(small) >= small_cap or not main:
                old = small.pop()
                if freq[old] > 1:
                    freq[old] = 0
                    main.appendleft(old)
                else:
                    del freq[old]
                    if len(ghost) == main_cap:
                        ghost.pop()
                    ghost.appendleft(old)
            else:
                old = main.pop()
                if freq[old] > 0:
                    freq[old] -= 1
                    main.appendleft(old)
                else:
                    del freq[old]
        freq[row] = 0
        (main if row in ghost else small).appendleft(row)
    return misses


def belady_reference(trace: Sequence[int], capacity: int, start: int = 0) -> int:
    """Misses of Belady's MIN with bypass on ``trace[start:]``, from the best contents (the first ``capacity``
    distinct rows of the suffix): evict the cached row (or skip the new one) used furthest in the future."""
    trace = list(trace[start:])
    cache: set[int] = set()
    if capacity > 0:
        for row in trace:
            if len(cache) == capacity:
                break
            cache.add(row)

    def next_use(r: int, i: int) -> int:
        return next((j for j in range(i + 1, len(trace)) if trace[j] == r), len(trace))

    misses = 0
    for i, row in enumerate(trace):
        if row in cache:
            continue
        misses += 1
        if capacity == 0:
            continue
        if len(cache) == capacity:
            victim = max(cache, key=lambda r: (next_use(r, i), r))
            if next_use(victim, i) <= next_use(row, i):
                continue
            cache.remove(victim)
        cache.add(row)
    return misses
