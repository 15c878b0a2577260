"""Datasets as papers ship them, imported without a script: MAGNN's IMDB (a global adjacency, ``PATH:KEY`` splits),
HAN's ACM3025 (a ``.mat`` with several metapath graphs and its own split), GAE's link splits (sparse features)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from graphtier.dataset import Dataset
from tests.dataset.importers.helpers import run_cli

TYPES = ["movie", "director", "actor"]


def relation_pairs(ds: Dataset, name: str) -> set[tuple[int, int]]:
    """``{(src local id, dst local id)}`` of the relation ``name`` of a typed dataset."""
    schema = ds.schema
    rel = schema.relation(name)
    indptr, sources = ds.relation_csc(rel)
    indptr = np.asarray(indptr) - int(indptr[0])
    offset = schema.node_type(rel.src).offset
    return {(int(sources[k]) - offset, v) for v in range(indptr.shape[0] - 1) for k in range(indptr[v], indptr[v + 1])}


def imdb_files(root: Path) -> tuple[np.ndarray, sp.csr_matrix]:
    """MAGNN's IMDB_processed shape, tiny: 4 movies (global 0-3), 2 directors (4-5), 3 actors (6-8); types are
    interleaved in the last rows on purpose (a node's local id is its rank within its type)."""
    node_types = np.array([0, 0, 0, 1, 1, 2, 0, 2, 2])  # movies 0,1,2,6; directors 3,4; actors 5,7,8
    edges = [(0, 3), (1, 3), (2, 4), (6, 4), (0, 5), (0, 7), (6, 8), (3, 0), (3, 1), (4, 2), (5, 0), (8, 6)]
    rows, cols = zip(*edges, strict=True)
    adj = sp.csr_matrix((np.ones(len(edges)), (rows, cols)), shape=(9, 9))
    sp.save_npz(root / "adjM.npz", adj)
    np.save(root / "node_types.npy", node_types)
    sp.save_npz(root / "features_0.npz", sp.csr_matrix(np.eye(4, 5, dtype=np.float32)))
    sp.save_npz(root / "features_1.npz", sp.csr_matrix(np.ones((2, 3), dtype=np.float32)))
    np.save(root / "labels.npy", np.array([0, 1, 2, 1]))
    np.save(root / "bad.npy", np.array([2, 3]))
    # global ids of movies: 0, 1, 2 and 6 (local 3)
    np.savez(root / "train_val_test_idx.npz", train_idx=np.array([0, 6]), val_idx=np.array([1]), test_idx=np.array([2]))
    return node_types, adj


def imdb_manifest(root: Path, **changes: Any) -> Path:
    manifest: dict[str, Any] = {
        "adjacency": {"path": "adjM.npz", "node_types": "node_types.npy", "type_names": TYPES},
        "nodes": {
            "movie": {"features": "features_0.npz", "labels": "labels.npy"},
            "director": {"features": "features_1.npz"},
        },
        "target": "movie",
        "split": {
            "train": "train_val_test_idx.npz:train_idx",
            "valid": "train_val_test_idx.npz:val_idx",
            "test": "train_val_test_idx.npz:test_idx",
        },
    }
    manifest.update(changes)
    path = root / "imdb.json"
    path.write_text(json.dumps(manifest))
    return path


def test_magnn_imdb_global_adjacency(tmp_path: Path) -> None:
    imdb_files(tmp_path)
    result = run_cli("prepare", "manifest", str(imdb_manifest(tmp_path)), str(tmp_path / "imdb"))
    assert result.returncode == 0, result.stderr
    assert (
        "note: split: the split files hold global ids of the adjacency, converted to movie's local ids" in result.stdout
    )
    ds = Dataset.open(tmp_path / "imdb")
    schema = ds.schema
    assert [(t.name, t.count, t.feature_dim) for t in schema.node_types] == [
        ("movie", 4, 5),
        ("director", 2, 3),
        ("actor", 3, 0),
    ]
    assert sorted(r.type for r in schema.relations) == sorted(
        [
            ("movie", "movie_to_director", "director"),
            ("movie", "movie_to_actor", "actor"),
            ("director", "director_to_movie", "movie"),
            ("actor", "actor_to_movie", "movie"),
        ]
    )
    # global -> local: movies 0,1,2,6 -> 0..3; directors 3,4 -> 0,1; actors 5,7,8 -> 0,1,2
    assert relation_pairs(ds, "movie_to_director") == {(0, 0), (1, 0), (2, 1), (3, 1)}
    assert relation_pairs(ds, "movie_to_actor") == {(0, 0), (0, 1), (3, 2)}
    assert relation_pairs(ds, "director_to_movie") == {(0, 0), (0, 1), (1, 2)}
    assert relation_pairs(ds, "actor_to_movie") == {(0, 0), (2, 3)}
    assert np.array_equal(ds.type_features["movie"], np.eye(4, 5, dtype=np.float32))
    assert ds.train_idx.tolist() == [0, 3] and ds.valid_idx.tolist() == [1] and ds.test_idx.tolist() == [2]
    assert ds.labels.tolist() == [0, 1, 2, 1]


def test_global_adjacency_named_relations_and_local_split(tmp_path: Path) -> None:
    imdb_files(tmp_path)
    np.savez(tmp_path / "local.npz", train=np.array([0, 3]), valid=np.array([1]), test=np.array([2]))
    manifest = imdb_manifest(
        tmp_path,
        adjacency={
            "path": "adjM.npz",
            "node_types": "node_types.npy",
            "type_names": TYPES,
            "relations": [["movie", "directed_by", "director"]],
        },
        split={"train": "local.npz:train", "valid": "local.npz:valid", "test": "local.npz:test", "ids": "local"},
    )
    result = run_cli("prepare", "manifest", str(manifest), str(tmp_path / "imdb"))
    assert result.returncode == 0, result.stderr
    ds = Dataset.open(tmp_path / "imdb")
    assert relation_pairs(ds, "directed_by") == {(0, 0), (1, 0), (2, 1), (3, 1)}
    assert ds.train_idx.tolist() == [0, 3]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {
                "split": {
                    "train": "train_val_test_idx.npz:train",
                    "valid": "train_val_test_idx.npz:val_idx",
                    "test": "train_val_test_idx.npz:test_idx",
                }
            },
            "no member 'train' in",
        ),
        (
            {
                "split": {
                    "train": "train_val_test_idx.npz:train_idx",
                    "valid": "train_val_test_idx.npz:val_idx",
                    "test": "bad.npy",
                }
            },
            "expected global ids of movie nodes (the adjacency's ids; 1 of 2 are not), found id 3 of type director",
        ),
        (
            {"adjacency": {"path": "features_0.npz", "node_types": "node_types.npy", "type_names": TYPES}},
            "expected a square adjacency [9, 9]",
        ),
        (
            {"adjacency": {"path": "adjM.npz", "node_types": "node_types.npy", "type_names": TYPES[:2]}},
            "expected type ids in [0, 2)",
        ),
        (
            {
                "adjacency": {
                    "path": "adjM.npz",
                    "node_types": "node_types.npy",
                    "type_names": TYPES,
                    "relations": [["actor", "x", "director"]],
                }
            },
            "relation 'x' expected edges from actor to director nodes, found none",
        ),
    ],
)
def test_global_adjacency_mistakes_are_one_line(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    imdb_files(tmp_path)
    result = run_cli("prepare", "manifest", str(imdb_manifest(tmp_path, **change)), str(tmp_path / "imdb"))
    assert result.returncode == 2, result.stdout
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "imdb").exists()
