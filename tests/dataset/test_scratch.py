"""Scratch arrays: writable memory maps of unlinked files, space checked first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import resources
from graphtier.dataset.scratch import scratch_array
from graphtier.errors import ResourceError


def test_scratch_array_is_a_zeroed_writable_map_that_leaves_no_file(tmp_path: Path) -> None:
    array = scratch_array(tmp_path, (1000, 3), np.float32, "test rows")
    assert isinstance(array, np.memmap) and array.shape == (1000, 3) and array.dtype == np.float32
    assert not array.any()
    array[7] = [1.0, 2.0, 3.0]
    assert array[7].tolist() == [1.0, 2.0, 3.0] and float(array.sum()) == 6.0
    assert list(tmp_path.iterdir()) == []  # unlinked at once: nothing to clean up, whatever happens next


def test_scratch_array_of_zero_rows_needs_no_file(tmp_path: Path) -> None:
    array = scratch_array(tmp_path, (0, 4), "float32", "test rows")
    assert array.shape == (0, 4) and not isinstance(array, np.memmap)


def test_scratch_array_refuses_what_the_disk_cannot_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resources, "free_disk", lambda path: 100)
    with pytest.raises(
        ResourceError, match=r"layer 1 outputs: needs .* \(4,000 bytes\) of disk space, only 100 B free"
    ):
        scratch_array(tmp_path, (1000,), np.float32, "layer 1 outputs")
    assert list(tmp_path.iterdir()) == []
