"""Edge splits from files: pair files through the id map (--edge-split-files), the OGB link layout (.pt), MovieLens."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble.options import ImportOptions
from graphtier.dataset.importers.formats.edgelist import import_edgelist
from graphtier.dataset.importers.formats.movielens import import_movielens
from graphtier.dataset.importers.formats.ogb import import_ogb
from graphtier.dataset.importers.split.link_files import GivenPairs, split_from_pairs
from graphtier.dataset.importers.split.pair_files import EdgeSplitFiles
from graphtier.dataset.original_ids import original_ids
from graphtier.errors import DatasetError, OptionError
from tests.conftest import shared_data

EDGES = [(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (1, 3), (4, 0), (4, 1), (4, 2), (5, 4), (5, 3)]


def _graph(tmp_path: Path) -> Path:
    """The edges with ids x10 (renumbered densely by the importer: original 10k -> node k)."""
    path = tmp_path / "g.txt"
    path.write_text("".join(f"{u * 10} {v * 10}\n" for u, v in EDGES))
    return path


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _import(tmp_path: Path, files: str, **kw: object) -> Dataset:
    return import_edgelist(_graph(tmp_path), tmp_path / "out", undirected=True, edge_split_files=files, **kw)


def test_split_files_go_through_the_id_map_and_leave_the_graph(tmp_path: Path) -> None:
    _write(tmp_path / "v.txt", "# valid\n0 20\n")
    _write(tmp_path / "t.txt", "40 10\n50 30\n")
    d = _import(
        tmp_path,
        "valid=v.txt,test=t.txt".replace("v.txt", str(tmp_path / "v.txt")).replace("t.txt", str(tmp_path / "t.txt")),
    )
    assert d.link is not None and d.link.meta["method"] == "files"
    assert d.link.pairs("test").positives.tolist() == [[4, 1], [5, 3]]
    assert d.num_edges == 2 * (len(EDGES) - 3)  # both directions of the 3 held-out edges removed
    dst = np.repeat(np.arange(d.num_nodes), np.diff(d.indptr))
    graph = set(zip(np.asarray(d.indices).tolist(), dst.tolist()))
    assert not graph & {(0, 2), (2, 0), (4, 1), (1, 4), (5, 3), (3, 5)}
    train = {tuple(p) for p in d.link.pairs("train").positives.tolist()}
    assert len(train) == len(EDGES) - 3 and all(p in graph for p in train)  # default train: the remaining edges
    for split in ("valid", "test"):  # drawn negatives are never edges of the full graph
        full = {tuple(sorted((u, v))) for u, v in EDGES}
        for u, v in d.link.pairs(split).negatives.tolist():
            assert tuple(sorted((u * 10, v * 10))) not in full


def test_given_negatives_per_positive_are_kept(tmp_path: Path) -> None:
    v = _write(tmp_path / "v.txt", "0 20\n")
    t = _write(tmp_path / "t.txt", "40 10\n")
    vn = _write(tmp_path / "vn.txt", "50\n")
    tn = np.array([[30]])
    np.save(tmp_path / "tn.npy", tn)
    d = _import(tmp_path, f"valid={v},test={t},valid_neg={vn},test_neg={tmp_path / 'tn.npy'}", eval_negatives=1)
    assert d.link.eval_negatives == 1 and d.link.pairs("valid").per_positive
    assert d.link.pairs("valid").negatives.tolist() == [[5]]
    assert d.link.pairs("test").negatives.tolist() == [[3]]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"valid": "0 20\n", "test": "40 10\n\n50 31\n"}, "t.txt: line 3: node id 31 is not a node of the graph"),
        (
            {"valid": "0 20\n", "test": "40 10\n20 0\n"},
            "v.txt: line 1: expected valid and test pairs to be disjoint, found 1",
        ),
        ({"train": "0 10\n", "valid": "0 20\n", "test": "0 10\n"}, "expected train and test pairs to be disjoint"),
        (
            {"train": "0 50\n", "valid": "0 20\n", "test": "40 10\n"},
            "r.txt: line 1: expected train pairs that are edges",
        ),
        (
            {"valid": "0 20\n", "test": "40 10\n", "test_neg": "#\n10 20\n"},
            "tn.txt: line 2: expected negatives that are not edges",
        ),
        ({"valid": "0 20\n", "test": "40 10\n", "test_neg": "10 10\n"}, "negatives that are not edges, found 1"),
    ],
)
def test_bad_split_files_get_one_line(tmp_path: Path, files: dict[str, str], message: str) -> None:
    names = {"train": "r.txt", "valid": "v.txt", "test": "t.txt", "test_neg": "tn.txt"}
    spec = ",".join(f"{key}={_write(tmp_path / names[key], text)}" for key, text in files.items())
    with pytest.raises(DatasetError) as error:
        _import(tmp_path, spec)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "out").exists()


def test_npy_ids_out_of_range_name_the_row(tmp_path: Path) -> None:
    path = tmp_path / "g.txt"
    path.write_text("".join(f"{u} {v}\n" for u, v in EDGES))
    np.save(tmp_path / "t.npy", np.array([[4, 1], [2, 9]]))
    _write(tmp_path / "v.txt", "0 2\n")
    with pytest.raises(DatasetError, match=r"t\.npy: row 1: expected node ids in \[0, 6\), found 9"):
        import_edgelist(
            path, tmp_path / "out", edge_split_files=f"valid={tmp_path / 'v.txt'},test={tmp_path / 't.npy'}"
        )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("valid=a", "found no test="),
        ("valid=a,test=b,bogus=c", "keys among"),
        ("valid=a,valid=b,test=c", "each key once"),
        ("valid,test=b", "KEY=FILE"),
    ],
)
def test_option_text_errors(text: str, message: str) -> None:
    with pytest.raises(OptionError, match=message):
        EdgeSplitFiles.of(text)


# ---------------------------------------------------------------------------- OGB link layout


def _ogbl(tmp_path: Path, parts: dict[str, object]) -> Path:
    root = tmp_path / "ogbl"
    (root / "raw").mkdir(parents=True)
    (root / "split" / "time").mkdir(parents=True)
    with gzip.open(root / "raw" / "edge.csv.gz", "wt") as f:
        f.write("".join(f"{u},{v}\n" for u, v in EDGES))
    with gzip.open(root / "raw" / "num-node-list.csv.gz", "wt") as f:
        f.write("6\n")
    for part, obj in parts.items():
        torch.save(obj, root / "split" / "time" / f"{part}.pt")
    return root


def _t(rows: list) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.int64)


COLLAB = {
    "train": {"edge": _t([[0, 1], [1, 2]]), "weight": _t([1, 1]), "year": _t([2000, 2001])},
    "valid": {"edge": _t([[0, 2]]), "edge_neg": _t([[3, 4]])},
    "test": {"edge": _t([[4, 1], [5, 3]]), "edge_neg": _t([[1, 5], [2, 5]])},
}


def test_ogbl_collab_layout(tmp_path: Path) -> None:
    d = import_ogb(_ogbl(tmp_path, COLLAB), tmp_path / "out", undirected=True)
    assert d.link.meta["method"] == "ogb" and d.link.eval_negatives == 0
    assert d.link.pairs("test").negatives.tolist() == [[1, 5], [2, 5]]
    assert d.link.pairs("train").positives.tolist() == [[0, 1], [1, 2]]
    assert d.num_edges == 2 * (len(EDGES) - 3)


def test_ogbl_citation2_layout(tmp_path: Path) -> None:
    parts = {
        "train": {"source_node": _t([0, 1]), "target_node": _t([1, 2])},
        "valid": {"source_node": _t([0]), "target_node": _t([2]), "target_node_neg": _t([[5]])},
        "test": {"source_node": _t([4]), "target_node": _t([1]), "target_node_neg": _t([[3]])},
    }
    d = import_ogb(_ogbl(tmp_path, parts), tmp_path / "out")
    assert d.link.eval_negatives == 1 and d.link.pairs("test").per_positive
    assert d.link.pairs("valid").negatives.tolist() == [[5]]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([1, 2], "expected a dict of tensors"),
        ({"edge": [[0, 2]]}, "key 'edge' expected a tensor"),
        ({"edge": torch.tensor([[0.0, 2.0]])}, "key 'edge' expected integer node ids"),
        ({"edge": _t([0, 2])}, r"key 'edge' expected shape \[P, 2\]"),
        ({"edge": _t([[0, 7]])}, r"key 'edge' row 0: expected node ids in \[0, 6\), found 7"),
        ({"head": _t([0])}, "expected the keys 'edge' or 'source_node'"),
    ],
)
def test_ogbl_bad_split_file(tmp_path: Path, bad: object, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        import_ogb(_ogbl(tmp_path, {**COLLAB, "valid": bad}), tmp_path / "out", undirected=True)


def test_ogbl_split_file_that_is_not_a_torch_file(tmp_path: Path) -> None:
    root = _ogbl(tmp_path, COLLAB)
    (root / "split" / "time" / "test.pt").write_bytes(b"not a zip")
    with pytest.raises(DatasetError, match=r"test\.pt: not a dict of tensors"):
        import_ogb(root, tmp_path / "out", undirected=True)


# ---------------------------------------------------------------------------- MovieLens


def test_movielens_u1(tmp_path: Path) -> None:
    folder = shared_data("movielens-100k/ml-100k")
    d = import_movielens(folder, tmp_path / "ml", eval_negatives=20)
    users, items = 943, 1682
    assert d.num_nodes == users + items and d.feature_dim == 45
    assert d.link.dst_range == (users, users + items)
    test, valid, train = (d.link.pairs(s) for s in ("test", "valid", "train"))
    assert test.num_positives == 20_000 and valid.num_positives == 4_000 and train.num_positives == 76_000
    assert d.num_edges == 2 * 76_000
    raw = np.loadtxt(folder / "u.data", dtype=np.int64)[:, :2]
    rated = set(zip((raw[:, 0] - 1).tolist(), (raw[:, 1] - 1 + users).tolist()))
    src = np.repeat(test.positives[:, 0], 20)
    negatives = test.negatives.reshape(-1)
    assert negatives.min() >= users  # items only, never rated by the user in the full data
    assert not any(pair in rated for pair in zip(src.tolist(), negatives.tolist()))
    features = np.asarray(d.features)
    assert features[:users, -2].all() and not features[users:, -2].any() and features[users:, -1].all()
    assert np.allclose(features[:users, 1:3].sum(1), 1) and not features[users:, : 43 - 19].any()
    # the user's ids: user u of u.data is node u - 1, item i node 943 + i - 1
    assert original_ids(d, np.array([0, 942, 943, 2624])).tolist() == [1, 943, 1, 1682]


def _tiny_movielens(folder: Path) -> Path:
    """3 users, 4 items in the ml-100k layout."""
    folder.mkdir()
    (folder / "u.occupation").write_text("artist\nwriter\n")
    (folder / "u.user").write_text("1|20|M|artist|0\n2|30|F|writer|0\n3|40|M|writer|0\n")
    genres = ["|".join("1" if g == i % 19 else "0" for g in range(19)) for i in range(4)]
    (folder / "u.item").write_text("".join(f"{i + 1}|Film {i}|01-Jan-1995||http://x|{genres[i]}\n" for i in range(4)))
    (folder / "u1.base").write_text("1\t1\t5\t0\n1\t2\t3\t0\n2\t2\t4\t0\n2\t3\t1\t0\n3\t4\t2\t0\n3\t1\t2\t0\n")
    (folder / "u1.test").write_text("1\t3\t5\t0\n2\t4\t4\t0\n")
    return folder


def test_movielens_id_features_append_a_one_hot_node_id(tmp_path: Path) -> None:
    folder = _tiny_movielens(tmp_path / "ml")
    plain = import_movielens(folder, tmp_path / "plain", valid_fraction=0.2)
    with_ids = import_movielens(folder, tmp_path / "ids", valid_fraction=0.2, id_features=True)
    side = plain.feature_dim
    assert with_ids.feature_dim == side + 7 and with_ids.meta["source"]["options"]["id_features"] is True
    features = np.asarray(with_ids.features)
    np.testing.assert_array_equal(features[:, :side], np.asarray(plain.features))
    np.testing.assert_array_equal(features[:, side:], np.eye(7, dtype=np.float32))
    assert original_ids(with_ids, np.arange(7)).tolist() == [1, 2, 3, 1, 2, 3, 4]


def test_edge_split_and_edge_split_files_exclude_each_other() -> None:
    with pytest.raises(OptionError, match="edge_split= and edge_split_files=: expected at most one, found both"):
        ImportOptions(edge_split="0.8,0.1,0.1", edge_split_files="valid=a,test=b")


def test_default_train_pairs_follow_the_random_split_rule() -> None:
    # the graph 0-1 (stored twice), 1-2, 2-3, 3-4 and a self-loop on 3; valid holds out 1-2, test 3-4
    src = np.array([1, 1, 0, 0, 2, 1, 3, 2, 3, 4, 3])
    dst = np.array([0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 4])
    order = np.lexsort((src, dst))
    indptr = np.zeros(6, np.int64)
    np.cumsum(np.bincount(dst, minlength=5), out=indptr[1:])
    given = GivenPairs(positives={"valid": np.array([[1, 2]]), "test": np.array([[3, 4]])})
    result = split_from_pairs(given, indptr, src[order].astype(np.int32), undirected=True, eval_negatives=0, seed=0)
    # each undirected edge once, no repeat and no self-loop: the pairs --edge-split would train on
    assert result.split.pairs("train").positives.tolist() == [[0, 1], [2, 3]]


def test_typed_movielens_is_the_homogeneous_split_in_local_ids(tmp_path: Path) -> None:
    folder = shared_data("movielens-100k/ml-100k")
    plain = import_movielens(folder, tmp_path / "plain", eval_negatives=20)
    typed = import_movielens(folder, tmp_path / "typed", eval_negatives=20, typed=True)
    users = 943
    assert typed.is_hetero and typed.schema.type_names == ["user", "item"]
    assert [r.type for r in typed.schema.relations] == [("user", "rates", "item"), ("item", "rev_rates", "user")]
    assert [r.num_edges for r in typed.schema.relations] == [76_000, 76_000]
    assert typed.link.meta["relation"] == ["user", "rates", "item"] and typed.link.dst_range == (0, 1682)
    assert typed.type_features["user"].shape == (users, 24) and typed.type_features["item"].shape == (1682, 19)
    for split in ("train", "valid", "test"):  # the same pairs and the same drawn negatives, items counted from 0
        a, b = plain.link.pairs(split), typed.link.pairs(split)
        assert np.array_equal(np.asarray(a.positives) - [0, users], np.asarray(b.positives))
        if split != "train":
            assert np.array_equal(np.asarray(a.negatives) - users, np.asarray(b.negatives))
    # local ids, 1-based as in the files
    assert original_ids(typed, np.array([0, 942, 943, 2624])).tolist() == [1, 943, 1, 1682]
