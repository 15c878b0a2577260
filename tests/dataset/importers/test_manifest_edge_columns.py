"""A manifest relation's ``features`` and ``label`` (issue 38): every relation's edges keep their input rows through
the typed CSC build (repeats keep their earliest line's row), --add-reverse (a reverse edge copies its edge's row),
the typed edge split and reorder; an ``.npy`` of features aligned with the relation's rows; bad keys are one line."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset
from graphtier.dataset.edges.edge_data import link_labels
from graphtier.dataset.importers.formats.manifest import import_manifest
from tests.dataset.importers.helpers import assert_user_error, run_cli

USERS, ITEMS, TAGS = 30, 20, 5


def write_manifest(root: Path, *, tagged_features: object = "npy", tagged_label: object = 2, seed: int = 0) -> Path:
    """Relation ``rates`` (csv with a header; features by name, label by name; repeats) and ``tagged`` (text, its
    features in an ``.npy`` aligned with its lines, or as columns); row k of every input is distinct."""
    rng = np.random.default_rng(seed)
    rates = rng.integers(0, [USERS, ITEMS], (300, 2))
    lines = "".join(f"{u},{i},{0.25 * k},{k + 1000}\n" for k, (u, i) in enumerate(rates.tolist()))
    (root / "rates.csv").write_text("user,item,score,stars\n" + lines)
    tagged = rng.integers(0, [ITEMS, TAGS], (60, 2))
    (root / "tagged.txt").write_text("".join(f"{i} {g} {-k}\n" for k, (i, g) in enumerate(tagged.tolist())))
    np.save(root / "tagged_feat.npy", np.arange(60, dtype=np.float32)[:, None] * np.array([[1.0, 0.25]], np.float32))
    edges: list[dict[str, object]] = [
        {"type": ["user", "rates", "item"], "path": str(root / "rates.csv"), "features": ["score", "stars"],
         "label": "stars"},
        {"type": ["item", "tagged", "tag"], "path": str(root / "tagged.txt")},
    ]  # fmt: skip
    if tagged_features == "npy":
        edges[1]["features"] = str(root / "tagged_feat.npy")
    elif tagged_features is not None:
        edges[1]["features"] = tagged_features
    if tagged_label is not None:
        edges[1]["label"] = tagged_label
    manifest = {
        "nodes": {"user": {"count": USERS}, "item": {"count": ITEMS}, "tag": {"count": TAGS}},
        "edges": edges,
        "target": "item",
    }
    path = root / "m.json"
    path.write_text(json.dumps(manifest))
    return path


def input_rows(root: Path) -> dict[tuple[str, int, int], list[tuple[tuple[float, ...], float]]]:
    """(relation, local src, local dst) -> (feature row, label) of every input line of that edge, in file order."""
    out: dict[tuple[str, int, int], list[tuple[tuple[float, ...], float]]] = defaultdict(list)
    for row in np.loadtxt(root / "rates.csv", delimiter=",", skiprows=1, ndmin=2):
        out[("rates", int(row[0]), int(row[1]))].append(((row[2], row[3]), row[3]))
    feats = np.load(root / "tagged_feat.npy")
    for k, row in enumerate(np.loadtxt(root / "tagged.txt", ndmin=2)):
        out[("tagged", int(row[0]), int(row[1]))].append((tuple(feats[k].tolist()), row[2]))
    return out


def stored_rows(dataset: Dataset) -> dict[tuple[str, int, int], list[tuple[tuple[float, ...], float]]]:
    """(relation, local src, local dst) -> the stored (feature row, label) of each copy, via perm.npy."""
    schema = dataset.schema
    perm = np.asarray(dataset.extra["perm"]) if "perm" in dataset.extra else np.arange(dataset.num_nodes)
    feats, labels = np.asarray(dataset.edge_features), np.asarray(dataset.edge_label)
    out: dict[tuple[str, int, int], list[tuple[tuple[float, ...], float]]] = defaultdict(list)
    for rel in schema.relations:
        indptr, sources = dataset.relation_csc(rel)
        src_type, dst_type = schema.node_type(rel.src), schema.node_type(rel.dst)
        base = int(indptr[0])
        for v in range(dst_type.count):
            for p in range(int(indptr[v]), int(indptr[v + 1])):
                src = int(perm[int(sources[p - base])]) - src_type.offset
                dst = int(perm[dst_type.offset + v]) - dst_type.offset
                out[(rel.name, src, dst)].append((tuple(feats[p].tolist()), float(labels[p])))
    return out


def test_relation_rows_follow_their_edges(tmp_path: Path) -> None:
    ds = import_manifest(write_manifest(tmp_path), tmp_path / "d", add_reverse=True)
    assert ds.meta["edge_features"] == {"dim": 2, "dtype": "float32", "columns": ["score", "stars"]}
    assert ds.meta["edge_label"] == {"column": "stars"}
    assert ds.edge_features.shape == (ds.num_edges, 2) and ds.edge_label.shape == (ds.num_edges,)
    want = {k: v[:1] for k, v in input_rows(tmp_path).items()}  # repeats merged: the first line's row
    want |= {(f"rev_{name}", d, s): v for (name, s, d), v in want.items()}  # a reverse edge copies the row
    assert stored_rows(ds) == want


def test_typed_edge_split_and_reorder_carry_the_rows(tmp_path: Path) -> None:
    ds = import_manifest(
        write_manifest(tmp_path), tmp_path / "d", edge_split="0.8,0.1,0.1", split_relation="user,rates,item"
    )
    full = {k: v[:1] for k, v in input_rows(tmp_path).items()}
    stored = stored_rows(ds)
    assert len(stored) < len(full) and all(full[k] == v for k, v in stored.items())
    result = run_cli("reorder", str(ds.path), str(tmp_path / "r"), "--score", "degree")
    assert result.returncode == 0, result.stderr
    reordered = Dataset.open(tmp_path / "r")
    assert not np.array_equal(np.asarray(reordered.extra["perm"]), np.arange(ds.num_nodes))
    assert stored_rows(reordered) == stored


def test_text_columns_on_every_relation(tmp_path: Path) -> None:
    path = write_manifest(tmp_path, tagged_features=[2])
    manifest = json.loads(path.read_text())
    manifest["edges"][0]["features"] = ["stars"]
    path.write_text(json.dumps(manifest))
    ds = import_manifest(path, tmp_path / "d")
    rows = stored_rows(ds)
    assert all(feats == (label,) for copies in rows.values() for feats, label in copies)


@pytest.mark.parametrize(
    ("features", "label", "fragments"),
    [
        (None, 2, ["every relation", "feature dims [0, 2]"]),
        (None, None, ["expected edge features or a label like relation", "tagged.txt"]),
        ("npy", None, ["every relation", "a label on some relations only"]),
        (["nope"], 2, ["edges[1].features", "'nope'", "not a column of its first line"]),
        ({"a": 1}, 2, ["edges[1].features", "a list of columns"]),
        ("npy", True, ["edges[1].label", "a column index"]),
        ("npy", 5, ["edges[1].label", "[2, 3)", "found 5"]),
    ],
)
def test_bad_edge_column_keys_are_one_line(
    tmp_path: Path, features: object, label: object, fragments: list[str]
) -> None:
    manifest = write_manifest(tmp_path, tagged_features=features, tagged_label=label)
    result = run_cli("prepare", "manifest", str(manifest), str(tmp_path / "o"))
    assert_user_error(result, *fragments)
    assert not (tmp_path / "o").exists()


def test_npy_rows_must_match_the_relation(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path)
    np.save(tmp_path / "tagged_feat.npy", np.zeros((59, 2), np.float32))
    result = run_cli("prepare", "manifest", str(manifest), str(tmp_path / "o"))
    assert_user_error(result, "tagged_feat.npy", "edges[1].features", "[60, d]", "(59, 2)")
    np.save(tmp_path / "tagged_feat.npy", np.zeros((60, 2), np.int64))
    result = run_cli("prepare", "manifest", str(manifest), str(tmp_path / "o"))
    assert_user_error(result, "tagged_feat.npy", "float16/32/64", "int64")


def test_typed_split_labels_its_pairs(tmp_path: Path) -> None:
    ds = import_manifest(
        write_manifest(tmp_path), tmp_path / "d", edge_split="0.6,0.2,0.2", split_relation="rates", add_reverse=True
    )
    assert ds.meta["link"]["label"] == {"column": "stars"}
    first = {k: v[0][1] for k, v in input_rows(tmp_path).items()}
    for name in ("train", "valid", "test"):
        pairs, labels = np.asarray(ds.link.pairs(name).positives), link_labels(ds, name)
        assert labels is not None and labels.shape == (pairs.shape[0],) and pairs.shape[0] > 0
        assert [first[("rates", int(u), int(i))] for u, i in pairs] == labels.tolist()


def test_non_finite_npy_features_are_refused_or_replaced(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path)
    feats = np.ones((60, 2), np.float32)
    feats[7, 1] = np.nan
    np.save(tmp_path / "tagged_feat.npy", feats)
    result = run_cli("prepare", "manifest", str(manifest), str(tmp_path / "o"))
    assert_user_error(result, "tagged_feat.npy", "edges[1].features", "row 7", "--non-finite replace")
    ds = import_manifest(manifest, tmp_path / "d", non_finite="replace")
    assert ds.meta["source"]["non_finite_replaced"] == 1
    assert np.isfinite(np.asarray(ds.edge_features)).all()
    assert not any(p.suffix == ".npy" and "edge-features" in p.name for p in (tmp_path / "d").iterdir())
