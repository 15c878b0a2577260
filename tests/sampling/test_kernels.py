"""Kernel twins: the numba RNG and Floyd's algorithm against their plain-Python references."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.sampling.neighbor import _neighbor_kernels as k

u64 = st.integers(0, 2**64 - 1)


@settings(deadline=None)
@given(stream=u64, position=st.integers(0, 2**40), i=st.integers(0, 1000))
def test_rng_twins_agree(stream, position, i):
    key = k.node_key_py(stream, position)
    assert int(k.node_key(np.uint64(stream), position)) == key
    assert int(k.draw(np.uint64(key), i)) == k.draw_py(key, i)


@settings(deadline=None)
@given(key=u64, i=st.integers(0, 10_000), bound=st.one_of(st.integers(1, 2**32 - 1), st.integers(2**32, 2**62)))
def test_uniform_below_twins_agree_and_stay_in_range(key, i, bound):
    value = k.uniform_below_py(key, i, bound)
    assert 0 <= value < bound
    assert int(k.uniform_below(np.uint64(key), i, bound)) == value
    assert 0 <= k.draw_py(key, i) < 2**32


@settings(deadline=None)
@given(key=u64, degree=st.integers(2**32 - 3, 2**32 + 3), data=st.data())
def test_floyd_near_the_wide_draw_threshold(key, degree, data):
    """Lists around 2^32 entries switch from 32-bit to 64-bit draws mid-way; the twins still agree."""
    draws = data.draw(st.integers(1, 8))
    out = np.empty(draws, dtype=np.int64)
    k.floyd_positions(np.uint64(key), degree, draws, out, np.empty(16, dtype=np.int64))
    assert out.tolist() == k.floyd_positions_py(key, degree, draws)


@settings(deadline=None)
@given(key=u64, degree=st.integers(2, 5000), data=st.data())
def test_floyd_twins_agree_and_draw_distinct_positions(key, degree, data):
    draws = data.draw(st.integers(1, min(degree - 1, 200)))
    expected = k.floyd_positions_py(key, degree, draws)
    out = np.empty(draws, dtype=np.int64)
    size = 1
    while size < 2 * draws:
        size *= 2
    k.floyd_positions(np.uint64(key), degree, draws, out, np.empty(size, dtype=np.int64))
    assert out.tolist() == expected
    assert len(set(expected)) == draws and min(expected) >= 0 and max(expected) < degree


def test_stream_keys_differ_by_seed_batch_and_hop():
    keys = {k.stream_key(s, b, h) for s in range(4) for b in range(4) for h in range(4)}
    assert len(keys) == 64


@settings(deadline=None, max_examples=50)
@given(
    num_nodes=st.integers(1, 300),
    num_edges=st.integers(0, 3000),
    known=st.integers(0, 50),
    num_parts=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    scratch_dtype=st.sampled_from([np.int32, np.int64]),
)
def test_relabel_parallel_matches_relabel(num_nodes, num_edges, known, num_parts, seed, scratch_dtype):
    """Same ids, same new-node order, same scratch afterwards, with some nodes already known."""
    rng = np.random.default_rng(seed)
    sources = rng.integers(0, num_nodes, num_edges).astype(np.int64)
    known_nodes = rng.permutation(num_nodes)[: min(known, num_nodes)]
    results = []
    for parallel in (False, True):
        local_id = np.full(num_nodes, -1, dtype=scratch_dtype)
        n_id = np.empty(known_nodes.size + num_edges, dtype=np.int64)
        count = k.unique_seeds(known_nodes.astype(np.int64), local_id, n_id, np.empty(known_nodes.size, np.int64))
        if parallel:
            out = np.empty(num_edges, dtype=np.int64)
            count = k.relabel_parallel(sources, local_id, n_id, count, num_parts, out)
        else:
            out = sources.copy()
            count = k.relabel(out, local_id, n_id, count)
        results.append((out, n_id[:count].copy(), local_id))
    (out_a, nid_a, lid_a), (out_b, nid_b, lid_b) = results
    assert np.array_equal(out_a, out_b) and np.array_equal(nid_a, nid_b) and np.array_equal(lid_a, lid_b)
    assert np.array_equal(nid_a[out_a], sources)
