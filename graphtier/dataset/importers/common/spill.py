"""The edge spill of an import: parsed edge chunks (and their times) in a scratch file, so an edge list larger
than memory imports (:class:`EdgeSpill`; used through :mod:`graphtier.dataset.importers.common.edges`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources
from graphtier.errors import ResourceError

# ---------------------------------------------------------------------------- edge spill


class EdgeSpill:
    """Edge chunks (int64 ids, any range) stored in a scratch file, read back chunk by chunk.

    Each chunk is stored as int32 when its ids fit, else int64, followed by the edges' int64 times when the
    spill is ``timed`` (``--time-column``: every chunk carries times). Tracks the count, the id range of both
    ends (``min_id``/``max_id``) and of each (``src_range``/``dst_range``, None while empty).
    """

    def __init__(self, directory: Path, name: str = "edges.spill") -> None:
        self.path = Path(directory) / name
        self._file: IO[bytes] | None = open(self.path, "w+b")  # noqa: SIM115 - closed in remove()
        self._chunks: list[tuple[int, int, np.dtype]] = []
        self._offset = 0
        self.timed: bool | None = None
        """Whether the chunks carry edge times (None while empty)."""
        self.num_edges = 0
        self.src_range: tuple[int, int] | None = None
        self.dst_range: tuple[int, int] | None = None

    @property
    def min_id(self) -> int | None:
        """The smallest id at either end (None while empty)."""
        return None if self.src_range is None or self.dst_range is None else min(self.src_range[0], self.dst_range[0])

    @property
    def max_id(self) -> int | None:
        """The largest id at either end (None while empty)."""
        return None if self.src_range is None or self.dst_range is None else max(self.src_range[1], self.dst_range[1])

    def append(self, src: np.ndarray, dst: np.ndarray, time: np.ndarray | None = None) -> None:
        """Store one chunk of edges ``src[i] -> dst[i]`` (integer arrays [K]) and their times (int64 [K], or None:
        every chunk of a spill has times or none has)."""
        if self.timed is not None and self.timed != (time is not None):
            raise ValueError("EdgeSpill: every chunk carries edge times or none does")
        self.timed = time is not None
        if src.shape[0] == 0:
            return
        assert self._file is not None
        src_low, src_high, dst_low, dst_high = int(src.min()), int(src.max()), int(dst.min()), int(dst.max())
        self.src_range = _widen(self.src_range, src_low, src_high)
        self.dst_range = _widen(self.dst_range, dst_low, dst_high)
        low, high = min(src_low, dst_low), max(src_high, dst_high)
        dtype = np.dtype(np.int32) if low >= -(2**31) and high < 2**31 else np.dtype(np.int64)
        nbytes = 2 * src.shape[0] * dtype.itemsize + (8 * src.shape[0] if time is not None else 0)
        resources.require_disk(self.path.parent, nbytes, f"{self.path}: spilling parsed edges")
        try:
            for part in (src, dst):
                data = np.ascontiguousarray(part, dtype=dtype)
                self._file.write(memoryview(data).cast("B"))
            if time is not None:
                self._file.write(memoryview(np.ascontiguousarray(time, dtype=np.int64)).cast("B"))
        except OSError as exc:
            if exc.errno not in resources.RESOURCE_ERRNOS:
                raise
            raise ResourceError(
                f"{self.path}: cannot spill parsed edges ({resources.human_bytes(nbytes)}, {nbytes:,} bytes): "
                f"{exc.strerror}"
            ) from None
        self._chunks.append((self._offset, src.shape[0], dtype))
        self._offset += nbytes
        self.num_edges += src.shape[0]

    def extend(self, blocks: Iterable[np.ndarray], progress: Progress = NO_PROGRESS, *, timed: bool = False) -> None:
        """Store every integer block [K, >= 2] of ``blocks`` (column 0 the sources, column 1 the destinations,
        column 2 the times when ``timed``), reported as the stage ``prepare: read edges`` block by block."""
        with progress.stage("prepare: read edges", unit="edges") as bar:
            for block in blocks:
                self.append(block[:, 0], block[:, 1], block[:, 2] if timed else None)
                bar.advance(int(block.shape[0]))

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield the stored chunks as ``(src, dst)`` arrays (int32 or int64 [K])."""
        assert self._file is not None
        self._file.flush()
        for offset, count, dtype in self._chunks:
            self._file.seek(offset)
            both = np.fromfile(self._file, dtype=dtype, count=2 * count)
            yield both[:count], both[count:]

    def timed_chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Yield the stored chunks of a ``timed`` spill as ``(src, dst, time)``: int32/int64 [K] ids, int64 [K]."""
        assert self._file is not None and self.timed is not False
        self._file.flush()
        for offset, count, dtype in self._chunks:
            self._file.seek(offset)
            both = np.fromfile(self._file, dtype=dtype, count=2 * count)
            yield both[:count], both[count:], np.fromfile(self._file, dtype=np.int64, count=count)

    def remove(self) -> None:
        """Close and delete the scratch file (idempotent)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> "EdgeSpill":
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _widen(bounds: tuple[int, int] | None, low: int, high: int) -> tuple[int, int]:
    return (low, high) if bounds is None else (min(bounds[0], low), max(bounds[1], high))
