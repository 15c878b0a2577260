"""``prepare edgelist --time-column`` (issue 38): edge times parsed, carried through the spill, the CSC build, the
duplicate merge, --undirected and --edge-split; bad time columns are one-line errors; the real bitcoin-alpha CSV."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import csc_to_edges
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.common._column_kernels import parse_int_columns, parse_int_columns_reference
from graphtier.dataset.importers.formats.edgelist import import_edgelist
from graphtier.errors import OptionError
from tests.dataset.importers.helpers import assert_user_error, run_cli, shared

TOKENS = ["0", "7", "-3", "+12", "1.5", "abc", "nan", "inf", "", "99999999999999999999", "1e3"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(TOKENS), min_size=0, max_size=6), max_size=6),
    st.sampled_from([", ", " ", "\t", ","]),
    st.integers(2, 4),
)
def test_parse_int_columns_matches_reference(rows: list[list[str]], sep: str, time_column: int) -> None:
    text = "\n".join(sep.join(r) for r in rows).encode()
    buf = np.frombuffer(text, dtype=np.uint8)
    out = np.empty((len(rows) + 1, 3), dtype=np.int64)
    got_rows, code, offset = parse_int_columns(buf, np.array([0, 1, time_column], np.int64), True, out)
    want, want_code, want_offset = parse_int_columns_reference(text, [0, 1, time_column])
    assert (code, offset) == (want_code, want_offset)
    np.testing.assert_array_equal(out[:got_rows], want)


def timed_edges(dataset: Dataset, ids: np.ndarray | None = None) -> dict[tuple[int, int], list[int]]:
    """(original src, original dst) -> the sorted times the dataset stores for that edge."""
    src, dst = csc_to_edges(dataset.indptr, dataset.indices)
    if ids is None:
        ids = dataset.extra["node_ids"] if "node_ids" in dataset.extra else np.arange(dataset.num_nodes)
    out: dict[tuple[int, int], list[int]] = defaultdict(list)
    for s, d, t in zip(np.asarray(ids)[src].tolist(), np.asarray(ids)[dst].tolist(), dataset.edge_time.tolist()):
        out[(s, d)].append(t)
    return {k: sorted(v) for k, v in out.items()}


def check_order(dataset: Dataset) -> None:
    """edge_time_order holds each list's positions sorted by (time, position)."""
    indptr, times, order = dataset.indptr, np.asarray(dataset.edge_time), np.asarray(dataset.edge_time_order)
    for v in range(dataset.num_nodes):
        positions = np.arange(indptr[v], indptr[v + 1])
        want = positions[np.lexsort((positions, times[positions]))]
        np.testing.assert_array_equal(order[indptr[v] : indptr[v + 1]], want)


EDGES = "# src dst weight time\n10 20 0.5 300\n20 10 1.5 100\n10 20 2 50\n30 30 1 7\n20 30 -1 200\n10 20 9 400\n"


def test_times_follow_edges_and_duplicates_keep_the_earliest(tmp_path: Path) -> None:
    src = tmp_path / "e.txt"
    src.write_text(EDGES)
    dataset = import_edgelist(src, tmp_path / "d", time_column=3, time_unit="s")
    assert timed_edges(dataset) == {(10, 20): [50], (20, 10): [100], (30, 30): [7], (20, 30): [200]}
    assert dataset.meta["edge_time"] == {"unit": "s", "min": 7, "max": 200}
    assert dataset.meta["source"]["edges"]["duplicates_dropped"] == 2
    assert dataset.edge_time.dtype == np.int64 and dataset.edge_time_order.dtype == np.int64
    check_order(dataset)
    kept = import_edgelist(src, tmp_path / "k", time_column="3", keep_duplicates=True, drop_self_loops=True)
    assert timed_edges(kept) == {(10, 20): [50, 300, 400], (20, 10): [100], (20, 30): [200]}
    assert kept.meta["edge_time"]["unit"] is None
    check_order(kept)


def test_undirected_reverse_edges_get_the_same_time(tmp_path: Path) -> None:
    src = tmp_path / "e.txt"
    src.write_text(EDGES)
    dataset = import_edgelist(src, tmp_path / "d", time_column=3, undirected=True)
    # {10, 20}: copies at 300, 100, 50, 400 (both directions) -> the earliest, 50, both ways
    assert timed_edges(dataset) == {(10, 20): [50], (20, 10): [50], (30, 30): [7], (20, 30): [200], (30, 20): [200]}
    check_order(dataset)


def test_string_ids_and_header_name(tmp_path: Path) -> None:
    src = tmp_path / "e.csv"
    src.write_text("from,to,when\nalice,bob,5\nbob,carol,3\nalice,bob,1\n")
    dataset = import_edgelist(src, tmp_path / "d", time_column="when")
    names = json.loads((dataset.path / "node_ids.json").read_text())
    assert timed_edges(dataset, np.array(names)) == {("alice", "bob"): [1], ("bob", "carol"): [3]}
    check_order(dataset)


def test_time_column_through_the_cli_and_info(tmp_path: Path) -> None:
    src = tmp_path / "e.txt"
    src.write_text(EDGES)
    result = run_cli("prepare", "edgelist", str(src), str(tmp_path / "d"), "--time-column", "3", "--time-unit", "s")
    assert result.returncode == 0, result.stderr
    info = run_cli("info", str(tmp_path / "d"))
    assert "edge times" in info.stdout and "7 .. 200 (s)" in info.stdout
    as_json = json.loads(run_cli("info", str(tmp_path / "d"), "--json").stdout)
    assert as_json["edge_time"] == {"unit": "s", "min": 7, "max": 200}
    assert as_json["arrays"]["edge_time_order"]["shape"] == [4]


@pytest.mark.parametrize("undirected", [False, True])
def test_edge_split_keeps_the_times_of_the_edges_that_stay(tmp_path: Path, undirected: bool) -> None:
    rng = np.random.default_rng(3)
    src, dst, times = rng.integers(0, 40, 600), rng.integers(0, 40, 600), rng.integers(0, 1000, 600)
    path = tmp_path / "e.txt"
    path.write_text("".join(f"{s} {d} {t}\n" for s, d, t in zip(src, dst, times)))
    extra = {"undirected": True} if undirected else {}
    full = import_edgelist(path, tmp_path / "full", time_column=2, **extra)
    split = import_edgelist(path, tmp_path / "split", time_column=2, edge_split="0.8,0.1,0.1", **extra)
    assert split.num_edges < full.num_edges and split.edge_time.shape == (split.num_edges,)
    before, after = timed_edges(full), timed_edges(split)
    assert set(after) <= set(before)
    assert all(after[k] == before[k] for k in after)
    check_order(split)


def test_edge_split_files_keep_the_times(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text("0 1 5\n1 2 6\n2 3 7\n3 0 8\n0 2 9\n1 3 10\n")
    (tmp_path / "valid.txt").write_text("1 2\n")
    (tmp_path / "test.txt").write_text("0 2\n")
    dataset = import_edgelist(
        path,
        tmp_path / "d",
        time_column=2,
        edge_split_files={"valid": tmp_path / "valid.txt", "test": tmp_path / "test.txt"},
    )
    assert timed_edges(dataset) == {(0, 1): [5], (2, 3): [7], (3, 0): [8], (1, 3): [10]}


@pytest.mark.parametrize(
    ("text", "column", "fragments"),
    [
        ("0 1 5\n1 2\n", "2", ["line 2", "integer time in column 2", "too few columns"]),
        ("0 1 5\n1 2 1.5\n", "2", ["line 2", "integer time in column 2", "not a number", "1.5"]),
        ("0 1 abc\n1 2 3\n", "2", ["line 1", "abc"]),
        ("0 1 nan\n", "2", ["line 1", "nan"]),
        ("0 1 inf\n", "2", ["line 1", "inf"]),
        ("0 1 5\n", "3", ["--time-column", "[2, 3)", "found 3"]),
        ("0 1 5\n", "1", ["--time-column", "index 2 or more", "destination"]),
        ("a,b,t\n0,1,5\n1,2,6\n", "time", ["--time-column", "header", "a, b, t", "'time'"]),
        ("0 1 5\n", "t", ["--time-column", "not a column of its first line"]),
        ("x y 5\ny z 1.5\n", "2", ["line 2", "integer time in column 2", "'1.5'"]),
    ],
)
def test_bad_time_column_is_one_line(tmp_path: Path, text: str, column: str, fragments: list[str]) -> None:
    src = tmp_path / "e.txt"
    src.write_text(text)
    result = run_cli("prepare", "edgelist", str(src), str(tmp_path / "out"), "--time-column", column)
    assert_user_error(result, *fragments)
    assert not (tmp_path / "out").exists()


def test_time_unit_needs_a_time_column(tmp_path: Path) -> None:
    src = tmp_path / "e.txt"
    src.write_text("0 1\n")
    assert_user_error(run_cli("prepare", "edgelist", str(src), str(tmp_path / "o"), "--time-unit", "s"), "--time-unit")


def test_bitcoin_alpha_imports_with_its_times(tmp_path: Path) -> None:
    csv = shared("bitcoin-alpha/soc-sign-bitcoinalpha.csv")
    result = run_cli("prepare", "edgelist", str(csv), str(tmp_path / "btc"), "--time-column", "timestamp")
    assert result.returncode == 0, result.stderr
    dataset = Dataset.open(tmp_path / "btc")
    rows = np.loadtxt(csv, delimiter=",", skiprows=1, dtype=np.int64)
    assert dataset.num_edges == rows.shape[0] == 24186
    assert dataset.meta["edge_time"] == {"unit": None, "min": int(rows[:, 3].min()), "max": int(rows[:, 3].max())}
    stored = timed_edges(dataset)
    assert sum(len(v) for v in stored.values()) == rows.shape[0]
    assert all(stored[(int(s), int(d))] == [int(t)] for s, d, _, t in rows)


def test_python_errors_name_the_argument(tmp_path: Path) -> None:
    src = tmp_path / "e.txt"
    src.write_text("0 1 5\n")
    with pytest.raises(OptionError, match=r"^time_column=: expected a column of .* found 1 \(the destination"):
        import_edgelist(src, tmp_path / "o", time_column=1)
    with pytest.raises(OptionError, match=r"^time_unit=: expected time_column= with it"):
        import_edgelist(src, tmp_path / "o", time_unit="s")
