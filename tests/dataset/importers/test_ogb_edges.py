"""``prepare ogb`` with OGB's per-edge files: ``edge_year`` (edge times), ``edge_weight`` and ``edge-feat`` (edge
features), on small files in OGB's raw layout written by the test (ogbl-collab and ogbn-proteins shapes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.importers import import_ogb

from .helpers import assert_user_error, run_cli
from .test_ogb import _gz, write_ogb


def _collab_like(root: Path, feat_dim: int = 0, seed: int = 1) -> dict[str, np.ndarray]:
    """``write_ogb``'s folder plus a year and a weight per edge line (pairs repeat, as collaborations in several
    years do), and ``feat_dim`` edge feature columns when > 0."""
    written = write_ogb(root, n=30, e=150, seed=seed)
    rng = np.random.default_rng(seed + 10)
    e = written["edges"].shape[0]
    years = rng.integers(2000, 2020, e)
    weights = rng.integers(1, 5, e).astype(np.float32)
    _gz(root / "raw" / "edge_year.csv.gz", [str(y) for y in years])
    _gz(root / "raw" / "edge_weight.csv.gz", [str(int(w)) for w in weights])
    feats = rng.standard_normal((e, feat_dim)).astype(np.float32)
    if feat_dim:
        _gz(root / "raw" / "edge-feat.csv.gz", [",".join(repr(float(v)) for v in row) for row in feats])
    return {**written, "years": years, "weights": weights, "edge_feats": feats}


def _expected_rows(edges: np.ndarray, years: np.ndarray, undirected: bool) -> dict[tuple[int, int], int]:
    """(dst, src) of every stored edge -> the input line it keeps: the earliest copy (by year, then line), a reverse
    edge its edge's line."""
    keep: dict[tuple[int, int], tuple[int, int]] = {}
    for line, (a, b) in enumerate(edges.tolist()):
        for src, dst in ((a, b), (b, a)) if undirected and a != b else ((a, b),):
            key, rank = (dst, src), (int(years[line]), line)
            if key not in keep or rank < keep[key]:
                keep[key] = rank
    return {key: line for key, (_, line) in keep.items()}


@pytest.mark.parametrize("undirected", [False, True])
def test_edge_years_and_weights_follow_their_edges(tmp_path: Path, undirected: bool) -> None:
    written = _collab_like(tmp_path / "collab")
    ds = import_ogb(tmp_path / "collab", tmp_path / "o", undirected=undirected)
    dst = np.repeat(np.arange(ds.num_nodes), np.diff(ds.indptr))
    lines = _expected_rows(written["edges"], written["years"], undirected)
    assert len(lines) == ds.num_edges
    kept = np.array([lines[(int(d), int(s))] for d, s in zip(dst, ds.indices)])
    np.testing.assert_array_equal(ds.edge_time, written["years"][kept])
    assert ds.edge_features is not None and ds.edge_features.shape == (ds.num_edges, 1)
    np.testing.assert_array_equal(ds.edge_features[:, 0], written["weights"][kept])
    assert ds.meta["edge_time"]["unit"] == "year"
    assert ds.meta["edge_time"]["min"] == int(ds.edge_time.min())
    info = run_cli("info", str(tmp_path / "o"))
    assert "edge_weight" in info.stdout


def test_edge_feature_files_are_joined_and_carried_by_an_edge_split(tmp_path: Path) -> None:
    written = _collab_like(tmp_path / "collab", feat_dim=3)
    full = import_ogb(tmp_path / "collab", tmp_path / "full", split=None)
    assert full.edge_features is not None and full.edge_features.shape == (full.num_edges, 4)
    assert full.meta["edge_features"]["columns"] == ["edge_feat 0", "edge_feat 1", "edge_feat 2", "edge_weight"]
    dst = np.repeat(np.arange(full.num_nodes), np.diff(full.indptr))
    lines = _expected_rows(written["edges"], written["years"], False)
    kept = np.array([lines[(int(d), int(s))] for d, s in zip(dst, full.indices)])
    np.testing.assert_array_equal(full.edge_features[:, :3], written["edge_feats"][kept])
    np.testing.assert_array_equal(full.edge_features[:, 3], written["weights"][kept])
    split = import_ogb(tmp_path / "collab", tmp_path / "split", edge_split=(0.8, 0.1, 0.1), split=None)
    stored = {
        (int(d), int(s)): (t, tuple(f)) for d, s, t, f in zip(dst, full.indices, full.edge_time, full.edge_features)
    }
    dst = np.repeat(np.arange(split.num_nodes), np.diff(split.indptr))
    assert split.edge_features is not None and 0 < split.num_edges < full.num_edges
    for d, s, t, f in zip(dst, split.indices, split.edge_time, split.edge_features):
        assert stored[(int(d), int(s))] == (t, tuple(f))  # the edges that stay keep their year and features


@pytest.mark.parametrize(
    ("damage", "fragments"),
    [
        ("short_years", ["edge_year.csv.gz", "one year per edge line", "149"]),
        ("bad_weight", ["edge_weight.csv.gz", "line 5"]),
        ("short_weights", ["edge_weight.csv.gz", "expected 150 rows"]),
    ],
)
def test_bad_edge_files_are_one_line_errors(tmp_path: Path, damage: str, fragments: list[str]) -> None:
    root = tmp_path / "collab"
    written = _collab_like(root)
    if damage == "short_years":
        _gz(root / "raw" / "edge_year.csv.gz", [str(y) for y in written["years"][:-1]])
    elif damage == "bad_weight":
        weights = [str(int(w)) for w in written["weights"]]
        weights[4] = "many"
        _gz(root / "raw" / "edge_weight.csv.gz", weights)
    else:
        _gz(root / "raw" / "edge_weight.csv.gz", [str(int(w)) for w in written["weights"][:-1]])
    assert_user_error(run_cli("prepare", "ogb", str(root), str(tmp_path / "o")), *fragments)
    assert not (tmp_path / "o").exists()
