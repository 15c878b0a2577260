"""Dataset.open validation: every inconsistency is a one-line DatasetError naming the file."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier import Dataset, DatasetError
from tests.conftest import write_labelled_graph


@pytest.fixture
def dataset_dir(tmp_path: Path) -> Path:
    write_labelled_graph(tmp_path / "d", num_nodes=50)
    return tmp_path / "d"


def _edit_meta(path: Path, **changes: object) -> None:
    meta = json.loads((path / "meta.json").read_text())
    meta.update(changes)
    (path / "meta.json").write_text(json.dumps(meta))


def _expect_error(path: Path, *fragments: str) -> str:
    with pytest.raises(DatasetError) as info:
        Dataset.open(path)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_open_memory_maps_and_reports(dataset_dir: Path) -> None:
    ds = Dataset.open(dataset_dir)
    assert isinstance(ds.indices, np.memmap) and isinstance(ds.features, np.memmap)
    assert ds.num_nodes == 50 and ds.indptr.shape == (51,)
    assert ds.in_degrees().sum() == ds.num_edges
    assert "nodes=50" in repr(ds)
    loaded = Dataset.open(dataset_dir, mmap=False)
    assert not isinstance(loaded.indices, np.memmap)


def test_labels_and_splits_are_writable_copies_on_write(dataset_dir: Path) -> None:
    """torch.from_numpy takes the labels and splits without "The given NumPy array is not writable";
    a write stays in the process and never reaches the file."""
    ds = Dataset.open(dataset_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        labels = torch.from_numpy(ds.labels)
        train = torch.from_numpy(ds.train_idx)
    assert labels.dtype == torch.int64 and train.shape == (ds.train_idx.shape[0],)
    before = np.load(dataset_dir / "labels.npy")
    ds.labels[:] = -1
    assert np.array_equal(np.load(dataset_dir / "labels.npy"), before)
    assert np.array_equal(Dataset.open(dataset_dir).labels, before)
    assert not ds.features.flags.writeable and not ds.indices.flags.writeable  # the big arrays stay read-only


def test_missing_directory_and_meta(tmp_path: Path) -> None:
    _expect_error(tmp_path / "nope", "nope", "not found")
    (tmp_path / "empty").mkdir()
    _expect_error(tmp_path / "empty", "meta.json", "missing")


def test_meta_fields(dataset_dir: Path) -> None:
    (dataset_dir / "meta.json").write_text("{not json")
    _expect_error(dataset_dir, "meta.json", "not valid JSON")


@pytest.mark.parametrize(
    ("changes", "fragments"),
    [
        ({"format_version": 7}, ("format_version", "expected 1", "found 7")),
        ({"num_nodes": -1}, ("num_nodes", "non-negative")),
        ({"num_edges": 3}, ("indptr.npy", "num_edges 3")),
        ({"num_nodes": 51}, ("indptr.npy", "shape")),
        ({"feature_dtype": "int8"}, ("feature_dtype", "int8")),
        ({"num_classes": 2}, ("labels.npy", "labels in [-1, 2)")),
    ],
)
def test_meta_disagreements(dataset_dir: Path, changes: dict, fragments: tuple[str, ...]) -> None:
    _edit_meta(dataset_dir, **changes)
    _expect_error(dataset_dir, *fragments)


def test_missing_field(dataset_dir: Path) -> None:
    meta = json.loads((dataset_dir / "meta.json").read_text())
    del meta["directed"]
    (dataset_dir / "meta.json").write_text(json.dumps(meta))
    _expect_error(dataset_dir, "'directed'", "missing")


def test_bad_arrays(dataset_dir: Path) -> None:
    indptr = np.load(dataset_dir / "indptr.npy")
    bad = indptr.copy()
    bad[0] = 1
    np.save(dataset_dir / "indptr.npy", bad)
    _expect_error(dataset_dir, "indptr.npy", "indptr[0] == 0", "found 1")
    bad = indptr.copy()
    bad[10], bad[11] = bad[11] + 1, bad[10]
    np.save(dataset_dir / "indptr.npy", bad)
    _expect_error(dataset_dir, "indptr.npy", "non-decreasing")
    np.save(dataset_dir / "indptr.npy", indptr)
    indices = np.load(dataset_dir / "indices.npy")
    np.save(dataset_dir / "indices.npy", indices.astype(np.int64))
    _expect_error(dataset_dir, "indices.npy", "dtype", "int32", "int64")
    bad_idx = indices.copy()
    bad_idx[3] = 50
    np.save(dataset_dir / "indices.npy", bad_idx)
    _expect_error(dataset_dir, "indices.npy", "[0, 50)", "50]")
    np.save(dataset_dir / "indices.npy", indices)
    (dataset_dir / "features.npy").write_bytes(b"garbage")
    _expect_error(dataset_dir, "features.npy", "not a readable .npy")


def test_splits_must_be_disjoint_and_in_range(dataset_dir: Path) -> None:
    train = np.load(dataset_dir / "train_idx.npy")
    valid = np.load(dataset_dir / "valid_idx.npy")
    np.save(dataset_dir / "valid_idx.npy", np.concatenate([valid, train[:2]]))
    _expect_error(dataset_dir, "valid_idx.npy", "disjoint", "found 2")
    np.save(dataset_dir / "valid_idx.npy", np.array([1, 1], dtype=np.int64))
    _expect_error(dataset_dir, "valid_idx.npy", "distinct")
    np.save(dataset_dir / "valid_idx.npy", np.array([99], dtype=np.int64))
    _expect_error(dataset_dir, "valid_idx.npy", "[0, 50)")
    np.save(dataset_dir / "valid_idx.npy", np.array([0], dtype=np.int32))
    _expect_error(dataset_dir, "valid_idx.npy", "dtype", "int64")


def test_held_out_pair_still_in_the_graph_is_refused(tmp_path: Path) -> None:
    """A hand-edited link_test.npy / link_valid.npy holding an edge of the message-passing graph is a leak."""
    from tests.conftest import write_link_dataset

    dataset = write_link_dataset(tmp_path / "link", write_labelled_graph(tmp_path / "tiny"))
    root = dataset.path
    train = np.load(root / "link_train.npy")
    test = np.load(root / "link_test.npy")
    Dataset.open(root)  # the written split holds no leak
    for name in ("link_test", "link_valid"):
        original = np.load(root / f"{name}.npy")
        leaked = original.copy()
        leaked[3] = train[5]
        np.save(root / f"{name}.npy", leaked)
        _expect_error(root, f"{name}.npy", "row 3", f"pair ({train[5][0]}, {train[5][1]})", "message-passing graph")
        leaked[3] = train[5][::-1]  # the reverse of an edge: a leak too on an undirected split
        np.save(root / f"{name}.npy", leaked)
        _expect_error(root, f"{name}.npy", "row 3", "reverse")
        np.save(root / f"{name}.npy", original)
    assert Dataset.open(root).link.pairs("test").num_positives == test.shape[0]


def test_open_checks_evenly_spaced_held_out_pairs_and_a_full_check_finds_any(tmp_path: Path) -> None:
    from graphtier.dataset.edges import link_split
    from graphtier.errors import DatasetError
    from tests.conftest import write_link_dataset

    dataset = write_link_dataset(tmp_path / "link", write_labelled_graph(tmp_path / "tiny"))
    root, split = dataset.path, dataset.link
    train = np.load(root / "link_train.npy")
    test = np.load(root / "link_test.npy")
    assert test.shape[0] > 8
    sampled = np.unique(np.linspace(0, test.shape[0] - 1, 4).astype(np.int64))
    skipped = next(row for row in range(test.shape[0]) if row not in sampled)
    for row, found_with_a_limit in ((int(sampled[1]), True), (skipped, False)):
        leaked = test.copy()
        leaked[row] = train[0]
        split.splits["test"] = link_split.LinkPairs(leaked, None, per_positive=False)
        if found_with_a_limit:
            with pytest.raises(DatasetError, match=f"row {row}, pair"):
                link_split.check_held_out(root, split, dataset.indptr, dataset.indices, limit=4)
        else:
            link_split.check_held_out(root, split, dataset.indptr, dataset.indices, limit=4)
        with pytest.raises(DatasetError, match=f"row {row}, pair"):
            link_split.check_held_out(root, split, dataset.indptr, dataset.indices, limit=None)
