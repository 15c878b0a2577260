"""The manifest importer (``graphtier prepare manifest``): heco-acm, a tiny graph, every bad input as one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from graphtier.dataset import Dataset
from graphtier.dataset.importers.formats.manifest import import_manifest
from graphtier.errors import DatasetError
from tests.cli.helpers import run
from tests.conftest import shared_data

ACM_FILES = ("p_feat.npz", "labels.npy", "pa.txt", "ps.txt", "train_20.npy", "val_20.npy", "test_20.npy")


def acm_manifest(root: Path) -> dict[str, Any]:
    return {
        "name": "acm",
        "nodes": {
            "paper": {"count": 4019, "features": str(root / "p_feat.npz"), "labels": str(root / "labels.npy")},
            "author": {"count": 7167},
            "subject": {"count": 60},
        },
        "edges": [
            {"type": ["paper", "written_by", "author"], "path": str(root / "pa.txt")},
            {"type": ["paper", "about", "subject"], "path": str(root / "ps.txt")},
        ],
        "target": "paper",
        "split": {
            "train": str(root / "train_20.npy"),
            "valid": str(root / "val_20.npy"),
            "test": str(root / "test_20.npy"),
        },
    }


def test_heco_acm(tmp_path: Path) -> None:
    root = shared_data("heco-acm")
    manifest = tmp_path / "acm.json"
    manifest.write_text(json.dumps(acm_manifest(root)))
    ds = import_manifest(manifest, tmp_path / "acm")
    schema = ds.schema
    assert ds.is_hetero and schema.target == "paper"
    assert [(t.name, t.count, t.feature_dim) for t in schema.node_types] == [
        ("paper", 4019, 1902),
        ("author", 7167, 0),
        ("subject", 60, 0),
    ]
    assert [(r.type, r.num_edges) for r in schema.relations] == [
        (("paper", "written_by", "author"), 13407),
        (("paper", "about", "subject"), 4019),
    ]
    assert ds.num_classes == 3 and ds.labels.shape == (4019,) and ds.labels.min() >= 0
    assert np.array_equal(ds.train_idx, np.load(root / "train_20.npy"))
    dense = sp.load_npz(root / "p_feat.npz").toarray().astype(np.float32)
    assert np.array_equal(ds.type_features["paper"], dense)
    pa = np.loadtxt(root / "pa.txt", dtype=np.int64)
    indptr, sources = ds.relation_csc(schema.relation("written_by"))
    author = 5450 if 5450 in pa[:, 1] else int(pa[0, 1])
    expected = np.sort(pa[pa[:, 1] == author, 0])
    row = indptr[author : author + 2] - indptr[0]
    assert np.array_equal(sources[row[0] : row[1]], expected)  # paper offset is 0


def _tiny(tmp_path: Path, **changes: Any) -> Path:
    """A tiny manifest (relative paths): 5 items with 3-column features in two files, 3 users, 2 relations."""
    np.save(tmp_path / "item_a.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    (tmp_path / "item_b.txt").write_text("1 2 3\n4 5 6\n7 8 9\n")
    np.save(tmp_path / "labels.npy", np.array([0.0, 1.0, np.nan, 1.0, -1.0]))
    (tmp_path / "buys.csv").write_text("src,dst\n0,1\n1,4\n2,0\n2,4\n")
    np.save(tmp_path / "likes.npy", np.array([[0, 1], [3, 2]], dtype=np.int32))
    np.save(tmp_path / "train.npy", np.array([0, 1]))
    (tmp_path / "valid.txt").write_text("3\n")
    manifest: dict[str, Any] = {
        "nodes": {
            "user": {"count": 3},
            "item": {"features": ["item_a.npy", "item_b.txt"], "labels": "labels.npy"},
        },
        "edges": [
            {"type": ["user", "buys", "item"], "path": "buys.csv"},
            {"type": ["item", "liked_by", "user"], "path": "likes.npy"},
        ],
        "target": "item",
        "split": {"train": "train.npy", "valid": "valid.txt"},
    }
    for key, value in changes.items():
        where = manifest
        *parents, last = key.split("/")
        for part in parents:
            where = where[int(part)] if isinstance(where, list) else where[part]
        if value is _DROP:
            del where[last]  # type: ignore[arg-type]
        elif isinstance(where, list):
            where[int(last)] = value
        else:
            where[last] = value
    path = tmp_path / "graph.json"
    path.write_text(json.dumps(manifest))
    return path


_DROP = object()


def test_tiny_manifest_add_reverse_and_labels(tmp_path: Path) -> None:
    ds = import_manifest(_tiny(tmp_path), tmp_path / "out", add_reverse=True)
    schema = ds.schema
    assert [(t.name, t.count, t.feature_dim) for t in schema.node_types] == [("user", 3, 0), ("item", 5, 3)]
    assert [r.type for r in schema.relations] == [
        ("user", "buys", "item"),
        ("item", "liked_by", "user"),
        ("item", "rev_buys", "user"),
        ("user", "rev_liked_by", "item"),
    ]
    assert ds.type_features["item"][:, 0].tolist() == [0, 3, 1, 4, 7]
    assert ds.labels.tolist() == [0, 1, -1, 1, -1] and ds.num_classes == 2
    assert ds.valid_idx.tolist() == [3] and ds.test_idx is None
    indptr, sources = ds.relation_csc(schema.relation("rev_buys"))  # user u <- items it bought; item offset 3
    local = indptr - indptr[0]
    assert sources[local[2] : local[3]].tolist() == [3 + 0, 3 + 4]


def test_manifest_labels_that_are_class_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Text labels naming classes get ids in sorted name order; the names are kept and shown by info."""
    (tmp_path / "names.txt").write_text("dog\ncat\nbird\ncat\ndog\n")
    ds = import_manifest(_tiny(tmp_path, **{"nodes/item/labels": "names.txt"}), tmp_path / "out")
    assert ds.labels.tolist() == [2, 1, 0, 1, 2] and ds.num_classes == 3
    assert json.loads((ds.path / "label_names.json").read_text()) == ["bird", "cat", "dog"]
    assert Dataset.open(ds.path).class_names == ["bird", "cat", "dog"]
    code, out, err = run(["info", str(ds.path)], capsys)
    assert code == 0, err
    assert "bird" in out and "dog" in out, out
    (tmp_path / "short.txt").write_text("dog\ncat\n")
    with pytest.raises(
        DatasetError, match=r"short.txt: nodes.item.labels: expected 5 labels \(one per node\), found 2"
    ):
        import_manifest(_tiny(tmp_path, **{"nodes/item/labels": "short.txt"}), tmp_path / "short")


def test_yaml_manifest(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    json_path = _tiny(tmp_path)
    yaml_path = tmp_path / "graph.yaml"
    yaml_path.write_text(yaml.safe_dump(json.loads(json_path.read_text())))
    ds = import_manifest(yaml_path, tmp_path / "out")
    assert ds.schema.num_edges == 6


def test_yaml_manifest_without_pyyaml_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML is imported only to read a YAML manifest; where it is missing that is one line saying so."""
    yaml_path = tmp_path / "graph.yaml"
    yaml_path.write_text("nodes: {user: {count: 3}}\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` raises ImportError
    with pytest.raises(DatasetError) as info:
        import_manifest(yaml_path, tmp_path / "out")
    assert str(info.value).startswith(f"{yaml_path}: reading a YAML manifest needs PyYAML")
    assert "pip install pyyaml" in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "out").exists()


def test_graphtier_and_json_manifests_work_without_pyyaml(tmp_path: Path) -> None:
    """With ``import yaml`` failing (a machine without PyYAML; numba imports it only when present), graphtier,
    its CLI and a JSON manifest import work."""
    manifest = _tiny(tmp_path)
    code = (
        "import sys; sys.modules['yaml'] = None\n"
        "import graphtier, graphtier.cli\n"
        "from graphtier.dataset.importers.formats.manifest import import_manifest\n"
        f"print(import_manifest({str(manifest)!r}, {str(tmp_path / 'out')!r}).schema.num_edges)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "6"


@pytest.mark.parametrize(
    ("changes", "fragments"),
    [
        ({"edges/0/path": "missing.txt"}, ["graph.json: edges[0].path", "missing.txt (not found)"]),
        ({"edges/1/type": ["item", "liked_by", "person"]}, ["edges[1].type", "'person'", "user, item"]),
        ({"target": "shop"}, ["target", "'shop'"]),
        ({"nodes/user/colour": "red"}, ["nodes.user", "unknown 'colour'"]),
        ({"splits": {}}, ["(top level)", "unknown 'splits'"]),
        ({"split/val": "valid.txt"}, ["split", "unknown 'val'"]),
        ({"split": _DROP}, ["nodes.item.labels", "no split"]),
        ({"nodes/user/labels": "labels.npy"}, ["nodes.user.labels", "target type 'item'"]),
        ({"nodes/user/count": _DROP}, ["nodes.user.count", "node count"]),
        ({"nodes/user/count": 2}, ["buys.csv", "('user', 'buys', 'item')", "user ids in [0, 2)", "[0, 2]"]),
        ({"nodes/item/count": 4}, ["nodes.item.features", "expected 4 rows", "found 5"]),
        (
            {"nodes/item/features": ["item_a.npy", "wide.npy"]},
            ["wide.npy", "nodes.item.features", "3 feature columns", "found 4"],
        ),
        ({"nodes/item/labels": "short.npy"}, ["short.npy", "nodes.item.labels", "5 labels", "(4,)"]),
        ({"nodes/item/labels": "fraction.npy"}, ["fraction.npy", "fractional value 0.5 in row 1"]),
        ({"split/valid": "far.txt"}, ["far.txt", "split.valid", "item ids in [0, 5)", "[7, 7]"]),
        ({"split/valid": "uint.npy"}, ["uint.npy", "split.valid", "[18446744073709551615, 18446744073709551615]"]),
        (
            {"split/valid": "overlap.txt"},
            [
                "overlap.txt: split.valid: expected ids disjoint from split.train",
                "train.npy), found 1 in both (first 1)",
            ],
        ),
        ({"split/valid": "twice.txt"}, ["twice.txt: split.valid: expected distinct ids, found 1 repeated"]),
    ],
)
def test_bad_manifest_one_line(tmp_path: Path, changes: dict[str, Any], fragments: list[str]) -> None:
    np.save(tmp_path / "wide.npy", np.zeros((3, 4), np.float32))
    np.save(tmp_path / "short.npy", np.zeros(4, np.int64))
    np.save(tmp_path / "fraction.npy", np.array([0, 0.5, 1, 1, 0]))
    (tmp_path / "far.txt").write_text("7\n")
    np.save(tmp_path / "uint.npy", np.array([2**64 - 1], np.uint64))
    (tmp_path / "twice.txt").write_text("3\n3\n")
    (tmp_path / "overlap.txt").write_text("1\n3\n")
    manifest = _tiny(tmp_path, **changes)
    with pytest.raises(DatasetError) as info:
        import_manifest(manifest, tmp_path / "out")
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    assert not (tmp_path / "out").exists()


def test_relation_ids_beyond_count_name_file_and_relation(tmp_path: Path) -> None:
    (tmp_path / "edges.txt").write_text("0 1\n3 1\n")
    manifest = _tiny(tmp_path, **{"edges/0/path": "edges.txt"})
    with pytest.raises(
        DatasetError, match=r"edges\.txt: relation \('user', 'buys', 'item'\): expected user ids in \[0, 3\)"
    ):
        import_manifest(manifest, tmp_path / "out")


def test_cli_prepare_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _tiny(tmp_path)
    code, out, err = run(["prepare", "manifest", str(manifest), str(tmp_path / "out"), "--add-reverse"], capsys)
    assert code == 0, err
    assert Dataset.open(tmp_path / "out").schema.num_edges == 12
    code, out, err = run(["prepare", "manifest", str(manifest), str(tmp_path / "out")], capsys)
    assert code == 2 and "already exists" in err and len(err.strip().splitlines()) == 1
    code, out, err = run(["prepare", "manifest", str(manifest), str(tmp_path / "out"), "--overwrite"], capsys)
    assert code == 0, err
    assert Dataset.open(tmp_path / "out").schema.num_edges == 6
    (tmp_path / "bad.json").write_text("{nodes")
    code, out, err = run(["prepare", "manifest", str(tmp_path / "bad.json"), str(tmp_path / "x")], capsys)
    assert code == 2 and "bad.json: not valid JSON" in err and len(err.strip().splitlines()) == 1
