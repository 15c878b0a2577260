"""Class ids far beyond any real class count (a node id or hash used as a label) are refused up front.

``num_classes`` is the largest class id + 1 and sizes the model's output layer (hidden x classes), the
class centroids of ``--synthetic-feature-signal`` and every per-class table; a label 999999999 would
ask for a billion classes. The bound is :data:`~graphtier.dataset.importers.common.labels.MAX_CLASSES` = 2^24.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from graphtier.dataset import resources
from graphtier.dataset.importers.common.features import synthetic_features
from graphtier.dataset.importers.common.labels import MAX_CLASSES
from graphtier.errors import ResourceError

from .helpers import assert_user_error, run_cli
from .test_ogb import write_ogb


def _edges(tmp_path: Path) -> Path:
    path = tmp_path / "edges.txt"
    path.write_text("0 1\n1 2\n")
    return path


@pytest.mark.parametrize(
    ("name", "write"),
    [
        ("pairs.txt", lambda p: p.write_text("0,0\n1,999999999\n2,1\n")),
        ("lines.txt", lambda p: p.write_text("0\n999999999\n1\n")),
        ("labels.npy", lambda p: np.save(p, np.array([0, 999999999, 1], np.int64))),
    ],
)
def test_huge_label_id_is_refused(tmp_path: Path, name: str, write) -> None:
    path = tmp_path / name
    write(path)
    result = run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "out"), "--labels", str(path))
    assert_user_error(result, name, "max label 999,999,999", "16,777,216", "1,024,000,000,000 bytes")
    assert not (tmp_path / "out").exists()


def test_largest_allowed_label_passes(tmp_path: Path) -> None:
    path = tmp_path / "labels.txt"
    path.write_text(f"0,0\n1,{MAX_CLASSES - 1}\n")
    result = run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "out"), "--labels", str(path))
    assert result.returncode == 0, result.stderr


def test_ogb_label_beyond_float32_precision(tmp_path: Path) -> None:
    root = tmp_path / "g"
    write_ogb(root)
    lines = ["1"] * 40
    lines[3] = str(MAX_CLASSES + 1)  # read as float32: 16777216, not the id in the file
    (root / "raw" / "node-label.csv.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    result = run_cli("prepare", "ogb", str(root), str(tmp_path / "out"))
    assert_user_error(result, "node-label.csv.gz", "max label 16,777,216")


def test_mat_one_hot_with_too_many_columns(tmp_path: Path) -> None:
    path = tmp_path / "g.mat"
    adjacency = sp.csc_matrix(np.array([[0, 1], [1, 0]], dtype=np.float64))
    one_hot = sp.csc_matrix((np.ones(2), (np.array([0, 1]), np.array([0, MAX_CLASSES]))), shape=(2, MAX_CLASSES + 1))
    scipy.io.savemat(path, {"A": adjacency, "label": one_hot})
    result = run_cli("prepare", "mat", str(path), str(tmp_path / "out"))
    assert_user_error(result, "g.mat", "variable 'label'", f"one-hot matrix of {MAX_CLASSES + 1:,} columns")


def test_synthetic_labels_bound(tmp_path: Path) -> None:
    result = run_cli(
        "prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "out"), "--synthetic-labels", str(MAX_CLASSES + 1)
    )
    assert_user_error(result, "--synthetic-labels", "16,777,216")


def test_feature_signal_centroids_are_a_checked_allocation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "available_memory", lambda: 1 << 20)
    labels = np.array([0, MAX_CLASSES - 1], np.int64)
    with pytest.raises(ResourceError, match="class centroids.*16,777,216 classes x 64"):
        synthetic_features(labels, 64, 0, signal=1.0)
