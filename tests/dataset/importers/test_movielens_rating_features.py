"""prepare movielens --rating-features: each edge's rating as edge features (one-hot of the levels 1-5), aligned
with the edges through the split and the link sampler's exclusion of the batch's target edges."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset
from graphtier.dataset.importers.movielens import RATING_COLUMNS, import_movielens
from graphtier.errors import DatasetError, OptionError
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


def test_rating_features_are_refused_where_they_cannot_be_written(tmp_path: Path) -> None:
    folder, _ = write_movielens(tmp_path / "ml")
    with pytest.raises(OptionError, match="rating_features.*typed"):
        import_movielens(folder, tmp_path / "a", typed=True, rating_features=True)
    with pytest.raises(OptionError, match="rating_features.*split_by='time'"):
        import_movielens(folder, tmp_path / "b", rating_features=True, split_by="time", edge_split=(0.8, 0.1, 0.1))
    result = run_cli("prepare", "movielens", str(folder), str(tmp_path / "c"), "--typed", "--rating-features")
    assert_user_error(result, "--rating-features", "--typed")
    assert not (tmp_path / "c").exists()


def test_a_rating_outside_the_levels_names_its_file_and_line(tmp_path: Path) -> None:
    folder, _ = write_movielens(tmp_path / "ml")
    lines = (folder / "u1.test").read_text().splitlines()
    lines[2] = "\t".join(lines[2].split("\t")[:2] + ["6", "880000000"])
    (folder / "u1.test").write_text("\n".join(lines) + "\n")
    with pytest.raises(DatasetError, match=r"u1\.test: line 3: expected a rating in 1\.\.5, found 6"):
        import_movielens(folder, tmp_path / "out", rating_features=True)
    assert not (tmp_path / "out").exists()
    import_movielens(folder, tmp_path / "plain")  # without rating features the value is only a target
