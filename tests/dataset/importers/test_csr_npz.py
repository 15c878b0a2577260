"""``graphtier prepare csr-npz``: cnr-2000, CSC input, scipy archives, bad archives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from graphtier.dataset.importers import import_csr_npz

from .helpers import assert_user_error, run_cli, shared


def test_cnr_2000(tmp_path: Path) -> None:
    source = shared("cnr-2000/cnr-2000.csr.npz")
    ds = import_csr_npz(source, tmp_path / "cnr")
    assert (ds.num_nodes, ds.num_edges) == (325_557, 3_216_152)
    archive = np.load(source)
    n = archive["indptr"].shape[0] - 1
    ref = sp.csr_matrix((np.ones(archive["indices"].size), archive["indices"], archive["indptr"]), shape=(n, n)).tocsc()
    ref.sort_indices()
    np.testing.assert_array_equal(ds.indptr, ref.indptr)
    np.testing.assert_array_equal(ds.indices, ref.indices)
    assert ds.name == "cnr"  # the default name comes from the output directory


@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_layouts_and_scipy_archives(tmp_path: Path, fmt: str) -> None:
    """Entry M[u, v] is the edge u -> v in both layouts, so the dataset's CSC is M.tocsc()."""
    rng = np.random.default_rng(0)
    n = 50
    matrix = sp.random(n, n, density=0.1, random_state=1, format=fmt)
    matrix.data[:] = 1
    expected = matrix.tocsc()
    expected.sort_indices()
    scipy_path = tmp_path / f"a_{fmt}.npz"
    sp.save_npz(scipy_path, matrix)  # stores format=fmt: picked up by --layout auto
    ds = import_csr_npz(scipy_path, tmp_path / "o")
    assert ds.meta["source"]["options"]["layout"] == fmt
    np.testing.assert_array_equal(ds.indptr, expected.indptr)
    np.testing.assert_array_equal(ds.indices, expected.indices)
    plain = tmp_path / "plain.npz"
    np.savez(plain, indptr=matrix.indptr, indices=matrix.indices)  # no format: --layout decides
    ds2 = import_csr_npz(plain, tmp_path / "p", layout=fmt)
    np.testing.assert_array_equal(ds2.indptr, expected.indptr)
    np.testing.assert_array_equal(ds2.indices, expected.indices)
    labels = rng.integers(0, 3, n)
    np.save(tmp_path / "labels.npy", labels)
    ds3 = import_csr_npz(
        scipy_path,
        tmp_path / "q",
        labels=tmp_path / "labels.npy",
        split=(0.5, 0.25, 0.25),
        synthetic_features=4,
        undirected=True,
    )
    assert ds3.num_classes == 3 and ds3.feature_dim == 4 and not ds3.directed
    np.testing.assert_array_equal(ds3.labels, labels)
    assert ds3.train_idx.size == n // 2
    sym = (matrix + matrix.T).tocsc()
    sym.sort_indices()
    np.testing.assert_array_equal(ds3.indptr, sym.indptr)
    np.testing.assert_array_equal(ds3.indices, sym.indices)


def test_bad_archives_are_one_line_errors(tmp_path: Path) -> None:
    np.savez(tmp_path / "nokey.npz", indptr=np.array([0, 1]))
    np.savez(tmp_path / "badptr.npz", indptr=np.array([0, 2, 1, 3]), indices=np.array([0, 1, 2]))
    np.savez(tmp_path / "range.npz", indptr=np.array([0, 1, 2]), indices=np.array([0, 5]))
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    cases = {
        "nokey.npz": "expected an array 'indices'",
        "badptr.npz": "'indptr' expected non-decreasing",
        "range.npz": "'indices' expected ids in [0, 2), found [0, 5]",
        "junk.npz": "expected an .npz archive (numpy.savez or scipy.sparse.save_npz), got text",
        "absent.npz": "npz archive not found",
    }
    for name, fragment in cases.items():
        result = run_cli("prepare", "csr-npz", str(tmp_path / name), str(tmp_path / "out"))
        assert_user_error(result, name, fragment)
    assert not (tmp_path / "out").exists()


def test_undirected_symmetric_and_one_way_archives_give_one_graph(tmp_path: Path) -> None:
    one_way = sp.triu(sp.random(30, 30, density=0.2, random_state=5, format="csr"), k=1).tocsr()
    both = ((one_way + one_way.T) > 0).astype(np.float64).tocsr()
    sp.save_npz(tmp_path / "one.npz", one_way)
    sp.save_npz(tmp_path / "both.npz", both)
    a = import_csr_npz(tmp_path / "one.npz", tmp_path / "a", undirected=True)
    b = import_csr_npz(tmp_path / "both.npz", tmp_path / "b", undirected=True)
    expected = both.tocsc()
    expected.sort_indices()
    for ds in (a, b):
        np.testing.assert_array_equal(ds.indptr, expected.indptr)
        np.testing.assert_array_equal(ds.indices, expected.indices)
    assert a.meta["source"]["edges"]["reverses_added"] == one_way.nnz
    assert b.meta["source"]["edges"]["reverses_added"] == 0
    assert b.meta["source"]["edges"]["reverse_present"] == both.nnz


def test_duplicates_in_an_archive_are_dropped_unless_kept(tmp_path: Path) -> None:
    np.savez(tmp_path / "d.npz", indptr=np.array([0, 3, 3]), indices=np.array([1, 1, 1]))
    ds = import_csr_npz(tmp_path / "d.npz", tmp_path / "a")
    assert ds.num_edges == 1 and ds.meta["source"]["edges"]["duplicates_dropped"] == 2
    assert import_csr_npz(tmp_path / "d.npz", tmp_path / "b", keep_duplicates=True).num_edges == 3
    result = run_cli("prepare", "csr-npz", str(tmp_path / "d.npz"), str(tmp_path / "c"))
    assert result.returncode == 0, result.stderr
    assert "dropped 2 duplicate edges (--keep-duplicates keeps them)" in result.stdout
    assert "directed: 0 of 1 edges have their reverse" in result.stdout
