"""The MATLAB .mat importer: ``graphtier prepare mat``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from graphtier.dataset import Dataset
from graphtier.dataset.importers.common.mat_variables import read_mat_labels
from graphtier.dataset.importers.formats.mat import import_mat
from graphtier.errors import DatasetError, OptionError
from tests.dataset.importers.helpers import assert_user_error, run_cli


def _acm_like(path: Path, n: int = 60, isolated: int = 12, seed: int = 0) -> dict[str, np.ndarray]:
    """An ACM-shaped file: sparse symmetric adjacency with isolated nodes, sparse features, one-hot labels."""
    rng = np.random.default_rng(seed)
    connected = n - isolated
    src = rng.integers(0, connected, 200)
    dst = rng.integers(0, connected, 200)
    adj = sp.coo_matrix((np.ones(src.size), (src, dst)), shape=(n, n)).tocsr()
    adj = ((adj + adj.T) > 0).astype(np.float64)
    feats = sp.random(n, 7, density=0.3, random_state=seed, format="csc")
    classes = rng.integers(0, 3, n)
    one_hot = np.eye(3)[classes]
    scipy.io.savemat(path, {"PAP": adj, "feature": feats, "label": one_hot, "note": "ACM-like"})
    return {"adj": adj.toarray(), "feats": feats.toarray(), "classes": classes}


def _expected_csc(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    csc = sp.csr_matrix(dense).tocsc()
    csc.sort_indices()
    return csc.indptr, csc.indices


def test_acm_like_file_keeps_every_node(tmp_path: Path) -> None:
    path = tmp_path / "ACM.mat"
    ref = _acm_like(path)
    ds = import_mat(path, tmp_path / "acm", adjacency_key="PAP")
    assert ds.num_nodes == 60 and ds.name == "acm"
    indptr, indices = _expected_csc(ref["adj"])
    np.testing.assert_array_equal(ds.indptr, indptr)
    np.testing.assert_array_equal(ds.indices, indices)
    assert int((np.diff(ds.indptr) == 0).sum()) >= 12  # isolated nodes are kept
    np.testing.assert_allclose(ds.features, ref["feats"].astype(np.float32))
    np.testing.assert_array_equal(ds.labels, ref["classes"])
    assert ds.num_classes == 3
    options = ds.meta["source"]["options"]
    assert (options["adjacency_key"], options["features_key"], options["labels_key"]) == ("PAP", "feature", "label")
    assert ds.meta["provenance"] == {"features": {"kind": "input"}, "labels": {"kind": "input"}}


def test_default_keys_dense_matrices_and_one_based_labels(tmp_path: Path) -> None:
    adj = np.zeros((5, 5))
    adj[0, 1] = adj[1, 2] = adj[4, 0] = 1.0
    adj[2, 3] = 0.0  # an explicit zero is no edge
    labels = np.array([[1], [2], [2], [3], [1]], dtype=np.float64)  # MATLAB 1-based class ids
    scipy.io.savemat(tmp_path / "g.mat", {"network": adj, "attributes": np.arange(10.0).reshape(5, 2), "gnd": labels})
    ds = import_mat(tmp_path / "g.mat", tmp_path / "o", split=(0.6, 0.2, 0.2))
    indptr, indices = _expected_csc(adj)
    np.testing.assert_array_equal(ds.indptr, indptr)
    np.testing.assert_array_equal(ds.indices, indices)
    np.testing.assert_array_equal(ds.labels, [0, 1, 1, 2, 0])
    assert json.loads((ds.path / "label_names.json").read_text()) == ["1", "2", "3"]
    np.testing.assert_array_equal(ds.features, np.arange(10.0, dtype=np.float32).reshape(5, 2))
    assert ds.train_idx is not None and ds.train_idx.size == 3


def test_keys_none_and_synthetic_node_data(tmp_path: Path) -> None:
    path = tmp_path / "ACM.mat"
    _acm_like(path)
    ds = import_mat(
        path,
        tmp_path / "o",
        adjacency_key="PAP",
        features_key="none",
        labels_key="none",
        synthetic_features=4,
        synthetic_labels=5,
        undirected=True,
    )
    assert ds.feature_dim == 4 and ds.num_classes == 5
    assert ds.meta["provenance"]["labels"] == {"kind": "synthetic", "num_classes": 5, "seed": 0}
    assert ds.meta["provenance"]["features"]["signal"] == 0.0
    with pytest.raises(OptionError, match="already has features"):
        import_mat(path, tmp_path / "p", adjacency_key="PAP", synthetic_features=4)


def test_label_forms() -> None:
    path = Path("x.mat")
    sparse_one_hot = sp.csr_matrix(np.array([[0, 1], [0, 0], [1, 0]]))
    labels = read_mat_labels(sparse_one_hot, path, "y", 3)
    np.testing.assert_array_equal(labels.values, [1, -1, 0])
    row = read_mat_labels(np.array([[0, 1, 1, -1]]), path, "y", 4)
    np.testing.assert_array_equal(row.values, [0, 1, 1, -1])
    assert row.class_names is None and row.num_classes == 2
    with pytest.raises(DatasetError, match="several labels"):
        read_mat_labels(np.array([[1, 1], [0, 1]]), path, "group", 2)
    with pytest.raises(DatasetError, match="expected labels for 3 nodes"):
        read_mat_labels(np.zeros((4, 2)), path, "y", 3)


def test_errors_name_the_file_and_what_was_expected(tmp_path: Path) -> None:
    scipy.io.savemat(tmp_path / "nokey.mat", {"something": np.eye(3)})
    with pytest.raises(DatasetError, match=r"expected an adjacency matrix under one of .*something.*--adjacency-key"):
        import_mat(tmp_path / "nokey.mat", tmp_path / "o")
    scipy.io.savemat(tmp_path / "rect.mat", {"A": np.ones((3, 4))})
    with pytest.raises(DatasetError, match="expected a square adjacency matrix"):
        import_mat(tmp_path / "rect.mat", tmp_path / "o")
    scipy.io.savemat(tmp_path / "tfeat.mat", {"A": np.eye(3), "X": np.ones((2, 3))})
    with pytest.raises(DatasetError, match="expected 3 feature rows.*transposed"):
        import_mat(tmp_path / "tfeat.mat", tmp_path / "o")
    (tmp_path / "text.mat").write_text("0 1\n1 2\n")
    with pytest.raises(DatasetError, match=r"expected a MATLAB \.mat file \(scipy.io.loadmat\), got text"):
        import_mat(tmp_path / "text.mat", tmp_path / "o")
    (tmp_path / "v73.mat").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(100))
    with pytest.raises(DatasetError, match="re-save"):
        import_mat(tmp_path / "v73.mat", tmp_path / "o")
    assert not (tmp_path / "o").exists()


def test_cli(tmp_path: Path) -> None:
    path = tmp_path / "ACM.mat"
    _acm_like(path)
    result = run_cli(
        "prepare", "mat", str(path), str(tmp_path / "acm"), "--adjacency-key", "PAP", "--split", "0.6,0.2,0.2"
    )
    assert result.returncode == 0, result.stderr
    assert "variables: adjacency 'PAP', features 'feature', labels 'label'" in result.stdout
    assert "60 nodes" in result.stdout
    ds = Dataset.open(tmp_path / "acm")
    assert ds.name == "acm" and ds.num_classes == 3
    bad = run_cli("prepare", "mat", str(path), str(tmp_path / "x"), "--adjacency-key", "nope")
    assert_user_error(bad, "ACM.mat", "--adjacency-key 'nope'", "no such variable")


def test_feature_signal_uses_the_labels_inside_the_file(tmp_path: Path) -> None:
    _acm_like(tmp_path / "acm.mat")
    ds = import_mat(
        tmp_path / "acm.mat",
        tmp_path / "out",
        adjacency_key="PAP",
        features_key="none",
        synthetic_features=4,
        synthetic_feature_signal=1.0,
    )
    assert ds.feature_dim == 4 and ds.num_classes == 3
    with pytest.raises(OptionError, match="expected labels"):
        import_mat(
            tmp_path / "acm.mat",
            tmp_path / "out2",
            adjacency_key="PAP",
            features_key="none",
            labels_key="none",
            synthetic_features=4,
            synthetic_feature_signal=1.0,
        )
    assert not (tmp_path / "out2").exists()


def _facebook100_like(path: Path, n: int = 50, seed: int = 0) -> dict[str, np.ndarray]:
    """A Facebook100-shaped file: sparse symmetric ``A`` and ``local_info`` int [N, 7] with 0 = missing."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, 150), rng.integers(0, n, 150)
    keep = src != dst
    adj = sp.coo_matrix((np.ones(int(keep.sum())), (src[keep], dst[keep])), shape=(n, n)).tocsr()
    adj = ((adj + adj.T) > 0).astype(np.float64)
    info = np.stack(
        [
            rng.integers(0, 3, n),  # status flag
            rng.integers(0, 3, n),  # gender, 0 = missing
            rng.integers(0, 200, n),  # major id
            rng.integers(0, 200, n),  # second major
            rng.integers(0, 60, n),  # dorm
            rng.choice([0, 2005, 2006, 2007, 2008], n),  # year, 0 = missing
            rng.integers(0, 5000, n),  # high school id
        ],
        axis=1,
    ).astype(np.int32)
    scipy.io.savemat(path, {"A": adj, "local_info": info})
    return {"adj": adj.toarray(), "info": info}


def test_facebook100_labels_from_one_column_of_local_info(tmp_path: Path) -> None:
    path = tmp_path / "Caltech36.mat"
    ref = _facebook100_like(path)
    ds = import_mat(path, tmp_path / "g", labels_key="local_info", labels_column=1, unlabelled_value=0)
    gender = ref["info"][:, 1]
    np.testing.assert_array_equal(ds.labels, np.where(gender == 0, -1, gender - 1))
    assert ds.num_classes == 2
    year = import_mat(path, tmp_path / "y", labels_key="local_info", labels_column=5, unlabelled_value=0)
    assert year.num_classes == 4  # 2005..2008 renumbered, names kept
    assert json.loads((tmp_path / "y" / "label_names.json").read_text()) == ["2005", "2006", "2007", "2008"]
    assert int(np.count_nonzero(year.labels < 0)) == int(np.count_nonzero(ref["info"][:, 5] == 0))


def test_facebook100_symmetric_adjacency_is_not_doubled(tmp_path: Path) -> None:
    path = tmp_path / "fb.mat"
    ref = _facebook100_like(path)
    directed = import_mat(path, tmp_path / "d", features_key="none")
    undirected = import_mat(path, tmp_path / "u", features_key="none", undirected=True)
    indptr, indices = _expected_csc(ref["adj"])
    for ds in (directed, undirected):
        np.testing.assert_array_equal(ds.indptr, indptr)
        np.testing.assert_array_equal(ds.indices, indices)
        assert ds.meta["symmetric"]
    counts = undirected.meta["source"]["edges"]
    assert counts["reverses_added"] == 0 and counts["reverse_present"] == int(ref["adj"].sum())
    upper = sp.triu(sp.csr_matrix(ref["adj"]))  # one direction only: --undirected restores the same CSC
    scipy.io.savemat(tmp_path / "upper.mat", {"A": upper})
    half = import_mat(tmp_path / "upper.mat", tmp_path / "h", undirected=True)
    np.testing.assert_array_equal(half.indptr, indptr)
    np.testing.assert_array_equal(half.indices, indices)
    assert half.meta["source"]["edges"]["reverses_added"] == upper.nnz
    assert not import_mat(tmp_path / "upper.mat", tmp_path / "h2").meta["symmetric"]


def test_facebook100_cli_lists_unused_variables_and_warns_about_codes(tmp_path: Path) -> None:
    path = tmp_path / "fb.mat"
    _facebook100_like(path, n=30)
    result = run_cli("prepare", "mat", str(path), str(tmp_path / "a"), "--undirected")
    assert result.returncode == 0, result.stderr
    assert "not used: local_info [30 x 7 int32]" in result.stdout
    assert "edges already had their reverse, added 0 reverse edges" in result.stdout
    features = run_cli("prepare", "mat", str(path), str(tmp_path / "b"), "--features-key", "local_info")
    assert features.returncode == 0, features.stderr
    assert "warning: feature column(s) 2, 3, 4, 5, 6 (0-based) hold integer codes" in features.stderr
    labelled = run_cli(
        "prepare",
        "mat",
        str(path),
        str(tmp_path / "c"),
        "--labels-key",
        "local_info",
        "--labels-column",
        "1",
        "--unlabelled-value",
        "0",
    )
    assert labelled.returncode == 0, labelled.stderr
    assert "labels 'local_info' column 1" in labelled.stdout and "not used" not in labelled.stdout
    refused = run_cli("prepare", "mat", str(path), str(tmp_path / "d"), "--labels-key", "local_info")
    assert_user_error(refused, "fb.mat", "'local_info'", "values other than 0 and 1", "--labels-column")
    bad = run_cli(
        "prepare", "mat", str(path), str(tmp_path / "e"), "--labels-key", "local_info", "--labels-column", "7"
    )
    assert_user_error(bad, "--labels-column", "[0, 7)", "found 7")
    negative = run_cli(
        "prepare", "mat", str(path), str(tmp_path / "e"), "--labels-key", "local_info", "--labels-column", "-1"
    )
    assert_user_error(negative, "--labels-column", ">= 0", "found -1")
    nothing = run_cli("prepare", "mat", str(path), str(tmp_path / "e"), "--labels-column", "1")
    assert_user_error(nothing, "--labels-column", "expected labels")
    assert not (tmp_path / "d").exists() and not (tmp_path / "e").exists()


def test_mat_takes_label_and_feature_files(tmp_path: Path) -> None:
    path = tmp_path / "fb.mat"
    ref = _facebook100_like(path, n=20)
    np.save(tmp_path / "info.npy", ref["info"])
    np.save(tmp_path / "x.npy", np.arange(40, dtype=np.float32).reshape(20, 2))
    ds = import_mat(
        path,
        tmp_path / "o",
        labels=tmp_path / "info.npy",
        labels_column=1,
        unlabelled_value=0,
        features=tmp_path / "x.npy",
    )
    gender = ref["info"][:, 1]
    np.testing.assert_array_equal(ds.labels, np.where(gender == 0, -1, gender - 1))
    np.testing.assert_array_equal(ds.features, np.arange(40, dtype=np.float32).reshape(20, 2))
    assert str((tmp_path / "info.npy").resolve()) in ds.meta["source"]["inputs"]
    with pytest.raises(OptionError, match="--labels and --labels-key: expected at most one"):
        import_mat(path, tmp_path / "p", labels=tmp_path / "info.npy", labels_key="local_info")
    with pytest.raises(OptionError, match="--features and --features-key: expected at most one"):
        import_mat(path, tmp_path / "p", features=tmp_path / "x.npy", features_key="local_info")
    np.save(tmp_path / "short.npy", np.zeros((19, 2), np.float32))
    with pytest.raises(DatasetError, match="expected 20 --features rows"):
        import_mat(path, tmp_path / "p", features=tmp_path / "short.npy")
    assert not (tmp_path / "p").exists()
