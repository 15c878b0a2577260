"""Tell the kernel how a memory-mapped table will be read (``madvise``), for tables larger than RAM.

A page fault on a memory map normally reads ahead around the faulting page: up to the device's
``read_ahead_kb`` (8 MiB on some virtual disks). That suits a table read in order, and ruins one read
a row at a time at random: every missed 640-byte row would read megabytes. Mini-batch training gathers
rows at random, so its feature stores advise ``random`` (a fault reads its page only); a pass that reads
the table in order leaves it ``normal``. Advice changes speed only, never the values read.

A page fault also blocks its thread until the disk answers (about 0.1 ms here): one thread reads about 10k
rows a second from a table that outgrows the page cache (:func:`outgrows_page_cache`), 16 threads about 50k.
"""

from __future__ import annotations

import mmap

import numpy as np

from graphtier.dataset.resources import available_memory

ACCESS_PATTERNS = ("random", "sequential", "normal")


def advise_access(array: np.ndarray, pattern: str) -> bool:
    """Advise the kernel that the memory map behind ``array`` (any dtype/shape; a view of one) is read by
    ``pattern``: ``random``, ``sequential`` or ``normal``. Applies to the whole mapping.

    Returns whether advice was given: False for an array in RAM or where the platform lacks ``madvise``.
    """
    if pattern not in ACCESS_PATTERNS:
        raise ValueError(f"pattern: expected one of {', '.join(ACCESS_PATTERNS)}, found {pattern!r}")
    mapping = _mapping_of(array)
    flag = getattr(mmap, f"MADV_{pattern.upper()}", None)
    if mapping is None or flag is None or not hasattr(mapping, "madvise"):
        return False
    try:
        mapping.madvise(flag)
    except (OSError, ValueError):  # a closed mapping, or advice the kernel refuses: only speed is at stake
        return False
    return True


def _mapping_of(array: object) -> mmap.mmap | None:
    """The ``mmap`` a numpy array's memory belongs to (through its memmap or ``.base`` chain), or None."""
    seen = 0
    while array is not None and seen < 32:
        if isinstance(array, mmap.mmap):
            return array
        mapping = getattr(array, "_mmap", None)
        if isinstance(mapping, mmap.mmap):
            return mapping
        array = getattr(array, "base", None)
        seen += 1
    return None


def outgrows_page_cache(array: np.ndarray) -> bool:
    """Whether ``array`` is memory-mapped and larger than the memory now available: reads of its rows will
    fault on the disk, so a reader gains by keeping many of them in flight (see
    :class:`graphtier.memory.features.threads.GatherTeam`)."""
    return _mapping_of(array) is not None and int(array.nbytes) > available_memory()
