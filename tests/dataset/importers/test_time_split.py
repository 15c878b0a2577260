"""``--edge-split F --split-by time`` (issue 38): the edges cut in time order (ties by (src, dst)), held-out edges
kept in the graph, pair times row-aligned with the pairs, negatives never edges; the files validated at open,
kept by reorder, shown by info; bad input one line each; the real bitcoin-alpha CSV."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset, DatasetError, OptionError
from graphtier.dataset.csc import csc_to_edges, edges_to_csc
from graphtier.dataset.importers.formats.edgelist import import_edgelist
from graphtier.dataset.importers.split.time_holdout import hold_out_edges_by_time
from graphtier.graph.reorder import reorder_dataset
from tests.dataset.importers.helpers import assert_user_error, run_cli, shared


def write_timed(path: Path, rng: np.random.Generator, n: int = 40, e: int = 600, times: int = 50) -> Path:
    """A random edge list 'src dst time' with repeated times (ties) and repeated edges."""
    src, dst, t = rng.integers(0, n, e), rng.integers(0, n, e), rng.integers(0, times, e)
    path.write_text("".join(f"{s} {d} {x}\n" for s, d, x in zip(src, dst, t)))
    return path


def edge_times(dataset: Dataset) -> dict[tuple[int, int], list[int]]:
    """(src, dst) -> every time the graph stores for that edge."""
    src, dst = csc_to_edges(dataset.indptr, dataset.indices)
    out: dict[tuple[int, int], list[int]] = {}
    for s, d, t in zip(src.tolist(), dst.tolist(), np.asarray(dataset.edge_time).tolist()):
        out.setdefault((s, d), []).append(t)
    return out


def check_time_split(dataset: Dataset, fractions: tuple[float, float, float], ids: np.ndarray | None = None) -> None:
    """Everything a split by time promises, checked from the files (``ids``: node id -> the id the split was
    ordered by, for a reordered dataset)."""
    link = dataset.link
    assert link is not None and link.by_time and link.meta["split_by"] == "time"
    stored = edge_times(dataset)
    keys = []
    for name in ("train", "valid", "test"):
        pairs = link.pairs(name)
        times = np.asarray(pairs.positive_times)
        assert times.dtype == np.int64 and times.shape == (pairs.num_positives,)
        positives = np.asarray(pairs.positives)
        # every positive is an edge of the graph (held-out ones stay) at exactly its pair time
        for (s, d), t in zip(positives.tolist(), times.tolist()):
            assert t in stored[(s, d)]
        named = positives if ids is None else ids[positives]
        keys += [(t, s, d) for (s, d), t in zip(named.tolist(), times.tolist())]
    assert keys == sorted(keys)  # train, valid, test in (time, src, dst) order: earliest train, latest test
    total = len(keys)
    cum = np.cumsum(fractions)
    want = np.diff([0] + [int(np.floor(total * f + 1e-9)) for f in cum])
    assert [link.pairs(s).num_positives for s in ("train", "valid", "test")] == want.tolist()
    for name in ("valid", "test"):
        pairs = link.pairs(name)
        if pairs.num_positives:
            assert link.meta[f"{name}_from"] == int(np.asarray(pairs.positive_times)[0])
        negatives = pairs.negative_pairs()
        src, dst = negatives[:, 0], negatives[:, 1]
        assert not any((s, d) in stored for s, d in zip(src.tolist(), dst.tolist()))
        if link.undirected:
            assert not any((d, s) in stored for s, d in zip(src.tolist(), dst.tolist()))
        neg_times = pairs.negative_pair_times()
        assert neg_times is not None and neg_times.shape == (negatives.shape[0],)
        if pairs.per_positive:
            k = link.eval_negatives
            np.testing.assert_array_equal(neg_times, np.repeat(pairs.positive_times, k))
            assert not (dataset.path / f"link_{name}_neg_time.npy").exists()
        else:
            p = pairs.num_positives
            np.testing.assert_array_equal(neg_times, np.asarray(pairs.positive_times)[np.arange(len(neg_times)) % p])


@pytest.mark.parametrize("undirected", [False, True])
@pytest.mark.parametrize("k", [0, 3])
def test_a_time_split_of_an_edge_list(tmp_path: Path, undirected: bool, k: int) -> None:
    path = write_timed(tmp_path / "e.txt", np.random.default_rng(7))
    full = import_edgelist(path, tmp_path / "full", time_column=2, undirected=undirected)
    fractions = (0.7, 0.15, 0.15)
    dataset = import_edgelist(
        path, tmp_path / "d", time_column=2, undirected=undirected, edge_split="0.7,0.15,0.15", split_by="time",
        eval_negatives=k,
    )  # fmt: skip
    # the graph keeps every edge and its time: nothing held out
    assert dataset.num_edges == full.num_edges and dataset.meta["link"]["held_out_edges"] == 0
    np.testing.assert_array_equal(dataset.indices, full.indices)
    np.testing.assert_array_equal(dataset.edge_time, full.edge_time)
    check_time_split(dataset, fractions)
    if undirected:  # each undirected edge once
        train = np.asarray(dataset.link.pairs("train").positives)
        assert (train[:, 0] < train[:, 1]).all()


def test_ties_are_cut_by_source_then_destination(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    # ten edges at one time: the order is (src, dst); the last 2 are the test split, the 2 before valid
    path.write_text("".join(f"{s} {d} 5\n" for s, d in [(3, 1), (0, 4), (2, 2), (1, 0), (0, 2), (4, 0), (2, 1),
                                                          (1, 3), (3, 0), (0, 1), (4, 3)]))  # fmt: skip
    dataset = import_edgelist(path, tmp_path / "d", time_column=2, edge_split="0.6,0.2,0.2", split_by="time")
    link = dataset.link
    assert np.asarray(link.pairs("valid").positives).tolist() == [[3, 0], [3, 1]]
    assert np.asarray(link.pairs("test").positives).tolist() == [[4, 0], [4, 3]]
    assert link.meta["valid_from"] == link.meta["test_from"] == 5  # a tie straddles both boundaries
    assert link.pairs("train").num_positives == 6  # floor(10 * 0.6); the self-loop (2, 2) is no candidate


def test_repeated_edges_are_events_and_edgebank_sees_the_earlier_copy(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    path.write_text("0 1 1\n1 2 2\n2 3 3\n0 1 4\n3 4 5\n0 1 6\n")
    dataset = import_edgelist(
        path, tmp_path / "d", time_column=2, keep_duplicates=True, edge_split="0.5,0.25,0.25", split_by="time"
    )
    link = dataset.link
    assert np.asarray(link.pairs("train").positive_times).tolist() == [1, 2, 3]
    assert np.asarray(link.pairs("valid").positives).tolist() == [[0, 1]]  # the copy at time 4
    assert link.meta["valid_from"] == 4 and link.meta["test_from"] == 5


def test_hold_out_edges_by_time_in_python() -> None:
    src = np.array([0, 1, 2, 3, 0, 2], np.int64)
    dst = np.array([1, 2, 3, 0, 2, 0], np.int64)
    times = np.array([40, 10, 30, 20, 60, 50], np.int64)
    indptr, indices = edges_to_csc(src, dst, 5)
    order = np.lexsort((src, dst))  # edges_to_csc sorts by (dst, src): the times follow
    held = hold_out_edges_by_time(indptr, indices, times[order], (0.5, 0.25, 0.25), seed=1, undirected=False)
    assert held.removed == 0 and held.indptr is not None
    split = held.split
    assert np.asarray(split.pairs("train").positives).tolist() == [[1, 2], [3, 0], [2, 3]]
    assert split.pairs("train").positive_times.tolist() == [10, 20, 30]
    assert split.pairs("valid").positives.tolist() == [[0, 1]] and split.boundary("valid") == 40
    assert split.pairs("test").positives.tolist() == [[2, 0], [0, 2]] and split.boundary("test") == 50
    with pytest.raises(OptionError, match=r"edge_time: expected shape \[6\]"):
        hold_out_edges_by_time(indptr, indices, times[:3], (0.5, 0.25, 0.25), seed=1)


def test_undirected_events_count_each_direction_once() -> None:
    # {0, 1} at 5 stored both ways; {0, 1} at 9 stored only as 1 -> 0; {2, 3} at 4 twice each way; {1, 2} at 7
    # once one way and twice the other: events are the larger direction's copies
    edges = [(0, 1, 5), (1, 0, 5), (1, 0, 9), (2, 3, 4), (2, 3, 4), (3, 2, 4), (3, 2, 4), (1, 2, 7), (2, 1, 7),
             (2, 1, 7), (3, 3, 1)]  # fmt: skip
    src, dst, times = (np.array([e[i] for e in edges], np.int64) for i in range(3))
    indptr, indices = edges_to_csc(src, dst, 4)
    order = np.lexsort((src, dst))
    held = hold_out_edges_by_time(indptr, indices, times[order], (1.0, 0.0, 0.0), seed=0, undirected=True)
    train = held.split.pairs("train")
    got = sorted(zip(train.positive_times.tolist(), map(tuple, train.positives.tolist())))
    assert got == [(4, (2, 3)), (4, (2, 3)), (5, (0, 1)), (7, (1, 2)), (7, (1, 2)), (9, (0, 1))]


def test_python_errors_name_the_arguments(tmp_path: Path) -> None:
    path = write_timed(tmp_path / "e.txt", np.random.default_rng(1), e=50)
    with pytest.raises(OptionError, match=r"^split_by='time': expected edge_split= as well"):
        import_edgelist(path, tmp_path / "a", time_column=2, split_by="time")
    with pytest.raises(OptionError, match=r"^split_by= expected one of random, time, found 'times'"):
        import_edgelist(path, tmp_path / "b", time_column=2, edge_split="0.8,0.1,0.1", split_by="times")
    with pytest.raises(OptionError, match=r"^split_by='time': the dataset has no edge times \(give time_column=\)"):
        import_edgelist(path, tmp_path / "c", edge_split="0.8,0.1,0.1", split_by="time")
    assert not any((tmp_path / name).exists() for name in "abc")


def test_a_format_without_times_refuses_a_time_split(tmp_path: Path) -> None:
    from graphtier.dataset.importers.formats.csr_npz import import_csr_npz

    archive = tmp_path / "g.npz"
    np.savez(archive, indptr=np.array([0, 1, 2, 3]), indices=np.array([1, 2, 0]), shape=np.array([3, 3]))
    with pytest.raises(OptionError, match="the dataset has no edge times"):
        import_csr_npz(archive, tmp_path / "d", edge_split="0.4,0.3,0.3", split_by="time")
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--split-by", "time"], ["--split-by time: expected --edge-split as well"]),
        (["--edge-split", "0.8,0.1,0.1", "--split-by", "times"], ["--split-by", "'times'", "random", "time"]),
        (["--edge-split", "0.8,0.1,0.1", "--split-by", "time"], ["--split-by time: the dataset has no edge times",
                                                                  "(give --time-column)"]),
    ],
)  # fmt: skip
def test_bad_split_by_is_one_line(tmp_path: Path, args: list[str], fragments: list[str]) -> None:
    path = write_timed(tmp_path / "e.txt", np.random.default_rng(1), e=50)
    time_args = [] if "no edge times" in fragments[0] else ["--time-column", "2"]
    result = run_cli("prepare", "edgelist", str(path), str(tmp_path / "out"), *time_args, *args)
    assert_user_error(result, *fragments)
    assert not (tmp_path / "out").exists()


@pytest.fixture
def timed_split(tmp_path: Path) -> Path:
    path = write_timed(tmp_path / "e.txt", np.random.default_rng(5))
    result = run_cli("prepare", "edgelist", str(path), str(tmp_path / "d"), "--time-column", "2", "--time-unit",
                     "days", "--edge-split", "0.7,0.15,0.15", "--split-by", "time")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "edge split by time" in result.stdout and "stay in the graph" in result.stdout
    return tmp_path / "d"


def test_info_shows_the_split_by_time(timed_split: Path) -> None:
    meta = json.loads((timed_split / "meta.json").read_text())["link"]
    info = run_cli("info", str(timed_split))
    assert info.returncode == 0, info.stderr
    text = " ".join(info.stdout.split())
    assert "split by time" in text and f"valid from {meta['valid_from']}" in text
    assert f"test from {meta['test_from']}" in text
    as_json = json.loads(run_cli("info", str(timed_split), "--json").stdout)["edge_split"]
    assert as_json["split_by"] == "time" and as_json["valid_from"] == meta["valid_from"]
    assert as_json["test_from"] == meta["test_from"]
    arrays = json.loads(run_cli("info", str(timed_split), "--json").stdout)["arrays"]
    assert arrays["link_test_time"]["shape"] == [meta["test"]]
    dataset = Dataset.open(timed_split)
    assert not any(stem.startswith("link_") for stem in dataset.extra)


def test_reorder_keeps_the_pair_times(timed_split: Path, tmp_path: Path) -> None:
    source = Dataset.open(timed_split)
    scores = np.random.default_rng(0).random(source.num_nodes)
    out, _ = reorder_dataset(source, tmp_path / "r", scores, score_label="random")
    perm = np.load(tmp_path / "r" / "perm.npy")
    assert out.link is not None and out.link.by_time and out.link.meta["valid_from"] == source.link.meta["valid_from"]
    for name in ("train", "valid", "test"):
        a, b = source.link.pairs(name), out.link.pairs(name)
        np.testing.assert_array_equal(perm[np.asarray(b.positives)], a.positives)
        np.testing.assert_array_equal(b.positive_times, a.positive_times)
        if name != "train":
            np.testing.assert_array_equal(b.negative_times, a.negative_times)
    check_time_split(out, (0.7, 0.15, 0.15), perm)


def rewrite(root: Path, stem: str, array: np.ndarray) -> None:
    np.save(root / f"{stem}.npy", array)


def set_link(root: Path, **changes: object) -> None:
    meta = json.loads((root / "meta.json").read_text())
    meta["link"].update(changes)
    (root / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    ("damage", "fragments"),
    [
        (lambda r: rewrite(r, "link_test_time", np.load(r / "link_test_time.npy").astype(np.int32)),
         ["link_test_time.npy", "dtype int64", "int32"]),
        (lambda r: rewrite(r, "link_valid_time", np.load(r / "link_valid_time.npy")[:-1]),
         ["link_valid_time.npy", "expected shape", "one time per pair"]),
        (lambda r: rewrite(r, "link_valid_neg_time", np.load(r / "link_valid_neg_time.npy")[:-1]),
         ["link_valid_neg_time.npy", "expected shape"]),
        (lambda r: (r / "link_train_time.npy").unlink(), ["link_train_time.npy", "file missing", "'time'"]),
        (lambda r: (r / "link_test_neg_time.npy").unlink(), ["link_test_neg_time.npy", "file missing"]),
        (lambda r: rewrite(r, "link_train_time", np.load(r / "link_train_time.npy") + 10**6),
         ["link_train_time.npy", "train period"]),
        (lambda r: rewrite(r, "link_valid_time", np.r_[np.load(r / "link_valid_time.npy")[:-1], 10**6]),
         ["link_valid_time.npy", "valid period", "found values in"]),
        (lambda r: rewrite(r, "link_test_time", np.load(r / "link_test_time.npy") - 10**6),
         ["link.test_from", "expected -", "link_test_time.npy"]),
        (lambda r: set_link(r, valid_from=-5), ["link.valid_from", "expected", "found -5"]),
        (lambda r: set_link(r, test_from="soon"), ["link.test_from", "integer time or null", "'soon'"]),
        (lambda r: set_link(r, split_by="season"), ["link.split_by", "random, time", "'season'"]),
        (lambda r: set_link(r, split_by="random", method="random"), ["link_train_time.npy", "unexpected file"]),
    ],
)  # fmt: skip
def test_damaged_time_split_files_are_one_line(timed_split: Path, damage: object, fragments: list[str]) -> None:
    damage(timed_split)  # type: ignore[operator]
    with pytest.raises(DatasetError) as error:
        Dataset.open(timed_split)
    message = str(error.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_a_held_out_pair_that_is_not_an_edge_is_refused(timed_split: Path) -> None:
    dataset = Dataset.open(timed_split)
    stored = edge_times(dataset)
    test = np.array(dataset.link.pairs("test").positives)
    missing = next((s, d) for s in range(dataset.num_nodes) for d in range(dataset.num_nodes)
                   if s != d and (s, d) not in stored)  # fmt: skip
    test[0] = missing
    rewrite(timed_split, "link_test", test)
    with pytest.raises(DatasetError, match=r"link_test.npy: row 0, pair .* is not an edge of the graph"):
        Dataset.open(timed_split)


def test_bitcoin_alpha_split_by_time(tmp_path: Path) -> None:
    csv = shared("bitcoin-alpha/soc-sign-bitcoinalpha.csv")
    result = run_cli("prepare", "edgelist", str(csv), str(tmp_path / "btc"), "--time-column", "timestamp",
                     "--time-unit", "s", "--edge-split", "0.70,0.15,0.15", "--split-by", "time")  # fmt: skip
    assert result.returncode == 0, result.stderr
    dataset = Dataset.open(tmp_path / "btc")
    rows = np.loadtxt(csv, delimiter=",", skiprows=1, dtype=np.int64)
    assert dataset.num_edges == rows.shape[0] == 24186  # the held-out edges are still in the graph
    link = dataset.link
    counts = [link.pairs(s).num_positives for s in ("train", "valid", "test")]
    assert counts == [16930, 3628, 3628]  # floor(24186 * 0.70), floor(24186 * 0.85) - that, the rest
    train, valid, test = (np.asarray(link.pairs(s).positive_times) for s in ("train", "valid", "test"))
    assert train.max() <= valid.min() and valid.max() <= test.min()
    assert link.meta["valid_from"] == valid.min() and link.meta["test_from"] == test.min()
    # every held-out pair is an edge of the graph, with its own time, in original ids
    ids = dataset.extra["node_ids"]
    by_edge = {(int(s), int(d)): int(t) for s, d, _, t in rows}
    for name, times in (("valid", valid), ("test", test)):
        pairs = ids[np.asarray(link.pairs(name).positives)]
        assert all(by_edge[(int(s), int(d))] == int(t) for (s, d), t in zip(pairs, times))
    check_time_split(dataset, (0.70, 0.15, 0.15))
