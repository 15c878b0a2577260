"""Temporal neighbour sampling: the spans and draws of a time-bounded hop and the (node, time bound) relabel,
numba kernels with their plain-Python references.

The graph is the dataset's CSC (each destination's list ``indptr[d] .. indptr[d + 1]``) with ``order``: for
every list, that list's CSC positions sorted by (time, position), and its :class:`TimeOrder` (:func:`time_ordered`),
a copy the sampler builds once: the times in that order, every 16th of them, and (CSC position, source) per edge
(12 bytes per edge when the times span less than 2^31 units, kept as int32 offsets from the first, and the positions
and sources are below 2^31; up to 24 else), so that a hop reads contiguous runs per list, never through ``order``.
The edges strictly earlier than a bound (``inclusive=False``) or at most the bound (``inclusive=True``) are then a
prefix of the list's run, found by binary search, first among the list's every-16th times, then in one run of at
most 15 times. From that prefix a hop picks ``fanout`` of them uniformly without replacement (Floyd's algorithm,
the same counter-based draws as the untimed sampler) or the ``fanout`` most recent (``recent``); ``fanout < 0``
takes them all.

Time bound of a sampled neighbour: it inherits the bound of the destination it was sampled for, which is
the seed time of the seed whose path reached it (PyG's temporal scheme), so no hop reads past its seed's
time. A node is one row per (node, bound) pair (:func:`relabel_pairs_hashed`), never a minimum over seeds;
when every seed has one time, a row is a node and the untimed relabel serves (``_neighbor_kernels.relabel``).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from graphtier.sampling.neighbor._neighbor_kernels import (
    CHUNK,
    floyd_positions,
    floyd_positions_py,
    floyd_table,
    node_key,
    node_key_py,
)

COARSE_STRIDE = 16
"""Every ``COARSE_STRIDE``-th time of the time order is kept in :attr:`TimeOrder.coarse`: a search first finds its
run of at most this many times there (an array 1/16 the size, often cached), then one or two cache lines of
:attr:`TimeOrder.times`."""


NARROW_SPAN = (1 << 31) - 1
"""Times whose last minus first is below this are stored as int32 offsets from the first (:class:`TimeOrder`)."""


class TimeOrder(NamedTuple):
    """Every list in time order, as a hop reads it (:func:`time_ordered`: 12 bytes per edge plus 4 per stride when
    times, positions and sources fit in int32; 24 plus 8 when none does).

    ``times``: int32 or int64 [E], the edges' times minus ``origin`` in the time order (each list's run sorted):
    int32 when the times span less than :data:`NARROW_SPAN` units (a search then reads half the cache lines: on
    ``bench_temporal``'s batches, 15,10,5 with seed times uniform, the spans took 7.1-7.9 ms a batch against 9.7-10.0
    with int64), else int64 with ``origin`` 0. ``coarse``: the same dtype, [ceil(E / stride)], ``times[::stride]``.
    ``rows``: int32 (when the edge count and every source id are below 2^31) or int64 [E, 2], (CSC position, source)
    of the edge at each position of the time order (the draws cost the same either way). ``stride``: the
    step of ``coarse``. ``origin``: the time that ``times`` count from. ``last``: the last edge time (None: no edge).
    """

    times: np.ndarray
    coarse: np.ndarray
    rows: np.ndarray
    stride: int
    origin: int
    last: int | None

    @property
    def search(self) -> tuple[np.ndarray, np.ndarray, np.int64, np.ndarray]:
        """``(times, coarse, stride, clamp)``: :func:`temporal_spans`'s arguments after ``indptr``. ``clamp``: int64
        [3], (floor, ceiling, origin); a bound ``b`` is compared as ``min(max(b, floor), ceiling) - origin``. For
        int32 times (floor, ceiling) = (origin - 1, origin + NARROW_SPAN): a bound before every edge stays below
        them, one after every edge above them, without overflow; for int64 times every bound is kept as it is."""
        if self.times.dtype == np.int32:
            clamp = [self.origin - 1, self.origin + NARROW_SPAN, self.origin]
        else:
            clamp = [np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0]
        return self.times, self.coarse, np.int64(self.stride), np.array(clamp, np.int64)


def time_ordered(
    indices: np.ndarray, edge_time: np.ndarray, order: np.ndarray, stride: int = COARSE_STRIDE, *, wide: bool = False
) -> TimeOrder:
    """The :class:`TimeOrder` of the time order ``order`` (int64 [E], each list's CSC positions sorted by time), from
    ``indices`` (int [E]) and ``edge_time`` (int64 [E]) in CSC order: the cut of a list is a search over its run of
    ``times`` (through ``coarse`` when the run is longer than ``stride``), its draws read ``rows``. The times are
    stored as int32 offsets from the first when they span less than :data:`NARROW_SPAN` units, and ``rows`` as int32
    when every position and source fits; ``wide``: int64 for both whatever they hold (the kernels take either)."""
    times = np.take(edge_time, order)
    first = int(times.min()) if times.shape[0] else 0
    last = int(times.max()) if times.shape[0] else None
    origin = 0
    int64 = np.iinfo(np.int64)
    if not wide and last is not None and last - first < NARROW_SPAN and int64.min < first <= int64.max - NARROW_SPAN:
        origin = first
        times = (times - np.int64(first)).astype(np.int32)
    # int32 sources fit as they are; int64 ones are scanned once (no graph check bounds them by the node count)
    small_ids = indices.dtype == np.int32 or indices.shape[0] == 0 or int(indices.max()) <= NARROW_SPAN
    fits = order.shape[0] <= NARROW_SPAN and small_ids
    rows = np.empty((order.shape[0], 2), np.int32 if fits and not wide else np.int64)
    rows[:, 0] = order
    rows[:, 1] = np.take(indices, order)
    return TimeOrder(times, np.ascontiguousarray(times[::stride]), rows, int(stride), origin, last)


@numba.njit(cache=True, nogil=True)
def _admitted_counts(
    values: np.ndarray,
    first: np.ndarray,
    lo: np.ndarray,
    left: np.ndarray,
    rows: np.int64,
    bound: np.ndarray,
    inclusive: bool,
) -> None:
    """For ``r < rows``: ``left[r]`` = how many of ``values[first[r] : first[r] + left[r]]`` (sorted; times minus
    origin) are admitted by ``bound[r]`` (int64, a bound already mapped by :attr:`TimeOrder.search`'s ``clamp``):
    below it, or at it with ``inclusive``. ``lo`` (= ``first`` on entry) is scratch.

    The searches run in lockstep, one step of every row per pass, so that a step's loads are independent across
    rows (one search's steps wait on each other). A pass has no branch: a row whose range is down to one entry
    takes steps of 0 (its probe is its own ``lo``), and the passes are as many as the widest range needs. On
    ``bench_temporal``'s batches (15,10,5, seed times uniform) the spans took 5.7-8.6 ms a batch this way against
    7.9-13.6 with a branch per row and pass, whose outcome mixed finished and searching rows unpredictably."""
    if values.shape[0] == 0:
        for r in range(rows):
            left[r] = 0
        return
    last = values.shape[0] - 1
    widest = np.int64(0)
    for r in range(rows):
        widest = max(widest, left[r])
    while widest > 1:  # the cut is in [lo, lo + left]; the probe at lo + left // 2 halves the range
        for r in range(rows):
            n = left[r]
            half = n >> 1
            at = lo[r] + half  # a finished row's probe is its own lo (read clamped: an empty list at the end)
            t = np.int64(values[min(at, last)])
            b = bound[r]
            lo[r] = at if (t < b) | (inclusive & (t == b)) else lo[r]
            left[r] = n - half
        widest -= widest >> 1
    for r in range(rows):
        t = np.int64(values[min(lo[r], last)])
        b = bound[r]
        admitted = ((t < b) | (inclusive & (t == b))) & (left[r] > 0)
        left[r] = lo[r] + np.int64(admitted) - first[r]


@numba.njit(cache=True, nogil=True)
def temporal_spans(
    indptr: np.ndarray,
    times: np.ndarray,
    coarse: np.ndarray,
    stride: np.int64,
    clamp: np.ndarray,
    dst: np.ndarray,
    bound: np.ndarray,
    fanout: np.int64,
    inclusive: bool,
    all_past: bool,
    starts: np.ndarray,
    degrees: np.ndarray,
    offsets: np.ndarray,
) -> np.int64:
    """First pass of a hop over rows ``j`` of ``dst`` (int64 [D] node ids) with bounds ``bound`` (int64 [D], or
    [1]: one bound for every row): ``starts[j]`` = the list's first CSC position, ``degrees[j]`` = its admissible
    edges (the length of its time-ordered prefix before the bound), ``offsets`` (int64 [D + 1]) = the prefix sum
    of the edges each row samples (``fanout`` or fewer, all when ``fanout < 0``). ``times`` to ``clamp``: the
    :class:`TimeOrder`'s :attr:`~TimeOrder.search`. ``all_past``: the caller knows every bound is after every edge
    (every edge admissible: no search). Returns the hop's edge count.

    A list longer than ``stride`` is searched in two steps: its entries of ``coarse`` (every ``stride``-th time)
    give the run of at most ``stride - 1`` times that holds the cut, then that run of ``times``."""
    offsets[0] = 0
    total = np.int64(0)
    first = np.empty(CHUNK, np.int64)
    lo = np.empty(CHUNK, np.int64)
    left = np.empty(CHUNK, np.int64)
    mapped = np.empty(CHUNK, np.int64)  # the piece's bounds in the stored times' terms
    one = bound.shape[0] == 1
    floor, ceiling, origin = clamp[0], clamp[1], clamp[2]
    for piece in range(0, dst.shape[0], CHUNK):
        piece_stop = min(dst.shape[0], piece + CHUNK)
        rows = piece_stop - piece
        for j in range(piece, piece_stop):  # independent loads: many cache misses in flight at once
            v = dst[j]
            starts[j] = indptr[v]
            degrees[j] = indptr[v + 1] - indptr[v]
        if not all_past:
            for j in range(piece, piece_stop):  # the coarse entries inside each long list
                r = j - piece
                mapped[r] = min(max(bound[0 if one else j], floor), ceiling) - origin
                s, d = starts[j], degrees[j]
                head = (s + stride - 1) // stride
                first[r] = head
                lo[r] = head
                left[r] = (s + d - 1) // stride - head + 1 if d > stride else 0
            _admitted_counts(coarse, first, lo, left, rows, mapped, inclusive)
            for j in range(piece, piece_stop):  # the run of times that holds the cut
                r = j - piece
                s, d = starts[j], degrees[j]
                a, z = s, s + d
                if d > stride:
                    kept = left[r]
                    a = s if kept == 0 else (first[r] + kept - 1) * stride + 1
                    z = min((first[r] + kept) * stride, s + d)
                first[r] = a
                lo[r] = a
                left[r] = z - a
            _admitted_counts(times, first, lo, left, rows, mapped, inclusive)
            for j in range(piece, piece_stop):
                degrees[j] = first[j - piece] + left[j - piece] - starts[j]
        for j in range(piece, piece_stop):
            degree = degrees[j]
            total += degree if fanout < 0 else min(fanout, degree)
            offsets[j + 1] = total
    return total


@numba.njit(cache=True, nogil=True)
def temporal_draws(
    rows: np.ndarray,
    starts: np.ndarray,
    degrees: np.ndarray,
    offsets: np.ndarray,
    recent: bool,
    stream: np.uint64,
    edge_id: np.ndarray,
    src: np.ndarray,
    dst_index: np.ndarray,
) -> None:
    """Second pass of a hop: sample the admissible edges of every row of :func:`temporal_spans` (``rows``: the
    :class:`TimeOrder`'s).

    Row ``j`` draws ``k = offsets[j + 1] - offsets[j]`` of its ``degrees[j]`` admissible edges: all when
    ``k == degrees[j]``, the ``k`` most recent (``recent``), else Floyd's ``k`` picks (key ``node_key(stream,
    j)``, as the untimed sampler). Writes, in ``[offsets[j], offsets[j + 1])`` (int64 [S] each, grouped by row,
    earliest first for ``recent`` and full lists): ``edge_id`` (the edge's CSC position, which reads its time
    and features), ``src`` (the source node id) and ``dst_index`` (``j``).
    """
    num_rows = starts.shape[0]
    width = np.int64(1)  # Floyd draws only from lists longer than k: its set needs 2 * max k of those
    for j in range(num_rows):
        k = offsets[j + 1] - offsets[j]
        if k < degrees[j]:
            width = max(width, k)
    table = floyd_table(width)
    for piece in range(0, num_rows, CHUNK):
        piece_stop = min(num_rows, piece + CHUNK)
        # stage 1 (compute only): the picked positions in the time order
        for j in range(piece, piece_stop):
            start = starts[j]
            out = offsets[j]
            k = offsets[j + 1] - out
            degree = degrees[j]
            if k == degree:
                for i in range(k):
                    edge_id[out + i] = start + i
            elif recent:
                for i in range(k):
                    edge_id[out + i] = start + degree - k + i
            else:
                floyd_positions(node_key(stream, j), degree, k, edge_id[out : out + k], table)
                for i in range(k):
                    edge_id[out + i] += start
            for i in range(k):
                dst_index[out + i] = j
        # stage 2 (memory only): branch-free gathers, many cache misses in flight at once
        for e in range(offsets[piece], offsets[piece_stop]):
            p = edge_id[e]
            edge_id[e] = rows[p, 0]
            src[e] = rows[p, 1]


def temporal_hop_py(
    indptr: np.ndarray,
    indices: np.ndarray,
    edge_time: np.ndarray,
    order: np.ndarray,
    dst: np.ndarray,
    bound: np.ndarray,
    fanout: int,
    recent: bool,
    inclusive: bool,
    stream: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Plain numpy/Python reference of one hop (:func:`temporal_spans` then :func:`temporal_draws`) in node ids:
    (src int64 [S], src_bound int64 [S], edge_id int64 [S], dst_index int64 [S]) for destinations ``dst`` with
    bounds ``bound``; the kernels' rows of these sources are :func:`relabel_pairs_py`'s."""
    src: list[int] = []
    src_bound: list[int] = []
    edge_id: list[int] = []
    dst_index: list[int] = []
    side = "right" if inclusive else "left"
    for j, (d, t) in enumerate(zip(dst.tolist(), bound.tolist())):
        start, stop = int(indptr[d]), int(indptr[d + 1])
        by_time = order[start:stop]
        degree = int(np.searchsorted(edge_time[by_time], t, side=side))
        k = degree if fanout < 0 else min(fanout, degree)
        if k == degree:
            picks = list(range(k))
        elif recent:
            picks = list(range(degree - k, degree))
        else:
            picks = floyd_positions_py(node_key_py(stream, j), degree, k)
        for p in picks:
            pos = int(by_time[p])
            src.append(int(indices[pos]))
            src_bound.append(t)
            edge_id.append(pos)
            dst_index.append(j)
    as64 = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
    return as64(src), as64(src_bound), as64(edge_id), as64(dst_index)


@numba.njit(cache=True, nogil=True)
def home_slot(v: np.int64, b: np.int64, mask: np.uint64) -> np.uint64:
    """The first slot probed for the pair (v, b) in a hash table of ``mask + 1`` slots."""
    h = np.uint64(v) * np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(b) * np.uint64(0xC2B2AE3D27D4EB4F)
    return (h ^ (h >> np.uint64(29))) & mask


SLOT_WORDS = 2
"""int64 words per slot of the (node, bound) hash table: the node, and the batch's stamp (high 32 bits) beside the
row (low 32 bits); a probe that finds the node compares the bound through ``keys_bound[row]``. 16 bytes a slot
(four per cache line), half the 32 of slots that held the bound too: on the batches of ``bench_temporal`` (seed
times uniform, 15,10,5) the relabel alone took 0.113-0.116 s against 0.135-0.163 s, the whole sampler 2.5% less."""
MAX_STAMP = (1 << 31) - 1
"""Stamps are below this (a table is cleared when its stamps run out); rows are below 2^32."""


def empty_pair_table(need: int) -> np.ndarray:
    """An empty (node, stamp | row) table of the smallest power of two of slots >= ``need`` (16 or more): int64
    [T, :data:`SLOT_WORDS`], every stamp -1 (no slot in use)."""
    slots = 16
    while slots < need:
        slots *= 2
    return np.full((slots, SLOT_WORDS), -1, np.int64)


@numba.njit(cache=True, nogil=True)
def rehash(table: np.ndarray, stamp: np.int64, keys_node: np.ndarray, keys_bound: np.ndarray, count: np.int64) -> None:
    """Insert rows ``[0, count)`` (distinct pairs), in row order, into ``table`` (of :func:`relabel_pairs_hashed`,
    no slot stamped ``stamp``): the table they would have built."""
    mask = np.uint64(table.shape[0] - 1)
    tag = stamp << np.int64(32)
    for row in range(count):
        slot = home_slot(keys_node[row], keys_bound[row], mask)
        while (table[slot, 1] >> np.int64(32)) == stamp:
            slot = (slot + np.uint64(1)) & mask
        table[slot, 0] = keys_node[row]
        table[slot, 1] = tag | row


@numba.njit(cache=True, nogil=True)
def relabel_pairs_hashed(
    node: np.ndarray,
    bound: np.ndarray,
    table: np.ndarray,
    stamp: np.int64,
    keys_node: np.ndarray,
    keys_bound: np.ndarray,
    count: np.int64,
    local: np.ndarray,
) -> np.int64:
    """Give each (node, bound) pair a row in first-seen order, after the ``count`` rows known already.

    Args:
        node, bound: int64 [S], the pairs. table: int64 [T, 2] open-addressing hash of the known rows, a slot
            (node, stamp << 32 | row) holding a row of this batch only when its stamp is ``stamp`` (0 <=
            stamp < :data:`MAX_STAMP`; a batch takes a new stamp, so no batch clears the table); T a power of two
            at least twice the final row count. A probe reads one 16-byte slot, and ``keys_bound[row]`` when the
            node matches.
        keys_node, keys_bound: int64 [>= final count], rows ``[0, count)`` known. local: int64 [S], receives
            each pair's row (may be ``node``).

    Returns:
        The row count after the pairs.
    """
    mask = np.uint64(table.shape[0] - 1)
    tag = stamp << np.int64(32)
    low = np.int64(0xFFFFFFFF)
    for i in range(node.shape[0]):  # ``local`` may be ``node`` itself: entry i is read before it is written
        v = node[i]
        b = bound[i]
        slot = home_slot(v, b, mask)
        while True:
            word = table[slot, 1]
            if (word >> np.int64(32)) != stamp:  # a free slot: a new row
                row = count
                table[slot, 0] = v
                table[slot, 1] = tag | row
                keys_node[row] = v
                keys_bound[row] = b
                count += 1
                break
            if table[slot, 0] == v and keys_bound[word & low] == b:
                row = word & low
                break
            slot = (slot + np.uint64(1)) & mask
        local[i] = row
    return count


def relabel_pairs_py(
    node: np.ndarray, bound: np.ndarray, known: list[tuple[int, int]]
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Reference of :func:`relabel_pairs_hashed`: (int64 [S] rows, the known pairs extended in first-seen order)."""
    rows = {pair: r for r, pair in enumerate(known)}
    out = []
    for pair in zip(node.tolist(), bound.tolist()):
        if pair not in rows:
            rows[pair] = len(known)
            known = [*known, pair]
        out.append(rows[pair])
    return np.asarray(out, dtype=np.int64), known
