"""prepare movielens: each pair's rating as its edge-level target, the rating times as edge times."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset
from graphtier.dataset.edges.edge_data import link_labels
from graphtier.dataset.importers.formats.movielens import import_movielens
from graphtier.errors import DatasetError, OptionError
from tests.conftest import shared_data
from tests.dataset.importers.movielens_files import write_movielens


def _rating_of(ratings: np.ndarray) -> dict[tuple[int, int], tuple[int, int]]:
    """``(user, item)`` (1-based) -> ``(rating, time)``."""
    return {(int(u), int(i)): (int(r), int(t)) for u, i, r, t in ratings.tolist()}


def _check_labels(d: Dataset, rated: dict[tuple[int, int], tuple[int, int]], item_offset: int) -> None:
    """Every pair's ``link_{split}_label.npy`` entry is its rating (pairs in node ids, items from ``item_offset``)."""
    assert d.link is not None and d.link.meta["label"] == {"column": "rating"}
    for split in ("train", "valid", "test"):
        pairs = np.asarray(d.link.pairs(split).positives)
        labels = link_labels(d, split)
        assert labels is not None and labels.dtype == np.float32 and labels.shape == (pairs.shape[0],)
        expected = [rated[(int(s) + 1, int(t) - item_offset + 1)][0] for s, t in pairs.tolist()]
        np.testing.assert_array_equal(labels, np.array(expected, np.float32))
        assert f"link_{split}_label" not in d.extra  # an edge-split file, not an unknown array


def _check_times(d: Dataset, rated: dict[tuple[int, int], tuple[int, int]], users: int) -> None:
    """Each CSC edge's ``edge_time`` is the time of its rating, in both directions (nodes: users, then items)."""
    assert d.edge_time is not None and d.meta["edge_time"]["unit"] == "s"
    indptr, indices, times = np.asarray(d.indptr), np.asarray(d.indices), np.asarray(d.edge_time)
    dst = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    for src, target, time in zip(indices.tolist(), dst.tolist(), times.tolist()):
        user, item = (src, target) if src < users else (target, src)
        assert rated[(user + 1, item - users + 1)][1] == time
    assert d.meta["edge_time"]["min"] == int(times.min()) and d.meta["edge_time"]["max"] == int(times.max())


def test_movielens_writes_ratings_as_pair_targets_and_times_as_edge_times(tmp_path: Path) -> None:
    folder, ratings = write_movielens(tmp_path / "ml")
    rated = _rating_of(ratings)
    d = import_movielens(folder, tmp_path / "out", valid_fraction=0.1)
    _check_labels(d, rated, item_offset=60)
    _check_times(d, rated, users=60)
    assert d.num_edges == 2 * d.link.pairs("train").num_positives  # the held-out ratings left with their times


def test_typed_movielens_has_the_same_targets_and_times_in_local_ids(tmp_path: Path) -> None:
    folder, ratings = write_movielens(tmp_path / "ml")
    rated = _rating_of(ratings)
    plain = import_movielens(folder, tmp_path / "plain", valid_fraction=0.1)
    typed = import_movielens(folder, tmp_path / "typed", valid_fraction=0.1, typed=True)
    _check_labels(typed, rated, item_offset=0)
    for split in ("train", "valid", "test"):
        np.testing.assert_array_equal(link_labels(plain, split), link_labels(typed, split))
    # (user, rates, item): the rows of the items (destinations) hold users; each edge's time is its rating's
    rates = typed.schema.relation(("user", "rates", "item"))
    indptr, indices = np.asarray(typed.indptr), np.asarray(typed.indices)
    assert typed.edge_time is not None and typed.meta["edge_time"]["unit"] == "s"
    start, items = rates.row_offset, typed.schema.node_type("item").count
    for item in range(items):
        lo, hi = int(indptr[start + item]), int(indptr[start + item + 1])
        for position in range(lo, hi):
            user = int(indices[position]) - typed.schema.node_type("user").offset
            assert rated[(user + 1, item + 1)][1] == int(typed.edge_time[position])


def test_real_movielens_u1_ratings_and_times(tmp_path: Path) -> None:
    folder = shared_data("movielens-100k/ml-100k")
    raw = np.loadtxt(folder / "u.data", dtype=np.int64)
    d = import_movielens(folder, tmp_path / "ml")
    _check_labels(d, _rating_of(raw), item_offset=943)
    test = link_labels(d, "test")
    assert test is not None and test.shape == (20_000,) and set(np.unique(test).tolist()) == {1.0, 2.0, 3.0, 4.0, 5.0}
    assert d.meta["edge_time"]["min"] >= int(raw[:, 3].min()) and d.meta["edge_time"]["max"] <= int(raw[:, 3].max())


@pytest.mark.parametrize("typed", [False, True])
def test_a_rating_file_with_a_missing_column_is_one_line(tmp_path: Path, typed: bool) -> None:
    folder, _ = write_movielens(tmp_path / "ml")
    (folder / "u1.test").write_text("1\t2\n")
    with pytest.raises(DatasetError, match=r"u1.test.*'user item rating timestamp'"):
        import_movielens(folder, tmp_path / "out", typed=typed)


def test_movielens_split_by_time_holds_out_the_latest_ratings_with_their_targets(tmp_path: Path) -> None:
    folder, ratings = write_movielens(tmp_path / "ml")
    rated = _rating_of(ratings)
    d = import_movielens(folder, tmp_path / "out", edge_split=(0.8, 0.1, 0.1), split_by="time")
    assert d.link is not None and d.link.by_time and d.num_edges == 2 * ratings.shape[0]  # every rating stays
    _check_labels(d, rated, item_offset=60)
    _check_times(d, rated, users=60)
    train, test = d.link.pairs("train"), d.link.pairs("test")
    assert int(np.max(train.positive_times)) <= int(np.min(test.positive_times))
    for split in ("train", "test"):  # each pair's time is its rating's
        pairs = d.link.pairs(split)
        for (s, t), time in zip(np.asarray(pairs.positives).tolist(), np.asarray(pairs.positive_times).tolist()):
            user, item = (s, t) if s < 60 else (t, s)
            assert rated[(user + 1, item - 60 + 1)][1] == time
    negatives = test.negative_pairs()  # a user and an item, as the fold's split draws them (and training, by dst_range)
    assert int(negatives[:, 0].max()) < 60 <= int(negatives[:, 1].min()) and d.link.dst_range == (60, 100)


def test_movielens_split_refusals_are_one_line(tmp_path: Path) -> None:
    folder, _ = write_movielens(tmp_path / "ml")
    with pytest.raises(OptionError, match=r"edge_split=: movielens splits by fold= .*or by time with split_by='time'"):
        import_movielens(folder, tmp_path / "a", edge_split=(0.8, 0.1, 0.1))
