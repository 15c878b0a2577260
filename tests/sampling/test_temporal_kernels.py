"""Temporal hop kernel: no sampled edge reads the future on any hop, kernel == reference, recent and uniform picks."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.sampling._temporal_kernels import temporal_hop, temporal_hop_py


def _timed_csc(rng: np.random.Generator, n: int, e: int, horizon: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random CSC (int64 indptr [n+1], indices [e]) with edge times [e] sorted within each destination."""
    dst = rng.integers(0, n, e)
    src = rng.integers(0, n, e)
    time = rng.integers(0, horizon, e)
    order = np.lexsort((time, dst))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, src[order].astype(np.int64), time[order].astype(np.int64)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 40),
    e=st.integers(0, 300),
    fanout=st.integers(1, 6),
    recent=st.booleans(),
    inclusive=st.booleans(),
)
def test_no_hop_reads_the_future(seed: int, n: int, e: int, fanout: int, recent: bool, inclusive: bool) -> None:
    rng = np.random.default_rng(seed)
    indptr, indices, time = _timed_csc(rng, n, e, horizon=50)
    dst = rng.integers(0, n, 8).astype(np.int64)
    bound = rng.integers(0, 60, 8).astype(np.int64)
    for hop in range(3):
        args = (indptr, indices, time, dst, bound, np.int64(fanout), recent, inclusive, np.uint64(1000 + hop))
        got = temporal_hop(*args)
        ref = temporal_hop_py(indptr, indices, time, dst, bound, fanout, recent, inclusive, 1000 + hop)
        for a, b in zip(got, ref):
            np.testing.assert_array_equal(a, b)
        src, src_bound, pos, dst_index = got
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
            assert mine.shape[0] == min(fanout, int(limit.sum()))
        dst, bound = src, src_bound  # neighbours inherit their seed's bound


def test_recent_picks_exactly_the_latest_edges() -> None:
    rng = np.random.default_rng(3)
    indptr, indices, time = _timed_csc(rng, 20, 400, horizon=1000)
    dst = np.arange(20, dtype=np.int64)
    bound = rng.integers(100, 1000, 20).astype(np.int64)
    src, _, pos, dst_index = temporal_hop(indptr, indices, time, dst, bound, np.int64(4), True, False, np.uint64(7))
    for j in range(20):
        lo, hi = indptr[j], indptr[j + 1]
        admissible = np.arange(lo, hi)[time[lo:hi] < bound[j]]
        assert sorted(pos[dst_index == j].tolist()) == admissible[-4:].tolist()


def test_uniform_picks_match_the_reference_distribution() -> None:
    """One destination, 10 admissible edges of 14, fanout 3: each admissible edge is picked w.p. 3/10."""
    indptr = np.array([0, 14], np.int64)
    indices = np.arange(14, dtype=np.int64)
    time = np.arange(14, dtype=np.int64)
    dst = np.zeros(4000, np.int64)  # 4000 destinations, one per independent draw stream position
    bound = np.full(4000, 10, np.int64)
    _, _, pos, _ = temporal_hop(indptr, indices, time, dst, bound, np.int64(3), False, False, np.uint64(11))
    counts = np.bincount(pos, minlength=14)
    assert counts[10:].sum() == 0
    expected = 4000 * 3 / 10
    chi2 = float(((counts[:10] - expected) ** 2 / expected).sum())
    assert chi2 < 27.9  # chi-square, 9 degrees of freedom, p = 0.001
