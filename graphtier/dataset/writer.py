"""Atomic dataset writing.

Every writer (importers, the generator, reorder) builds the dataset in a temporary sibling
directory and renames it into place only after it has been written and validated, so a crash or a
bad input never leaves a half-written dataset at the output path.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from graphtier.dataset.format import FORMAT_VERSION, META_FILE, Dataset
from graphtier.errors import DatasetError


class DatasetWriter:
    """Write a dataset directory atomically.

    Usage::

        with DatasetWriter("out/cora", overwrite=False) as writer:
            writer.save("indptr", indptr)
            feats = writer.open_memmap("features", (n, d), np.float32)  # fill in chunks
            writer.finish(meta)          # validates, then renames into place

    Leaving the ``with`` block without :meth:`finish` (an exception, an early return) removes the
    temporary directory and leaves ``output`` untouched.
    """

    def __init__(self, output: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        self.output = Path(output)
        if self.output.exists() and not overwrite:
            raise DatasetError(f"{self.output}: already exists (pass --overwrite to replace it)")
        if self.output.exists() and not self.output.is_dir():
            raise DatasetError(f"{self.output}: exists and is not a directory")
        parent = self.output.parent
        if not parent.is_dir():
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatasetError(f"{parent}: cannot create output directory ({exc.strerror})") from None
        self.overwrite = overwrite
        self.tmp = parent / f".{self.output.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.tmp.mkdir()
        self.finished: Dataset | None = None

    def __enter__(self) -> "DatasetWriter":
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.finished is None:
            self.abort()

    def path(self, name: str) -> Path:
        """Path of array ``name`` (without ``.npy``) inside the temporary directory."""
        return self.tmp / f"{name}.npy"

    def save(self, name: str, array: np.ndarray) -> None:
        """Write ``array`` as ``name.npy``."""
        np.save(self.path(name), np.ascontiguousarray(array), allow_pickle=False)

    def open_memmap(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.memmap:
        """Create ``name.npy`` of ``shape``/``dtype`` as a writable memory map, to fill in chunks."""
        return np.lib.format.open_memmap(self.path(name), mode="w+", dtype=np.dtype(dtype), shape=shape)

    def write_text(self, name: str, text: str) -> None:
        """Write a side file (for example a JSON id map) into the dataset directory."""
        (self.tmp / name).write_text(text)

    def finish(self, meta: dict[str, Any], *, validate: bool = True) -> Dataset:
        """Write ``meta.json``, validate the directory and rename it to the output path.

        ``meta`` gets ``format_version`` and, if missing, ``node_order = "original"`` and
        ``source.created`` (UTC, ISO 8601). Returns the dataset opened at its final path.
        """
        meta = dict(meta)
        meta.setdefault("format_version", FORMAT_VERSION)
        meta.setdefault("node_order", "original")
        source = dict(meta.get("source") or {})
        source.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        meta["source"] = source
        ordered = {"format_version": meta.pop("format_version")}
        ordered.update(meta)
        (self.tmp / META_FILE).write_text(json.dumps(ordered, indent=2, default=json_default) + "\n")
        if validate:
            Dataset.open(self.tmp)  # raises DatasetError naming the bad file
        old: Path | None = None
        if self.output.exists():
            old = self.output.parent / f".{self.output.name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(self.output, old)
        os.rename(self.tmp, self.output)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        self.finished = Dataset.open(self.output, validate=False)
        return self.finished

    def abort(self) -> None:
        """Remove the temporary directory (idempotent)."""
        shutil.rmtree(self.tmp, ignore_errors=True)


def json_default(value: Any) -> Any:
    """``json.dumps`` fallback for numpy scalars and paths."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
