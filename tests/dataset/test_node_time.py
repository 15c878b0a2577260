"""Node times: ``node_time.npy``, OGB's ``node_year`` and the edge times derived from them, carried by reorder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.edges.node_time import edge_times_from_nodes, target_node_times
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers import import_ogb
from graphtier.dataset.schema import NodeType, Relation, Schema
from graphtier.errors import DatasetError
from graphtier.graph.reorder import reorder_dataset

from .importers.helpers import assert_user_error, run_cli
from .importers.test_ogb import _gz, write_ogb


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 30), st.integers(0, 80), st.integers(0, 2**31))
def test_edge_times_from_nodes_match_numpy(n: int, e: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    deg = rng.multinomial(e, np.ones(n) / n)
    indptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    indices = rng.integers(0, n, e).astype(np.int32)
    node_time = rng.integers(-5, 5, n).astype(np.int64)
    expected = np.maximum(node_time[indices], np.repeat(node_time, deg))
    np.testing.assert_array_equal(edge_times_from_nodes(indptr, indices, node_time), expected)


def _arxiv_like(root: Path) -> np.ndarray:
    write_ogb(root)
    years = np.random.default_rng(3).integers(1990, 2021, 40)
    _gz(root / "raw" / "node_year.csv.gz", [str(y) for y in years])
    return years


def test_target_node_times_read_the_target_types_rows() -> None:
    """Local ids of the target type index node_time (global ids) after the type's offset; 0 when homogeneous."""
    times = np.arange(100, 110, dtype=np.int64)
    ids = np.array([3, 0, 3], np.int32)
    homogeneous = Schema.homogeneous(10, 0)
    np.testing.assert_array_equal(target_node_times(times, homogeneous, ids), times[[3, 0, 3]])
    types = (NodeType("author", 4, 0, 0, "float32"), NodeType("paper", 6, 4, 8, "float32"))
    typed = Schema(types, (Relation("author", "writes", "paper", 0, 0),), "paper", True)
    got = target_node_times(times, typed, ids)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, times[[7, 4, 7]])


def test_ogb_node_years_become_node_and_edge_times(tmp_path: Path) -> None:
    years = _arxiv_like(tmp_path / "arxiv")
    ds = import_ogb(tmp_path / "arxiv", tmp_path / "o")
    np.testing.assert_array_equal(ds.node_time, years)
    assert ds.meta["node_time"] == {"unit": "year", "min": int(years.min()), "max": int(years.max())}
    dst = np.repeat(np.arange(ds.num_nodes), np.diff(ds.indptr))
    np.testing.assert_array_equal(ds.edge_time, np.maximum(years[ds.indices], years[dst]))
    assert ds.meta["edge_time"]["unit"] == "year"
    info = run_cli("info", str(tmp_path / "o"), "--json")
    assert json.loads(info.stdout)["node_time"]["min"] == int(years.min())


def test_reorder_moves_node_times_with_their_nodes(tmp_path: Path) -> None:
    _arxiv_like(tmp_path / "arxiv")
    ds = import_ogb(tmp_path / "arxiv", tmp_path / "o")
    out, _ = reorder_dataset(ds, tmp_path / "r", scores=np.arange(ds.num_nodes, dtype=np.float64), score_label="test")
    perm = np.load(tmp_path / "r" / "perm.npy")
    np.testing.assert_array_equal(out.node_time, ds.node_time[perm])
    assert out.meta["node_time"] == ds.meta["node_time"]


def test_ogb_node_year_count_is_checked(tmp_path: Path) -> None:
    root = tmp_path / "arxiv"
    write_ogb(root)
    _gz(root / "raw" / "node_year.csv.gz", ["2000"] * 39)
    result = run_cli("prepare", "ogb", str(root), str(tmp_path / "o"))
    assert_user_error(result, "node_year.csv.gz", "expected 40 years (one per node), found 39")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "damage, fragment",
    [
        ("no_meta", "field 'node_time' missing"),
        ("no_file", "node_time.npy: file missing"),
        ("dtype", "expected dtype int64, found int32"),
        ("range", "field 'node_time.max' expected"),
    ],
)
def test_node_time_files_are_validated(tmp_path: Path, damage: str, fragment: str) -> None:
    _arxiv_like(tmp_path / "arxiv")
    root = tmp_path / "o"
    import_ogb(tmp_path / "arxiv", root)
    meta_path = root / "meta.json"
    meta = json.loads(meta_path.read_text())
    times = np.load(root / "node_time.npy")
    if damage == "no_meta":
        del meta["node_time"]
    elif damage == "no_file":
        (root / "node_time.npy").unlink()
    elif damage == "dtype":
        np.save(root / "node_time.npy", times.astype(np.int32))
    else:
        meta["node_time"]["max"] += 1
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(DatasetError, match=fragment):
        Dataset.open(root)
