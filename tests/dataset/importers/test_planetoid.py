"""``graphtier prepare planetoid``: Cora numbers, agreement with PyG, the CiteSeer fix, safe unpickling."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.importers import import_planetoid
from graphtier.dataset.importers.formats.planetoid import load_pickle
from graphtier.errors import DatasetError

from .helpers import assert_user_error, run_cli, shared, write_planetoid


def _pyg_edges(edge_index: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSC of PyG's edges made symmetric (PyG keeps the dict's direction; real Planetoid dicts are symmetric)."""
    from graphtier.dataset.csc import edges_to_csc_reference

    src = np.concatenate([edge_index[0], edge_index[1]])
    dst = np.concatenate([edge_index[1], edge_index[0]])
    return edges_to_csc_reference(src, dst, n, dedup=True)


def test_cora_matches_the_issue_and_pyg(tmp_path: Path) -> None:
    source = shared("cora")
    ds = import_planetoid(source, tmp_path / "cora")
    assert (ds.num_nodes, ds.num_edges, ds.feature_dim, ds.num_classes) == (2_708, 10_556, 1_433, 7)
    assert (ds.train_idx.size, ds.valid_idx.size, ds.test_idx.size) == (140, 500, 1_000)
    assert not ds.directed and ds.name == "cora"
    from torch_geometric.io import read_planetoid_data

    ref = read_planetoid_data(str(source), "cora")
    np.testing.assert_array_equal(ds.features, ref.x.numpy())
    np.testing.assert_array_equal(ds.labels, ref.y.numpy())
    indptr, indices = _pyg_edges(ref.edge_index.numpy(), ds.num_nodes)
    np.testing.assert_array_equal(ds.indptr, indptr)
    np.testing.assert_array_equal(ds.indices, indices)
    np.testing.assert_array_equal(ds.train_idx, np.flatnonzero(ref.train_mask.numpy()))
    np.testing.assert_array_equal(ds.valid_idx, np.flatnonzero(ref.val_mask.numpy()))
    np.testing.assert_array_equal(ds.test_idx, np.flatnonzero(ref.test_mask.numpy()))


def test_citeseer_holes_are_filled_like_pyg(tmp_path: Path) -> None:
    root = tmp_path / "raw"
    root.mkdir()
    write_planetoid(root, "citeseer", np.random.default_rng(0))
    ds = import_planetoid(root, tmp_path / "out")
    from torch_geometric.io import read_planetoid_data

    ref = read_planetoid_data(str(root), "citeseer")
    assert ds.num_nodes == ref.num_nodes == 536
    np.testing.assert_array_equal(ds.features, ref.x.numpy())
    labelled = ds.labels >= 0
    np.testing.assert_array_equal(ds.labels[labelled], ref.y.numpy()[labelled])
    np.testing.assert_array_equal(np.flatnonzero(~labelled), [529, 531, 533])  # holes: no label (PyG: 0)
    indptr, indices = _pyg_edges(ref.edge_index.numpy(), ds.num_nodes)
    np.testing.assert_array_equal(ds.indptr, indptr)
    np.testing.assert_array_equal(ds.indices, indices)
    np.testing.assert_array_equal(ds.test_idx, np.flatnonzero(ref.test_mask.numpy()))
    assert ds.train_idx.size == 6 and ds.valid_idx.size == 500


class _Evil:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        import os

        return (os.system, ("echo pwned",))


def test_restricted_unpickler_rejects_code(tmp_path: Path) -> None:
    path = tmp_path / "ind.evil.x"
    path.write_bytes(pickle.dumps(_Evil(), protocol=2))
    with pytest.raises(DatasetError, match="expected only numpy/scipy arrays.*system"):
        load_pickle(path)


def test_cli_errors(tmp_path: Path) -> None:
    assert_user_error(run_cli("prepare", "planetoid", str(tmp_path / "none"), str(tmp_path / "o")), "not found")
    source = shared("cora")
    broken = tmp_path / "cora"
    shutil.copytree(source, broken)
    (broken / "ind.cora.ty").unlink()
    assert_user_error(run_cli("prepare", "planetoid", str(broken), str(tmp_path / "o")), "ind.cora.ty", "not found")
    (broken / "ind.cora.ty").write_bytes(b"\x80\x02garbage")
    assert_user_error(run_cli("prepare", "planetoid", str(broken), str(tmp_path / "o")), "ind.cora.ty")
    assert not (tmp_path / "o").exists()
