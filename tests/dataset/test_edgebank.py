"""EdgeBank (issue 38): the numba kernel against its numpy reference on random graphs (hypothesis), worked
examples, the dataset-level functions and their one-line errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphtier
from graphtier import Dataset, DatasetError, OptionError
from graphtier.dataset import edgebank_scores
from graphtier.dataset.csc import edges_to_csc
from graphtier.dataset.edges._edge_time_kernels import edgebank, edgebank_reference
from graphtier.dataset.edges.edgebank import edgebank_scores_csc, edgebank_split_scores
from graphtier.dataset.importers.formats.edgelist import import_edgelist


def timed_csc(src: np.ndarray, dst: np.ndarray, times: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    """CSC of the edges (repeats kept) with their times in CSC order."""
    indptr, indices = edges_to_csc(src, dst, n)
    order = np.lexsort((src, dst))  # CSC order: by destination, then source; stable for repeats
    return indptr, indices, np.asarray(times, np.int64)[order]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 12),
    st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11), st.integers(-5, 5)), max_size=60),
    st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11), st.integers(-6, 6)), max_size=40),
    st.booleans(),
)
def test_kernel_matches_the_reference(
    n: int, edges: list[tuple[int, int, int]], queries: list[tuple[int, int, int]], undirected: bool
) -> None:
    edges = [(s % n, d % n, t) for s, d, t in edges]
    queries = [(s % n, d % n, t) for s, d, t in queries]
    src, dst, times = (np.array([e[i] for e in edges], np.int64) for i in range(3))
    indptr, indices, edge_time = timed_csc(src, dst, times, n)
    qs, qd, qt = (np.array([q[i] for q in queries], np.int64) for i in range(3))
    got = edgebank(indptr, indices, edge_time, qs, qd, qt, undirected)
    want = edgebank_reference(indptr, indices, edge_time, qs, qd, qt, undirected)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    # the definition itself, pair by pair
    for i, (s, d, t) in enumerate(queries):
        seen = [(a, b) for a, b, c in edges if c < t]
        assert got[i] == float((s, d) in seen or (undirected and (d, s) in seen))


def test_worked_example() -> None:
    # 0 -> 1 at times 5 and 2 (a repeat), 2 -> 1 at 7, 1 -> 0 at 3; int32 indices as a dataset stores them
    indptr, indices, edge_time = timed_csc(np.array([0, 2, 0, 1]), np.array([1, 1, 1, 0]), np.array([5, 7, 2, 3]), 3)
    pairs = np.array([[0, 1], [0, 1], [0, 1], [2, 1], [2, 1], [1, 0], [0, 2], [1, 2]])
    times = np.array([2, 3, 100, 7, 8, 4, 9, 9])
    got = edgebank_scores_csc(indptr, indices.astype(np.int32), edge_time, pairs, times)
    assert got.tolist() == [0, 1, 1, 0, 1, 1, 0, 0]  # strictly before: an edge at the query time does not count


@pytest.mark.parametrize(
    ("pairs", "times", "match"),
    [
        (np.zeros((2, 3), np.int64), np.zeros(2, np.int64), r"pairs: expected integer node pairs of shape \[P, 2\]"),
        (np.array([[0, 9]]), np.zeros(1, np.int64), r"pairs: expected node ids in \[0, 3\)"),
        (np.array([[0, 1]]), np.zeros(2, np.int64), r"times: expected integer times of shape \[1\]"),
        (np.array([[0, 1]]), np.zeros(1), r"times: expected integer times .* found float64"),
    ],
)
def test_bad_arguments_are_one_line(pairs: np.ndarray, times: np.ndarray, match: str) -> None:
    indptr, indices, edge_time = timed_csc(np.array([0]), np.array([1]), np.array([1]), 3)
    with pytest.raises(OptionError, match=match):
        edgebank_scores_csc(indptr, indices, edge_time, pairs, times)


@pytest.fixture
def timed_dataset(tmp_path: Path) -> Dataset:
    path = tmp_path / "e.txt"
    # 0 -> 1 three times, 1 -> 2 twice, others once; a split by time of 12 events (repeats kept)
    path.write_text("0 1 1\n1 2 2\n2 3 3\n0 1 4\n3 4 5\n1 2 6\n4 0 7\n0 1 8\n2 4 9\n3 1 10\n1 2 11\n0 3 12\n")
    return import_edgelist(
        path, tmp_path / "d", time_column=2, keep_duplicates=True, edge_split="0.5,0.25,0.25", split_by="time"
    )


def test_edgebank_on_a_dataset(timed_dataset: Dataset) -> None:
    assert graphtier.edgebank_scores is edgebank_scores
    got = edgebank_scores(timed_dataset, np.array([[0, 1], [0, 1], [1, 2], [4, 3]]), np.array([1, 2, 7, 99]))
    assert got.tolist() == [0.0, 1.0, 1.0, 0.0]
    # test split: events at 10 (3 -> 1), 11 (1 -> 2, seen at 2 and 6), 12 (0 -> 3)
    link = timed_dataset.link
    assert link.pairs("test").positives.tolist() == [[3, 1], [1, 2], [0, 3]]
    positive, negative = edgebank_split_scores(timed_dataset, "test")
    assert positive.tolist() == [0.0, 1.0, 0.0]
    assert negative.shape == (3,) and negative.tolist() == [0.0, 0.0, 0.0]  # negatives are never edges
    valid_positive, _ = edgebank_split_scores(timed_dataset, "valid")  # events at 7 (4 -> 0), 8 (0 -> 1), 9 (2 -> 4)
    assert valid_positive.tolist() == [0.0, 1.0, 0.0]


def test_per_positive_negatives_are_scored_at_their_positive_time(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    rng = np.random.default_rng(2)
    path.write_text("".join(f"{s} {d} {t}\n" for s, d, t in zip(*(rng.integers(0, 30, 300) for _ in range(2)),
                                                                  rng.integers(0, 100, 300))))  # fmt: skip
    dataset = import_edgelist(path, tmp_path / "d", time_column=2, keep_duplicates=True, edge_split="0.8,0.1,0.1",
                              split_by="time", eval_negatives=4)  # fmt: skip
    positive, negative = edgebank_split_scores(dataset, "test")
    pairs = dataset.link.pairs("test")
    assert negative.shape == (pairs.num_positives, 4) and not negative.any()
    want = edgebank_scores(dataset, pairs.positives, pairs.positive_times)
    np.testing.assert_array_equal(positive, want)
    assert positive.any()  # repeats of earlier edges score 1


def test_datasets_edgebank_cannot_score(tmp_path: Path, timed_dataset: Dataset) -> None:
    path = tmp_path / "plain.txt"
    path.write_text("0 1\n1 2\n2 0\n0 2\n")
    plain = import_edgelist(path, tmp_path / "plain", edge_split="0.5,0.25,0.25")
    with pytest.raises(DatasetError, match=r"EdgeBank expected edge times .*--time-column\), found none"):
        edgebank_scores(plain, np.array([[0, 1]]), np.array([1]))
    with pytest.raises(DatasetError, match=r"EdgeBank expected edge times"):
        edgebank_split_scores(plain)
    (tmp_path / "timed.txt").write_text("0 1 5\n1 2 6\n2 0 7\n0 2 8\n")
    with pytest.raises(DatasetError, match=r"EdgeBank expected an edge split by time .*found none"):
        edgebank_split_scores(import_edgelist(tmp_path / "timed.txt", tmp_path / "none", time_column=2))
    timed_random = import_edgelist(tmp_path / "timed.txt", tmp_path / "tr", time_column=2, edge_split="0.5,0.25,0.25")
    with pytest.raises(DatasetError, match=r"EdgeBank expected an edge split by time .*found one by random"):
        edgebank_split_scores(timed_random)
    with pytest.raises(OptionError, match=r"split= expected one of train, valid, test, found 'tests'"):
        edgebank_split_scores(timed_dataset, "tests")


def test_undirected_events_and_edgebank_see_either_direction(tmp_path: Path) -> None:
    path = tmp_path / "e.txt"
    # {0, 1} at 5 and again at 9 (--keep-duplicates), {1, 2} at 7; --undirected stores each both ways
    path.write_text("0 1 5\n1 2 7\n0 1 9\n")
    dataset = import_edgelist(path, tmp_path / "d", time_column=2, undirected=True, keep_duplicates=True,
                              edge_split="0.34,0.33,0.33", split_by="time")  # fmt: skip
    link = dataset.link
    assert [link.pairs(s).positives.tolist() for s in ("train", "valid", "test")] == [[[0, 1]], [[1, 2]], [[0, 1]]]
    assert [link.pairs(s).positive_times.tolist() for s in ("train", "valid", "test")] == [[5], [7], [9]]
    positive, negative = edgebank_split_scores(dataset, "test")
    assert positive.tolist() == [1.0] and negative.tolist() == [0.0]  # {0, 1} at 5 counts for (0, 1) at 9
    directed = import_edgelist(path, tmp_path / "dir", time_column=2, keep_duplicates=True)
    pairs, times = np.array([[1, 0], [0, 1], [2, 1]]), np.array([6, 6, 8])
    assert edgebank_scores(directed, pairs, times).tolist() == [0.0, 1.0, 0.0]  # only 0 -> 1 and 1 -> 2 stored
    assert edgebank_scores(dataset, pairs, times).tolist() == [1.0, 1.0, 1.0]
