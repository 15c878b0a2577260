"""Atomic dataset writing.

Every writer (importers, the generator, reorder) builds the dataset in a temporary sibling
directory and renames it into place only after it has been written and validated, so a crash or a
bad input never leaves a half-written dataset at the output path. The output is checked at start-up and
again just before the rename: without ``overwrite`` the rename fails if anything appeared at the output
meanwhile; with it, only a directory holding nothing but a dataset is replaced, in one atomic swap
(:mod:`graphtier.dataset.swap`). Output paths that are symlinks are resolved: the dataset a link points to is
replaced and the link kept.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources, swap
from graphtier.dataset.format import FORMAT_VERSION, META_FILE, Dataset
from graphtier.errors import DatasetError, ResourceError

NPY_HEADER_BYTES = 4096
"""Upper bound of the header numpy writes in front of an ``.npy`` array's data."""


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
        self.overwrite = overwrite
        self.target = Path(os.path.realpath(self.output))
        """Where the dataset goes: ``output`` with symlinks resolved (a link to a dataset keeps pointing at it)."""
        parent = self.target.parent
        if not parent.is_dir():
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ResourceError(f"{parent}: cannot create output directory ({exc.strerror})") from None
        swap.remove_stale(self.target)
        self.check_output()
        self.tmp = swap.temp_name(self.target)
        swap.track(self.tmp)  # an interrupt before the with block is set up still removes it (the CLI's handler)
        try:
            self.tmp.mkdir()
        except OSError as exc:
            swap.untrack(self.tmp)
            raise ResourceError(f"{self.output}: cannot write the dataset in {parent} ({exc.strerror})") from None
        self.finished: Dataset | None = None
        self.source_notes: dict[str, Any] = {}
        """Extra ``meta.json`` ``source`` fields (for example how many values an import repaired)."""

    def check_output(self, inputs: Iterable[str | os.PathLike[str]] = (), *, finishing: bool = False) -> None:
        """Raise :class:`DatasetError` unless the output may be written: missing, or (with ``overwrite``) an
        empty directory or a graphtier dataset holding only dataset files and none of ``inputs``.

        Runs at start-up and again (``finishing``) just before the new dataset is moved into place.
        """
        if not os.path.lexists(self.target):
            return
        if not self.overwrite:
            raise (
                self._appeared()
                if finishing
                else DatasetError(f"{self.output}: already exists (pass --overwrite to replace it)")
            )
        if not self.target.is_dir():
            raise DatasetError(f"{self.output}: exists and is not a directory")
        cwd = Path.cwd().resolve()
        if self.target == cwd or self.target in cwd.parents:
            raise DatasetError(
                f"{self.output}: is the current directory (or contains it) and cannot be replaced; pass another OUTPUT"
            )
        entries = sorted(self.target.iterdir())
        if entries and not (self.target / META_FILE).is_file():
            raise DatasetError(
                f"{self.output}: exists and is not a graphtier dataset (no {META_FILE}); "
                "refusing to replace it with --overwrite"
            )
        kept = {Path(os.path.realpath(p)) for p in inputs}  # entries lie in the resolved target: compare as they are
        for entry in entries:
            what = "an input of this run" if entry in kept else None if is_dataset_file(entry) else "not a dataset file"
            if what is not None:
                raise DatasetError(
                    f"{self.output / entry.name}: {what}; --overwrite replaces only a directory holding nothing but "
                    f"a dataset ({META_FILE}, *.npy, {', '.join(SIDE_FILES)}); move it out of {self.output} "
                    "or pass another OUTPUT"
                )

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
            if isinstance(exc, MemoryError):
                raise ResourceError(f"{self.output}: out of memory while writing the dataset ({exc})") from None
            if isinstance(exc, OSError) and resources.is_resource_error(exc):
                raise ResourceError(
                    f"{self.output}: {resources.os_error_message(exc)} while writing the dataset; nothing was written"
                ) from None

    def path(self, name: str) -> Path:
        """Path of array ``name`` (without ``.npy``) inside the temporary directory."""
        return self.tmp / f"{name}.npy"

    def save(self, name: str, array: np.ndarray) -> None:
        """Write ``array`` as ``name.npy`` (checks the free disk space first)."""
        data = np.ascontiguousarray(array)
        path = self.path(name)
        self.require_disk(path.name, int(data.nbytes) + NPY_HEADER_BYTES)
        try:
            np.save(path, data, allow_pickle=False)
        except OSError as exc:
            raise self._write_error(exc, path.name, int(data.nbytes)) from None

    def save_parts(self, name: str, parts: Sequence[np.ndarray]) -> None:
        """Write the concatenation of the 1-d ``parts`` (one dtype) as ``name.npy``, the same bytes as
        :meth:`save` of ``np.concatenate(parts)``, without making that copy in memory."""
        dtype = np.dtype(parts[0].dtype) if parts else np.dtype(np.int64)
        if any(p.ndim != 1 or p.dtype != dtype for p in parts):
            raise ValueError(f"save_parts({name!r}): expected 1-d parts of one dtype")
        length = sum(int(p.shape[0]) for p in parts)
        path = self.path(name)
        self.require_disk(path.name, length * dtype.itemsize + NPY_HEADER_BYTES)
        header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (length,)}
        try:
            with open(path, "wb") as f:
                np.lib.format.write_array_header_1_0(f, header)
                for part in parts:
                    f.write(memoryview(np.ascontiguousarray(part)).cast("B"))
        except OSError as exc:
            raise self._write_error(exc, path.name, length * dtype.itemsize) from None

    def open_memmap(self, name: str, shape: tuple[int, ...], dtype: Any) -> np.memmap:
        """Create ``name.npy`` of ``shape``/``dtype`` as a writable memory map, to fill in chunks.

        The file's blocks are reserved first (``posix_fallocate``): a disk too small raises
        :class:`ResourceError` here instead of SIGBUS while writing through the map.
        """
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        path = self.path(name)
        self.require_disk(path.name, nbytes + NPY_HEADER_BYTES)
        try:
            out = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
        except OSError as exc:
            raise self._write_error(exc, path.name, nbytes) from None
        resources.reserve_file(path, os.path.getsize(path), f"{self.output}: writing {path.name}")
        return out

    def require_disk(self, file_name: str, nbytes: int) -> None:
        """Raise :class:`ResourceError` unless ``nbytes`` more fit on the output's filesystem."""
        resources.require_disk(self.tmp, nbytes, f"{self.output}: writing {file_name}")

    def _write_error(self, exc: OSError, file_name: str, nbytes: int) -> Exception:
        short_write = exc.errno is None  # numpy's tofile on a full disk: "N requested and M written"
        if not resources.is_resource_error(exc):
            return exc
        reason = f"No space left on device ({exc})" if short_write else exc.strerror
        return ResourceError(
            f"{self.output}: cannot write {file_name} ({resources.human_bytes(nbytes)}, {nbytes:,} bytes): "
            f"{reason}; {resources.human_bytes(resources.free_disk(self.tmp.parent))} free"
        )

    def write_text(self, name: str, text: str) -> None:
        """Write a side file (for example a JSON id map) into the dataset directory."""
        data = text.encode("utf-8")
        self.require_disk(name, len(data))
        try:
            (self.tmp / name).write_bytes(data)
        except OSError as exc:
            raise self._write_error(exc, name, len(data)) from None

    def finish(self, meta: dict[str, Any], *, validate: bool = True, progress: Progress = NO_PROGRESS) -> Dataset:
        """Write ``meta.json``, validate the directory and rename it to the output path.

        ``meta`` gets ``format_version`` and, if missing, ``node_order = "original"`` and
        ``source.created`` (UTC, ISO 8601). Returns the dataset opened at its final path. ``progress`` reports
        the stage ``validate the new dataset`` (edges: the validation reads every edge).
        """
        meta = dict(meta)
        meta.setdefault("format_version", FORMAT_VERSION)
        meta.setdefault("node_order", "original")
        source = dict(meta.get("source") or {})
        source.setdefault("created", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        source.update(self.source_notes)
        meta["source"] = source
        ordered = {"format_version": meta.pop("format_version")}
        ordered.update(meta)
        self.write_text(META_FILE, json.dumps(ordered, indent=2, default=json_default) + "\n")
        if validate:
            edges = int(ordered.get("num_edges") or 0)
            with progress.stage("validate the new dataset", total=edges, unit="edges") as bar:
                Dataset.open(self.tmp)  # raises DatasetError naming the bad file
                bar.advance(edges)
        try:
            self.check_output(recorded_inputs(ordered), finishing=True)
            self._move_into_place()
        except FileExistsError:
            raise self._appeared() from None
        except OSError as exc:
            raise ResourceError(f"{self.output}: cannot move the new dataset into place ({exc.strerror})") from None
        finally:
            self.abort()  # after a swap the temporary name holds the old dataset
        self.finished = Dataset.open(self.output, validate=False)
        return self.finished

    def _appeared(self) -> DatasetError:
        return DatasetError(
            f"{self.output}: appeared while this run was writing (another run, or a user, created it); "
            "nothing was written (pass --overwrite to replace it)"
        )

    def _move_into_place(self) -> None:
        if self.overwrite and os.path.lexists(self.target):
            try:
                swap.exchange(self.tmp, self.target)
                return
            except FileNotFoundError:
                if not os.path.lexists(self.tmp):
                    raise
                # the old output vanished meanwhile: nothing to replace
        swap.move_into_place(self.tmp, self.target)

    def abort(self) -> None:
        """Remove the temporary directory (idempotent)."""
        swap.remove_tree(self.tmp)
        swap.untrack(self.tmp)


SIDE_FILES = ("label_names.json", "node_ids.json")
"""The files besides ``meta.json`` and ``*.npy`` arrays that writers put into a dataset directory."""


def is_dataset_file(path: Path) -> bool:
    """Whether ``path`` (an entry of a dataset directory) is one of the files a dataset consists of."""
    if path.is_dir() and not path.is_symlink():
        return False
    return (
        path.name == META_FILE or path.name in SIDE_FILES or (path.suffix == ".npy" and not path.name.startswith("."))
    )


def recorded_inputs(meta: dict[str, Any]) -> list[str]:
    """The input files ``meta.json`` records (an import's ``source.inputs``, a reorder's score file)."""
    inputs = [str(p) for p in (meta.get("source") or {}).get("inputs") or []]
    score = (meta.get("reorder") or {}).get("score")
    if isinstance(score, str) and os.path.isabs(score):
        inputs.append(score)
    return inputs


def json_default(value: Any) -> Any:
    """``json.dumps`` fallback for numpy scalars and paths."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
