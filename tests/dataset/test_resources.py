"""Memory/disk checks: human_bytes, require_memory/require_disk, reserve_file, is_resource_error."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from graphtier.dataset import resources
from graphtier.errors import DatasetError, ResourceError


def test_human_bytes() -> None:
    assert resources.human_bytes(512) == "512 B"
    assert resources.human_bytes(1536) == "1.5 KiB"
    assert resources.human_bytes(1000 * 1024) == "1000 KiB"
    assert resources.human_bytes(745 * 2**30) == "745 GiB"


def test_require_memory_and_disk(tmp_path: Path) -> None:
    assert resources.available_memory() > 0
    resources.require_memory(1, "tiny")
    with pytest.raises(ResourceError, match=r"huge: needs about .* \(1,152,921,504,606,846,976 bytes\) of memory"):
        resources.require_memory(2**60, "huge")
    resources.require_disk(tmp_path, 1, "tiny")
    with pytest.raises(ResourceError, match="of disk space, only .* free"):
        resources.require_disk(tmp_path / "not" / "yet", 2**62, "huge")


def test_reserve_file_allocates(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    resources.reserve_file(path, 3 << 20, "test")
    assert os.path.getsize(path) == 3 << 20
    assert os.stat(path).st_blocks * 512 >= 3 << 20


def test_is_resource_error() -> None:
    assert resources.is_resource_error(OSError(errno.ENOSPC, "No space left on device"))
    assert resources.is_resource_error(OSError(errno.EROFS, "Read-only file system"))
    assert resources.is_resource_error(OSError("1048576 requested and 262112 written"))
    assert not resources.is_resource_error(OSError(errno.EBADF, "Bad file descriptor"))
    assert not resources.is_resource_error(OSError(errno.ENOENT, "No such file"))
    assert not resources.is_resource_error(ValueError("x"))


def test_require_node_capacity(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resources.physical_memory() > 0
    monkeypatch.setattr(resources, "physical_memory", lambda: 8 << 20)  # an 8 MiB machine: 1,048,576 nodes
    resources.require_node_capacity(1 << 20, "fits")
    with pytest.raises(ResourceError, match=r"^big: 1,048,577 nodes in all need at least 8 MiB of memory .* has 8 MiB"):
        resources.require_node_capacity((1 << 20) + 1, "big")
    with pytest.raises(DatasetError, match=r"^ids: expected at most 9,223,372,036,854,775,807 nodes in all \(int64"):
        resources.require_node_capacity(2**63, "ids")
