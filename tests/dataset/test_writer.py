"""DatasetWriter: atomic writes, no half-written output, overwrite only when asked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset, DatasetError, DatasetWriter
from tests.conftest import write_labelled_graph


def _meta(num_nodes: int, num_edges: int) -> dict:
    return {
        "name": "w",
        "num_nodes": num_nodes,
        "num_edges": num_edges,
        "directed": True,
        "feature_dim": 0,
        "feature_dtype": "float32",
        "num_classes": 0,
        "source": {"importer": "test"},
    }


def test_finish_renames_into_place(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    with DatasetWriter(out) as writer:
        writer.save("indptr", np.array([0, 1, 2], dtype=np.int64))
        writer.save("indices", np.array([1, 0], dtype=np.int32))
        ds = writer.finish(_meta(2, 2))
    assert ds.path == out and ds.meta["node_order"] == "original" and "created" in ds.meta["source"]
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


def test_crash_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    with pytest.raises(RuntimeError):
        with DatasetWriter(out) as writer:
            writer.save("indptr", np.array([0, 1], dtype=np.int64))
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_invalid_dataset_is_not_renamed(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    with pytest.raises(DatasetError, match="indices.npy"):
        with DatasetWriter(out) as writer:
            writer.save("indptr", np.array([0, 1, 2], dtype=np.int64))
            writer.save("indices", np.array([1, 5], dtype=np.int32))
            writer.finish(_meta(2, 2))
    assert list(tmp_path.iterdir()) == []


def test_refuses_overwrite_unless_asked(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    write_labelled_graph(out, num_nodes=30)
    with pytest.raises(DatasetError, match="--overwrite"):
        DatasetWriter(out)
    with DatasetWriter(out, overwrite=True) as writer:
        writer.save("indptr", np.array([0, 0], dtype=np.int64))
        writer.save("indices", np.array([], dtype=np.int32))
        writer.finish(_meta(1, 0))
    assert Dataset.open(out).num_nodes == 1
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


def test_memmap_chunked_write(tmp_path: Path) -> None:
    with DatasetWriter(tmp_path / "m") as writer:
        writer.save("indptr", np.zeros(5, dtype=np.int64))
        writer.save("indices", np.zeros(0, dtype=np.int32))
        feats = writer.open_memmap("features", (4, 3), np.float16)
        for row in range(4):
            feats[row] = row
        feats.flush()
        del feats
        meta = _meta(4, 0) | {"feature_dim": 3, "feature_dtype": "float16"}
        ds = writer.finish(meta)
    assert ds.features is not None and ds.features[3, 2] == 3
