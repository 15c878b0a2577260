"""Shared importer machinery: chunked reading, spill, id maps, chunked CSC, splits, features."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import csc_to_edges, edges_to_csc_reference, reciprocity, reciprocity_reference
from graphtier.dataset.importers.common import edges, textio
from graphtier.dataset.importers.common.features import FEATURE_BLOCK_ROWS, synthetic_features
from graphtier.dataset.importers.split import splits
from graphtier.errors import DatasetError, OptionError


def _write(path: Path, text: str, compress: bool = False) -> Path:
    data = text.encode()
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("chunk_bytes", [1, 7, 64, 1 << 20])
def test_chunked_parse_is_independent_of_chunk_size(tmp_path: Path, compress: bool, chunk_bytes: int) -> None:
    rng = np.random.default_rng(1)
    edges = rng.integers(0, 10**9, size=(500, 2))
    text = "# comment\n" + "".join(f"{a}\t{b}\n" if i % 3 else f"{a}, {b}\n" for i, (a, b) in enumerate(edges))
    path = _write(tmp_path / "e.txt", text.rstrip("\n"), compress)  # last line without newline
    blocks = list(
        textio.iter_int_rows(
            path, 2, allow_extra_columns=True, skip_header=False, expected="two ids", chunk_bytes=chunk_bytes
        )
    )
    np.testing.assert_array_equal(np.concatenate(blocks), edges)


def test_parse_error_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "e.txt", "# c\n1 2\n3 4\n5\n6 7\n")
    for chunk_bytes in (4, 1 << 20):
        with pytest.raises(DatasetError, match=r"e\.txt: line 4: expected two ids, found too few columns: '5'"):
            list(
                textio.iter_int_rows(
                    path, 2, allow_extra_columns=True, skip_header=False, expected="two ids", chunk_bytes=chunk_bytes
                )
            )


def test_truncated_gzip_is_a_dataset_error(tmp_path: Path) -> None:
    data = gzip.compress(b"".join(b"%d %d\n" % (i, i + 1) for i in range(20000)))
    path = tmp_path / "e.txt.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match="truncated or damaged gzip"):
        list(textio.iter_int_rows(path, 2, allow_extra_columns=True, skip_header=False, expected="x"))


def test_header_detection(tmp_path: Path) -> None:
    assert textio.has_header(_write(tmp_path / "a", "src,dst\n1,2\n"), "auto", 2)
    assert not textio.has_header(_write(tmp_path / "b", "1,2\n3,4\n"), "auto", 2)
    assert not textio.has_header(_write(tmp_path / "c", "a,b\nc,d\n"), "auto", 2)  # string ids
    assert textio.has_header(_write(tmp_path / "d", "# x\n\nfrom to\n1 2\n"), "auto", 2)
    assert textio.has_header(tmp_path / "b", "yes", 2)
    with pytest.raises(OptionError):
        textio.has_header(tmp_path / "b", "maybe", 2)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40), min_size=0, max_size=60), st.integers(1, 4), st.booleans())
def test_id_map_renumbers_densely_in_order(ids: list[int], parts: int, sparse_range: bool) -> None:
    import tempfile

    values = np.array(ids, dtype=np.int64)
    if not sparse_range:
        values = np.abs(values) % 50
    src, dst = values[: len(values) // 2], values[len(values) // 2 : 2 * (len(values) // 2)]
    with tempfile.TemporaryDirectory() as tmp, edges.EdgeSpill(Path(tmp)) as spill:
        for a, b in zip(np.array_split(src, parts), np.array_split(dst, parts)):
            spill.append(a, b)
        idmap = edges.build_id_map(spill, None, Path("x"))
        used = np.unique(np.concatenate([src, dst]))
        assert idmap.num_nodes == used.size
        original = idmap.original_ids()
        if original is None:
            np.testing.assert_array_equal(used, np.arange(used.size))
        else:
            np.testing.assert_array_equal(original, used)
        for a, b in spill:
            np.testing.assert_array_equal(idmap.map_known(a), np.searchsorted(used, a))
            np.testing.assert_array_equal(idmap.map_known(b), np.searchsorted(used, b))
        probe = np.concatenate([used, [used.max(initial=0) + 1, used.min(initial=0) - 1]])
        expected = np.concatenate([np.arange(used.size), [-1, -1]])
        np.testing.assert_array_equal(idmap.lookup(probe), expected)


def test_id_map_uses_sorted_ids_for_huge_ranges(tmp_path: Path) -> None:
    with edges.EdgeSpill(tmp_path) as spill:
        spill.append(np.array([2**60, 5]), np.array([-(2**62), 5]))
        idmap = edges.build_id_map(spill, None, tmp_path)
    assert idmap.sorted_ids is not None
    np.testing.assert_array_equal(idmap.original_ids(), [-(2**62), 5, 2**60])


def test_id_map_with_num_nodes(tmp_path: Path) -> None:
    with edges.EdgeSpill(tmp_path) as spill:
        spill.append(np.array([0, 3]), np.array([3, 1]))
        assert edges.build_id_map(spill, 10, tmp_path).is_identity
        with pytest.raises(DatasetError, match=r"expected node ids in \[0, 3\)"):
            edges.build_id_map(spill, 3, tmp_path)


def _expected_edges(
    src: np.ndarray, dst: np.ndarray, undirected: bool, keep_duplicates: bool, drop_self_loops: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The edge multiset build_csc must produce: undirected stores max(m(u, v), m(v, u)) copies."""
    from collections import Counter

    pairs = Counter(zip(src.tolist(), dst.tolist()))
    if drop_self_loops:
        pairs = Counter({p: m for p, m in pairs.items() if p[0] != p[1]})
    if not keep_duplicates:
        pairs = Counter(dict.fromkeys(pairs, 1))
    if undirected:
        pairs = Counter(
            {p: max(m, pairs.get(p[::-1], 0)) for p, m in list(pairs.items())}
            | {p[::-1]: max(m, pairs.get(p[::-1], 0)) for p, m in pairs.items()}
        )
    flat = [p for p, m in pairs.items() for _ in range(m)]
    return np.array([p[0] for p in flat], np.int64), np.array([p[1] for p in flat], np.int64)


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 30),
    st.integers(0, 200),
    st.integers(1, 5),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**31),
)
def test_build_csc_matches_reference(
    n: int, e: int, parts: int, undirected: bool, keep_duplicates: bool, drop_self_loops: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, e)
    dst = rng.integers(0, n, e)
    chunks = edges.array_edge_chunks(src, dst, chunk=max(1, e // parts))
    built = edges.build_csc(
        chunks, n, undirected=undirected, keep_duplicates=keep_duplicates, drop_self_loops=drop_self_loops
    )
    ref_src, ref_dst = _expected_edges(src, dst, undirected, keep_duplicates, drop_self_loops)
    ref_indptr, ref_indices = edges_to_csc_reference(ref_src, ref_dst, n)
    np.testing.assert_array_equal(built.indptr, ref_indptr)
    np.testing.assert_array_equal(built.indices, ref_indices)
    assert built.indices.dtype == np.int32
    counts = built.counts
    loops = int(np.count_nonzero(src == dst))
    assert counts.input_edges == e
    assert counts.self_loops_dropped == (loops if drop_self_loops else 0)
    kept_pairs = {(int(u), int(v)) for u, v in zip(src, dst) if not (drop_self_loops and u == v)}
    kept = e - counts.self_loops_dropped
    assert counts.duplicates_dropped == (0 if keep_duplicates else kept - len(kept_pairs))
    if not keep_duplicates:
        assert counts.reverse_present == sum(1 for u, v in kept_pairs if u != v and (v, u) in kept_pairs)
        if undirected:
            assert counts.reverses_added == len(ref_indices) - len(kept_pairs)
    assert counts.symmetric == reciprocity_reference(built.indptr, built.indices)[2]
    assert counts.symmetric or not undirected


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 20), st.integers(0, 100), st.booleans(), st.booleans(), st.integers(0, 2**31))
def test_undirected_gives_the_same_graph_for_a_symmetric_input(
    n: int, e: int, keep_duplicates: bool, drop_self_loops: bool, seed: int
) -> None:
    """--undirected adds only the missing directions: A and A + A^T give one CSC (issue 23)."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, e), rng.integers(0, n, e)
    options = {"undirected": True, "keep_duplicates": keep_duplicates, "drop_self_loops": drop_self_loops}
    once = edges.build_csc(edges.array_edge_chunks(src, dst), n, **options)
    sym_src, sym_dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    twice = edges.build_csc(edges.array_edge_chunks(sym_src, sym_dst), n, **options)
    again = edges.build_csc(
        edges.array_edge_chunks(once.indices.astype(np.int64), csc_to_edges(once.indptr, once.indices)[1]), n, **options
    )
    # with keep_duplicates, A + A^T repeats every edge, so only the symmetric result itself is compared
    for other in (again,) if keep_duplicates else (twice, again):
        np.testing.assert_array_equal(other.indptr, once.indptr)
        np.testing.assert_array_equal(other.indices, once.indices)
    assert again.counts.reverses_added == 0
    assert again.counts.duplicates_dropped == 0


def test_reciprocity_matches_reference() -> None:
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(1, 10))
        e = int(rng.integers(0, 40))
        indptr, indices = edges_to_csc_reference(rng.integers(0, n, e), rng.integers(0, n, e), n)
        assert reciprocity(indptr, indices) == reciprocity_reference(indptr, indices)
    # more vertices than the kernel's vertex ranges, with repeats and self-loops
    src, dst = rng.integers(0, 3000, 20_000), rng.integers(0, 3000, 20_000)
    indptr, indices = edges_to_csc_reference(np.concatenate([src, dst[:9000]]), np.concatenate([dst, src[:9000]]), 3000)
    assert reciprocity(indptr, indices) == reciprocity_reference(indptr, indices)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 500), st.floats(0, 1), st.floats(0, 1), st.integers(0, 100), st.booleans())
def test_random_split_properties(n: int, a: float, b: float, seed: int, masked: bool) -> None:
    fractions = (a / 2, b / 2, max(0.0, 1 - a / 2 - b / 2))
    mask = np.random.default_rng(seed).random(n) < 0.7 if masked else None
    train, valid, test = splits.random_split(n, fractions, seed, mask)
    everything = np.concatenate([train, valid, test])
    assert np.unique(everything).size == everything.size  # disjoint
    candidates = np.flatnonzero(mask) if mask is not None else np.arange(n)
    assert set(everything.tolist()) == set(candidates.tolist())  # fractions sum to 1: all covered
    c = candidates.size
    assert abs(train.size - fractions[0] * c) <= 1 and abs(valid.size - fractions[1] * c) <= 1
    for part in (train, valid, test):
        assert part.dtype == np.int64 and np.all(np.diff(part) > 0)
    again = splits.random_split(n, fractions, seed, mask)
    for x, y in zip((train, valid, test), again):
        np.testing.assert_array_equal(x, y)


def test_random_split_rejects_bad_fractions() -> None:
    with pytest.raises(OptionError):
        splits.random_split(10, (0.8, 0.3, 0.1), 0)
    with pytest.raises(OptionError):
        splits.parse_fractions("0.5,x,0.1")


def test_synthetic_features_deterministic_blockwise_and_correlated_only_with_signal() -> None:
    rng = np.random.default_rng(0)
    n = FEATURE_BLOCK_ROWS + 1000
    labels = rng.integers(-1, 4, n)
    feats = synthetic_features(labels, 8, seed=3, signal=1.0)
    assert feats.dtype == np.float32 and feats.shape == (n, 8)
    np.testing.assert_array_equal(feats, synthetic_features(labels, 8, seed=3, signal=1.0))
    assert not np.array_equal(feats, synthetic_features(labels, 8, seed=4, signal=1.0))
    out = np.zeros((n, 8), np.float32)
    synthetic_features(labels, 8, seed=3, out=out, signal=1.0)
    np.testing.assert_array_equal(out, feats)
    # with a signal, class means differ clearly from each other; unlabelled rows are centred noise
    means = np.stack([feats[labels == c].mean(axis=0) for c in range(4)])
    spread = np.linalg.norm(means[:, None] - means[None], axis=-1)
    assert spread[~np.eye(4, dtype=bool)].min() > 0.5
    assert np.abs(feats[labels == -1].mean(axis=0)).max() < 0.1
    # by default (signal 0) the features are the same noise whatever the labels: no label information
    plain = synthetic_features(labels, 8, seed=3)
    np.testing.assert_array_equal(plain, synthetic_features(None, 8, seed=3, num_nodes=n))
    plain_means = np.stack([plain[labels == c].mean(axis=0) for c in range(4)])
    assert np.abs(plain_means).max() < 0.05
    with pytest.raises(OptionError):
        synthetic_features(labels, 8, seed=3, signal=-1.0)
    no_labels = synthetic_features(None, 4, seed=1, num_nodes=10)
    assert no_labels.shape == (10, 4)
