"""Numba kernels of the cache-policy replay (:mod:`graphtier.tiering.cache.simulate`): misses of one row-access trace
against a cache of ``capacity`` rows under LRU, CLOCK, SIEVE, S3-FIFO and Belady's MIN. Each is a pure function of
(trace int64 [A] of row ids in [0, num_rows), capacity, num_rows, start) returning the misses of the accesses from
position ``start`` on (the accesses before warm the cache up); the plain Python references are
:mod:`graphtier.tiering.cache.reference`. Every kernel is O(A) (Belady's O(A log capacity))."""

from __future__ import annotations

import numba
import numpy as np

NONE = -1


@numba.njit(cache=True, nogil=True)
def _unlink(before: np.ndarray, after: np.ndarray, row: int, first: int, last: int) -> tuple[int, int]:
    """Take ``row`` out of a doubly linked list (``before[r]``: the neighbour towards ``first``); the new ends."""
    b, a = before[row], after[row]
    if b != NONE:
        after[b] = a
    else:
        first = a
    if a != NONE:
        before[a] = b
    else:
        last = b
    before[row] = NONE
    after[row] = NONE
    return first, last


@numba.njit(cache=True, nogil=True)
def _push_first(before: np.ndarray, after: np.ndarray, row: int, first: int, last: int) -> tuple[int, int]:
    """Put ``row`` at the ``first`` end of the list; the new ends."""
    before[row] = NONE
    after[row] = first
    if first != NONE:
        before[first] = row
    if last == NONE:
        last = row
    return row, last


@numba.njit(cache=True, nogil=True)
def lru_misses(trace: np.ndarray, capacity: int, num_rows: int, start: int = 0) -> int:
    """Least recently used: a hit moves the row to the front; a miss evicts the back row when full."""
    towards_head = np.full(num_rows, NONE, dtype=np.int64)
    towards_tail = np.full(num_rows, NONE, dtype=np.int64)
    cached = np.zeros(num_rows, dtype=np.bool_)
    head = NONE  # most recent
    tail = NONE  # least recent
    size = 0
    misses = 0
    for i in range(trace.shape[0]):
        row = trace[i]
        if cached[row]:
            if row != head:
                head, tail = _unlink(towards_head, towards_tail, row, head, tail)
                head, tail = _push_first(towards_head, towards_tail, row, head, tail)
            continue
        if i >= start:
            misses += 1
        if capacity == 0:
            continue
        if size == capacity:
            old = tail
            head, tail = _unlink(towards_head, towards_tail, old, head, tail)
            cached[old] = False
            size -= 1
        cached[row] = True
        head, tail = _push_first(towards_head, towards_tail, row, head, tail)
        size += 1
    return misses


@numba.njit(cache=True, nogil=True)
def clock_misses(trace: np.ndarray, capacity: int, num_rows: int, start: int = 0) -> int:
    """CLOCK (second chance): a hit sets the row's bit; on a miss the hand clears set bits until it finds a row
    without one, which the new row replaces in its slot."""
    slot_of = np.full(num_rows, NONE, dtype=np.int64)
    rows = np.full(max(capacity, 1), NONE, dtype=np.int64)
    bit = np.zeros(max(capacity, 1), dtype=np.bool_)
    hand = 0
    size = 0
    misses = 0
    for i in range(trace.shape[0]):
        row = trace[i]
        slot = slot_of[row]
        if slot != NONE:
            bit[slot] = True
            continue
        if i >= start:
            misses += 1
        if capacity == 0:
            continue
        if size < capacity:
            slot = size
            size += 1
        else:
            while bit[hand]:
                bit[hand] = False
                hand = (hand + 1) % capacity
            slot = hand
            slot_of[rows[slot]] = NONE
            hand = (hand + 1) % capacity
        rows[slot] = row
        bit[slot] = False
        slot_of[row] = slot
    return misses


@numba.njit(cache=True, nogil=True)
def sieve_misses(trace: np.ndarray, capacity: int, num_rows: int, start: int = 0) -> int:
    """SIEVE (Zhang et al., NSDI'24): a FIFO queue with a visited bit per row; a hit sets the bit; on a miss the
    hand walks from its place towards the head (the newest), clearing bits, and evicts the first row without one
    (it stays in place otherwise); new rows go to the head."""
    newer = np.full(num_rows, NONE, dtype=np.int64)  # towards the head
    older = np.full(num_rows, NONE, dtype=np.int64)  # towards the tail
    cached = np.zeros(num_rows, dtype=np.bool_)
    visited = np.zeros(num_rows, dtype=np.bool_)
    head = NONE
    tail = NONE
    hand = NONE
    size = 0
    misses = 0
    for i in range(trace.shape[0]):
        row = trace[i]
        if cached[row]:
            visited[row] = True
            continue
        if i >= start:
            misses += 1
        if capacity == 0:
            continue
        if size == capacity:
            obj = hand if hand != NONE else tail
            while visited[obj]:
                visited[obj] = False
                obj = newer[obj] if newer[obj] != NONE else tail
            hand = newer[obj]  # the next row towards the head, or NONE: restart at the tail
            head, tail = _unlink(newer, older, obj, head, tail)
            cached[obj] = False
            size -= 1
        cached[row] = True
        visited[row] = False
        head, tail = _push_first(newer, older, row, head, tail)
        size += 1
    return misses


@numba.njit(cache=True, nogil=True)
def s3fifo_misses(trace: np.ndarray, capacity: int, num_rows: int, small_share: float, start: int = 0) -> int:
    """S3-FIFO (Yang et al., SOSP'23): a small FIFO S (``small_share`` of the capacity), a main FIFO M and a ghost
    FIFO G of evicted ids (as many as M holds); a frequency per cached row (0-3). A miss of a ghost id enters M,
    others enter S. When full: if S holds at least its share, S's oldest row moves to M when read again since it
    entered (frequency > 1: read at least twice since it entered, the paper's rule), else goes to G; otherwise M's
    oldest row is reinserted with its frequency less one while it is positive, else evicted."""
    small_cap = max(1, int(capacity * small_share))
    main_cap = max(1, capacity - small_cap)
    where = np.zeros(num_rows, dtype=np.int8)  # 0 absent, 1 in S, 2 in M
    freq = np.zeros(num_rows, dtype=np.int8)
    ghost_count = np.zeros(num_rows, dtype=np.int32)  # copies of the id in G
    ring = max(capacity, 1) + 1
    s_ring = np.full(ring, NONE, dtype=np.int64)
    m_ring = np.full(ring, NONE, dtype=np.int64)
    g_ring = np.full(main_cap + 1, NONE, dtype=np.int64)
    s_head = s_tail = 0  # push at head, pop at tail
    m_head = m_tail = 0
    g_head = g_tail = 0
    s_size = m_size = g_size = 0
    misses = 0
    for i in range(trace.shape[0]):
        row = trace[i]
        if where[row] != 0:
            if freq[row] < 3:
                freq[row] += 1
            continue
        if i >= start:
            misses += 1
        if capacity == 0:
            continue
        while s_size + m_size >= capacity:  # evict one row
            if s_size >= small_cap or m_size == 0:
                old = s_ring[s_tail]
                s_tail = (s_tail + 1) % ring
                s_size -= 1
                if freq[old] > 1:  # read at least twice more while in S: promote to M
                    where[old] = 2
                    freq[old] = 0
                    m_ring[m_head] = old
                    m_head = (m_head + 1) % ring
                    m_size += 1
                else:
                    where[old] = 0
                    if g_size == main_cap:
                        gone = g_ring[g_tail]
                        g_tail = (g_tail + 1) % (main_cap + 1)
                        g_size -= 1
                        ghost_count[gone] -= 1
                    g_ring[g_head] = old
                    g_head = (g_head + 1) % (main_cap + 1)
                    g_size += 1
                    ghost_count[old] += 1
            else:
                old = m_ring[m_tail]
                m_tail = (m_tail + 1) % ring
                m_size -= 1
                if freq[old] > 0:
                    freq[old] -= 1
                    m_ring[m_head] = old
                    m_head = (m_head + 1) % ring
                    m_size += 1
                else:
                    where[old] = 0
        freq[row] = 0
        if ghost_count[row] > 0:
            where[row] = 2
            m_ring[m_head] = row
            m_head = (m_head + 1) % ring
            m_size += 1
        else:
            where[row] = 1
            s_ring[s_head] = row
            s_head = (s_head + 1) % ring
            s_size += 1
    return misses


@numba.njit(cache=True, nogil=True)
def next_uses(trace: np.ndarray, num_rows: int) -> np.ndarray:
    """int64 [A]: the position of the next access of each access's row (A when there is none)."""
    out = np.empty(trace.shape[0], dtype=np.int64)
    last = np.full(num_rows, trace.shape[0], dtype=np.int64)
    for i in range(trace.shape[0] - 1, -1, -1):
        out[i] = last[trace[i]]
        last[trace[i]] = i
    return out


@numba.njit(cache=True, nogil=True)
def _swap(heap_key: np.ndarray, heap_row: np.ndarray, i: int, j: int) -> None:
    """Exchange entries ``i`` and ``j`` of the heap (int64 keys and rows, in place)."""
    heap_key[i], heap_key[j] = heap_key[j], heap_key[i]
    heap_row[i], heap_row[j] = heap_row[j], heap_row[i]


@numba.njit(cache=True, nogil=True)
def _sift_up(heap_key: np.ndarray, heap_row: np.ndarray, i: int) -> None:
    while i > 0:
        parent = (i - 1) // 2
        if heap_key[parent] >= heap_key[i]:
            break
        _swap(heap_key, heap_row, parent, i)
        i = parent


@numba.njit(cache=True, nogil=True)
def _sift_down(heap_key: np.ndarray, heap_row: np.ndarray, size: int, i: int = 0) -> None:
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        big = left
        if left + 1 < size and heap_key[left + 1] > heap_key[left]:
            big = left + 1
        if heap_key[i] >= heap_key[big]:
            break
        _swap(heap_key, heap_row, i, big)
        i = big


@numba.njit(cache=True, nogil=True)
def _push(heap_key: np.ndarray, heap_row: np.ndarray, size: int, key: int, row: int) -> int:
    """Add ``row`` with ``key`` to the max-heap of ``size`` entries (int64 arrays with room for one more); the new
    size."""
    heap_key[size] = key
    heap_row[size] = row
    _sift_up(heap_key, heap_row, size)
    return size + 1


@numba.njit(cache=True, nogil=True)
def _pop(heap_key: np.ndarray, heap_row: np.ndarray, size: int) -> int:
    """Drop the root of the max-heap of ``size`` > 0 entries (its last entry takes its place); the new size."""
    size -= 1
    heap_key[0], heap_row[0] = heap_key[size], heap_row[size]
    _sift_down(heap_key, heap_row, size)
    return size


@numba.njit(cache=True, nogil=True)
def belady_misses(trace: np.ndarray, capacity: int, num_rows: int, start: int = 0) -> int:
    """Belady's MIN, the offline floor: on a miss with the cache full, the row whose next use is furthest away
    (the new row included: it is not cached when it comes back last) leaves. A max-heap of next uses with stale
    entries skipped (each row's current next use in ``due``), compacted when it reaches 4 x capacity entries.

    It is the floor of the accesses from ``start`` on whatever the cache held before (a static tier holds its rows
    from the start, so the floor may not pay first reads either): MIN on ``trace[start:]`` from the best possible
    contents, the ``capacity`` rows needed first."""
    trace = trace[start:]
    uses = next_uses(trace, num_rows)
    due = np.full(num_rows, NONE, dtype=np.int64)  # a cached row's next use, NONE when not cached
    limit = 4 * capacity + 64  # entries kept before the stale ones are dropped: memory O(capacity)
    heap_key = np.empty(limit + 1, dtype=np.int64)
    heap_row = np.empty(limit + 1, dtype=np.int64)
    heap_size = 0
    size = 0
    misses = 0
    if capacity > 0:  # prefill: the first ``capacity`` distinct rows of the suffix, keyed by their first use
        first = np.full(num_rows, NONE, dtype=np.int64)
        for i in range(trace.shape[0]):
            row = trace[i]
            if first[row] == NONE:
                first[row] = i
                if size < capacity:
                    due[row] = i
                    heap_size = _push(heap_key, heap_row, heap_size, i, row)
                    size += 1
                if size == capacity:
                    break
    for i in range(trace.shape[0]):
        row = trace[i]
        following = uses[i]
        if heap_size == limit:  # keep the live entries (one per cached row) and heapify them again
            kept = 0
            for j in range(heap_size):
                if due[heap_row[j]] == heap_key[j]:
                    heap_key[kept], heap_row[kept] = heap_key[j], heap_row[j]
                    kept += 1
            heap_size = kept
            for j in range(heap_size // 2 - 1, -1, -1):
                _sift_down(heap_key, heap_row, heap_size, j)
        if due[row] != NONE:  # a hit: the row's key moves on (the old heap entry goes stale)
            due[row] = following
            heap_size = _push(heap_key, heap_row, heap_size, following, row)
            continue
        misses += 1
        if capacity == 0:
            continue
        if size == capacity:
            while due[heap_row[0]] != heap_key[0]:  # stale
                heap_size = _pop(heap_key, heap_row, heap_size)
            if heap_key[0] <= following:  # the new row is needed last (or never): bypass it
                continue
            due[heap_row[0]] = NONE
            heap_size = _pop(heap_key, heap_row, heap_size)
            size -= 1
        due[row] = following
        heap_size = _push(heap_key, heap_row, heap_size, following, row)
        size += 1
    return misses
