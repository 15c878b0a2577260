"""``graphtier prepare ogb`` on small files in the OGB node-property raw layout, written by the test."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.csc import edges_to_csc_reference
from graphtier.dataset.importers import import_ogb

from .helpers import assert_user_error, run_cli


def _gz(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))


def write_ogb(root: Path, n: int = 40, e: int = 120, dim: int = 3, seed: int = 0) -> dict[str, np.ndarray]:
    """An ogbn-style folder with raw/ and split/scaffold/; returns the arrays it wrote."""
    rng = np.random.default_rng(seed)
    edges = rng.integers(0, n, size=(e, 2))
    feats = rng.standard_normal((n, dim)).astype(np.float32)
    labels = rng.integers(0, 4, n).astype(np.float64)
    labels[::7] = np.nan
    raw = root / "raw"
    _gz(raw / "edge.csv.gz", [f"{a},{b}" for a, b in edges])
    _gz(raw / "num-node-list.csv.gz", [str(n)])
    _gz(raw / "num-edge-list.csv.gz", [str(e)])
    _gz(raw / "node-feat.csv.gz", [",".join(repr(float(v)) for v in row) for row in feats])
    _gz(raw / "node-label.csv.gz", ["nan" if np.isnan(v) else str(int(v)) for v in labels])
    order = rng.permutation(n)
    split = {"train": np.sort(order[:20]), "valid": np.sort(order[20:30]), "test": np.sort(order[30:])}
    for part, ids in split.items():
        _gz(root / "split" / "scaffold" / f"{part}.csv.gz", [str(i) for i in ids])
    return {"edges": edges, "feats": feats, "labels": labels, **split}


def test_ogb_layout(tmp_path: Path) -> None:
    written = write_ogb(tmp_path / "ogbn_tiny")
    ds = import_ogb(tmp_path / "ogbn_tiny", tmp_path / "o", undirected=True)
    edges = written["edges"]
    loops = edges[:, 0] == edges[:, 1]
    src = np.concatenate([edges[:, 0], edges[~loops, 1]])
    dst = np.concatenate([edges[:, 1], edges[~loops, 0]])
    indptr, indices = edges_to_csc_reference(src, dst, 40, dedup=True)  # a pair listed both ways is stored once
    np.testing.assert_array_equal(ds.indptr, indptr)
    np.testing.assert_array_equal(ds.indices, indices)
    np.testing.assert_array_equal(ds.features, written["feats"])
    expected_labels = np.where(np.isnan(written["labels"]), -1, np.nan_to_num(written["labels"])).astype(np.int64)
    np.testing.assert_array_equal(ds.labels, expected_labels)
    assert ds.num_classes == int(expected_labels.max()) + 1
    for part in ("train", "valid", "test"):
        np.testing.assert_array_equal(ds.split(part), written[part])
    assert ds.name == "o" and not ds.directed  # default name: the output directory
    assert ds.meta["source"]["options"]["scheme"] == "scaffold"


def test_ogb_without_features_or_split(tmp_path: Path) -> None:
    root = tmp_path / "g"
    write_ogb(root)
    (root / "raw" / "node-feat.csv.gz").unlink()
    ds = import_ogb(root, tmp_path / "o", synthetic_features=6, split=(0.5, 0.25, 0.25), seed=2)
    assert ds.feature_dim == 6 and ds.directed
    labelled = int((ds.labels >= 0).sum())
    assert ds.train_idx.size + ds.valid_idx.size + ds.test_idx.size == labelled


@pytest.mark.parametrize(
    "damage, fragments",
    [
        ("edge_count", ["edge.csv.gz", "expected 121 edges"]),
        ("feature_rows", ["node-feat.csv.gz", "expected 40 feature rows (one per node), found 39"]),
        ("edge_range", ["edge.csv.gz", "expected node ids in [0, 40)"]),
        ("truncated", ["edge.csv.gz", "truncated or damaged gzip"]),
        ("no_raw", ["raw: folder not found"]),
    ],
)
def test_ogb_bad_input(tmp_path: Path, damage: str, fragments: list[str]) -> None:
    root = tmp_path / "g"
    write_ogb(root)
    raw = root / "raw"
    if damage == "edge_count":
        _gz(raw / "num-edge-list.csv.gz", ["121"])
    elif damage == "feature_rows":
        lines = gzip.decompress((raw / "node-feat.csv.gz").read_bytes()).decode().splitlines()
        _gz(raw / "node-feat.csv.gz", lines[:-1])
    elif damage == "edge_range":
        _gz(raw / "edge.csv.gz", ["0,1", "40,2"])
    elif damage == "truncated":
        big = gzip.compress("".join(f"{i % 40},{(i * 7) % 40}\n" for i in range(40000)).encode())
        (raw / "edge.csv.gz").write_bytes(big[: len(big) // 2])
    elif damage == "no_raw":
        for p in raw.iterdir():
            p.unlink()
        raw.rmdir()
    assert_user_error(run_cli("prepare", "ogb", str(root), str(tmp_path / "out")), *fragments)
    assert not (tmp_path / "out").exists()
