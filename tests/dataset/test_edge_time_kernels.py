"""The edge-time kernels (graphtier/dataset/edges/_edge_time_kernels.py) against their references on random inputs, and
the timed build_csc (times follow their edges; a merged repeat keeps its earliest time) against a plain model."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import csc_to_edges, edges_to_csc
from graphtier.dataset.edges import _edge_time_kernels as kernels
from graphtier.dataset.edges.edge_split import remove_pairs
from graphtier.dataset.importers.common.edges import array_edge_chunks, build_csc
from graphtier.graph.reorder import reorder_topology


def random_timed_csc(n: int, m: int, seed: int, time_span: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    indptr, indices = edges_to_csc(rng.integers(0, n, m), rng.integers(0, n, m), n)
    return indptr, indices, rng.integers(-time_span, time_span + 1, indices.shape[0]).astype(np.int64)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 30), st.integers(0, 300), st.integers(0, 2**31), st.integers(0, 50))
def test_edge_time_order_matches_reference(n: int, m: int, seed: int, span: int) -> None:
    indptr, _, times = random_timed_csc(n, m, seed, span)
    order = kernels.edge_time_order(indptr, times)
    np.testing.assert_array_equal(order, kernels.edge_time_order_reference(indptr, times))
    rows = np.arange(n, dtype=np.int64)
    assert kernels.order_mismatch(indptr, times, order, rows) == -1
    if m > 1 and np.diff(indptr).max() > 1:
        v = int(np.argmax(np.diff(indptr)))
        broken = order.copy()
        broken[indptr[v]], broken[indptr[v] + 1] = broken[indptr[v] + 1], broken[indptr[v]]
        assert kernels.order_mismatch(indptr, times, broken, rows) == v


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 30), st.integers(0, 300), st.integers(0, 2**31), st.booleans(), st.integers(0, 5))
def test_sort_and_merge_halves_match_reference(n: int, m: int, seed: int, keep_duplicates: bool, span: int) -> None:
    rng = np.random.default_rng(seed)
    indptr, indices, times = random_timed_csc(n, m, seed, span)
    middle = indptr[:-1] + rng.integers(0, np.diff(indptr) + 1)
    got_indices, got_times = indices.copy(), times.copy()
    kernels.sort_timed_halves(indptr, middle, got_indices, got_times, np.empty(0, np.int64))
    ref_indices, ref_times = indices.copy(), times.copy()
    kernels.sort_timed_halves_reference(indptr, middle, ref_indices, ref_times)
    np.testing.assert_array_equal(got_indices, ref_indices)
    np.testing.assert_array_equal(got_times, ref_times)
    want = kernels.merge_timed_halves_reference(indptr, middle, ref_indices, ref_times, keep_duplicates)
    from graphtier.dataset.csc import merge_list_halves

    new_indptr, new_indices, _, _ = merge_list_halves(
        indptr, middle, got_indices, keep_duplicates=keep_duplicates, edge_time=got_times
    )
    np.testing.assert_array_equal(new_indptr, want[0])
    np.testing.assert_array_equal(new_indices, want[1])
    np.testing.assert_array_equal(got_times[: new_indices.shape[0]], want[2])


def model_csc(src, dst, time, n, *, undirected, keep_duplicates, drop_self_loops):  # type: ignore[no-untyped-def]
    """(dst, src) -> sorted list of times, built the obvious way."""
    copies: dict[tuple[int, int], list[int]] = defaultdict(list)
    for s, d, t in zip(src.tolist(), dst.tolist(), time.tolist()):
        if drop_self_loops and s == d:
            continue
        copies[(d, s)].append(t)
    if undirected:
        merged: dict[tuple[int, int], list[int]] = {}
        for (d, s), ts in copies.items():
            back = copies.get((s, d), []) if s != d else []
            keep = max(len(ts), len(back)) if keep_duplicates else 1
            merged[(d, s)] = sorted(ts + back)[:keep]
        for (d, s), ts in copies.items():
            if s != d and (s, d) not in copies:
                merged[(s, d)] = sorted(ts)[: len(ts) if keep_duplicates else 1]
        return merged
    return {k: sorted(ts)[: len(ts) if keep_duplicates else 1] for k, ts in copies.items()}


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 25),
    st.integers(0, 200),
    st.integers(0, 2**31),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.integers(1, 7),
)
def test_timed_build_csc_matches_model(
    n: int, m: int, seed: int, undirected: bool, keep_duplicates: bool, drop_self_loops: bool, chunk: int
) -> None:
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    time = rng.integers(0, 20, m).astype(np.int64)

    def chunks():  # type: ignore[no-untyped-def]
        for (s, d), start in zip(array_edge_chunks(src, dst, chunk)(), range(0, m, chunk)):
            yield s, d, time[start : start + chunk]

    options = {"undirected": undirected, "keep_duplicates": keep_duplicates, "drop_self_loops": drop_self_loops}
    built = build_csc(chunks, n, timed=True, **options)
    plain = build_csc(array_edge_chunks(src, dst, chunk), n, **options)
    np.testing.assert_array_equal(built.indptr, plain.indptr)
    np.testing.assert_array_equal(built.indices, plain.indices)
    assert built.counts == plain.counts
    got: dict[tuple[int, int], list[int]] = defaultdict(list)
    s_out, d_out = csc_to_edges(built.indptr, built.indices)
    for s, d, t in zip(s_out.tolist(), d_out.tolist(), built.edge_time.tolist()):
        got[(d, s)].append(t)
    assert got == model_csc(src, dst, time, n, **options)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(0, 300), st.integers(0, 2**31))
def test_kept_positions_after_remove_pairs(n: int, m: int, seed: int) -> None:
    indptr, indices, _ = random_timed_csc(n, m, seed, 10)
    rng = np.random.default_rng(seed + 1)
    pairs = np.stack([rng.integers(0, n, 10), rng.integers(0, n, 10)], axis=1)
    new_indptr, new_indices, _ = remove_pairs(indptr, indices, pairs, undirected=False)
    got = kernels.kept_positions(indptr, indices, new_indptr, new_indices)
    np.testing.assert_array_equal(got, kernels.kept_positions_reference(indptr, indices, new_indptr, new_indices))
    np.testing.assert_array_equal(indices[got], new_indices)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(0, 300), st.integers(0, 2**31))
def test_relocated_positions_keep_triples(n: int, m: int, seed: int) -> None:
    indptr, indices, times = random_timed_csc(n, m, seed, 5)
    perm = np.random.default_rng(seed).permutation(n).astype(np.int64)
    inverse = np.argsort(perm).astype(np.int64)
    new_indptr, new_indices = reorder_topology(indptr, indices, perm)
    positions = np.empty_like(times)
    kernels.relocated_positions(indptr, indices, times, perm, inverse, new_indptr, positions)
    np.testing.assert_array_equal(np.sort(positions), np.arange(times.shape[0]))  # a permutation of the edges
    np.testing.assert_array_equal(inverse[indices[positions]], new_indices)  # each new edge is its old one
    untimed = np.empty_like(times)
    kernels.relocated_positions(indptr, indices, np.empty(0, np.int64), perm, inverse, new_indptr, untimed)
    np.testing.assert_array_equal(inverse[indices[untimed]], new_indices)
    out = times[positions]
    src, dst = csc_to_edges(indptr, indices)
    new_src, new_dst = csc_to_edges(new_indptr, new_indices)
    before = sorted(zip(src.tolist(), dst.tolist(), times.tolist()))
    after = sorted(zip(perm[new_src].tolist(), perm[new_dst].tolist(), out.tolist()))
    assert before == after
    for v in range(n):  # each list sorted by (source, time)
        keys = list(
            zip(new_indices[new_indptr[v] : new_indptr[v + 1]].tolist(), out[new_indptr[v] : new_indptr[v + 1]])
        )
        assert keys == sorted(keys)
