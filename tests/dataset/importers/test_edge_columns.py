"""Edge features and an edge label (issue 38): ``prepare edgelist --edge-feature-columns/--label-column`` carry each
edge's input row through the CSC build (sorting, duplicate merge, --undirected), the edge split and ``reorder``;
link pairs get their edges' labels; bad columns and bad files are one-line errors; the real bitcoin-alpha CSV."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import csc_to_edges
from graphtier.dataset.edges.edge_data import link_labels
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.common._column_kernels import parse_float_columns, parse_float_columns_reference
from graphtier.dataset.importers.common.edges import build_csc
from graphtier.dataset.importers.common.kernels import PARSE_OK
from graphtier.dataset.importers.formats.edgelist import import_edgelist
from graphtier.errors import DatasetError, OptionError
from graphtier.train.persist.fingerprint import dataset_fingerprint
from tests.dataset.importers.helpers import assert_user_error, run_cli, shared


def stored_rows(dataset: Dataset) -> list[tuple[int, int, int | None, tuple[float, ...], float | None]]:
    """(original src, original dst, time, feature row, label) of every stored edge, in CSC order."""
    src, dst = csc_to_edges(dataset.indptr, dataset.indices)
    ids = dataset.extra["node_ids"] if "node_ids" in dataset.extra else np.arange(dataset.num_nodes)
    feats = np.asarray(dataset.edge_features) if dataset.edge_features is not None else None
    out = []
    for p in range(dataset.num_edges):
        out.append(
            (
                int(ids[src[p]]),
                int(ids[dst[p]]),
                None if dataset.edge_time is None else int(dataset.edge_time[p]),
                () if feats is None else tuple(feats[p].tolist()),
                None if dataset.edge_label is None else float(dataset.edge_label[p]),
            )
        )
    return out


def expected_line(
    lines: list[tuple[int, int, int, float, float]], s: int, d: int, undirected: bool, timed: bool
) -> list[int]:
    """The input lines that are the edge ``s -> d`` (or its reverse when ``undirected``), earliest first."""
    found = [k for k, (a, b, *_) in enumerate(lines) if (a, b) == (s, d) or (undirected and (a, b) == (d, s))]
    return sorted(found, key=lambda k: (lines[k][2], k) if timed else k)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 4)), min_size=1, max_size=40),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_every_stored_edge_has_its_input_row(
    tmp_path_factory: pytest.TempPathFactory,
    edges: list[tuple[int, int, int]],
    undirected: bool,
    keep_duplicates: bool,
    drop_self_loops: bool,
    timed: bool,
) -> None:
    tmp = tmp_path_factory.mktemp("rows")
    lines = [(s, d, t, 0.5 * k + 1.0, -2.0 * k) for k, (s, d, t) in enumerate(edges)]  # every row distinct
    path = tmp / "e.txt"
    path.write_text("".join(f"{s} {d} {t} {f} {lab}\n" for s, d, t, f, lab in lines))
    dataset = import_edgelist(
        path,
        tmp / "d",
        num_nodes=7,
        undirected=undirected,
        keep_duplicates=keep_duplicates,
        drop_self_loops=drop_self_loops,
        time_column=2 if timed else None,
        edge_feature_columns="3,2",
        label_column=4,
    )
    copies: dict[tuple[int, int], list[int]] = {}
    for s, d, t, feats, lab in stored_rows(dataset):
        candidates = expected_line(lines, s, d, undirected, timed)
        k = round((feats[0] - 1.0) / 0.5)  # the input line the stored row came from
        assert k in candidates and feats == (lines[k][3], float(lines[k][2])) and lab == lines[k][4]
        if timed:
            assert t == lines[k][2]
        copies.setdefault((s, d), []).append(k)
    for (s, d), got in copies.items():
        candidates = expected_line(lines, s, d, undirected, timed)
        assert len(set(got)) == len(got)  # no input row stored twice for one edge
        if not keep_duplicates:
            assert got == candidates[:1]  # a merged repeat keeps its first (timed: earliest) line's row


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.booleans(), st.booleans(), st.booleans())
def test_build_csc_rows_match_the_untracked_build(
    seed: int, undirected: bool, keep_duplicates: bool, drop_self_loops: bool, timed: bool
) -> None:
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 8)), int(rng.integers(0, 30))
    src, dst, time = rng.integers(0, n, m), rng.integers(0, n, m), rng.integers(0, 5, m)

    def chunks():  # type: ignore[no-untyped-def]
        for s in range(0, m, 7):
            yield (src[s : s + 7], dst[s : s + 7]) + ((time[s : s + 7],) if timed else ())

    flags = {"undirected": undirected, "keep_duplicates": keep_duplicates, "drop_self_loops": drop_self_loops}
    with_rows = build_csc(chunks, n, timed=timed, rows=True, **flags)
    plain = build_csc(chunks, n, timed=timed, **flags)
    np.testing.assert_array_equal(with_rows.indptr, plain.indptr)
    np.testing.assert_array_equal(with_rows.indices, plain.indices)
    if timed:
        np.testing.assert_array_equal(with_rows.edge_time, plain.edge_time)
        np.testing.assert_array_equal(with_rows.edge_time, time[with_rows.edge_row])
    s, d = csc_to_edges(with_rows.indptr, with_rows.indices)
    rows = with_rows.edge_row
    forward = (src[rows] == s) & (dst[rows] == d)
    assert np.all(forward | (undirected & (src[rows] == d) & (dst[rows] == s)))


EDGES = "src,dst,w,time,rating\n10,20,0.5,300,1\n20,10,1.5,100,-2\n10,20,2,50,3\n30,30,1,7,4\n20,30,-1,200,5\n"


def test_header_names_and_meta(tmp_path: Path) -> None:
    src = tmp_path / "e.csv"
    src.write_text(EDGES)
    dataset = import_edgelist(
        src, tmp_path / "d", edge_feature_columns=["w", "rating"], label_column="rating", time_column="time"
    )
    assert dataset.meta["edge_features"] == {"dim": 2, "dtype": "float32", "columns": ["w", "rating"]}
    assert dataset.meta["edge_label"] == {"column": "rating"}
    assert dataset.edge_features.dtype == np.float32 and dataset.edge_label.dtype == np.float32
    got = {(s, d): (feats, lab) for s, d, _, feats, lab in stored_rows(dataset)}
    assert got == {  # (10, 20) is in the file twice: the copy at time 50 is kept (the earliest), with its row
        (10, 20): ((2.0, 3.0), 3.0),
        (20, 10): ((1.5, -2.0), -2.0),
        (30, 30): ((1.0, 4.0), 4.0),
        (20, 30): ((-1.0, 5.0), 5.0),
    }
    untimed = import_edgelist(src, tmp_path / "u", edge_feature_columns="2")
    assert untimed.meta["edge_features"]["columns"] == ["w"]  # an index names its header column
    first = {(s, d): feats for s, d, _, feats, _ in stored_rows(untimed)}
    assert first[(10, 20)] == (0.5,)  # without times the first line of a repeat is kept


def test_no_header_names_columns_by_index(tmp_path: Path) -> None:
    src = tmp_path / "e.txt"
    src.write_text("a b 1.5 x\nb c 2.5 y\n")  # string ids; a non-numeric column the parser skips
    dataset = import_edgelist(src, tmp_path / "d", edge_feature_columns="2", header="no")
    assert dataset.meta["edge_features"]["columns"] == ["column 2"]
    assert sorted(np.asarray(dataset.edge_features)[:, 0].tolist()) == [1.5, 2.5]
    assert dataset.edge_label is None and "edge_label" not in dataset.meta


@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("split_by", ["random", "time"])
def test_edge_split_carries_rows_and_labels_its_pairs(tmp_path: Path, undirected: bool, split_by: str) -> None:
    rng = np.random.default_rng(5)
    m = 500
    src, dst, times = rng.integers(0, 40, m), rng.integers(0, 40, m), rng.integers(0, 1000, m)
    path = tmp_path / "e.txt"
    path.write_text("".join(f"{s} {d} {t} {k} {k % 7}\n" for k, (s, d, t) in enumerate(zip(src, dst, times))))
    extra = {"undirected": True} if undirected else {}
    common = {"time_column": 2, "edge_feature_columns": "3", "label_column": 4, **extra}
    full = import_edgelist(path, tmp_path / "full", **common)
    split = import_edgelist(path, tmp_path / "s", edge_split="0.7,0.15,0.15", split_by=split_by, **common)
    before = {(s, d, t, f) for s, d, t, f, _ in stored_rows(full)}
    after = stored_rows(split)
    assert split.edge_features.shape == (split.num_edges, 1) and split.edge_label.shape == (split.num_edges,)
    assert all((s, d, t, f) in before for s, d, t, f, _ in after)
    assert all(lab == int(f[0]) % 7 for *_, f, lab in after)  # each row still whole
    assert split.meta["link"]["label"] == {"column": "column 4"}
    lines = list(zip(src.tolist(), dst.tolist(), times.tolist()))
    for name in ("train", "valid", "test"):
        pairs = np.asarray(split.link.pairs(name).positives)
        labels = link_labels(split, name)
        assert labels is not None and labels.dtype == np.float32 and labels.shape == (pairs.shape[0],)
        pair_times = split.link.pairs(name).positive_times
        for i, ((a, b), lab) in enumerate(zip(pairs.tolist(), labels.tolist())):
            ks = expected_line([(*x, 0.0, 0.0) for x in lines], a, b, undirected, True)  # type: ignore[misc]
            if pair_times is not None:
                ks = [k for k in ks if lines[k][2] == int(pair_times[i])]
            assert lab == ks[0] % 7
    as_json = json.loads(run_cli("info", str(tmp_path / "s"), "--json").stdout)
    assert as_json["edge_split"]["label"] == {"column": "column 4"}
    assert as_json["arrays"]["link_valid_label"]["dtype"] == "float32"


def test_edge_split_files_label_their_pairs(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text("0 1 5\n1 2 6\n2 3 7\n3 0 8\n0 2 9\n1 3 10\n")
    (tmp_path / "valid.txt").write_text("1 2\n")
    (tmp_path / "test.txt").write_text("0 2\n3 0\n")
    dataset = import_edgelist(
        path,
        tmp_path / "d",
        label_column=2,
        edge_feature_columns="2",
        edge_split_files={"valid": tmp_path / "valid.txt", "test": tmp_path / "test.txt"},
    )
    assert {(s, d): lab for s, d, _, _, lab in stored_rows(dataset)} == {(0, 1): 5, (2, 3): 7, (1, 3): 10}
    assert link_labels(dataset, "valid").tolist() == [6.0] and link_labels(dataset, "test").tolist() == [9.0, 8.0]
    assert dataset.meta["link"]["label"] == {"column": "column 2"}


def test_reorder_moves_rows_with_their_edges(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    src, dst, times = rng.integers(0, 30, 300), rng.integers(0, 30, 300), rng.integers(0, 50, 300)
    path = tmp_path / "e.txt"
    path.write_text("".join(f"{s} {d} {t} {k}\n" for k, (s, d, t) in enumerate(zip(src, dst, times))))
    import_edgelist(
        path, tmp_path / "d", time_column=2, edge_feature_columns="3", label_column=3, keep_duplicates=True,
        edge_split="0.8,0.1,0.1",
    )  # fmt: skip
    result = run_cli("reorder", str(tmp_path / "d"), str(tmp_path / "r"), "--score", "degree")
    assert result.returncode == 0, result.stderr
    old, new = Dataset.open(tmp_path / "d"), Dataset.open(tmp_path / "r")
    perm = np.asarray(new.extra["perm"])
    assert not np.array_equal(perm, np.arange(new.num_nodes))
    moved = sorted((int(perm[s]), int(perm[d]), t, f, lab) for s, d, t, f, lab in stored_rows(new))
    assert moved == sorted(stored_rows(old))
    for name in ("train", "valid", "test"):
        np.testing.assert_array_equal(link_labels(new, name), link_labels(old, name))


def test_cli_info_and_fingerprint(tmp_path: Path) -> None:
    src = tmp_path / "e.csv"
    src.write_text(EDGES)
    args = ["prepare", "edgelist", str(src), str(tmp_path / "d"), "--edge-feature-columns", "w,rating"]
    result = run_cli(*args, "--label-column", "rating")
    assert result.returncode == 0, result.stderr
    info = run_cli("info", str(tmp_path / "d")).stdout
    assert "edge features" in info and "w, rating" in info and "edge label" in info
    as_json = json.loads(run_cli("info", str(tmp_path / "d"), "--json").stdout)
    assert as_json["edge_features"] == {"dim": 2, "dtype": "float32", "columns": ["w", "rating"]}
    assert as_json["edge_label"] == {"column": "rating"}
    before = dataset_fingerprint(Dataset.open(tmp_path / "d"))["hash"]
    changed = tmp_path / "changed"
    shutil.copytree(tmp_path / "d", changed)
    label = np.load(changed / "edge_label.npy")
    np.save(changed / "edge_label.npy", label + 1)
    assert dataset_fingerprint(Dataset.open(changed))["hash"] != before


@pytest.mark.parametrize(
    ("text", "flags", "fragments"),
    [
        ("a,b,w\n0,1,5\n", ["--edge-feature-columns", "weight"], ["--edge-feature-columns", "a, b, w", "'weight'"]),
        ("0 1 5\n", ["--edge-feature-columns", "2,3"], ["--edge-feature-columns", "[2, 3)", "found 3"]),
        ("0 1 5\n", ["--edge-feature-columns", "1"], ["--edge-feature-columns", "index 2 or more"]),
        ("0 1 5\n", ["--edge-feature-columns", "2,2"], ["--edge-feature-columns", "distinct"]),
        ("0 1 5\n", ["--edge-feature-columns", "2,"], ["--edge-feature-columns", "separated by commas"]),
        ("0 1 5\n1 2 abc\n", ["--edge-feature-columns", "2"], ["e.txt: line 2: column 2", "not a number"]),
        ("0 1 5\n1 2 nan\n", ["--label-column", "2"], ["e.txt: line 2: column 2", "non-finite"]),
        ("0 1 5 1\n1 2 inf 1\n", ["--edge-feature-columns", "3,2"], ["line 2: column 2", "non-finite"]),
        ("0 1 5\n1 2\n", ["--label-column", "2"], ["line 2: column 2", "too few columns"]),
        ("0 1 5\n", ["--label-column", "rating"], ["--label-column", "not a column of its first line"]),
    ],
)
def test_bad_edge_columns_are_one_line(tmp_path: Path, text: str, flags: list[str], fragments: list[str]) -> None:
    src = tmp_path / "e.txt"
    src.write_text(text)
    result = run_cli("prepare", "edgelist", str(src), str(tmp_path / "out"), *flags)
    assert_user_error(result, *fragments)
    assert not (tmp_path / "out").exists()


def test_non_finite_replace_counts_the_values(tmp_path: Path) -> None:
    src = tmp_path / "e.txt"
    src.write_text("0 1 nan\n1 2 3\n")
    dataset = import_edgelist(src, tmp_path / "d", edge_feature_columns="2", non_finite="replace")
    assert sorted(np.asarray(dataset.edge_features)[:, 0].tolist()) == [0.0, 3.0]
    assert dataset.meta["source"]["non_finite_replaced"] == 1


def test_python_errors_name_the_argument(tmp_path: Path) -> None:
    src = tmp_path / "e.txt"
    src.write_text("0 1 5\n")
    with pytest.raises(OptionError, match=r"^edge_feature_columns=: expected a column of .* found 1"):
        import_edgelist(src, tmp_path / "o", edge_feature_columns=[1])
    with pytest.raises(OptionError, match=r"^label_column=: expected a column index in \[2, 3\)"):
        import_edgelist(src, tmp_path / "o", label_column=5)


def _dataset_with_columns(tmp_path: Path) -> Path:
    src = tmp_path / "e.txt"
    src.write_text("0 1 5 1\n1 2 6 2\n2 0 7 3\n")
    import_edgelist(src, tmp_path / "d", edge_feature_columns="2,3", label_column=3)
    return tmp_path / "d"


@pytest.mark.parametrize(
    ("damage", "fragments"),
    [
        (lambda d: (d / "edge_feat.npy").unlink(), ["edge_feat.npy: file missing", "'edge_features'"]),
        (lambda d: (d / "edge_label.npy").unlink(), ["edge_label.npy: file missing", "'edge_label'"]),
        (lambda d: np.save(d / "edge_feat.npy", np.zeros((2, 2), np.float32)), ["edge_feat.npy", "shape (3, 2)"]),
        (lambda d: np.save(d / "edge_feat.npy", np.zeros((3, 2), np.float64)), ["edge_feat.npy", "dtype float32"]),
        (lambda d: np.save(d / "edge_label.npy", np.array([1, np.nan, 2], np.float32)), ["edge_label.npy", "row 1"]),
        (lambda d: np.save(d / "edge_label.npy", np.zeros(4, np.float32)), ["edge_label.npy", "shape (3,)"]),
        (lambda d: _drop_meta(d, "edge_features"), ["meta.json: field 'edge_features' missing", "edge_feat.npy"]),
        (lambda d: _drop_meta(d, "edge_label"), ["meta.json: field 'edge_label' missing"]),
    ],
)
def test_damaged_edge_files_are_one_line(tmp_path: Path, damage, fragments: list[str]) -> None:  # type: ignore[no-untyped-def]
    root = _dataset_with_columns(tmp_path)
    damage(root)
    with pytest.raises(DatasetError) as caught:
        Dataset.open(root)
    assert all(f in str(caught.value) for f in fragments), str(caught.value)
    assert_user_error(run_cli("info", str(root)), *fragments)


def _drop_meta(root: Path, key: str) -> None:
    meta = json.loads((root / "meta.json").read_text())
    del meta[key]
    (root / "meta.json").write_text(json.dumps(meta))


def test_bitcoin_alpha_rating_as_label_and_feature_with_a_time_split(tmp_path: Path) -> None:
    csv = shared("bitcoin-alpha/soc-sign-bitcoinalpha.csv")
    result = run_cli(
        "prepare", "edgelist", str(csv), str(tmp_path / "btc"), "--time-column", "timestamp", "--label-column",
        "weight", "--edge-feature-columns", "weight", "--edge-split", "0.70,0.15,0.15", "--split-by", "time",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    dataset = Dataset.open(tmp_path / "btc")
    rows = np.loadtxt(csv, delimiter=",", skiprows=1, dtype=np.int64)
    rating = {(int(s), int(d)): (int(w), int(t)) for s, d, w, t in rows}
    assert len(rating) == rows.shape[0] == dataset.num_edges  # no repeats: one stored edge per line
    for s, d, t, feats, lab in stored_rows(dataset):
        assert rating[(s, d)] == (lab, t) and feats == (lab,)
    ids = dataset.extra["node_ids"]
    total = 0
    for name in ("train", "valid", "test"):
        pairs, labels = np.asarray(dataset.link.pairs(name).positives), link_labels(dataset, name)
        assert [rating[(int(ids[a]), int(ids[b]))][0] for a, b in pairs] == labels.tolist()
        total += pairs.shape[0]
    assert total == rows.shape[0]


FLOAT_TOKENS = ["0", "7", "-3.5", "+12", "1.5e3", ".5", "abc", "nan", "inf", "-Infinity", "", "x1", "1e", "2."]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(FLOAT_TOKENS), min_size=0, max_size=6), max_size=6),
    st.sampled_from([", ", " ", "\t", ","]),
    st.lists(st.integers(2, 4), min_size=1, max_size=3, unique=True).map(sorted),
    st.booleans(),
)
def test_parse_float_columns_matches_reference(
    rows: list[list[str]], sep: str, columns: list[int], finite_only: bool
) -> None:
    text = "\n".join(sep.join(r) for r in rows).encode()
    buf = np.frombuffer(text, dtype=np.uint8)
    out = np.empty((len(rows) + 1, len(columns)), dtype=np.float64)
    bad = np.zeros(1, np.int64)
    got_rows, code, offset = parse_float_columns(buf, np.array(columns, np.int64), finite_only, out, bad)
    want, want_code, want_offset, want_column = parse_float_columns_reference(text, columns, finite_only)
    assert (code, offset) == (want_code, want_offset)
    if code != PARSE_OK:
        assert int(bad[0]) == want_column
    np.testing.assert_array_equal(out[:got_rows], want)


def test_a_graph_left_without_edges_keeps_empty_edge_files(tmp_path: Path) -> None:
    src = tmp_path / "e.txt"
    src.write_text("0 0 1.5 2\n")
    dataset = import_edgelist(src, tmp_path / "d", edge_feature_columns="2", label_column=3, drop_self_loops=True)
    assert dataset.num_edges == 0 and dataset.edge_features.shape == (0, 1) and dataset.edge_label.shape == (0,)
