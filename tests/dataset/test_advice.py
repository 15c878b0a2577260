"""madvise of memory-mapped tables: given to maps (and views of them), never to RAM arrays; values unchanged."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.advice import advise_access


def test_advice_reaches_maps_and_their_views_only(tmp_path: Path) -> None:
    table = np.arange(4000, dtype=np.float32).reshape(1000, 4)
    np.save(tmp_path / "t.npy", table)
    mapped = np.load(tmp_path / "t.npy", mmap_mode="r")
    for pattern in ("random", "sequential", "normal"):
        assert advise_access(mapped, pattern)
        assert advise_access(mapped[10:20], pattern)
        assert advise_access(np.asarray(mapped).view(np.uint32), pattern)
    assert not advise_access(table, "random")
    np.testing.assert_array_equal(mapped[[5, 999, 0]], table[[5, 999, 0]])
    with pytest.raises(ValueError, match="pattern: expected one of random, sequential, normal"):
        advise_access(mapped, "later")
