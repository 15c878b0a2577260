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


def test_a_map_larger_than_the_free_memory_is_gathered_by_an_io_team(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphtier.dataset import advice
    from graphtier.memory.features.host import HostFeatureStore
    from graphtier.memory.features.threads import IO_THREADS

    table = np.random.default_rng(3).standard_normal((5000, 6)).astype(np.float32)
    np.save(tmp_path / "t.npy", table)
    mapped = np.load(tmp_path / "t.npy", mmap_mode="r")
    assert not advice.outgrows_page_cache(mapped) and not advice.outgrows_page_cache(table)
    monkeypatch.setattr(advice, "available_memory", lambda: table.nbytes - 1)
    assert advice.outgrows_page_cache(mapped) and not advice.outgrows_page_cache(table)
    store = HostFeatureStore(mapped)
    assert store._team.io_bound and IO_THREADS > 2
    ids = np.random.default_rng(4).integers(0, 5000, 20_000)
    np.testing.assert_array_equal(store.gather(ids).numpy(), table[ids])  # rows split over IO_THREADS threads
