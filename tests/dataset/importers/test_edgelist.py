"""``graphtier prepare edgelist``: real data, the text variants, id remapping, labels/features, errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset
from graphtier.dataset.csc import edges_to_csc_reference
from graphtier.dataset.importers import import_edgelist
from graphtier.errors import DatasetError, OptionError

from .helpers import assert_user_error, run_cli, run_cli_process, shared


def test_soc_slashdot(tmp_path: Path) -> None:
    source = shared("soc-slashdot0902/soc-Slashdot0902.txt.gz")
    ds = import_edgelist(source, tmp_path / "slashdot")
    assert (ds.num_nodes, ds.num_edges) == (82_168, 948_464)
    assert ds.directed and ds.feature_dim == 0 and ds.num_classes == 0
    assert "node_ids" not in ds.extra  # ids are already 0..82167
    with gzip.open(source, "rt") as f:
        edges = np.loadtxt(f, dtype=np.int64, comments="#")
    ref_indptr, ref_indices = edges_to_csc_reference(edges[:, 0], edges[:, 1], 82_168)
    np.testing.assert_array_equal(ds.indptr, ref_indptr)
    np.testing.assert_array_equal(ds.indices, ref_indices)
    assert ds.meta["source"]["importer"] == "edgelist"
    assert ds.meta["source"]["inputs"] == [str(source)]


def test_pubmed_with_labels_split_and_synthetic_features(tmp_path: Path) -> None:
    root = shared("pubmed-topology")
    ds = import_edgelist(
        root / "edges.csv",
        tmp_path / "pubmed",
        labels=root / "target.csv",
        split=(0.6, 0.2, 0.2),
        seed=1,
        synthetic_features=8,
    )
    assert (ds.num_nodes, ds.num_edges, ds.num_classes) == (19_717, 88_648, 3)
    np.testing.assert_array_equal(np.bincount(ds.labels), [4_103, 7_739, 7_875])
    assert ds.features.shape == (19_717, 8)
    sizes = [ds.split(s).size for s in ("train", "valid", "test")]
    assert sum(sizes) == 19_717 and sizes[0] == int(0.6 * 19_717)


def _edges_text(edges: list[tuple[object, object]], sep: str = " ") -> str:
    return "".join(f"{a}{sep}{b}\n" for a, b in edges)


@pytest.mark.parametrize("sep", [" ", "\t", ",", " , "])
@pytest.mark.parametrize("compress", [False, True])
def test_separators_comments_header_and_gzip(tmp_path: Path, sep: str, compress: bool) -> None:
    text = (
        "% konect style\nsource" + sep + "target\n# a comment\n\n" + _edges_text([(0, 1), (1, 2), (2, 0), (2, 2)], sep)
    )
    path = tmp_path / ("e.txt.gz" if compress else "e.txt")
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    ds = import_edgelist(path, tmp_path / "out")
    assert (ds.num_nodes, ds.num_edges) == (3, 4)
    np.testing.assert_array_equal(ds.indptr, [0, 1, 2, 4])
    np.testing.assert_array_equal(ds.indices, [2, 0, 1, 2])


def test_undirected_dedup_self_loops(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text(_edges_text([(0, 1), (0, 1), (1, 2), (2, 2)]))
    ds = import_edgelist(path, tmp_path / "a", undirected=True, drop_self_loops=True)
    assert not ds.directed and ds.num_edges == 4
    np.testing.assert_array_equal(ds.indices, [1, 0, 2, 1])
    assert ds.meta["source"]["edges"] == {
        "input_edges": 4,
        "self_loops_dropped": 1,
        "duplicates_dropped": 1,
        "reverse_present": 0,
        "reverses_added": 2,
    }
    ds = import_edgelist(path, tmp_path / "b", undirected=True)
    assert ds.num_edges == 5  # 3 distinct edges + 2 reverses (a self-loop is its own reverse)
    ds = import_edgelist(path, tmp_path / "c", undirected=True, keep_duplicates=True)
    assert ds.num_edges == 7  # 0 -> 1 twice, so 1 -> 0 twice
    assert ds.meta["source"]["edges"]["duplicates_dropped"] == 0


def test_undirected_adds_only_missing_reverses(tmp_path: Path) -> None:
    """A symmetric edge file imported --undirected is not doubled (issue 23: neighbours [183 183 343 343])."""
    one_way = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2)]
    both_ways = one_way + [(v, u) for u, v in one_way]
    paths = []
    for name, pairs in (("one.txt", one_way), ("both.txt", both_ways)):
        paths.append(tmp_path / name)
        paths[-1].write_text(_edges_text(pairs))
    one = import_edgelist(paths[0], tmp_path / "one", undirected=True)
    both = import_edgelist(paths[1], tmp_path / "both", undirected=True)
    np.testing.assert_array_equal(one.indptr, both.indptr)
    np.testing.assert_array_equal(one.indices, both.indices)
    assert both.num_edges == 10 and np.array_equal(both.indices[both.indptr[0] : both.indptr[1]], [1, 2, 3])
    assert one.meta["source"]["edges"]["reverse_present"] == 0
    assert one.meta["source"]["edges"]["reverses_added"] == 5
    assert both.meta["source"]["edges"]["reverse_present"] == 10
    assert both.meta["source"]["edges"]["reverses_added"] == 0
    assert one.meta["symmetric"] and both.meta["symmetric"]
    directed = import_edgelist(paths[1], tmp_path / "directed")
    assert directed.directed and directed.meta["symmetric"]
    np.testing.assert_array_equal(directed.indices, both.indices)
    assert not import_edgelist(paths[0], tmp_path / "d2").meta["symmetric"]


def test_duplicates_are_dropped_and_counted_unless_kept(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text(_edges_text([(0, 1), (0, 1), (0, 1), (1, 0)]))
    ds = import_edgelist(path, tmp_path / "a")
    assert ds.num_edges == 2 and ds.meta["source"]["edges"]["duplicates_dropped"] == 2
    assert ds.meta["symmetric"] and ds.meta["source"]["edges"]["reverse_present"] == 2
    kept = import_edgelist(path, tmp_path / "b", keep_duplicates=True)
    assert kept.num_edges == 4 and kept.meta["source"]["edges"]["duplicates_dropped"] == 0
    assert not kept.meta["symmetric"]  # 0 -> 1 three times, 1 -> 0 once


def test_real_symmetric_edge_file_is_not_doubled(tmp_path: Path) -> None:
    """PubMed's edges.csv lists every pair both ways (88,648 rows = 44,324 pairs): --undirected adds nothing."""
    source = shared("pubmed-topology/edges.csv")
    undirected = import_edgelist(source, tmp_path / "u", undirected=True)
    directed = import_edgelist(source, tmp_path / "d")
    assert undirected.num_edges == directed.num_edges == 88_648
    np.testing.assert_array_equal(undirected.indices, directed.indices)
    assert undirected.meta["source"]["edges"] == {
        "input_edges": 88_648,
        "self_loops_dropped": 0,
        "duplicates_dropped": 0,
        "reverse_present": 88_648,
        "reverses_added": 0,
    }
    assert directed.meta["symmetric"] and not directed.meta["source"]["options"]["undirected"]


def test_real_directed_graph_gets_its_missing_reverses(tmp_path: Path) -> None:
    """Slashdot (directed, some pairs both ways): --undirected gives the pattern of A + A^T, counted."""
    source = shared("soc-slashdot0902/soc-Slashdot0902.txt.gz")
    ds = import_edgelist(source, tmp_path / "u", undirected=True)
    with gzip.open(source, "rt") as f:
        pairs = np.loadtxt(f, dtype=np.int64, comments="#")
    both = np.unique(np.concatenate([pairs, pairs[:, ::-1]]), axis=0)
    ref_indptr, ref_indices = edges_to_csc_reference(both[:, 0], both[:, 1], 82_168)
    np.testing.assert_array_equal(ds.indptr, ref_indptr)
    np.testing.assert_array_equal(ds.indices, ref_indices)
    counts = ds.meta["source"]["edges"]
    loops = int(np.count_nonzero(pairs[:, 0] == pairs[:, 1]))
    assert counts["reverses_added"] == ds.num_edges - 948_464
    assert counts["reverse_present"] + counts["reverses_added"] + loops == 948_464


def test_extra_columns_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "w.tsv"
    path.write_text("0\t1\t0.5\t1234\n1\t0\t2.0\t99\n")
    assert import_edgelist(path, tmp_path / "o").num_edges == 2


def test_sparse_integer_ids_are_remapped_and_saved(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text(_edges_text([(100, 7), (7, -5), (10**15, 100)]))
    labels = tmp_path / "labels.csv"
    labels.write_text("id,label\n100,2\n-5,0\n")
    ds = import_edgelist(path, tmp_path / "o", labels=labels)
    np.testing.assert_array_equal(ds.extra["node_ids"], [-5, 7, 100, 10**15])
    assert ds.num_nodes == 4 and ds.num_classes == 3
    np.testing.assert_array_equal(ds.labels, [0, -1, 2, -1])
    # edge 100 -> 7 is new 2 -> 1, 7 -> -5 is 1 -> 0, 10^15 -> 100 is 3 -> 2
    np.testing.assert_array_equal(ds.indptr, [0, 1, 2, 3, 3])
    np.testing.assert_array_equal(ds.indices, [1, 2, 3])


def test_string_ids_are_remapped_in_order_of_appearance(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text("alice,bob\nbob,carol\ncarol,alice\n")
    labels = tmp_path / "l.csv"
    labels.write_text("alice,red\ncarol,blue\n")
    ds = import_edgelist(path, tmp_path / "o", labels=labels, synthetic_features=4, split=(0.5, 0.5, 0.0))
    assert json.loads((ds.path / "node_ids.json").read_text()) == ["alice", "bob", "carol"]
    assert json.loads((ds.path / "label_names.json").read_text()) == ["blue", "red"]
    np.testing.assert_array_equal(ds.labels, [1, -1, 0])
    assert ds.num_edges == 3 and ds.feature_dim == 4
    assert sorted(np.concatenate([ds.train_idx, ds.valid_idx]).tolist()) == [0, 2]


def test_features_file_rows_follow_original_ids(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text(_edges_text([(3, 1), (1, 4)]))
    feats = np.arange(10, dtype=np.float64).reshape(5, 2)
    np.save(tmp_path / "f.npy", feats)
    ds = import_edgelist(path, tmp_path / "o", features=tmp_path / "f.npy")
    assert ds.features.dtype == np.float32
    # every feature row is a node: ids 0 and 2 have no edge but are kept (and counted)
    np.testing.assert_array_equal(ds.features, feats.astype(np.float32))
    assert ds.num_nodes == 5 and ds.meta["nodes_only_in_node_data"] == 2
    assert np.diff(ds.indptr)[[0, 2]].tolist() == [0, 0]
    contiguous = tmp_path / "c.txt"
    contiguous.write_text(_edges_text([(0, 1), (1, 2)]))
    np.save(tmp_path / "g.npy", np.ones((3, 2), np.float16))
    ds = import_edgelist(contiguous, tmp_path / "p", features=tmp_path / "g.npy")
    assert ds.features.dtype == np.float16 and ds.meta["feature_dtype"] == "float16"


def test_num_nodes_keeps_isolated_nodes(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text(_edges_text([(0, 3)]))
    ds = import_edgelist(path, tmp_path / "o", num_nodes=6)
    assert ds.num_nodes == 6 and "node_ids" not in ds.extra


def test_small_chunks_give_the_same_dataset(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    edges = rng.integers(0, 300, size=(3000, 2)) * 7  # sparse ids: remapped
    path = tmp_path / "e.txt"
    path.write_text(_edges_text([tuple(e) for e in edges.tolist()], "\t"))
    big = import_edgelist(path, tmp_path / "big")
    small = import_edgelist(path, tmp_path / "small", chunk_bytes=100)
    for a, b in (
        (big.indptr, small.indptr),
        (big.indices, small.indices),
        (big.extra["node_ids"], small.extra["node_ids"]),
    ):
        np.testing.assert_array_equal(a, b)


def test_cli_error_in_a_real_process(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text("0 1\n2\n")
    assert_user_error(run_cli_process("prepare", "edgelist", str(path), str(tmp_path / "o")), "line 2")


def test_existing_output_needs_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text("0 1\n")
    import_edgelist(path, tmp_path / "o")
    with pytest.raises(DatasetError, match="already exists"):
        import_edgelist(path, tmp_path / "o")
    assert import_edgelist(path, tmp_path / "o", overwrite=True, name="x").name == "x"


def test_api_errors_leave_no_output(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text("0 1\n1 2\n")
    np.save(tmp_path / "f.npy", np.zeros((3, 2), np.float32))
    with pytest.raises(OptionError):
        import_edgelist(path, tmp_path / "o", features=tmp_path / "f.npy", synthetic_features=3)
    bad_labels = tmp_path / "l.csv"
    bad_labels.write_text("0,1\n9,0\n")
    with pytest.raises(DatasetError, match="unknown id"):  # --num-nodes fixes the node set
        import_edgelist(path, tmp_path / "o", labels=bad_labels, num_nodes=3)
    assert not (tmp_path / "o").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".o")] == []


# ---------------------------------------------------------------------------- CLI


def test_cli_imports_and_reports(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text("0 1\n1 2\n2 0\n")
    result = run_cli_process(
        "prepare", "edgelist", str(path), str(tmp_path / "o"), "--undirected", "--split", "0.6,0.2,0.2"
    )
    assert result.returncode == 0, result.stderr
    assert "3 nodes, 6 edges" in result.stdout
    ds = Dataset.open(tmp_path / "o")
    assert ds.meta["source"]["options"]["split"] == [0.6, 0.2, 0.2]


@pytest.fixture
def bad_inputs(tmp_path: Path) -> dict[str, Path]:
    files = {}
    good = tmp_path / "good.txt"
    good.write_text("0 1\n1 2\n2 3\n")
    files["good"] = good
    one_column = tmp_path / "one.txt"
    one_column.write_text("0 1\n7\n2 3\n")
    files["one"] = one_column
    data = gzip.compress(b"".join(b"%d %d\n" % (i, i + 1) for i in range(50000)))
    truncated = tmp_path / "trunc.txt.gz"
    truncated.write_bytes(data[: len(data) // 2])
    files["trunc"] = truncated
    np.save(tmp_path / "feat3.npy", np.zeros((3, 2), np.float32))
    files["feat3"] = tmp_path / "feat3.npy"
    np.save(tmp_path / "feat6.npy", np.zeros((6, 2), np.float32))
    files["feat6"] = tmp_path / "feat6.npy"
    labels = tmp_path / "labels.csv"
    labels.write_text("node,label\n0,1\n42,0\n")
    files["labels"] = labels
    sparse = tmp_path / "sparse.txt"
    sparse.write_text("0 10\n10 20\n")
    files["sparse"] = sparse
    text_npy = tmp_path / "text.npy"
    text_npy.write_text("0.5 1.0\n1.5 2.0\n")
    files["text_npy"] = text_npy
    return files


@pytest.mark.parametrize(
    "case, extra, fragments",
    [
        ("missing", [], ["nope.txt: edge list not found"]),
        ("trunc", [], ["trunc.txt.gz", "truncated or damaged gzip"]),
        ("one", [], ["one.txt: line 2", "too few columns", "'7'"]),
        ("sparse", ["--features", "{feat3}"], ["feat3.npy", "node id 20 out of range for --features rows"]),
        (
            "good",
            ["--features", "{feat6}", "--num-nodes", "4"],
            ["feat6.npy", "expected 4 --features rows (one per node), found 6"],
        ),
        ("good", ["--labels", "{labels}", "--num-nodes", "4"], ["labels.csv", "unknown id", "42"]),
        ("good", ["--features", "{text_npy}"], ["text.npy", "expected a .npy file (numpy.save), got text"]),
        ("good", ["--synthetic-feature-signal", "1"], ["--synthetic-feature-signal", "--synthetic-features"]),
        ("good", ["--split", "0.9,0.9,0.1"], ["--split"]),
        ("good", ["--labels", "{missing_labels}"], ["--labels file not found"]),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(
    tmp_path: Path, bad_inputs: dict[str, Path], case: str, extra: list[str], fragments: list[str]
) -> None:
    source = bad_inputs.get(case, tmp_path / "nope.txt")
    names = {k: str(v) for k, v in bad_inputs.items()} | {"missing_labels": str(tmp_path / "nl.csv")}
    args = [a.format(**names) for a in extra]
    output = tmp_path / "out"
    result = run_cli("prepare", "edgelist", str(source), str(output), *args)
    assert_user_error(result, *fragments)
    assert not output.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.tmp")]
