"""Memory and disk checks done before large allocations and writes.

An import or a dataset write knows (or can bound) how many bytes it will allocate or write before
doing it. These helpers compare that number with what the machine has and raise a one-line
:class:`~graphtier.errors.ResourceError` naming the number, instead of letting numpy raise
``_ArrayMemoryError`` or the kernel kill the process, or a write fail half-way on a full disk.
:func:`reserve_file` allocates a file's blocks up front so that writing through a memory map of it
cannot die with SIGBUS when the disk fills up.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from graphtier.errors import DatasetError, ResourceError

RESOURCE_ERRNOS = frozenset(
    code
    for code in (
        getattr(errno, name, None)
        for name in ("ENOSPC", "EDQUOT", "EROFS", "EACCES", "EPERM", "EBUSY", "EFBIG", "ENOMEM", "EMFILE", "ENFILE")
    )
    if code is not None
)
"""errno values of an OSError that mean "the machine cannot do this", not a bug."""


def is_resource_error(exc: BaseException) -> bool:
    """Whether ``exc`` means the machine cannot do it (an OSError of :data:`RESOURCE_ERRNOS`, or the
    errno-less short write numpy's ``tofile`` raises on a full disk), as opposed to a bug."""
    if not isinstance(exc, OSError):
        return False
    return exc.errno in RESOURCE_ERRNOS or (exc.errno is None and "requested and" in str(exc) and "written" in str(exc))


def human_bytes(count: float) -> str:
    """``1536`` -> ``'1.5 KiB'`` (binary units, three significant figures)."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.4g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def available_memory() -> int:
    """Bytes of memory a new allocation can get without swapping: ``MemAvailable`` of /proc/meminfo.

    Falls back to free physical pages (``os.sysconf``) where /proc/meminfo is absent.
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 62


def physical_memory() -> int:
    """Bytes of physical memory of this machine (``MemTotal``): what it has at all, busy or not."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 1 << 62


MAX_NODES = 2**63 - 1
"""The most nodes a dataset may have: its ids (and ``indptr`` offsets) are int64."""

NODE_BYTES = 8
"""Host bytes a node costs any command that uses a typed dataset, at the least: one int64 per node (``info``'s
degree counts, the sampler's id map; a learnable table of a featureless type is more)."""


def require_node_capacity(num_nodes: int, what: str) -> None:
    """Refuse a node count no command could use on this machine, before anything of that size is allocated:
    ids beyond int64 (:class:`~graphtier.errors.DatasetError`), or more nodes than :data:`NODE_BYTES` each of the
    machine's physical memory (:class:`ResourceError`). ``what`` names the count (``'graph.json: nodes.user.count
    1,000'``); a typed count is backed by no file (a featureless type has none), so this is its size check."""
    if num_nodes > MAX_NODES:
        raise DatasetError(f"{what}: expected at most {MAX_NODES:,} nodes in all (int64 ids), found {num_nodes:,}")
    needed, total = NODE_BYTES * num_nodes, physical_memory()
    if needed > total:
        raise ResourceError(
            f"{what}: {num_nodes:,} nodes in all need at least {human_bytes(needed)} of memory ({NODE_BYTES} bytes a node "
            f"for the per-node arrays of info and train), this machine has {human_bytes(total)}"
        )


def require_type_capacity(counts: Mapping[str, int], where: str) -> None:
    """:func:`require_node_capacity` of the node types ``counts`` (name -> count) together, the message naming
    ``where`` and the largest type (``'graph.json: nodes (user count 1,000)'``)."""
    if counts:
        largest = max(counts, key=lambda name: counts[name])
        require_node_capacity(sum(counts.values()), f"{where} ({largest} count {counts[largest]:,})")


def require_memory(needed: int, what: str, *, options: tuple[str, ...] = ()) -> None:
    """Raise :class:`ResourceError` when ``needed`` bytes exceed the available memory.

    ``what`` names the thing being built, e.g. ``"importing /data/edges.txt (CSC of 10^11 nodes)"``; it may
    mark the ``options`` it names as ``{option=value}`` (:class:`~graphtier.errors.GraphtierError`).
    """
    available = available_memory()
    if needed > available:
        raise ResourceError(
            f"{what}: needs about {human_bytes(needed)} ({needed:,} bytes) of memory, "
            f"only {human_bytes(available)} available",
            options=options,
        )


def free_disk(path: str | os.PathLike[str]) -> int:
    """Bytes an unprivileged write can still use on the filesystem holding ``path`` (or its parent)."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return int(shutil.disk_usage(p).free)
    except OSError:
        return 1 << 62


def require_disk(path: str | os.PathLike[str], needed: int, what: str, *, options: tuple[str, ...] = ()) -> None:
    """Raise :class:`ResourceError` when ``needed`` bytes do not fit on the filesystem of ``path`` (``what``
    may mark ``options`` as :func:`require_memory` does)."""
    free = free_disk(path)
    if needed > free:
        raise ResourceError(
            f"{what}: needs {human_bytes(needed)} ({needed:,} bytes) of disk space, "
            f"only {human_bytes(free)} free on the filesystem of {path}",
            options=options,
        )


def reserve_file(path: str | os.PathLike[str], size: int, what: str) -> None:
    """Allocate the blocks of the first ``size`` bytes of the existing file ``path`` (``posix_fallocate``).

    After this, writing through a memory map of the file cannot hit a full disk (which would kill
    the process with SIGBUS). Filesystems without fallocate support fall back to a free-space check.
    """
    if size <= 0:
        return
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            raise ResourceError(
                f"{what}: needs {human_bytes(size)} ({size:,} bytes) of disk space, "
                f"only {human_bytes(free_disk(path))} free on the filesystem of {path}"
            ) from None
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)):
            raise
        require_disk(path, size, what)
    except AttributeError:  # pragma: no cover - no posix_fallocate on this platform
        require_disk(path, size, what)
    finally:
        os.close(fd)


def os_error_message(exc: OSError, what: str | None = None) -> str:
    """One line for an OSError: ``'<file>: <strerror>'`` plus ``what`` when given."""
    name = exc.filename if exc.filename is not None else (what or "")
    reason = exc.strerror or str(exc)
    if exc.errno is None and "requested and" in str(exc):
        reason = f"No space left on device? short write ({exc})"
    text = f"{name}: {reason}" if name else reason
    if what and exc.filename is not None:
        text += f" ({what})"
    return text
