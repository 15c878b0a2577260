"""edge_time.npy / edge_time_order.npy in Dataset.open (issue 38): loaded as memory maps, checked against
meta.json and indptr; each problem is one DatasetError naming the file, the expected and the found value."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset, DatasetError
from graphtier.dataset.importers.formats.edgelist import import_edgelist


@pytest.fixture
def timed(tmp_path: Path) -> Path:
    src = tmp_path / "e.txt"
    src.write_text("0 1 30\n2 1 10\n3 1 20\n1 2 5\n0 2 5\n3 0 1\n")
    return import_edgelist(src, tmp_path / "d", time_column=2, time_unit="days").path


def expect_error(path: Path, *fragments: str) -> None:
    with pytest.raises(DatasetError) as info:
        Dataset.open(path)
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def test_open_maps_the_times(timed: Path) -> None:
    dataset = Dataset.open(timed)
    assert isinstance(dataset.edge_time, np.memmap) and isinstance(dataset.edge_time_order, np.memmap)
    assert "edge_time" not in dataset.extra and "edge_time_order" not in dataset.extra
    np.testing.assert_array_equal(dataset.edge_time_order[dataset.indptr[1] : dataset.indptr[2]], [2, 3, 1])
    assert dataset.meta["edge_time"] == {"unit": "days", "min": 1, "max": 30}


def test_a_dataset_without_times_has_none(tmp_path: Path) -> None:
    src = tmp_path / "e.txt"
    src.write_text("0 1 30\n2 1 10\n")
    dataset = import_edgelist(src, tmp_path / "d")
    assert dataset.edge_time is None and dataset.edge_time_order is None and "edge_time" not in dataset.meta


def test_one_file_without_the_other(timed: Path) -> None:
    (timed / "edge_time_order.npy").unlink()
    expect_error(timed, "edge_time_order.npy: file missing", "edge_time.npy")


def test_files_without_the_meta_entry_and_the_reverse(timed: Path) -> None:
    meta = json.loads((timed / "meta.json").read_text())
    entry = meta.pop("edge_time")
    (timed / "meta.json").write_text(json.dumps(meta))
    expect_error(timed, "meta.json", "'edge_time' missing")
    meta["edge_time"] = entry
    (timed / "meta.json").write_text(json.dumps(meta))
    for name in ("edge_time.npy", "edge_time_order.npy"):
        (timed / name).unlink()
    expect_error(timed, "edge_time.npy: file missing", "meta.json has the field")


@pytest.mark.parametrize(
    ("name", "array", "fragments"),
    [
        ("edge_time", np.zeros(6, np.int32), ["edge_time.npy", "dtype int64", "int32"]),
        ("edge_time", np.zeros(5, np.int64), ["edge_time.npy", "shape (6,)", "(5,)"]),
        ("edge_time_order", np.arange(7, dtype=np.int64)[1:], ["edge_time_order.npy", "[0, 6)", "[1, 6]"]),
        (
            "edge_time_order",
            np.arange(6, dtype=np.int64),
            ["edge_time_order.npy", "row 1", "sorted by (time, position)"],
        ),
        (
            "edge_time",
            np.array([31, 10, 20, 5, 5, 1], np.int64),
            ["meta.json", "edge_time.max", "expected 31", "found 30"],
        ),
    ],
)
def test_bad_arrays(timed: Path, name: str, array: np.ndarray, fragments: list[str]) -> None:
    np.save(timed / f"{name}.npy", array)
    expect_error(timed, *fragments)


def test_bad_meta_entry(timed: Path) -> None:
    meta = json.loads((timed / "meta.json").read_text())
    meta["edge_time"]["unit"] = 3
    (timed / "meta.json").write_text(json.dumps(meta))
    expect_error(timed, "meta.json", "edge_time.unit", "a string or null", "3")
    meta["edge_time"] = {"unit": None, "min": 0, "max": 30}
    (timed / "meta.json").write_text(json.dumps(meta))
    expect_error(timed, "edge_time.min", "expected 1", "found 0")
