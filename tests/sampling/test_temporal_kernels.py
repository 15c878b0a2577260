"""Temporal hop kernel: no sampled edge reads the future on any hop, kernel == reference, recent and uniform picks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.sampling._temporal_kernels import (
    rehash,
    relabel_pairs,
    relabel_pairs_hashed,
    relabel_pairs_py,
    reset_rows,
    temporal_cuts,
    temporal_hop,
    temporal_hop_py,
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
    hashed: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kernels' hop (temporal_cuts, then temporal_hop over the rows of the DISTINCT pairs (dst, bound), row j =
    pair j) in the reference's terms: (src, src_bound, edge_id, dst_index)."""
    assert len(set(zip(dst.tolist(), bound.tolist()))) == dst.shape[0]
    first_row = np.full(indptr.shape[0] - 1, -1, np.int64)
    size = dst.shape[0] + indices.shape[0] * max(dst.shape[0], 1)
    next_row, keys_node, keys_bound = (np.zeros(size, np.int64) for _ in range(3))
    count = relabel_pairs(dst, bound, first_row, next_row, keys_node, keys_bound, 0, np.empty(dst.shape[0], np.int64))
    cuts = np.empty(count, np.int64)
    total = temporal_cuts(indptr, time, order, keys_node[:count], keys_bound[:count], fanout, inclusive, cuts)
    src_row, dst_index, edge_id = (np.empty(total, np.int64) for _ in range(3))
    slots = 1 << int(2 * size).bit_length()  # a power of two above twice the rows
    table = np.full(slots, -1, np.int64) if hashed else np.empty(0, np.int64)
    if hashed:
        rehash(table, keys_node, keys_bound, count)
    after = temporal_hop(indptr, indices, order, cuts, count, fanout, recent, np.uint64(stream), first_row,
                         next_row, table, keys_node, keys_bound, count, src_row, dst_index, edge_id)  # fmt: skip
    rows, pairs = relabel_pairs_py(keys_node[src_row], keys_bound[src_row], list(zip(dst.tolist(), bound.tolist())))
    np.testing.assert_array_equal(src_row, rows)  # the fused relabel equals the reference relabel
    assert after == len(pairs)
    return keys_node[src_row], keys_bound[src_row], edge_id, dst_index


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
    hashed=st.booleans(),
)
def test_no_hop_reads_the_future(
    seed: int, n: int, e: int, fanout: int, recent: bool, inclusive: bool, hashed: bool
) -> None:
    rng = np.random.default_rng(seed)
    indptr, indices, time, order = timed_csc(rng, n, e, horizon=50)
    dst, bound = distinct_pairs(rng.integers(0, n, 8), rng.integers(0, 60, 8))
    for hop in range(3):
        got = kernel_hop(indptr, indices, time, order, dst, bound, fanout, recent, inclusive, 1000 + hop, hashed)
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
@given(seed=st.integers(0, 2**31), known=st.integers(0, 10), s=st.integers(0, 200), int32=st.booleans())
def test_relabel_pairs_equals_the_reference(seed: int, known: int, s: int, int32: bool) -> None:
    rng = np.random.default_rng(seed)
    node = rng.integers(0, 12, s).astype(np.int64)
    bound = rng.integers(0, 4, s).astype(np.int64)
    first = list(dict.fromkeys(zip(rng.integers(0, 12, known).tolist(), rng.integers(0, 4, known).tolist())))
    first_row = np.full(12, -1, np.int32 if int32 else np.int64)  # the workspace's scratch is int32 below 2^31 nodes
    next_row, keys_node, keys_bound = (np.zeros(len(first) + s, np.int64) for _ in range(3))
    scratch = np.empty(len(first), np.int64)
    count = relabel_pairs(
        np.array([p[0] for p in first], np.int64), np.array([p[1] for p in first], np.int64),
        first_row, next_row, keys_node, keys_bound, 0, scratch,
    )  # fmt: skip
    assert count == len(first)
    local = np.empty(s, np.int64)
    count = relabel_pairs(node, bound, first_row, next_row, keys_node, keys_bound, count, local)
    rows, pairs = relabel_pairs_py(node, bound, first)
    np.testing.assert_array_equal(local, rows)
    assert count == len(pairs)
    assert list(zip(keys_node[:count].tolist(), keys_bound[:count].tolist())) == pairs
    reset_rows(first_row, keys_node, count)
    assert np.all(first_row == -1)
    table = np.full(1024, -1, np.int64)  # the hashed relabel: the same rows
    rehash(table, keys_node, keys_bound, len(first))
    hashed = np.empty(s, np.int64)
    assert relabel_pairs_hashed(node, bound, table, keys_node, keys_bound, len(first), hashed) == len(pairs)
    np.testing.assert_array_equal(hashed, rows)
    assert list(zip(keys_node[: len(pairs)].tolist(), keys_bound[: len(pairs)].tolist())) == pairs
