"""Tests for graphtier.graph.reorder and its kernels."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import csc_to_edges, edges_to_csc
from graphtier.dataset.format import Dataset
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError
from graphtier.graph import _reorder_kernels as kernels
from graphtier.graph.reorder import (
    load_score_file,
    order_by_score,
    permute_rows,
    reorder_dataset,
    reorder_topology,
)


def write_dataset(
    root: Path,
    num_nodes: int,
    num_edges: int,
    seed: int,
    *,
    feature_dtype: str = "float32",
    feature_dim: int = 3,
    node_ids: bool = True,
) -> Dataset:
    """A random dataset with self-loops, repeated edges, features, labels, splits and node_ids."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, num_nodes, num_edges)
    dst = rng.integers(0, num_nodes, num_edges)
    indptr, indices = edges_to_csc(src, dst, num_nodes)
    with DatasetWriter(root) as writer:
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        if feature_dim:
            writer.save("features", rng.standard_normal((num_nodes, feature_dim)).astype(feature_dtype))
        labels = rng.integers(-1, 4, num_nodes)
        writer.save("labels", labels)
        order = rng.permutation(num_nodes)
        cut1, cut2 = num_nodes // 2, (3 * num_nodes) // 4
        writer.save("train_idx", np.sort(order[:cut1]).astype(np.int64))
        writer.save("valid_idx", np.sort(order[cut1:cut2]).astype(np.int64))
        writer.save("test_idx", np.sort(order[cut2:]).astype(np.int64))
        if node_ids:
            writer.save("node_ids", (np.arange(num_nodes, dtype=np.int64) * 7 + 1000))
        meta = {
            "name": "random",
            "num_nodes": num_nodes,
            "num_edges": int(indices.shape[0]),
            "directed": True,
            "feature_dim": feature_dim,
            "feature_dtype": feature_dtype if feature_dim else None,
            "num_classes": 4,
            "source": {"kind": "test"},
        }
        return writer.finish(meta)


def edge_set(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    src, dst = csc_to_edges(indptr, indices)
    pairs = np.stack([src, dst], axis=1)
    return pairs[np.lexsort((pairs[:, 0], pairs[:, 1]))]


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 80), st.integers(0, 400), st.integers(0, 2**31), st.sampled_from(["float32", "float16"]))
def test_reorder_dataset_properties(num_nodes: int, num_edges: int, seed: int, dtype: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        source = write_dataset(Path(tmp) / "src", num_nodes, num_edges, seed, feature_dtype=dtype)
        # few distinct values, so ties are common
        scores = np.random.default_rng(seed + 1).integers(0, 4, num_nodes).astype(np.float64)
        result, timings = reorder_dataset(source, Path(tmp) / "out", scores, score_label="test")
        result = Dataset.open(result.path)
        perm = np.asarray(result.extra["perm"])
        assert perm.dtype == np.int64
        assert np.array_equal(np.sort(perm), np.arange(num_nodes))
        # scores non-increasing along new ids, ties by old id
        assert np.all(np.diff(scores[perm]) <= 0)
        tie = np.diff(scores[perm]) == 0
        assert np.all(np.diff(perm)[tie] > 0)
        # edge set mapped back through perm equals the original edge set
        src_new, dst_new = csc_to_edges(result.indptr, result.indices)
        mapped = np.stack([perm[src_new], perm[dst_new]], axis=1)
        mapped = mapped[np.lexsort((mapped[:, 0], mapped[:, 1]))]
        np.testing.assert_array_equal(mapped, edge_set(source.indptr, source.indices))
        # every list sorted
        for v in range(num_nodes):
            assert np.all(np.diff(result.indices[result.indptr[v] : result.indptr[v + 1]]) >= 0)
        np.testing.assert_array_equal(result.features, np.asarray(source.features)[perm])
        np.testing.assert_array_equal(result.labels, np.asarray(source.labels)[perm])
        np.testing.assert_array_equal(result.extra["node_ids"], np.asarray(source.extra["node_ids"])[perm])
        for name in ("train", "valid", "test"):
            np.testing.assert_array_equal(np.sort(perm[result.split(name)]), source.split(name))
            assert np.all(np.diff(result.split(name)) > 0)
        assert result.meta["node_order"] == "reordered"
        assert result.meta["reorder"]["score"] == "test"
        assert result.meta["reorder"]["source_dataset"] == str(source.path.resolve())
        assert timings.num_edges == source.num_edges


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 200), st.integers(0, 2000), st.integers(0, 2**31), st.integers(1, 300))
def test_reorder_topology_matches_reference_in_any_chunking(n: int, e: int, seed: int, chunk: int) -> None:
    rng = np.random.default_rng(seed)
    indptr, indices = edges_to_csc(rng.integers(0, n, e), (rng.power(2.0, e) * n).astype(np.int64) % n, n)
    perm = rng.permutation(n).astype(np.int64)
    np.testing.assert_array_equal(kernels.inverse_permutation(perm), kernels.inverse_permutation_reference(perm))
    np.testing.assert_array_equal(
        kernels.permuted_degrees(indptr, perm), kernels.permuted_degrees_reference(indptr, perm)
    )
    got_indptr, got_indices = reorder_topology(indptr, indices, perm, edge_chunk=chunk)
    ref_indptr, ref_indices = kernels.reorder_topology_reference(indptr, indices, perm)
    np.testing.assert_array_equal(got_indptr, ref_indptr)
    np.testing.assert_array_equal(got_indices, ref_indices)
    assert got_indices.dtype == indices.dtype


def test_long_lists_are_sorted() -> None:
    # one hub list far longer than the insertion-sort limit
    n = 500
    src = np.arange(n)
    dst = np.zeros(n, dtype=np.int64)
    indptr, indices = edges_to_csc(src, dst, n)
    perm = np.random.default_rng(0).permutation(n).astype(np.int64)
    new_indptr, new_indices = reorder_topology(indptr, indices, perm)
    np.testing.assert_array_equal(new_indices, np.arange(n, dtype=indices.dtype))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("window_bytes", [None, 50, 999, 4000])
def test_permute_rows_in_small_chunks_and_windows_through_memmaps(
    tmp_path: Path, dtype: str, window_bytes: int | None
) -> None:
    # a window smaller than the table: several sequential passes over the source, each filling one window
    rng = np.random.default_rng(1)
    source = rng.standard_normal((1000, 5)).astype(dtype)
    np.save(tmp_path / "src.npy", source)
    mapped = np.load(tmp_path / "src.npy", mmap_mode="r")
    out = np.lib.format.open_memmap(tmp_path / "out.npy", mode="w+", dtype=dtype, shape=(1000, 5))
    perm = rng.permutation(1000).astype(np.int64)
    permute_rows(mapped, perm, out, chunk_bytes=64, window_bytes=window_bytes)
    np.testing.assert_array_equal(np.asarray(out), source[perm])


@settings(max_examples=40, deadline=None)
@given(
    num_rows=st.integers(1, 60),
    width=st.integers(1, 4),
    first=st.integers(0, 70),
    span=st.integers(0, 70),
    seed=st.integers(0, 2**31 - 1),
)
def test_scatter_rows_into_window_matches_reference(
    num_rows: int, width: int, first: int, span: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    source = rng.integers(0, 1 << 30, size=(num_rows, width)).astype(np.uint32)
    targets = rng.permutation(num_rows + 10)[:num_rows].astype(np.int64)  # distinct, some beyond the window
    stop = first + span
    window, expected = (np.zeros((span, width), dtype=np.uint32) for _ in range(2))
    kernels.scatter_rows_into_window(source, targets, first, stop, window)
    kernels.scatter_rows_into_window_reference(source, targets, first, stop, expected)
    np.testing.assert_array_equal(window, expected)


def test_order_by_score_breaks_ties_by_old_id() -> None:
    np.testing.assert_array_equal(order_by_score(np.array([0.1, 0.4, 0.2, 0.4, 0.1])), [1, 3, 2, 0, 4])
    np.testing.assert_array_equal(order_by_score(np.array([3, 1, 3], dtype=np.int64)), [0, 2, 1])


def test_reorder_of_reordered_dataset_composes_perm(tmp_path: Path) -> None:
    source = write_dataset(tmp_path / "src", 50, 200, 5)
    rng = np.random.default_rng(2)
    first, _ = reorder_dataset(source, tmp_path / "a", rng.random(50), score_label="a")
    second, _ = reorder_dataset(first, tmp_path / "b", rng.random(50), score_label="b")
    perm = np.asarray(second.extra["perm"])
    np.testing.assert_array_equal(second.features, np.asarray(source.features)[perm])
    np.testing.assert_array_equal(second.extra["node_ids"], np.asarray(source.extra["node_ids"])[perm])


def test_reorder_without_features_and_bad_scores(tmp_path: Path) -> None:
    source = write_dataset(tmp_path / "src", 20, 60, 3, feature_dim=0, node_ids=False)
    result, _ = reorder_dataset(source, tmp_path / "out", np.arange(20.0), score_label="x")
    assert result.features is None
    np.testing.assert_array_equal(result.extra["perm"], np.arange(19, -1, -1))
    with pytest.raises(DatasetError, match="shape"):
        reorder_dataset(source, tmp_path / "bad", np.arange(5.0), score_label="x")
    assert not (tmp_path / "bad").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_load_score_file_errors(tmp_path: Path) -> None:
    np.save(tmp_path / "ok.npy", np.arange(4, dtype=np.int32))
    assert load_score_file(tmp_path / "ok.npy", 4).dtype == np.float64
    with pytest.raises(DatasetError, match=r"expected shape \(5,\)"):
        load_score_file(tmp_path / "ok.npy", 5)
    np.save(tmp_path / "nan.npy", np.array([1.0, np.nan]))
    with pytest.raises(DatasetError, match="finite"):
        load_score_file(tmp_path / "nan.npy", 2)
    np.save(tmp_path / "str.npy", np.array(["a", "b"]))
    with pytest.raises(DatasetError, match="numeric"):
        load_score_file(tmp_path / "str.npy", 2)
    (tmp_path / "junk.npy").write_text("junk")
    with pytest.raises(DatasetError, match="not a readable"):
        load_score_file(tmp_path / "junk.npy", 2)
    with pytest.raises(DatasetError, match="not found"):
        load_score_file(tmp_path / "missing.npy", 2)
