"""Node data of the importers: feature/label formats, nodes without edges, synthetic data and provenance."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.importers.common import node_data
from graphtier.dataset.importers.formats.csr_npz import import_csr_npz
from graphtier.dataset.importers.formats.edgelist import import_edgelist
from graphtier.dataset.provenance import describe, provenance_of
from graphtier.errors import DatasetError, OptionError
from tests.dataset.importers.helpers import assert_user_error, run_cli


def _write_edges(path: Path, edges: list[tuple[int, int]]) -> Path:
    path.write_text("".join(f"{u} {v}\n" for u, v in edges))
    return path


# ---------------------------------------------------------------------------- nodes without edges


def test_acm_like_nodes_without_edges_are_kept(tmp_path: Path) -> None:
    """ACM: 3,025 nodes with features and labels, 561 of them without an edge -> 3,025 nodes."""
    rng = np.random.default_rng(0)
    n, isolated = 3025, 561
    connected = rng.permutation(n)[: n - isolated]
    src = rng.choice(connected, 20000)
    dst = rng.choice(connected, 20000)
    used = np.union1d(src, dst)
    edges = _write_edges(tmp_path / "edges.txt", list(zip(src.tolist(), dst.tolist())))
    feats = rng.standard_normal((n, 5)).astype(np.float32)
    labels = rng.integers(0, 3, n)
    np.save(tmp_path / "X.npy", feats)
    np.save(tmp_path / "Y.npy", labels)
    ds = import_edgelist(edges, tmp_path / "acm", features=tmp_path / "X.npy", labels=tmp_path / "Y.npy")
    assert ds.num_nodes == n
    assert ds.meta["nodes_only_in_node_data"] == n - used.size
    np.testing.assert_array_equal(ds.features, feats)
    np.testing.assert_array_equal(ds.labels, labels)
    assert "node_ids" not in ds.extra  # ids 0..3024 are all nodes: no renumbering
    assert any("no edges" in note for note in describe(ds.meta))


def test_remapped_ids_keep_rows_aligned(tmp_path: Path) -> None:
    """Sparse ids are renumbered; a labelled id without edges becomes a node, rows follow the ids."""
    edges = _write_edges(tmp_path / "e.txt", [(10, 20), (20, 40)])
    labels = tmp_path / "l.csv"
    labels.write_text("10,0\n20,1\n30,1\n40,0\n")
    ds = import_edgelist(edges, tmp_path / "o", labels=labels)
    np.testing.assert_array_equal(ds.extra["node_ids"], [10, 20, 30, 40])
    np.testing.assert_array_equal(ds.labels, [0, 1, 1, 0])
    assert ds.meta["nodes_only_in_node_data"] == 1
    assert ds.in_degrees().tolist() == [0, 1, 0, 1]


def test_string_ids_labels_add_nodes(tmp_path: Path) -> None:
    edges = tmp_path / "e.txt"
    edges.write_text("alice bob\nbob carol\n")
    labels = tmp_path / "l.csv"
    labels.write_text("alice,red\ndave,blue\n")
    ds = import_edgelist(edges, tmp_path / "o", labels=labels)
    assert json.loads((ds.path / "node_ids.json").read_text()) == ["alice", "bob", "carol", "dave"]
    np.testing.assert_array_equal(ds.labels, [1, -1, -1, 0])
    assert ds.meta["nodes_only_in_node_data"] == 1


def test_csr_npz_node_data_rows_beyond_the_adjacency(tmp_path: Path) -> None:
    np.savez(tmp_path / "g.npz", indptr=np.array([0, 1, 2, 2]), indices=np.array([1, 2]))
    np.save(tmp_path / "X.npy", np.ones((5, 2), np.float32))
    ds = import_csr_npz(tmp_path / "g.npz", tmp_path / "o", features=tmp_path / "X.npy")
    assert ds.num_nodes == 5 and ds.num_edges == 2
    assert ds.meta["nodes_only_in_node_data"] == 2


def test_cli_prints_a_note_for_nodes_without_edges(tmp_path: Path) -> None:
    edges = _write_edges(tmp_path / "e.txt", [(0, 1)])
    np.save(tmp_path / "X.npy", np.zeros((4, 2), np.float32))
    result = run_cli("prepare", "edgelist", str(edges), str(tmp_path / "o"), "--features", str(tmp_path / "X.npy"))
    assert result.returncode == 0, result.stderr
    assert "4 nodes" in result.stdout
    assert "note: 2 nodes have features/labels but no edges" in result.stdout


# ---------------------------------------------------------------------------- formats


@pytest.mark.parametrize("separator", [" ", ",", "\t", ", "])
def test_text_feature_matrix(tmp_path: Path, separator: str) -> None:
    feats = np.round(np.random.default_rng(1).standard_normal((6, 3)), 3).astype(np.float32)
    text = "# features\n" + "".join(separator.join(f"{x:g}" for x in row) + "\n" for row in feats)
    (tmp_path / "X.txt").write_text(text)
    edges = _write_edges(tmp_path / "e.txt", [(0, 1), (1, 2)])
    ds = import_edgelist(edges, tmp_path / "o", features=tmp_path / "X.txt")
    assert ds.num_nodes == 6
    np.testing.assert_allclose(ds.features, feats, rtol=1e-6)
    assert not list(ds.path.glob("*.scratch"))


def test_gzip_text_features_and_bad_row(tmp_path: Path) -> None:
    (tmp_path / "X.txt.gz").write_bytes(gzip.compress(b"1 2\n3 4\n5 6\n"))
    edges = _write_edges(tmp_path / "e.txt", [(0, 1)])
    ds = import_edgelist(edges, tmp_path / "o", features=tmp_path / "X.txt.gz")
    np.testing.assert_array_equal(ds.features, [[1, 2], [3, 4], [5, 6]])
    (tmp_path / "bad.txt").write_text("1 2\n3\n")
    with pytest.raises(DatasetError, match=r"bad.txt: line 2: expected 2 numbers per line"):
        import_edgelist(edges, tmp_path / "p", features=tmp_path / "bad.txt")
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    "text, layout, expected, names",
    [
        ("0\n1\n-1\n1\n", "auto", [0, 1, -1, 1], None),
        ("label\n2\n0\n1\n", "auto", [2, 0, 1], None),
        ("cat\ndog\ncat\n", "lines", [0, 1, 0], ["cat", "dog"]),
        ("0,1\n3,0\n", "auto", [1, -1, 0], None),  # ids 0, 1, 3 (3 has no edge): renumbered densely
        ("0 1\n3 0\n", "pairs", [1, -1, 0], None),
    ],
)
def test_label_layouts(tmp_path: Path, text: str, layout: str, expected: list[int], names: list[str] | None) -> None:
    labels = tmp_path / "y.txt"
    labels.write_text(text)
    edges = _write_edges(tmp_path / "e.txt", [(0, 1)])
    ds = import_edgelist(edges, tmp_path / "o", labels=labels, labels_layout=layout)
    np.testing.assert_array_equal(ds.labels, expected)
    if names is not None:
        assert json.loads((ds.path / "label_names.json").read_text()) == names


def test_lines_layout_two_columns_is_an_error(tmp_path: Path) -> None:
    labels = tmp_path / "y.txt"
    labels.write_text("0 1\n1 0\n")
    with pytest.raises(DatasetError, match="too many columns|expected one"):
        node_data.read_raw_labels(labels, "lines")


@pytest.mark.parametrize(
    "writer, option, found",
    [
        (lambda p: p.write_text("0.5 1\n2 3\n"), "--features", "got text"),
        (lambda p: p.write_bytes(gzip.compress(b"1 2\n")), "--features", "got gzip data"),
        (
            lambda p: np.savez(p.with_suffix(".tmp.npz"), a=np.ones(2)) or p.with_suffix(".tmp.npz").rename(p),
            "--features",
            "got a zip archive",
        ),
        (lambda p: p.write_text("0\n1\n"), "--labels", "got text"),
    ],
)
def test_npy_name_with_other_content_says_what_it_got(tmp_path: Path, writer, option: str, found: str) -> None:
    path = tmp_path / "data.npy"
    writer(path)
    edges = _write_edges(tmp_path / "e.txt", [(0, 1)])
    kwargs = {"features" if option == "--features" else "labels": path}
    with pytest.raises(DatasetError, match=rf"data.npy: {option}: expected a .npy file \(numpy.save\), {found}"):
        import_edgelist(edges, tmp_path / "o", **kwargs)


def test_object_npy_and_npz_features(tmp_path: Path) -> None:
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    edges = _write_edges(tmp_path / "e.txt", [(0, 1)])
    with pytest.raises(DatasetError, match="expected a numeric .npy array, found an object"):
        import_edgelist(edges, tmp_path / "o", features=tmp_path / "obj.npy")
    np.savez(tmp_path / "f.npz", x=np.ones((2, 2)))
    with pytest.raises(DatasetError, match=r"f.npz: .*PATH:KEY takes one array of any .npz.*\['x'\] \(--features\)"):
        import_edgelist(edges, tmp_path / "o", features=tmp_path / "f.npz")
    ds = import_edgelist(edges, tmp_path / "o", features=f"{tmp_path / 'f.npz'}:x")  # PATH:KEY: one member
    assert np.array_equal(ds.features, np.ones((2, 2), np.float32))


def test_sniff() -> None:
    assert node_data.sniff(Path(__file__)) == ("text", "text")


# ---------------------------------------------------------------------------- synthetic data and provenance


def test_default_synthetic_features_carry_no_label_information(tmp_path: Path) -> None:
    edges = _write_edges(tmp_path / "e.txt", [(i, (i * 7 + 1) % 200) for i in range(200)])
    labels = tmp_path / "y.txt"
    labels.write_text("".join(f"{i % 2}\n" for i in range(200)))
    plain = import_edgelist(edges, tmp_path / "plain", labels=labels, synthetic_features=8)
    unlabelled = import_edgelist(edges, tmp_path / "u", synthetic_features=8)
    np.testing.assert_array_equal(plain.features, unlabelled.features)  # the labels changed nothing
    assert plain.meta["provenance"]["features"] == {"kind": "synthetic", "signal": 0.0, "seed": 0}
    assert describe(plain.meta) == ["features are synthetic random noise (no label information)"]
    signal = import_edgelist(edges, tmp_path / "s", labels=labels, synthetic_features=8, synthetic_feature_signal=2.0)
    assert not np.array_equal(signal.features, plain.features)
    assert "encode the labels" in describe(signal.meta)[0]


def test_synthetic_labels(tmp_path: Path) -> None:
    edges = _write_edges(tmp_path / "e.txt", [(i, (i + 1) % 1000) for i in range(1000)])
    ds = import_edgelist(edges, tmp_path / "o", synthetic_labels=4, synthetic_features=3, split=(0.5, 0.25, 0.25))
    assert ds.num_classes == 4 and set(np.unique(ds.labels).tolist()) == {0, 1, 2, 3}
    assert ds.meta["provenance"]["labels"] == {"kind": "synthetic", "num_classes": 4, "seed": 0}
    assert any("labels are synthetic" in note for note in describe(ds.meta))
    again = import_edgelist(edges, tmp_path / "p", synthetic_labels=4)
    np.testing.assert_array_equal(again.labels, ds.labels)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"synthetic_feature_signal": 1.0}, "expected synthetic_features= as well"),
        ({"synthetic_features": 4, "synthetic_feature_signal": 1.0}, "expected labels"),
        ({"synthetic_features": 4, "synthetic_feature_signal": -1.0}, "finite number >= 0"),
        ({"synthetic_labels": 1}, "at least 2 classes"),
        ({"labels_layout": "rows"}, "labels_layout= expected one of auto, pairs, lines"),
    ],
)
def test_option_errors(tmp_path: Path, kwargs: dict, match: str) -> None:
    edges = _write_edges(tmp_path / "e.txt", [(0, 1)])
    with pytest.raises(OptionError, match=match):
        import_edgelist(edges, tmp_path / "o", **kwargs)


def test_labels_and_synthetic_labels_conflict_on_the_cli(tmp_path: Path) -> None:
    edges = _write_edges(tmp_path / "e.txt", [(0, 1)])
    labels = tmp_path / "y.txt"
    labels.write_text("0\n1\n")
    result = run_cli(
        "prepare", "edgelist", str(edges), str(tmp_path / "o"), "--labels", str(labels), "--synthetic-labels", "3"
    )
    assert_user_error(result, "--labels and --synthetic-labels")


def test_provenance_of_older_datasets() -> None:
    old = {"feature_dim": 8, "num_classes": 3, "source": {"importer": "edgelist", "options": {"synthetic_features": 8}}}
    assert provenance_of(old)["features"]["signal"] == 1.0  # older imports drew features around centroids
    generated = {"feature_dim": 8, "num_classes": 3, "source": {"generator": "powerlaw"}}
    assert [n.split(" (")[0] for n in describe(generated)] == ["features are synthetic", "labels are synthetic"]
    assert describe({"feature_dim": 8, "num_classes": 3, "source": {"importer": "planetoid", "options": {}}}) == []


def test_edge_list_of_the_wrong_type_names_the_expected_format(tmp_path: Path) -> None:
    np.savez(tmp_path / "g.npz", indptr=np.array([0, 1]), indices=np.array([0]))
    with pytest.raises(DatasetError, match=r"expected a text edge list .*got a zip archive.*prepare csr-npz"):
        import_edgelist(tmp_path / "g.npz", tmp_path / "o")
    np.save(tmp_path / "e.npy", np.zeros((2, 2), np.int64))
    with pytest.raises(DatasetError, match=r"expected a text edge list .*got a .npy array"):
        import_edgelist(tmp_path / "e.npy", tmp_path / "o")


@settings(max_examples=60, deadline=None)
@given(
    edge_ids=st.lists(st.integers(-5, 40) | st.integers(10**12, 10**12 + 5), min_size=0, max_size=30),
    dense_rows=st.integers(0, 30),
    listed=st.lists(st.integers(0, 60), max_size=10),
)
def test_id_map_covers_edges_and_node_data(
    tmp_path_factory, edge_ids: list[int], dense_rows: int, listed: list[int]
) -> None:
    """The nodes are exactly the union of edge ids and covered ids, in ascending order; the count is right."""
    from graphtier.dataset.importers.common import edges

    directory = tmp_path_factory.mktemp("spill")
    ids = np.array(edge_ids + edge_ids[:1], dtype=np.int64)
    src, dst = ids[: ids.size // 2], ids[ids.size // 2 : 2 * (ids.size // 2)]
    coverage = node_data.NodeCoverage(dense_rows, np.array(listed, dtype=np.int64) if listed else None)
    with edges.EdgeSpill(directory) as spill:
        spill.append(src, dst)
        idmap = edges.build_id_map(spill, None, directory, coverage)
    in_edges = np.union1d(src, dst)
    expected = np.union1d(in_edges, np.union1d(np.arange(dense_rows), np.array(listed, dtype=np.int64)))
    assert idmap.num_nodes == expected.size
    original = idmap.original_ids()
    np.testing.assert_array_equal(np.arange(expected.size) if original is None else original, expected)
    assert idmap.nodes_only_in_node_data == expected.size - in_edges.size
    np.testing.assert_array_equal(idmap.lookup(expected), np.arange(expected.size))


def test_labels_column_and_unlabelled_value_for_npy_and_text(tmp_path: Path) -> None:
    """--labels-column takes one column of a 2-d .npy or text matrix; --unlabelled-value marks missing labels."""
    edges = tmp_path / "e.txt"
    edges.write_text("0 1\n1 2\n2 3\n3 0\n")
    table = np.array([[1, 2008, 7], [2, 0, 7], [1, 2009, 3], [2, 2008, 3]], dtype=np.int64)
    np.save(tmp_path / "t.npy", table)
    (tmp_path / "t.txt").write_text("\n".join(" ".join(str(v) for v in row) for row in table) + "\n")
    for name in ("t.npy", "t.txt"):
        ds = import_edgelist(edges, tmp_path / f"y-{name}", labels=tmp_path / name, labels_column=1, unlabelled_value=0)
        np.testing.assert_array_equal(ds.labels, [0, -1, 1, 0])
        assert json.loads((ds.path / "label_names.json").read_text()) == ["2008", "2009"]
        ds = import_edgelist(edges, tmp_path / f"g-{name}", labels=tmp_path / name, labels_column=0)
        np.testing.assert_array_equal(ds.labels, [0, 1, 0, 1])
        with pytest.raises(OptionError, match=r"--labels-column: expected a column in \[0, 3\) .*found 3"):
            import_edgelist(edges, tmp_path / "bad", labels=tmp_path / name, labels_column=3)
    with pytest.raises(DatasetError, match="pass --labels-column C"):
        import_edgelist(edges, tmp_path / "bad", labels=tmp_path / "t.npy")
    np.save(tmp_path / "plain.npy", np.array([1, 0, 2, 0]))
    ds = import_csr_npz(_npz(tmp_path), tmp_path / "c", labels=tmp_path / "plain.npy", unlabelled_value=0)
    np.testing.assert_array_equal(ds.labels, [1, -1, 2, -1])
    with pytest.raises(OptionError, match=r"unlabelled_value=: expected labels to apply it to \(labels=\)"):
        import_csr_npz(_npz(tmp_path), tmp_path / "bad", unlabelled_value=0)
    with pytest.raises(OptionError, match="--labels-column: expected a column number >= 0"):
        import_csr_npz(_npz(tmp_path), tmp_path / "bad", labels=tmp_path / "t.npy", labels_column=-2)
    assert not (tmp_path / "bad").exists()
    result = run_cli(
        "prepare",
        "edgelist",
        str(edges),
        str(tmp_path / "cli"),
        "--labels",
        str(tmp_path / "t.txt"),
        "--labels-column",
        "9",
    )
    assert_user_error(result, "--labels-column", "[0, 3)", "found 9")


def _npz(tmp_path: Path) -> Path:
    path = tmp_path / "g.npz"
    np.savez(path, indptr=np.array([0, 1, 2, 3, 4]), indices=np.array([1, 2, 3, 0]))
    return path


def test_category_code_columns() -> None:
    from graphtier.dataset.importers.common.features import category_code_columns

    rng = np.random.default_rng(0)
    table = np.stack(
        [
            rng.integers(0, 2, 100),
            rng.choice([2005, 2006, 2007], 100),
            rng.standard_normal(100),
            rng.integers(0, 3, 100),
        ],
        axis=1,
    )
    assert category_code_columns(table) == [{"column": 1, "distinct": 3, "max": 2007}]
    assert category_code_columns(rng.standard_normal((100, 5))) == []
    assert category_code_columns(rng.integers(0, 1000, (10, 100))) == []  # wide: not an attribute table
