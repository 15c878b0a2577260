"""Tests for the fwr score (graphtier.graph.scores.fanout_weighted_reads) and its kernels."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import edges_to_csc
from graphtier.errors import OptionError
from graphtier.graph import _reads_kernels as kernels
from graphtier.graph.scores import fanout_weighted_reads, fanout_weighted_reads_reference


def random_csc(num_nodes: int, num_edges: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, num_nodes, num_edges)
    dst = (rng.power(3.0, num_edges) * num_nodes).astype(np.int64) % num_nodes
    return edges_to_csc(src, dst, num_nodes)


graphs = st.tuples(st.integers(1, 60), st.integers(0, 400), st.integers(0, 2**31))
fanout_lists = st.lists(st.sampled_from([-1, 1, 2, 3, 10]), min_size=1, max_size=3)


@settings(max_examples=40, deadline=None)
@given(graphs, st.sampled_from([-1, 1, 4, 50]), st.booleans())
def test_draw_values_matches_reference(spec: tuple[int, int, int], fanout: int, survival: bool) -> None:
    indptr, _ = random_csc(*spec)
    n = indptr.shape[0] - 1
    weights = np.random.default_rng(spec[2]).random(n)
    weights[::3] = 1.0
    out = np.empty(n)
    kernels.draw_values(indptr, weights, fanout, survival, out)
    np.testing.assert_allclose(out, kernels.draw_values_reference(indptr, weights, fanout, survival), rtol=1e-12)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4), st.integers(1, 50), st.integers(0, 2**31))
def test_combine_kernels_match_references(parts: int, n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    partials = -rng.random((parts, n))
    present = rng.random(n)
    expected = kernels.combine_survival_reference(partials, present)
    sums = partials.sum(axis=0)
    out = np.empty(n)
    kernels.combine_survival(partials.copy(), present, out)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-15)
    work = partials.copy()
    kernels.combine_sums(work, out)
    np.testing.assert_allclose(out, sums, rtol=1e-12)
    assert not work.any()


@settings(max_examples=30, deadline=None)
@given(graphs, st.sampled_from([-1, 1, 4]), st.booleans())
def test_combine_and_draw_matches_two_references(spec: tuple[int, int, int], fanout: int, survival: bool) -> None:
    indptr, _ = random_csc(*spec)
    n = indptr.shape[0] - 1
    rng = np.random.default_rng(spec[2])
    partials = -rng.random((2, n))
    present = rng.random(n)
    combined = kernels.combine_survival_reference(partials, present) if survival else partials.sum(axis=0)
    out, values = np.empty(n), np.empty(n)
    kernels.combine_and_draw(partials.copy(), present, indptr, fanout, survival, out, values)
    np.testing.assert_allclose(out, combined, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(
        values, kernels.draw_values_reference(indptr, combined, fanout, survival), rtol=1e-12, atol=1e-15
    )


@settings(max_examples=40, deadline=None)
@given(graphs, fanout_lists, st.sampled_from([1, 7, 1024]), st.sampled_from(["batch", "sum"]))
def test_fwr_matches_scipy_reference(spec, fanouts: list[int], batch_size: int, mode: str) -> None:
    indptr, indices = random_csc(*spec)
    n = indptr.shape[0] - 1
    train = np.random.default_rng(spec[2]).choice(n, max(1, n // 4), replace=False)
    got = fanout_weighted_reads(indptr, indices, train, fanouts, batch_size=batch_size, mode=mode)
    want = fanout_weighted_reads_reference(indptr, indices, train, fanouts, batch_size=batch_size, mode=mode)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert np.all(got >= 0)
    if mode == "batch":
        batches = -(-train.size // batch_size)
        assert np.all(got <= batches * (1 + 1e-12))
        assert np.all(got[train] >= min(1.0, batch_size / train.size) * batches * (1 - 1e-12))


def test_fwr_is_hop_limited_and_fanout_aware() -> None:
    # a path 3 -> 2 -> 1 -> 0 (CSC: node v lists its in-neighbour v + 1); 0 trains; 2 layers
    indptr, indices = edges_to_csc(np.array([1, 2, 3]), np.array([0, 1, 2]), 4)
    scores = fanout_weighted_reads(indptr, indices, np.array([0]), [5, 5], batch_size=1)
    assert scores.tolist() == [1.0, 1.0, 1.0, 0.0]
    # a star: node 0 lists 10 in-neighbours, fanout 2 draws each with probability 0.2
    indptr, indices = edges_to_csc(np.arange(1, 11), np.zeros(10, dtype=np.int64), 11)
    one_hop = fanout_weighted_reads(indptr, indices, np.array([0]), [2], batch_size=1)
    np.testing.assert_allclose(one_hop[1:], 0.2)
    # two hops both re-expand the seed: 1 - (1 - 0.2) * (1 - 0.3)
    two_hops = fanout_weighted_reads(indptr, indices, np.array([0]), [2, 3], batch_size=1)
    np.testing.assert_allclose(two_hops[1:], 1 - 0.8 * 0.7)
    summed = fanout_weighted_reads(indptr, indices, np.array([0]), [2, 3], batch_size=1, mode="sum")
    np.testing.assert_allclose(summed[1:], 0.2)  # the sum form follows only newly drawn nodes


def test_fwr_bad_arguments() -> None:
    indptr, indices = random_csc(10, 30, 0)
    with pytest.raises(OptionError, match="training"):
        fanout_weighted_reads(indptr, indices, np.array([], dtype=np.int64), [5])
    # the one fanout parser (graphtier._fanouts) names the argument; the CLI renders the flag
    with pytest.raises(OptionError, match=r"^fanouts= expected integers in 1\.\.2147483647 or -1") as info:
        fanout_weighted_reads(indptr, indices, np.array([0]), [0])
    assert info.value.render(cli=True).startswith("--fanouts expected integers")
    with pytest.raises(OptionError, match="^fanouts= expected"):
        fanout_weighted_reads(indptr, indices, np.array([0]), [2**31])  # above MAX_FANOUT, as the samplers refuse
    with pytest.raises(OptionError, match=r"^batch_size=: expected a positive integer, found 0$") as info:
        fanout_weighted_reads(indptr, indices, np.array([0]), [5], batch_size=0)
    assert info.value.render(cli=True) == "--batch-size: expected a positive integer, found 0"
    with pytest.raises(OptionError, match=r"^mode=: expected one of"):
        fanout_weighted_reads(indptr, indices, np.array([0]), [5], mode="exact")
