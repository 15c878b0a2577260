"""The synthetic degree-corrected SBM generator and its kernels."""

from __future__ import annotations

import json
import math
import tracemalloc
from pathlib import Path

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import edges_to_csc_reference
from graphtier.dataset.format import Dataset
from graphtier.dataset.synthetic import _synthetic_csc_kernels as csc_kernels
from graphtier.dataset.synthetic import _synthetic_kernels as kernels
from graphtier.dataset.synthetic import generate as synthetic
from graphtier.errors import DatasetError, OptionError
from graphtier.graph.stats import in_degree_stats

ARRAY_FILES = ("indptr", "indices", "features", "labels", "train_idx", "valid_idx", "test_idx")


# ---------------------------------------------------------------------------------------------- kernels
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), first=st.integers(0, 2**40), count=st.integers(0, 300))
def test_random_bits_match_reference(seed: int, first: int, count: int) -> None:
    key = kernels.stream_key(seed, 7)
    found = kernels.random_bits(np.uint64(key), first, count)
    expected = kernels.random_bits_reference(key, np.arange(first, first + count, dtype=np.int64))
    np.testing.assert_array_equal(found, expected)


def test_uniforms_look_uniform() -> None:
    u = kernels.uniforms_reference(kernels.stream_key(0, 0), np.arange(200_000))
    assert 0.0 <= u.min() and u.max() < 1.0
    counts = np.bincount((u * 10).astype(np.int64), minlength=10)
    assert np.all(np.abs(counts - 20_000) < 5 * math.sqrt(20_000))


@st.composite
def grouped_weights(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    sizes = draw(st.lists(st.integers(0, 40), min_size=1, max_size=6))
    values = draw(st.lists(st.floats(0.01, 1000.0), min_size=sum(sizes), max_size=sum(sizes)))
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return np.array(values, dtype=np.float64), offsets


@settings(max_examples=60, deadline=None)
@given(case=grouped_weights())
def test_alias_tables_match_reference_and_weights(case: tuple[np.ndarray, np.ndarray]) -> None:
    weights, offsets = case
    accept, alias = kernels.build_alias_tables(weights, offsets)
    ref_accept, ref_alias = kernels.build_alias_tables_reference(weights, offsets)
    np.testing.assert_array_equal(accept, ref_accept)
    np.testing.assert_array_equal(alias, ref_alias)
    probs = kernels.alias_table_probabilities(accept, alias, offsets)
    for c in range(offsets.size - 1):
        group = slice(offsets[c], offsets[c + 1])
        if offsets[c + 1] > offsets[c]:
            expected = weights[group] / weights[group].sum()
            np.testing.assert_allclose(probs[group], expected, rtol=1e-9, atol=1e-12)
            assert np.all((alias[group] >= offsets[c]) & (alias[group] < offsets[c + 1]))


def _sampler_setup(nodes: int, classes: int, seed: int) -> dict[str, np.ndarray]:
    labels = synthetic.node_classes(seed, nodes, classes)
    weights = synthetic.degree_weights(seed, nodes, 2.1, 50.0)
    members = np.argsort(labels, kind="stable").astype(np.int32)
    offsets = np.zeros(classes + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=classes), out=offsets[1:])
    accept, alias = kernels.build_alias_tables(weights[members], offsets)
    mass = np.bincount(labels, weights=weights, minlength=classes)
    return dict(
        labels=labels,
        weights=weights,
        offsets=offsets,
        class_mass=mass,
        class_cum=np.cumsum(mass),
        slots=kernels.pack_alias_slots(accept, alias, members),
    )


@settings(max_examples=25, deadline=None)
@given(
    nodes=st.integers(1, 200),
    classes=st.integers(1, 6),
    homophily=st.sampled_from([0.0, 0.3, 0.8, 1.0]),
    seed=st.integers(0, 1000),
    first=st.integers(0, 10**9),
)
def test_sample_edges_matches_reference(nodes: int, classes: int, homophily: float, seed: int, first: int) -> None:
    s = _sampler_setup(nodes, classes, seed)
    count = 500
    src = np.empty(count, dtype=np.int32)
    dst = np.empty(count, dtype=np.int32)
    key = kernels.stream_key(seed, 2)
    kernels.sample_edges(
        np.uint64(key), np.int64(first), s["class_cum"], s["class_mass"], s["offsets"], s["slots"], homophily, src, dst
    )
    ref_src, ref_dst = kernels.sample_edges_reference(
        key, first, count, s["class_cum"], s["class_mass"], s["offsets"], s["slots"], homophily
    )
    np.testing.assert_array_equal(src, ref_src)
    np.testing.assert_array_equal(dst, ref_dst)


def test_sample_edges_follows_weights_and_homophily() -> None:
    s = _sampler_setup(300, 4, seed=5)
    count = 400_000
    src = np.empty(count, dtype=np.int32)
    dst = np.empty(count, dtype=np.int32)
    kernels.sample_edges(
        np.uint64(99), np.int64(0), s["class_cum"], s["class_mass"], s["offsets"], s["slots"], 0.7, src, dst
    )
    expected = s["weights"] / s["weights"].sum()
    observed = np.bincount(dst, minlength=300) / count
    # every destination frequency within 5 standard errors of its weight share
    assert np.all(np.abs(observed - expected) < 5 * np.sqrt(expected / count) + 1e-4)
    same_class = (s["labels"][src] == s["labels"][dst]).mean()
    assert same_class == pytest.approx(0.7, abs=0.005)


@settings(max_examples=20, deadline=None)
@given(nodes=st.integers(1, 50), dim=st.integers(1, 9), noise=st.floats(0.0, 3.0), first=st.integers(0, 10**6))
def test_fill_features_matches_reference(nodes: int, dim: int, noise: float, first: int) -> None:
    labels = synthetic.node_classes(1, nodes, 3)
    centroids = synthetic.class_centroids(1, 3, dim)
    out = np.empty((nodes, dim), dtype=np.float32)
    kernels.fill_features(np.uint64(1234), np.int64(first), labels, centroids, noise, out)
    expected = kernels.fill_features_reference(1234, first, labels, centroids, noise, dim)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(
    nodes=st.integers(1, 60),
    edges=st.integers(0, 400),
    symmetric=st.booleans(),
    seed=st.integers(0, 99),
    parts=st.integers(1, 5),
)
def test_csc_kernels_match_reference(nodes: int, edges: int, symmetric: bool, seed: int, parts: int) -> None:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, nodes, edges).astype(np.int32)
    dst = rng.integers(0, nodes, edges).astype(np.int32)
    counts = np.zeros(nodes, dtype=np.int64)
    for start in range(0, edges, 37):  # chunked like the generator
        csc_kernels.count_endpoints(src[start : start + 37], dst[start : start + 37], counts, symmetric, parts)
    indptr = np.zeros(nodes + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), dtype=np.int32)
    cursor = indptr[:-1].copy()
    for start in range(0, edges, 37):
        csc_kernels.scatter_endpoints(
            src[start : start + 37], dst[start : start + 37], cursor, indices, symmetric, parts
        )
    csc_kernels.sort_and_count_unique(indptr, indices)
    kept = csc_kernels.compact_lists(indptr, indices)
    all_src = np.concatenate([src, dst]) if symmetric else src
    all_dst = np.concatenate([dst, src]) if symmetric else dst
    ref_indptr, ref_indices = edges_to_csc_reference(all_src, all_dst, nodes, dedup=True, drop_self_loops=True)
    np.testing.assert_array_equal(indptr, ref_indptr)
    np.testing.assert_array_equal(indices[:kept], ref_indices)


# ---------------------------------------------------------------------------------------------- weights
def test_weight_cap_hits_requested_ratio() -> None:
    for gamma in (1.5, 2.0, 2.1, 3.0):
        cap = synthetic.weight_cap(gamma, 200.0)
        assert cap / synthetic.truncated_pareto_mean(gamma, cap) == pytest.approx(200.0, rel=1e-6)
    assert synthetic.weight_cap(2.1, 0.5) == 1.0


def test_degree_weights_follow_a_power_law() -> None:
    gamma, cap = 2.5, 1e6
    w = synthetic.degree_weights(0, 400_000, gamma, cap)
    assert w.min() >= 1.0 and w.max() <= cap
    # P(w > x) = x^-(gamma - 1) (cap far away): check the tail at several scales
    for x in (2.0, 10.0, 50.0):
        assert (w > x).mean() == pytest.approx(x ** -(gamma - 1), rel=0.1)


# ---------------------------------------------------------------------------------------------- generate
def _generate(path: Path, **options: object) -> Dataset:
    defaults: dict[str, object] = dict(nodes=5000, avg_degree=20, feature_dim=32, seed=3)
    defaults.update(options)
    return synthetic.generate(path, **defaults)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return _generate(tmp_path_factory.mktemp("synthetic") / "small")


def _array_bytes(dataset: Dataset) -> dict[str, bytes]:
    return {name: (dataset.path / f"{name}.npy").read_bytes() for name in ARRAY_FILES}


def test_output_is_valid_and_recorded(small: Dataset) -> None:
    reopened = Dataset.open(small.path)  # validates every array against meta.json
    assert reopened.num_nodes == 5000 and not reopened.directed
    assert 0.65 * 5000 * 20 < reopened.num_edges <= 5000 * 20  # duplicates among hubs are dropped
    assert reopened.features is not None and reopened.features.shape == (5000, 32)
    source = json.loads((small.path / "meta.json").read_text())["source"]
    assert source["generator"] == synthetic.GENERATOR_NAME
    assert source["options"]["avg_degree"] == 20 and source["options"]["seed"] == 3
    assert source["options"]["homophily"] == synthetic.DEFAULT_HOMOPHILY


def test_undirected_graph_is_symmetric_without_loops_or_duplicates(small: Dataset) -> None:
    n = small.num_nodes
    indptr, indices = np.asarray(small.indptr), np.asarray(small.indices)
    adjacency = sp.csc_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))
    assert (adjacency != adjacency.T).nnz == 0
    assert adjacency.diagonal().sum() == 0
    assert adjacency.max() == 1.0
    for v in range(0, n, 97):
        neighbours = indices[indptr[v] : indptr[v + 1]]
        assert np.all(np.diff(neighbours) > 0)


def test_directed_graph(tmp_path: Path) -> None:
    dataset = _generate(tmp_path / "d", nodes=2000, avg_degree=8, undirected=False, feature_dim=0)
    assert dataset.directed and dataset.features is None
    n = dataset.num_nodes
    adjacency = sp.csc_matrix(
        (np.ones(dataset.num_edges), np.asarray(dataset.indices), np.asarray(dataset.indptr)), shape=(n, n)
    )
    assert (adjacency != adjacency.T).nnz > 0
    assert 0.7 * 16000 < dataset.num_edges <= 16000


def test_degrees_are_skewed(small: Dataset) -> None:
    stats = in_degree_stats(small.indptr)
    assert stats.max > 10 * stats.mean
    assert stats.median < stats.mean
    assert stats.top1pct_edge_share > 0.12  # 12x the share of a uniform graph
    assert stats.top10pct_edge_share > 0.45


def test_homophily_extremes(tmp_path: Path) -> None:
    for homophily, expected in ((1.0, 1.0), (0.0, 0.0)):
        dataset = _generate(tmp_path / f"h{homophily}", nodes=1500, avg_degree=10, homophily=homophily, feature_dim=0)
        labels = np.asarray(dataset.labels)
        dst = np.repeat(np.arange(dataset.num_nodes), np.diff(dataset.indptr))
        assert (labels[np.asarray(dataset.indices)] == labels[dst]).mean() == expected


def test_default_homophily_share(small: Dataset) -> None:
    labels = np.asarray(small.labels)
    dst = np.repeat(np.arange(small.num_nodes), np.diff(small.indptr))
    share = (labels[np.asarray(small.indices)] == labels[dst]).mean()
    assert 0.7 < share < 0.82  # 0.8 drawn; duplicates dropped among hubs are mostly intra-class


def _nearest_centroid_accuracy(features: np.ndarray, labels: np.ndarray, classes: int) -> float:
    centroids = np.stack([features[labels == c].mean(axis=0) for c in range(classes)])
    distances = (centroids**2).sum(axis=1)[None, :] - 2 * features @ centroids.T
    return float((distances.argmin(axis=1) == labels).mean())


def test_graph_helps_predict_labels(small: Dataset) -> None:
    features = np.asarray(small.features, dtype=np.float64)
    labels = np.asarray(small.labels)
    indptr, indices = np.asarray(small.indptr), np.asarray(small.indices)
    degrees = np.diff(indptr)
    dst = np.repeat(np.arange(small.num_nodes), degrees)
    neighbour_sum = np.zeros_like(features)
    np.add.at(neighbour_sum, dst, features[indices])
    neighbour_mean = neighbour_sum / np.maximum(degrees, 1)[:, None]
    raw = _nearest_centroid_accuracy(features, labels, small.num_classes)
    aggregated = _nearest_centroid_accuracy(neighbour_mean, labels, small.num_classes)
    assert raw > 2.0 / small.num_classes  # features carry signal ...
    assert aggregated > raw + 0.3  # ... but neighbours carry much more


def test_splits(small: Dataset) -> None:
    ids = [np.asarray(small.split(name)) for name in ("train", "valid", "test")]
    assert [x.size for x in ids] == [50, 50, 100]
    assert all(np.all(np.diff(x) > 0) for x in ids)
    assert np.unique(np.concatenate(ids)).size == 200
    assert np.all(np.asarray(small.labels) >= 0)


def test_deterministic_for_seed_chunk_size_and_threads(small: Dataset, tmp_path: Path) -> None:
    again = _generate(tmp_path / "again")
    assert _array_bytes(again) == _array_bytes(small)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        chunked = _generate(tmp_path / "chunked", chunk_edges=999)
    finally:
        numba.set_num_threads(threads)
    assert _array_bytes(chunked) == _array_bytes(small)
    other = _generate(tmp_path / "other", seed=4)
    assert (other.path / "indices.npy").read_bytes() != (small.path / "indices.npy").read_bytes()


def test_pairs_drawn_twice_give_the_same_dataset_with_one_chunk_in_memory(
    small: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(synthetic, "KEEP_PAIRS_MEMORY_FRACTION", 0.0)  # never keep the drawn pairs
    twice = _generate(tmp_path / "twice", chunk_edges=999)
    assert _array_bytes(twice) == _array_bytes(small)
    # a directed graph of 400k edges: the pairs (int32 src + dst: 3.2 MB) are never all in memory at once,
    # only the CSC (int32 indices: 1.6 MB) and one chunk of pairs
    options = dict(nodes=2000, avg_degree=200, undirected=False, feature_dim=0, chunk_edges=10_000)
    tracemalloc.start()
    try:
        streamed = _generate(tmp_path / "streamed", **options)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2_600_000
    monkeypatch.setattr(synthetic, "KEEP_PAIRS_MEMORY_FRACTION", 1.0)
    kept = _generate(tmp_path / "kept", **options)
    for name in ("indptr", "indices"):
        assert (kept.path / f"{name}.npy").read_bytes() == (streamed.path / f"{name}.npy").read_bytes()


def test_float16_features(tmp_path: Path) -> None:
    dataset = _generate(tmp_path / "f16", nodes=300, avg_degree=4, feature_dtype="float16", feature_dim=5)
    assert dataset.features is not None and dataset.features.dtype == np.float16
    reference = _generate(tmp_path / "f32", nodes=300, avg_degree=4, feature_dim=5)
    np.testing.assert_array_equal(np.asarray(dataset.features), np.asarray(reference.features).astype(np.float16))


def test_tiny_graphs(tmp_path: Path) -> None:
    single = _generate(tmp_path / "one", nodes=1, avg_degree=0, num_classes=1, feature_dim=3)
    assert single.num_edges == 0 and single.num_nodes == 1
    few = _generate(
        tmp_path / "few",
        nodes=5,
        avg_degree=2,
        num_classes=5,
        train_fraction=0.4,
        valid_fraction=0.3,
        test_fraction=0.3,
    )
    assert [few.split(s).size for s in ("train", "valid", "test")] == [2, 2, 1]


@pytest.mark.parametrize(
    ("option", "value", "flag"),
    [
        ("nodes", 0, "--nodes"),
        ("avg_degree", -1.0, "--avg-degree"),
        ("avg_degree", 10.0, "--avg-degree"),  # more than nodes - 1
        ("num_classes", 0, "--num-classes"),
        ("degree_exponent", 1.0, "--degree-exponent"),
        ("homophily", 1.5, "--homophily"),
        ("feature_noise", -0.1, "--feature-noise"),
        ("train_fraction", 0.9, "--train/valid/test-fraction"),
        ("feature_dtype", "float64", "--feature-dtype"),
        ("seed", -1, "--seed"),
        ("chunk_edges", 0, "--chunk-edges"),
    ],
)
def test_bad_options_raise_one_line_errors(tmp_path: Path, option: str, value: object, flag: str) -> None:
    options: dict[str, object] = dict(
        nodes=10, avg_degree=2, num_classes=2, feature_dim=2, valid_fraction=0.1, test_fraction=0.1
    )
    options[option] = value
    with pytest.raises(OptionError) as error:
        synthetic.generate(tmp_path / "bad", **options)  # type: ignore[arg-type]
    message = str(error.value)
    assert flag in message and "expected" in message and "\n" not in message
    assert not (tmp_path / "bad").exists()
    assert list(tmp_path.iterdir()) == []


def test_refuses_to_overwrite(small: Dataset) -> None:
    before = _array_bytes(small)
    with pytest.raises(DatasetError, match="already exists"):
        _generate(small.path, seed=9)
    assert _array_bytes(small) == before
