"""Recommendations in the user's ids: ``predict --task link --top-k --output FILE.csv`` with the popularity top-K
beside them, and how a node id maps back to the input's id (node_ids, a reorder's perm, MovieLens)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset
from graphtier.dataset.importers import import_edgelist
from graphtier.dataset.original_ids import original_ids
from graphtier.errors import DatasetError
from graphtier.graph.reorder import reorder_dataset
from graphtier.train import train
from graphtier.train.infer.link_predict import RECOMMENDATION_COLUMNS, popular_top_k
from tests.conftest import run_cli_in_one_process

SMALL = dict(task="link", batch_size=128, hidden=16, fanouts=(5, 5), eval_batch_size=256, lr=0.01, quiet=True)


def _brute_force_popular(dataset: Dataset, node: int, k: int) -> list[int]:
    indptr, indices = np.asarray(dataset.indptr), np.asarray(dataset.indices)
    degree = np.diff(indptr)
    excluded = set(indices[indptr[node] : indptr[node + 1]].tolist()) | {node}
    candidates = [v for v in range(dataset.num_nodes) if v not in excluded]
    return sorted(candidates, key=lambda v: (-degree[v], v))[:k]


def test_popular_top_k_equals_brute_force(tiny_link_dataset: Dataset) -> None:
    nodes = np.array([0, 5, 399, 17], np.int64)
    ids, degrees = popular_top_k(tiny_link_dataset, nodes, 7)
    degree = np.diff(np.asarray(tiny_link_dataset.indptr))
    for row, node in enumerate(nodes):
        assert ids[row].tolist() == _brute_force_popular(tiny_link_dataset, int(node), 7)
        np.testing.assert_array_equal(degrees[row], degree[ids[row]])
    # more places than candidates: -1 fills the rest
    ids, degrees = popular_top_k(tiny_link_dataset, nodes[:1], 400)
    assert (ids[0, -1], degrees[0, -1]) == (-1, -1) and (ids[0] >= 0).sum() == len(
        _brute_force_popular(tiny_link_dataset, 0, 400)
    )


def test_the_csv_lists_the_npy_recommendations_and_the_popular_ones(tiny_link_dataset: Dataset, tmp_path: Path) -> None:
    model = tmp_path / "link.pt"
    train(tiny_link_dataset, epochs=1, save_model=str(model), **SMALL)
    # the tiny dataset as renumbered input ids: node k was called 1000 + 3k
    np.save(tiny_link_dataset.path / "node_ids.npy", 1000 + 3 * np.arange(tiny_link_dataset.num_nodes))
    ds, m = str(tiny_link_dataset.path), str(model)
    ids, scores, table = tmp_path / "ids.npy", tmp_path / "scores.npy", tmp_path / "recs.csv"
    common = ["predict", ds, "--model", m, "--top-k", "4", "--for-nodes", "3,0"]
    runs = run_cli_in_one_process([
        [*common, "--output", str(ids), "--scores", str(scores)],
        [*common, "--output", str(table)],
        ["predict", ds, "--model", m, "--embeddings", str(tmp_path / "e.npy"), "--output", str(tmp_path / "x.csv")],
    ])  # fmt: skip
    assert runs[0].returncode == 0 and runs[1].returncode == 0, runs
    assert "input ids, popularity top-K beside them" in runs[1].stdout
    assert runs[2].returncode == 2 and "--output" in runs[2].stderr and ".csv" in runs[2].stderr, runs[2]
    assert len(runs[2].stderr.strip().splitlines()) == 1
    with open(table, newline="") as handle:
        rows = list(csv.reader(handle))
    assert tuple(rows[0]) == RECOMMENDATION_COLUMNS
    body = np.array(rows[1:], dtype=object).reshape(2, 4, len(RECOMMENDATION_COLUMNS))
    expected_ids, expected_scores = np.load(ids), np.load(scores)
    for row, node in enumerate([3, 0]):
        assert body[row, :, 0].tolist() == [str(node)] * 4 and body[row, :, 1].tolist() == [str(1000 + 3 * node)] * 4
        assert body[row, :, 2].tolist() == ["1", "2", "3", "4"]
        assert body[row, :, 3].tolist() == [str(1000 + 3 * v) for v in expected_ids[row]]
        np.testing.assert_allclose(body[row, :, 4].astype(np.float64), expected_scores[row], rtol=1e-5)
        popular = _brute_force_popular(tiny_link_dataset, node, 4)
        assert body[row, :, 5].tolist() == [str(1000 + 3 * v) for v in popular]
        degree = np.diff(np.asarray(tiny_link_dataset.indptr))
        assert body[row, :, 6].tolist() == [str(degree[v]) for v in popular]


def test_text_ids_survive_a_reorder(tmp_path: Path) -> None:
    path = tmp_path / "e.csv"
    path.write_text("alice,bob\nbob,carol\ncarol,dave\ndave,alice\ncarol,alice\n")
    source = import_edgelist(path, tmp_path / "o", synthetic_features=2, undirected=True)
    assert original_ids(source, np.array([2, 0])).tolist() == ["carol", "alice"]
    scores = np.array([0.0, 1.0, 3.0, 2.0])  # carol, dave, bob, alice
    reordered, _ = reorder_dataset(source, tmp_path / "r", scores, score_label="test")
    np.testing.assert_array_equal(reordered.extra["perm"], [2, 3, 1, 0])
    assert original_ids(reordered, np.arange(4)).tolist() == ["carol", "dave", "bob", "alice"]
    # reordered again: still the input's names
    twice, _ = reorder_dataset(reordered, tmp_path / "r2", np.array([0.0, 0.0, 0.0, 1.0]), score_label="test")
    assert original_ids(twice, np.arange(4)).tolist() == ["alice", "carol", "dave", "bob"]


def test_integer_ids_map_back_through_node_ids_and_perm(tiny_dataset: Dataset, tmp_path: Path) -> None:
    n = tiny_dataset.num_nodes
    assert original_ids(tiny_dataset, np.array([5, 0])).tolist() == [5, 0]  # the input's ids were kept
    scores = np.random.default_rng(0).random(n)
    reordered, _ = reorder_dataset(tiny_dataset, tmp_path / "r", scores, score_label="test")
    perm = np.asarray(reordered.extra["perm"])
    np.testing.assert_array_equal(original_ids(reordered, np.arange(n)), perm)
    np.save(tiny_dataset.path / "node_ids.npy", np.arange(n, dtype=np.int64) * 10)  # an importer renumbered
    source = Dataset.open(tiny_dataset.path)
    again, _ = reorder_dataset(source, tmp_path / "r2", scores, score_label="test")
    np.testing.assert_array_equal(original_ids(again, np.arange(n)), perm * 10)


def test_a_bad_node_ids_json_is_one_line(tiny_dataset: Dataset) -> None:
    names = tiny_dataset.path / "node_ids.json"
    names.write_text(json.dumps(["a", "b"]))
    with pytest.raises(DatasetError, match=r"node_ids.json: expected a JSON list of 400 node ids, found a list of 2"):
        original_ids(tiny_dataset, np.array([0]))
    names.write_text("{")
    with pytest.raises(DatasetError, match="node_ids.json: expected a JSON list of node ids"):
        original_ids(tiny_dataset, np.array([0]))


def test_most_popular_breaks_ties_by_the_lower_id_at_any_degree() -> None:
    """Many candidates share a degree, also at the boundary of the k+1+|excluded| most popular: the lower id wins."""
    from graphtier.train.infer.link_predict import _most_popular

    rng = np.random.default_rng(5)
    lo, k = 10, 6
    for _ in range(20):
        degree = rng.integers(0, 3, size=300).astype(np.int64)
        chunk = rng.choice(np.arange(lo, lo + 300), size=4, replace=False)
        excluded = [rng.choice(np.arange(lo, lo + 300), size=int(rng.integers(0, 9)), replace=False) for _ in chunk]
        ids, degrees = _most_popular(degree, lo, chunk, excluded, k)
        for row, (node, drop) in enumerate(zip(chunk, excluded)):
            allowed = [c for c in range(lo, lo + 300) if c != node and c not in set(drop.tolist())]
            expected = sorted(allowed, key=lambda c: (-degree[c - lo], c))[:k]
            assert ids[row].tolist() == expected
            assert degrees[row].tolist() == [int(degree[c - lo]) for c in expected]
