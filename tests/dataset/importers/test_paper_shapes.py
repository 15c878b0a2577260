"""Datasets as papers ship them, imported without a script: MAGNN's IMDB (a global adjacency, ``PATH:KEY`` splits),
HAN's ACM3025 (a ``.mat`` with several metapath graphs and its own split), GAE's link splits (sparse features)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.io
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


def acm3025_file(path: Path, *, one_based: bool = False) -> dict[str, Any]:
    """HAN's ACM3025.mat shape, tiny: 8 papers, two metapath graphs (PAP sparse, PLP dense), sparse features,
    one-hot labels and the split as 1-row index arrays."""
    pap = sp.csc_matrix(
        (np.ones(6), ([0, 1, 2, 3, 4, 5], [1, 0, 3, 2, 5, 4])), shape=(8, 8)
    )  # sparse, as loadmat returns it
    plp = np.zeros((8, 8))
    plp[0, 7] = plp[7, 0] = plp[6, 6] = 1.0
    classes = np.array([0, 1, 2, 0, 1, 2, 0, 1])
    shift = 1 if one_based else 0
    variables = {
        "PAP": pap,
        "PLP": plp,
        "feature": sp.csr_matrix(np.arange(24, dtype=np.float64).reshape(8, 3)),
        "label": np.eye(3)[classes],
        "train_idx": np.array([[0, 1, 2]]) + shift,
        "val_idx": np.array([[3, 4]]) + shift,
        "test_idx": np.array([[5, 6, 7]]) + shift,
    }
    scipy.io.savemat(path, variables)
    return {"classes": classes}


@pytest.mark.parametrize("one_based", [False, True])
def test_han_acm3025_several_adjacency_keys_and_the_files_split(tmp_path: Path, one_based: bool) -> None:
    ref = acm3025_file(tmp_path / "ACM3025.mat", one_based=one_based)
    result = run_cli(
        "prepare", "mat", str(tmp_path / "ACM3025.mat"), str(tmp_path / "acm"), "--adjacency-key", "PAP",
        "--adjacency-key", "PLP",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "variables: adjacency 'PAP', 'PLP', features 'feature', labels 'label'" in result.stdout
    base = "1-based (no id is 0 and the largest is N): shifted to 0-based" if one_based else "0-based"
    assert f"note: split: the file's own split (train_idx 3, val_idx 2, test_idx 3 ids, {base})" in result.stdout
    ds = Dataset.open(tmp_path / "acm")
    assert ds.is_hetero and [(t.name, t.count, t.feature_dim) for t in ds.schema.node_types] == [("node", 8, 3)]
    assert relation_pairs(ds, "PAP") == {(0, 1), (1, 0), (2, 3), (3, 2), (4, 5), (5, 4)}
    assert relation_pairs(ds, "PLP") == {(0, 7), (7, 0), (6, 6)}
    assert ds.train_idx.tolist() == [0, 1, 2] and ds.valid_idx.tolist() == [3, 4] and ds.test_idx.tolist() == [5, 6, 7]
    assert ds.labels.tolist() == ref["classes"].tolist()
    assert np.array_equal(ds.type_features["node"], np.arange(24, dtype=np.float32).reshape(8, 3))


def test_mat_split_in_the_file_is_never_replaced_silently(tmp_path: Path) -> None:
    path = tmp_path / "ACM3025.mat"
    acm3025_file(path)
    one = run_cli("prepare", "mat", str(path), str(tmp_path / "a"), "--adjacency-key", "PAP")
    assert one.returncode == 0, one.stderr
    assert "note: split: the file's own split (train_idx 3, val_idx 2, test_idx 3 ids, 0-based)" in one.stdout
    assert Dataset.open(tmp_path / "a").valid_idx.tolist() == [3, 4]
    random = run_cli(
        "prepare", "mat", str(path), str(tmp_path / "b"), "--adjacency-key", "PAP", "--split", "0.5,0.25,0.25"
    )
    assert random.returncode == 0, random.stderr
    assert "the random --split replaces the split the file holds (test_idx, train_idx, val_idx)" in random.stdout
    # names the defaults do not guess: said, not used
    scipy.io.savemat(
        tmp_path / "odd.mat",
        {"A": np.eye(4), "train_nodes": np.array([[0, 1]]), "test_nodes": np.array([[2]]), "valnodes": np.array([[3]])},
    )
    odd = run_cli("prepare", "mat", str(tmp_path / "odd.mat"), str(tmp_path / "c"))
    assert odd.returncode == 0, odd.stderr
    assert "split-like variables (test_nodes, train_nodes, valnodes), not used: pass --split-keys" in odd.stdout
    keyed = run_cli(
        "prepare",
        "mat",
        str(tmp_path / "odd.mat"),
        str(tmp_path / "d"),
        "--split-keys",
        "train_nodes,valnodes,test_nodes",
    )
    assert keyed.returncode == 0, keyed.stderr
    assert Dataset.open(tmp_path / "d").test_idx.tolist() == [2]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--split-keys", "train_idx,nope,test_idx"), "--split-keys 'nope': no such variable; the file has"),
        (("--split-keys", "train_idx,val_idx"), "--split-keys: expected three variable names"),
        (("--split-keys", "train_idx,val_idx,test_idx", "--split", "0.5,0.2,0.2"), "expected at most one"),
        (("--split-keys", "train_idx,val_idx,PAP"), "--split-keys 'PAP': expected a vector of node ids"),
        (("--adjacency-key", "PLP", "--adjacency-key", "nope"), "--adjacency-key 'nope': no such variable"),
        (("--adjacency-key", "PLP", "--adjacency-key", "PAP", "--undirected"), "--undirected: expected no value"),
    ],
)
def test_mat_split_and_key_mistakes_are_one_line(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    acm3025_file(tmp_path / "ACM3025.mat")
    args = ("--adjacency-key", "PAP", *args) if "--adjacency-key" not in args else args
    result = run_cli("prepare", "mat", str(tmp_path / "ACM3025.mat"), str(tmp_path / "o"), *args)
    assert result.returncode == 2, result.stdout
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not (tmp_path / "o").exists()


def test_gae_link_split_with_sparse_features_and_split_npz(tmp_path: Path) -> None:
    """GAE's Cora/CiteSeer link files: a sparse adjacency, sparse CSR features, the edge split in one .npz."""
    n = 10
    ring = [(i, (i + 1) % n) for i in range(n)] + [(0, 5), (2, 7)]
    rows, cols = zip(*ring, strict=True)
    adj = sp.csr_matrix((np.ones(len(ring)), (rows, cols)), shape=(n, n))
    sp.save_npz(tmp_path / "adj.npz", adj + adj.T)
    features = sp.random(n, 6, density=0.4, format="csr", random_state=1, dtype=np.float32)
    sp.save_npz(tmp_path / "features.npz", features)
    np.savez(
        tmp_path / "split.npz",
        train_edges=np.array([[0, 1], [1, 2], [3, 4]]),
        val_edges=np.array([[0, 5]]),
        val_edges_false=np.array([[0, 3]]),
        test_edges=np.array([[2, 7], [4, 5]]),
        test_edges_false=np.array([[1, 8], [3, 9]]),
    )
    s = tmp_path / "split.npz"
    result = run_cli(
        "prepare", "csr-npz", str(tmp_path / "adj.npz"), str(tmp_path / "cora"), "--features",
        str(tmp_path / "features.npz"), "--edge-split-files",
        f"train={s}:train_edges,valid={s}:val_edges,valid_neg={s}:val_edges_false,test={s}:test_edges,"
        f"test_neg={s}:test_edges_false",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "edge split" in result.stdout or "link" in result.stdout, result.stdout
    ds = Dataset.open(tmp_path / "cora")
    assert np.array_equal(ds.features, features.toarray())
    assert ds.link is not None
    assert ds.num_edges == 2 * len(ring) - 2 * 3  # the held-out pairs left the graph, both directions
    bad = run_cli(
        "prepare", "csr-npz", str(tmp_path / "adj.npz"), str(tmp_path / "x"), "--edge-split-files",
        f"valid={s}:val,test={s}:test_edges",
    )  # fmt: skip
    assert bad.returncode == 2 and "no member 'val' in" in bad.stderr and "'test_edges'" in bad.stderr, bad.stderr


def test_path_with_a_colon_that_exists_is_a_file(tmp_path: Path) -> None:
    """The whole text is tried as a path first: a file named 'f.npz:x' is that file, not member x of f.npz."""
    np.savez(tmp_path / "f.npz", x=np.zeros((3, 2), np.float32))
    colon = tmp_path / "f.npz:x"
    np.save(colon.with_suffix(".tmp.npy"), np.ones((3, 2), np.float32))
    colon.with_suffix(".tmp.npy").rename(colon)
    (tmp_path / "e.txt").write_text("0 1\n1 2\n")
    result = run_cli("prepare", "edgelist", str(tmp_path / "e.txt"), str(tmp_path / "o"), "--features", str(colon))
    assert result.returncode == 0, result.stderr
    assert np.array_equal(Dataset.open(tmp_path / "o").features, np.ones((3, 2), np.float32))


def test_member_of_object_arrays_is_refused_and_a_sparse_mat_variable_is_features(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text("0 1\n1 2\n")
    np.savez(tmp_path / "obj.npz", x=np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    bad = run_cli(
        "prepare", "edgelist", str(tmp_path / "e.txt"), str(tmp_path / "o"), "--features", f"{tmp_path}/obj.npz:x"
    )
    assert bad.returncode == 2 and "obj.npz:x: expected a numeric array, found an object" in bad.stderr, bad.stderr
    feats = sp.csr_matrix(np.array([[0, 1.5], [2, 0], [0, 0]]))
    scipy.io.savemat(tmp_path / "g.mat", {"X": feats})
    good = run_cli(
        "prepare", "edgelist", str(tmp_path / "e.txt"), str(tmp_path / "o"), "--features", f"{tmp_path}/g.mat:X"
    )
    assert good.returncode == 0, good.stderr
    assert np.array_equal(Dataset.open(tmp_path / "o").features, feats.toarray().astype(np.float32))


def test_an_npz_member_too_large_for_memory_is_refused_before_it_is_inflated(tmp_path: Path) -> None:
    """The member's .npy header is read first: a (compressed) member that would not fit is refused by its size."""
    import zipfile

    from graphtier.dataset.importers.common.members import file_or_member, load_member
    from graphtier.errors import GraphtierError

    header = np.lib.format.header_data_from_array_1_0(np.zeros(1, dtype=np.float64))
    header["shape"] = (10**12,)
    with zipfile.ZipFile(tmp_path / "big.npz", "w") as archive, archive.open("x.npy", "w") as member:
        np.lib.format.write_array_header_1_0(member, header)
        member.write(b"\0" * 64)  # the data is cut short: only the header can say how big the array is
    path = file_or_member(f"{tmp_path / 'big.npz'}:x")
    with pytest.raises(GraphtierError, match=r"big\.npz:x: needs about 7\.276 TiB"):
        load_member(path)
