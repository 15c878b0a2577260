"""Issue 14: every bad input or unusable machine state is one ``graphtier: error:`` line, exit 2.

Covers huge/negative sizes (refused before allocating, naming the bytes and the memory
available), read-only and busy outputs, full disks (spill, ``.npy`` writer, memory maps reserved
with ``posix_fallocate`` so there is no SIGBUS), malformed ``csr-npz`` and Planetoid inputs,
non-finite features (refused or ``--non-finite replace``), a corrupted ``perm.npy`` and the
last-resort MemoryError/OSError handler of the CLI entry.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import pickle
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from graphtier.dataset import finite, resources
from graphtier.dataset.format import Dataset
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import ResourceError
from tests.conftest import write_labelled_graph
from tests.dataset.importers.helpers import assert_user_error, run_cli, run_cli_process, write_planetoid
from tests.dataset.importers.test_ogb import _gz, write_ogb


def _edges(tmp_path: Path) -> Path:
    path = tmp_path / "e.txt"
    path.write_text("0 1\n1 2\n2 0\n2 3\n")
    return path


def _left_over(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


@contextlib.contextmanager
def _tmpfs(mountpoint: Path, options: str) -> Iterator[Path]:
    """A small tmpfs at ``mountpoint`` (needs root); skips the test where it cannot be mounted."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a small filesystem for this test needs root (mount -t tmpfs)")
    mountpoint.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mountpoint)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, check=False)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB filesystem."""
    with _tmpfs(tmp_path / "small", "size=1m") as mnt:
        yield mnt


# ---------------------------------------------------------------------------- sizes


def test_huge_num_nodes_is_refused_before_allocating(tmp_path: Path) -> None:
    result = run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "o"), "--num-nodes", "100000000000")
    assert_user_error(result, "--num-nodes 100,000,000,000", "of memory", "available")
    assert _left_over(tmp_path, {"e.txt"}) == []


@pytest.mark.parametrize("seed", ["100000000000000000000000000", "-5"])
def test_seed_out_of_range(tmp_path: Path, seed: str) -> None:
    result = run_cli(
        "prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "o"), "--synthetic-features", "4", "--seed", seed
    )
    assert_user_error(result, "--seed")
    assert _left_over(tmp_path, {"e.txt"}) == []


@pytest.mark.parametrize("count,fragment", [("1000000000000000", "of memory"), ("-5", "non-negative node count")])
def test_ogb_node_count_huge_or_negative(tmp_path: Path, count: str, fragment: str) -> None:
    write_ogb(tmp_path / "ogb")
    _gz(tmp_path / "ogb" / "raw" / "num-node-list.csv.gz", [count])
    result = run_cli("prepare", "ogb", str(tmp_path / "ogb"), str(tmp_path / "o"))
    assert_user_error(result, "num-node-list", fragment)
    assert not (tmp_path / "o").exists()


def test_generate_too_large_is_refused_before_allocating(tmp_path: Path) -> None:
    result = run_cli("generate", str(tmp_path / "g"), "--nodes", "100000000000000", "--avg-degree", "5")
    assert_user_error(result, "generating 100,000,000,000,000 nodes", "of memory", "available")
    result = run_cli(
        "generate", str(tmp_path / "g"), "--nodes", "1000", "--avg-degree", "5", "--feature-dim", "1000000000000"
    )
    assert_user_error(result, "features.npy", "of disk space")
    assert _left_over(tmp_path, set()) == []


# ---------------------------------------------------------------------------- outputs


def test_read_only_output(tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "ro", "ro,size=1m") as mnt:
        for output in (mnt / "out", mnt / "sub" / "out"):
            assert_user_error(
                run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(output)), "Read-only file system"
            )


def test_overwrite_current_directory_is_refused(tmp_path: Path) -> None:
    ds = write_labelled_graph(tmp_path / "ds", num_nodes=30)
    before = sorted(p.name for p in ds.path.iterdir())
    result = subprocess.run(
        [sys.executable, "-m", "graphtier", "prepare", "edgelist", str(_edges(tmp_path)), ".", "--overwrite"],
        cwd=ds.path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert_user_error(result, "current directory")
    assert sorted(p.name for p in ds.path.iterdir()) == before
    Dataset.open(ds.path)


def test_overwrite_refuses_a_folder_that_is_not_a_dataset(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    assert_user_error(
        run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(folder), "--overwrite"), "not a graphtier dataset"
    )
    assert (folder / "notes.txt").read_text() == "keep me"


# ---------------------------------------------------------------------------- full disk


def test_full_disk_spill(tmp_path: Path, small_disk: Path) -> None:
    big = tmp_path / "big.txt"
    edges = np.random.default_rng(0).integers(0, 1000, (200_000, 2))
    big.write_text("".join(f"{a} {b}\n" for a, b in edges))
    assert_user_error(run_cli("prepare", "edgelist", str(big), str(small_disk / "o")), "bytes", "free")
    assert list(small_disk.iterdir()) == []


def test_full_disk_features(tmp_path: Path, small_disk: Path) -> None:
    result = run_cli(
        "prepare", "edgelist", str(_edges(tmp_path)), str(small_disk / "o"), "--synthetic-features", "100000"
    )
    assert_user_error(result, "features.npy", "bytes", "free")
    assert list(small_disk.iterdir()) == []


def test_full_disk_npy_writer_without_the_precheck(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even when the free-space estimate is wrong, ENOSPC from np.save is one ResourceError, nothing left."""
    monkeypatch.setattr(resources, "require_disk", lambda *args, **kwargs: None)
    with (
        pytest.raises(ResourceError, match=r"cannot write indices\.npy .*No space left"),
        DatasetWriter(small_disk / "o") as writer,
    ):
        writer.save("indices", np.zeros(1 << 20, dtype=np.int32))
    assert list(small_disk.iterdir()) == []


def test_memory_map_is_reserved_so_a_full_disk_cannot_sigbus(small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the free-space estimate, posix_fallocate still refuses before any write through the map."""
    monkeypatch.setattr(resources, "require_disk", lambda *args, **kwargs: None)
    with (
        pytest.raises(ResourceError, match=r"features\.npy: needs .* bytes\) of disk space"),
        DatasetWriter(small_disk / "o") as writer,
    ):
        out = writer.open_memmap("features", (1000, 1000), np.float32)
        out[:] = 1.0  # would be SIGBUS on a sparse file of a full disk
    assert list(small_disk.iterdir()) == []


def test_reserve_file_allocates_blocks(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"")
    resources.reserve_file(path, 1 << 20, "test")
    assert os.path.getsize(path) == 1 << 20
    assert os.stat(path).st_blocks * 512 >= 1 << 20


# ---------------------------------------------------------------------------- malformed archives and pickles


def _npz(path: Path, **arrays: np.ndarray) -> Path:
    np.savez(path, **arrays)
    return path


def test_csr_npz_big_endian_is_read_like_native(tmp_path: Path) -> None:
    m = sp.random(30, 30, density=0.2, format="csr", random_state=0)
    native = _npz(tmp_path / "n.npz", indptr=m.indptr.astype(np.int64), indices=m.indices.astype(np.int32))
    swapped = _npz(tmp_path / "b.npz", indptr=m.indptr.astype(">i8"), indices=m.indices.astype(">i4"))
    assert run_cli("prepare", "csr-npz", str(native), str(tmp_path / "on")).returncode == 0
    assert run_cli("prepare", "csr-npz", str(swapped), str(tmp_path / "ob")).returncode == 0
    a, b = Dataset.open(tmp_path / "on"), Dataset.open(tmp_path / "ob")
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)


@pytest.mark.parametrize(
    "extra,fragment",
    [
        ({"format": np.array(["csr", "csc"])}, "'format' expected a string"),
        ({"format": np.array(5)}, "'format' expected a string"),
        ({"shape": np.array(5)}, "'shape' expected two integers"),
        ({"shape": np.array([[5, 5]])}, "'shape' expected two integers"),
    ],
)
def test_csr_npz_bad_entries(tmp_path: Path, extra: dict[str, np.ndarray], fragment: str) -> None:
    m = sp.random(5, 5, density=0.4, format="csr", random_state=0)
    path = _npz(tmp_path / "a.npz", indptr=m.indptr, indices=m.indices, **extra)
    assert_user_error(run_cli("prepare", "csr-npz", str(path), str(tmp_path / "o")), fragment)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "graph,fragment",
    [
        ({"0": [1], "1": [0]}, "integer node ids as dict keys"),
        ({0: 1, 1: 0}, "list of neighbour ids"),
        ({0: ["1"]}, "integer node ids as neighbours"),
    ],
)
def test_planetoid_bad_graph_dict(tmp_path: Path, graph: dict, fragment: str) -> None:
    write_planetoid(tmp_path, "toy", np.random.default_rng(0))
    with open(tmp_path / "ind.toy.graph", "wb") as f:
        pickle.dump(graph, f, protocol=2)
    assert_user_error(run_cli("prepare", "planetoid", str(tmp_path), str(tmp_path / "o")), fragment)
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------------------- non-finite features


def _nan_features(tmp_path: Path, rows: int = 4) -> Path:
    feats = np.ones((rows, 3), dtype=np.float32)
    feats[1, 2] = np.nan
    feats[3, 0] = -np.inf
    path = tmp_path / "f.npy"
    np.save(path, feats)
    return path


def test_edgelist_features_non_finite_refused_or_replaced(tmp_path: Path) -> None:
    edges, feats = _edges(tmp_path), _nan_features(tmp_path)
    assert_user_error(
        run_cli("prepare", "edgelist", str(edges), str(tmp_path / "o"), "--features", str(feats)),
        "f.npy",
        "NaN/Inf",
        "row 1",
        "--non-finite replace",
    )
    assert not (tmp_path / "o").exists()
    result = run_cli(
        "prepare", "edgelist", str(edges), str(tmp_path / "o"), "--features", str(feats), "--non-finite", "replace"
    )
    assert result.returncode == 0, result.stderr
    assert "replaced 2 NaN/Inf feature values by 0" in result.stderr
    ds = Dataset.open(tmp_path / "o")
    assert np.isfinite(ds.features).all() and ds.features[1, 2] == 0 and ds.features[3, 0] == 0
    assert ds.meta["source"]["non_finite_replaced"] == 2


def test_ogb_features_non_finite(tmp_path: Path) -> None:
    write_ogb(tmp_path / "ogb", n=10, e=20)
    lines = ["1.0,2.0,3.0"] * 10
    lines[4] = "1.0,nan,inf"
    _gz(tmp_path / "ogb" / "raw" / "node-feat.csv.gz", lines)
    assert_user_error(run_cli("prepare", "ogb", str(tmp_path / "ogb"), str(tmp_path / "o")), "node-feat", "row 4")
    result = run_cli("prepare", "ogb", str(tmp_path / "ogb"), str(tmp_path / "o"), "--non-finite", "replace")
    assert result.returncode == 0, result.stderr
    assert Dataset.open(tmp_path / "o").meta["source"]["non_finite_replaced"] == 2


def test_planetoid_features_non_finite(tmp_path: Path) -> None:
    write_planetoid(tmp_path, "toy", np.random.default_rng(0))
    with open(tmp_path / "ind.toy.allx", "rb") as f:
        allx = pickle.load(f).toarray()
    allx[7, 1] = np.nan
    with open(tmp_path / "ind.toy.allx", "wb") as f:
        pickle.dump(sp.csr_matrix(allx), f, protocol=2)
    assert_user_error(run_cli("prepare", "planetoid", str(tmp_path), str(tmp_path / "o")), "NaN/Inf", "row 7")
    assert (
        run_cli("prepare", "planetoid", str(tmp_path), str(tmp_path / "o"), "--non-finite", "replace").returncode == 0
    )


def _poison_features(ds: Dataset, row: int) -> None:
    feats = np.load(ds.path / "features.npy")
    feats[row, 0] = np.nan
    np.save(ds.path / "features.npy", feats)


@pytest.mark.parametrize(
    "args",
    [["info"], ["train", "--epochs", "1"], ["score", "--method", "degree"], ["reorder"], ["bench", "gather"]],
)
def test_commands_refuse_a_dataset_with_nan_features(tmp_path: Path, args: list[str]) -> None:
    ds = write_labelled_graph(tmp_path / "ds", num_nodes=60)
    _poison_features(ds, 17)
    command = [args[0], str(ds.path), *args[1:]]
    if args[0] == "reorder":
        command.append(str(tmp_path / "r"))
    if args[0] == "bench":  # bench sample reads only the topology (validate=False); gather reads features
        command = ["bench", "gather", str(ds.path)]
    assert_user_error(run_cli(*command), "features.npy", "NaN/Inf", "row 17")


def test_open_samples_large_feature_matrices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ds = write_labelled_graph(tmp_path / "ds", num_nodes=400, feature_dim=16)
    monkeypatch.setattr(finite, "FULL_CHECK_BYTES", 1024)
    monkeypatch.setattr(finite, "SAMPLE_BLOCK_BYTES", 64 * 4)  # 4 rows per block, 64 blocks of 400 rows
    _poison_features(ds, 399)  # the last block is always sampled
    with pytest.raises(Exception, match="row 399 \\(sampled"):
        Dataset.open(ds.path)
    assert finite.find_non_finite(np.ones((400, 16), np.float32)) is None


# ---------------------------------------------------------------------------- perm.npy


@pytest.mark.parametrize(
    "perm,fragment",
    [
        (lambda n: np.zeros(n, dtype=np.int64), "repeated ids"),
        (lambda n: np.arange(n, dtype=np.int64) + 1, "permutation of [0,"),
        (lambda n: np.arange(n, dtype=np.int32), "dtype int64"),
        (lambda n: np.arange(n - 1, dtype=np.int64), "shape"),
    ],
)
def test_corrupted_perm_is_refused(tmp_path: Path, perm, fragment: str) -> None:  # type: ignore[no-untyped-def]
    ds = write_labelled_graph(tmp_path / "ds", num_nodes=50)
    assert run_cli("reorder", str(ds.path), str(tmp_path / "r")).returncode == 0
    assert Dataset.open(tmp_path / "r").extra["perm"].shape == (50,)
    np.save(tmp_path / "r" / "perm.npy", perm(50))
    assert_user_error(run_cli("info", str(tmp_path / "r")), "perm.npy", fragment)


# ---------------------------------------------------------------------------- last resort


@pytest.mark.parametrize(
    "exc,fragment",
    [
        (OSError(errno.ENOSPC, "No space left on device", "/x/features.npy"), "/x/features.npy: No space left"),
        (OSError(errno.EBUSY, "Device or resource busy", "."), "busy"),
        (OSError(errno.EACCES, "Permission denied", "/root/x"), "Permission denied"),
        (MemoryError("Unable to allocate 745. GiB"), "out of memory: Unable to allocate 745. GiB"),
    ],
)
def test_last_resort_handler(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, exc: BaseException, fragment: str
) -> None:
    from graphtier.dataset.importers.formats import edgelist

    def boom(*args: object, **kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(edgelist, "import_edgelist", boom)
    assert_user_error(run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "o")), fragment)


def test_last_resort_handler_numpy_short_write(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from graphtier.dataset.importers.formats import edgelist

    def short(*args: object, **kwargs: object) -> None:
        raise OSError("1048576 requested and 262112 written")

    monkeypatch.setattr(edgelist, "import_edgelist", short)
    assert_user_error(run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "o")), "short write")


def test_last_resort_handler_keeps_real_bugs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from graphtier.dataset.importers.formats import edgelist

    def bug(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(edgelist, "import_edgelist", bug)
    with pytest.raises(OSError, match="Bad file descriptor"):
        run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "o"))


def test_error_in_a_real_process_has_no_traceback(tmp_path: Path) -> None:
    result = run_cli_process(
        "prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "o"), "--num-nodes", "100000000000"
    )
    assert_user_error(result, "of memory")
    assert json.dumps(result.stderr).count("\\n") == 1
