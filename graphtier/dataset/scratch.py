"""Scratch arrays on disk: large intermediate results kept in the page cache instead of anonymous memory.

:func:`scratch_array` returns a writable memory map of a new file in a directory and unlinks the file at
once: the space is the process's until the array is garbage collected (or the process ends, however it
ends), no file is ever left behind, and its pages belong to the page cache (written back to disk under
memory pressure) instead of the process's anonymous memory. The file's blocks are reserved up front, so
writing through the map cannot die with SIGBUS on a full disk (a one-line ResourceError comes first).
"""

from __future__ import annotations

import math
import os
import tempfile
from pathlib import Path

import numpy as np

from graphtier.dataset import resources


def scratch_array(
    directory: str | os.PathLike[str], shape: tuple[int, ...], dtype: np.dtype | str, what: str
) -> np.ndarray:
    """A writable zero-filled ``np.memmap`` of ``shape`` and ``dtype`` on an unlinked file in ``directory``.

    ``what`` names the array in the ResourceError raised when the disk of ``directory`` cannot hold it
    (e.g. ``"layer 1 embeddings [N, 256]"``). A zero-size array is an ordinary in-memory one.
    """
    dtype = np.dtype(dtype)
    size = math.prod(shape) * dtype.itemsize
    if size == 0:
        return np.zeros(shape, dtype=dtype)
    folder = Path(directory)
    resources.require_disk(folder, size, f"{folder}: {what}")
    fd, name = tempfile.mkstemp(prefix=".graphtier-scratch-", suffix=".bin", dir=folder)
    try:
        os.close(fd)
        resources.reserve_file(name, size, f"{folder}: {what}")
        return np.memmap(name, dtype=dtype, mode="r+", shape=shape)
    finally:
        os.unlink(name)  # the map keeps the blocks until it is closed
