"""prepare movielens --rating-features: each edge's rating as edge features (one-hot of the levels 1-5), aligned
with the edges through the split and the link sampler's exclusion of the batch's target edges."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset
from graphtier.dataset.importers.formats.movielens import RATING_COLUMNS, import_movielens
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.train import train
from graphtier.train.loop.feed import add_edge_inputs
from graphtier.train.loop.report import final_summary
from graphtier.train.loop.task import LinkTask, make_task
from graphtier.train.options.spec import TaskSpec
from tests.dataset.importers.helpers import assert_user_error, run_cli
from tests.dataset.importers.movielens_files import write_movielens

USERS = 60


@pytest.fixture(scope="module")
def rated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Dataset, dict[tuple[int, int], int]]:
    """The small MovieLens folder imported with rating features, and ``(user node, item node) -> rating``."""
    root = tmp_path_factory.mktemp("ml")
    folder, ratings = write_movielens(root / "ml")
    d = import_movielens(folder, root / "out", valid_fraction=0.1, id_features=True, rating_features=True)
    return d, {(int(u) - 1, int(i) - 1 + USERS): int(r) for u, i, r, _ in ratings.tolist()}


def _rating_of_edges(src: np.ndarray, dst: np.ndarray, rating: dict[tuple[int, int], int]) -> np.ndarray:
    """int64 [E]: the rating of each edge ``src -> dst`` in either direction (user -> item or item -> user)."""
    return np.array([rating[(s, t) if s < USERS else (t, s)] for s, t in zip(src.tolist(), dst.tolist())], np.int64)


def test_every_edge_carries_the_one_hot_of_its_rating_in_both_directions(rated: tuple) -> None:
    d, rating = rated
    assert d.meta["edge_features"] == {"dim": 5, "dtype": "float32", "columns": RATING_COLUMNS}
    assert d.meta["source"]["options"]["rating_features"] is True
    table = np.asarray(d.edge_features)
    assert table.shape == (d.num_edges, 5) and table.dtype == np.float32
    indptr, indices = np.asarray(d.indptr), np.asarray(d.indices)
    dst = np.repeat(np.arange(d.num_nodes), np.diff(indptr))
    expected = _rating_of_edges(indices, dst, rating)
    np.testing.assert_array_equal(table, np.eye(5, dtype=np.float32)[expected - 1])
    assert {int(v) for v in expected} == {1, 2, 3, 4, 5}  # every level occurs: a real check of the one-hot columns
    graph = set(zip(indices.tolist(), dst.tolist()))
    for split in ("valid", "test"):  # a held-out rating is a target, never an input
        held_out = np.asarray(d.link.pairs(split).positives)
        assert held_out.shape[0] > 0 and not graph & set(map(tuple, held_out.tolist()))
    assert d.num_edges == 2 * d.link.pairs("train").num_positives


def test_link_batches_keep_each_edge_row_with_its_edge_after_the_target_exclusion(rated: tuple) -> None:
    d, rating = rated
    train_pairs = np.asarray(d.link.pairs("train").positives)
    with GraphStore.open(d, edge_features=True, log=lambda _: None) as store:
        task = make_task(TaskSpec(task="link", link_target="regression"), store)
        assert isinstance(task, LinkTask)
        sample = task.train_sampler(store, None, (-1, 4), 0)  # type: ignore[arg-type]
        for batch_id, chosen in enumerate((np.arange(0, 64), np.arange(100, 180))):
            batch = sample(chosen, batch_id)
            add_edge_inputs(batch, store, features=True, ages=False)
            assert batch.excluded_edges > 0  # the first hop takes whole lists: the targets were there and left
            targets = {tuple(p) for p in train_pairs[chosen].tolist()}
            targets |= {(t, s) for s, t in targets}
            n_id = batch.n_id.numpy()
            for block in batch.blocks:
                src, dst = (n_id[row] for row in block.edge_index.numpy())
                assert block.edge_attr.shape == (src.shape[0], 5)
                np.testing.assert_array_equal(
                    block.edge_attr.numpy(), np.eye(5, dtype=np.float32)[_rating_of_edges(src, dst, rating) - 1]
                )
                assert not targets & set(zip(src.tolist(), dst.tolist()))  # no batch target's rating is an input


def test_rating_features_train_gine_to_a_sampled_test_rmse(rated: tuple) -> None:
    d, _ = rated
    result = train(d, task="link", link_target="regression", model="gine", edge_features=True, epochs=2,
                   fanouts=(5, 3), batch_size=128, hidden=16, num_threads=1, quiet=True)  # fmt: skip
    report = result.report
    assert report["final"]["method"] == "sampled"  # layer-wise inference feeds no edge rows
    assert np.isfinite(report["final"]["test_rmse"]) and np.isfinite(report["final"]["valid_rmse"])
    assert report["final"]["test_mean_rmse"] > 0
    assert "sampled neighbourhoods" in final_summary(report["final"], report["config"])  # not "exact layer-wise"


def test_rating_features_are_refused_with_a_split_by_time(tmp_path: Path) -> None:
    folder, _ = write_movielens(tmp_path / "ml")
    with pytest.raises(OptionError, match="rating_features.*split_by='time'"):
        import_movielens(folder, tmp_path / "b", rating_features=True, split_by="time", edge_split=(0.8, 0.1, 0.1))
    result = run_cli("prepare", "movielens", str(folder), str(tmp_path / "c"), "--rating-features", "--split-by",
                     "time", "--edge-split", "0.8,0.1,0.1")  # fmt: skip
    assert_user_error(result, "--rating-features", "--split-by time")
    assert not (tmp_path / "c").exists()


def test_a_typed_dataset_carries_the_ratings_on_both_relations_and_trains_rgat(tmp_path: Path) -> None:
    folder, ratings = write_movielens(tmp_path / "ml")
    rating = {(int(u) - 1, int(i) - 1): int(r) for u, i, r, _ in ratings.tolist()}
    d = import_movielens(folder, tmp_path / "typed", typed=True, valid_fraction=0.1, rating_features=True)
    assert d.meta["edge_features"] == {"dim": 5, "dtype": "float32", "columns": RATING_COLUMNS}
    table = np.asarray(d.edge_features)
    for rel in d.schema.relations:  # (user, rates, item) and its reverse, each edge with its rating
        indptr, src = d.relation_csc(rel)
        ends = np.repeat(np.arange(d.schema.node_type(rel.dst).count), np.diff(indptr))
        local = np.asarray(src) - d.schema.node_type(rel.src).offset
        pairs = zip(local.tolist(), ends.tolist()) if rel.src == "user" else zip(ends.tolist(), local.tolist())
        expected = np.array([rating[p] for p in pairs], np.int64)
        np.testing.assert_array_equal(table[indptr[0] : indptr[-1]], np.eye(5, dtype=np.float32)[expected - 1])
    report = train(d, task="link", link_target="regression", model="rgat", edge_features=True, epochs=2, heads=2,
                   fanouts=(5, 3), batch_size=128, hidden=16, num_threads=1, quiet=True).report  # fmt: skip
    assert report["final"]["method"] == "sampled" and np.isfinite(report["final"]["test_rmse"])
