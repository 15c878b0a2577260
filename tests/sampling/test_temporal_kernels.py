"""Temporal hop kernel: no sampled edge reads the future on any hop, kernel == reference, recent and uniform picks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.sampling.neighbor._neighbor_kernels import CHUNK, relabel, reset_local_ids
from graphtier.sampling.temporal._temporal_kernels import (
    empty_pair_table,
    rehash,
    relabel_pairs_hashed,
    relabel_pairs_py,
    temporal_draws,
    temporal_hop_py,
    temporal_spans,
    time_ordered,
)


def timed_csc(
    rng: np.random.Generator, n: int, e: int, horizon: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random CSC as the dataset stores it: int64 indptr [n+1], indices [e] sorted by source within each
    destination, edge times [e] in CSC order, and each list's positions sorted by (time, position)."""
    dst = rng.integers(0, n, e)
    src = rng.integers(0, n, e)
    time = rng.integers(0, horizon, e)
    csc = np.lexsort((src, dst))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    indices, time = src[csc].astype(np.int64), time[csc].astype(np.int64)
    order = np.lexsort((np.arange(e), time, np.repeat(np.arange(n), np.diff(indptr)))).astype(np.int64)
    return indptr, indices, time, order


def pair_table(rows: int) -> np.ndarray:
    """An empty (node, stamp | row) table of at least 2 * rows slots (the sampler's)."""
    return empty_pair_table(2 * rows)


def all_past(time: np.ndarray, bound: np.ndarray, inclusive: bool) -> bool:
    """The sampler's test for skipping the search: every bound after every edge (at it, with ``inclusive``)."""
    if time.shape[0] == 0 or bound.shape[0] == 0:
        return True
    return bool(bound.min() > time.max() or (inclusive and bound.min() >= time.max()))


def kernel_hop(
    indptr: np.ndarray,
    indices: np.ndarray,
    time: np.ndarray,
    order: np.ndarray,
    dst: np.ndarray,
    bound: np.ndarray,
    fanout: int,
    recent: bool,
    inclusive: bool,
    stream: int,
    one_bound: bool = False,
    stride: int = 16,
    wide: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernels' hop over the rows of the DISTINCT pairs (dst, bound), row j = pair j: temporal_spans (with the
    search skipped when every bound is past every edge), temporal_draws, then the relabel the sampler uses
    (``one_bound``, every bound equal: the untimed node-indexed relabel; else the (node, bound) hash), in the
    reference's terms: (src, src_bound, edge_id, dst_index)."""
    assert len(set(zip(dst.tolist(), bound.tolist()))) == dst.shape[0]
    rows = dst.shape[0]
    starts, degrees, offsets = np.empty(rows, np.int64), np.empty(rows, np.int64), np.empty(rows + 1, np.int64)
    bounds = bound[:1] if one_bound else bound
    by_time = time_ordered(indices, time, order, stride, wide=wide)
    assert by_time.rows.dtype == (np.int64 if wide else np.int32)
    total = temporal_spans(indptr, *by_time.search, dst, bounds, fanout, inclusive, all_past(time, bound, inclusive),
                           starts, degrees, offsets)  # fmt: skip
    edge_id, src, dst_index = (np.empty(total, np.int64) for _ in range(3))
    temporal_draws(by_time.rows, starts, degrees, offsets, recent, np.uint64(stream), edge_id, src, dst_index)
    known = list(zip(dst.tolist(), bound.tolist()))
    expected, pairs = relabel_pairs_py(src, bound[dst_index], known)
    local = src.copy()
    if one_bound:
        assert np.all(bound == bound[:1])
        local_id = np.full(indptr.shape[0] - 1, -1, np.int32)
        n_id = np.empty(rows + total, np.int64)
        assert relabel(dst.copy(), local_id, n_id, 0) == rows
        after = relabel(local, local_id, n_id, rows)
        reset_local_ids(local_id, n_id, 0, after)
        assert np.all(local_id == -1)
    else:
        table = pair_table(rows + total)
        keys_node, keys_bound = np.empty(rows + total, np.int64), np.empty(rows + total, np.int64)
        for stamp in range(2):  # a second batch in the same table, at the next stamp: the same rows
            assert (
                relabel_pairs_hashed(dst, bound, table, stamp, keys_node, keys_bound, 0, np.empty(rows, np.int64))
                == rows
            )
            local = src.copy()
            after = relabel_pairs_hashed(src, bound[dst_index], table, stamp, keys_node, keys_bound, rows, local)
            np.testing.assert_array_equal(local, expected)
    np.testing.assert_array_equal(local, expected)  # the relabel equals the reference relabel
    assert after == len(pairs)
    return src, bound[dst_index], edge_id, dst_index


def distinct_pairs(dst: np.ndarray, bound: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    pairs = list(dict.fromkeys(zip(dst.tolist(), bound.tolist())))
    return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 40),
    e=st.integers(0, 300),
    fanout=st.sampled_from([-1, 1, 2, 3, 6]),
    recent=st.booleans(),
    inclusive=st.booleans(),
    one_bound=st.booleans(),
    past=st.booleans(),
    stride=st.sampled_from([1, 2, 3, 5, 16]),
    origin=st.sampled_from([0, -(10**12), 2**40]),
    scale=st.sampled_from([1, 2**27]),
    early=st.booleans(),
    wide=st.booleans(),
)
def test_no_hop_reads_the_future(
    seed: int,
    n: int,
    e: int,
    fanout: int,
    recent: bool,
    inclusive: bool,
    one_bound: bool,
    past: bool,
    stride: int,
    origin: int,
    scale: int,
    early: bool,
    wide: bool,
) -> None:
    """Every path of a hop (one bound or many; the search skipped when ``past`` puts every bound at or after
    every edge; lists longer than ``stride`` searched through the coarse times first; times kept as int32 offsets
    from the first, or as int64 when ``scale`` spreads them over more than 2^31 units or ``wide`` asks for int64
    times and rows; ``early``: some bounds far before every edge) on every hop: kernels == reference, and no edge at or after its row's bound."""
    rng = np.random.default_rng(seed)
    indptr, indices, time, order = timed_csc(rng, n, e, horizon=50)
    time = origin + time * scale  # the same order
    nodes = rng.integers(0, n, 8)
    times = np.full(8, rng.integers(0, 60)) if one_bound else rng.integers(0, 60, 8)
    bound = origin + (times + (49 if past else 0)) * scale  # past: bounds >= 49, the last edge time
    if early and not past and not one_bound:
        bound[::2] = origin - 2**62
    dst, bound = distinct_pairs(nodes, bound)
    for hop in range(3):
        got = kernel_hop(
            indptr, indices, time, order, dst, bound, fanout, recent, inclusive, 1000 + hop, one_bound, stride, wide
        )
        ref = temporal_hop_py(indptr, indices, time, order, dst, bound, fanout, recent, inclusive, 1000 + hop)
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)
        src, src_bound, pos, dst_index = got
        assert np.all(indices[pos] == src)
        assert np.all(src_bound == bound[dst_index])
        if inclusive:
            assert np.all(time[pos] <= src_bound)
        else:
            assert np.all(time[pos] < src_bound)
        assert np.all((pos >= indptr[dst[dst_index]]) & (pos < indptr[dst[dst_index] + 1]))
        for j in range(dst.shape[0]):  # without replacement, and all admissible edges when fewer than fanout
            mine = pos[dst_index == j]
            assert len(set(mine.tolist())) == mine.shape[0]
            lo, hi = indptr[dst[j]], indptr[dst[j] + 1]
            limit = time[lo:hi] <= bound[j] if inclusive else time[lo:hi] < bound[j]
            assert mine.shape[0] == (int(limit.sum()) if fanout < 0 else min(fanout, int(limit.sum())))
        dst, bound = distinct_pairs(src, src_bound)  # neighbours inherit their seed's bound


@pytest.mark.parametrize(
    ("origin", "span", "dtype"),
    [
        (0, 50, np.int32),
        (-(2**40), 2**31 - 2, np.int32),
        (5, 2**31 - 1, np.int64),
        (-(2**62), 2**63, np.int64),
        (-(2**63), 3, np.int64),
        (2**63 - 4, 3, np.int64),
    ],
)
def test_time_order_keeps_narrow_times_as_int32_offsets(origin: int, span: int, dtype: type) -> None:
    """Times spanning less than 2^31 - 1 units are int32 offsets from the first (their origin), wider ones int64
    from 0; ``last`` is the last time either way."""
    indptr, indices = np.array([0, 3], np.int64), np.zeros(3, np.int64)
    time = np.array([origin + span, origin, origin + 1], np.int64)
    by_time = time_ordered(indices, time, np.array([1, 2, 0], np.int64))
    assert by_time.times.dtype == dtype and by_time.coarse.dtype == dtype and by_time.last == origin + span
    assert by_time.rows.dtype == np.int32  # 3 edges, source 0: int64 ids that fit
    assert time_ordered(indices.astype(np.int32), time, np.array([1, 2, 0], np.int64)).rows.dtype == np.int32
    np.testing.assert_array_equal(by_time.times.astype(np.int64) + by_time.origin, [origin, origin + 1, origin + span])
    starts, degrees, offsets = (np.empty(k, np.int64) for k in (1, 1, 2))
    cases = [(max(origin - 2**62, -(2**63)), 0), (origin, 0), (origin + 1, 1), (origin + span, 2)]
    if origin + span < 2**63 - 1:
        cases.append((2**63 - 1, 3))
    for bound, admitted in cases:
        temporal_spans(indptr, *by_time.search, np.zeros(1, np.int64), np.array([bound], np.int64), -1, False,
                       False, starts, degrees, offsets)  # fmt: skip
        assert degrees[0] == admitted, bound


def test_recent_picks_exactly_the_latest_edges() -> None:
    rng = np.random.default_rng(3)
    indptr, indices, time, order = timed_csc(rng, 20, 400, horizon=1000)
    dst = np.arange(20, dtype=np.int64)
    bound = rng.integers(100, 1000, 20).astype(np.int64)
    _, _, pos, dst_index = kernel_hop(indptr, indices, time, order, dst, bound, 4, True, False, 7)
    for j in range(20):
        lo, hi = indptr[j], indptr[j + 1]
        admissible = np.arange(lo, hi)[time[lo:hi] < bound[j]]
        latest = admissible[np.lexsort((admissible, time[admissible]))][-4:]
        assert sorted(pos[dst_index == j].tolist()) == sorted(latest.tolist())


def test_uniform_picks_match_the_reference_distribution() -> None:
    """One destination, 10 admissible edges of 14, fanout 3: each admissible edge is picked w.p. 3/10."""
    indptr = np.array([0] + [14] * 14, np.int64)  # 14 nodes; node 0 has the 14 edges
    indices = np.arange(14, dtype=np.int64)
    time = np.arange(14, dtype=np.int64)
    order = np.arange(14, dtype=np.int64)
    dst, bound = np.zeros(1, np.int64), np.full(1, 10, np.int64)
    # 4000 independent draws: one hop per stream key
    pos = np.concatenate(
        [kernel_hop(indptr, indices, time, order, dst, bound, 3, False, False, s)[2] for s in range(4000)]
    )
    counts = np.bincount(pos, minlength=14)
    assert counts[10:].sum() == 0
    expected = 4000 * 3 / 10
    chi2 = float(((counts[:10] - expected) ** 2 / expected).sum())
    assert chi2 < 27.9  # chi-square, 9 degrees of freedom, p = 0.001


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), known=st.integers(0, 10), s=st.integers(0, 200), split=st.integers(0, 200))
def test_relabel_pairs_equals_the_reference(seed: int, known: int, s: int, split: int) -> None:
    """Rows in first-seen order after the known ones, through a table that grows part way (rehash); a later batch
    (the next stamp) in the same table sees none of the earlier batch's rows."""
    rng = np.random.default_rng(seed)
    node = rng.integers(0, 12, s).astype(np.int64)
    bound = rng.integers(0, 4, s).astype(np.int64)
    first = list(dict.fromkeys(zip(rng.integers(0, 12, known).tolist(), rng.integers(0, 4, known).tolist())))
    first_node, first_bound = np.array([p[0] for p in first], np.int64), np.array([p[1] for p in first], np.int64)
    rows, pairs = relabel_pairs_py(node, bound, first)
    split = min(split, s)
    keys_node, keys_bound = (np.zeros(len(first) + s, np.int64) for _ in range(2))
    small = pair_table(len(first) + split)  # room for the known rows and the first part only
    table = pair_table(2 * (len(first) + s))
    for stamp in range(3):
        local = np.empty(s, np.int64)
        start = small if stamp == 0 else table
        count = relabel_pairs_hashed(first_node, first_bound, start, stamp, keys_node, keys_bound, 0, first_node.copy())
        assert count == len(first)
        count = relabel_pairs_hashed(node[:split], bound[:split], start, stamp, keys_node, keys_bound, count,
                                     local[:split])  # fmt: skip
        if stamp == 0:  # grown: the rows so far inserted again into a larger table
            rehash(table, stamp, keys_node, keys_bound, count)
        count = relabel_pairs_hashed(node[split:], bound[split:], table, stamp, keys_node, keys_bound, count,
                                     local[split:])  # fmt: skip
        np.testing.assert_array_equal(local, rows)
        assert count == len(pairs)
        assert list(zip(keys_node[:count].tolist(), keys_bound[:count].tolist())) == pairs


@pytest.mark.parametrize("inclusive", [False, True])
def test_many_rows_and_long_lists_equal_the_reference(inclusive: bool) -> None:
    """Rows over several chunks of the lockstep search (CHUNK rows each), lists of up to hundreds of edges with
    tied times, bounds at edge times: the kernels' hop is the reference's."""
    rng = np.random.default_rng(11)
    indptr, indices, time, order = timed_csc(rng, 30, 6000, horizon=100)
    pairs = list(dict.fromkeys(zip(rng.integers(0, 30, 2000).tolist(), time[rng.integers(0, 6000, 2000)].tolist())))
    dst, bound = np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.int64)
    assert dst.shape[0] > 2 * CHUNK
    for fanout, recent in ((-1, False), (5, False), (5, True)):
        got = kernel_hop(indptr, indices, time, order, dst, bound, fanout, recent, inclusive, 77)
        ref = temporal_hop_py(indptr, indices, time, order, dst, bound, fanout, recent, inclusive, 77)
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)
