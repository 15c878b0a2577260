"""Shared machinery of the importers.

* reading text (plain or gzip) in line-aligned chunks and parsing them with the numba kernels,
  with one-line errors that name the file, the line and what was found;
* :class:`EdgeSpill`: parsed edge chunks written to a scratch file, so an edge list larger than
  memory as Python objects (or even as int64 arrays) can be imported;
* :class:`IdMap`: dense renumbering of node ids (identity, lookup table or sorted unique ids);
* :func:`build_csc`: two passes over edge chunks (count, scatter) into the CSC layout;
* :func:`random_split`, :func:`synthetic_features` (also used by the generator), labels and
  features loading, and the ``meta.json`` fields every importer fills.

Peak memory of an import is about ``indices + 2 * indptr`` plus one chunk (plus one more copy of
``indices`` when deduplicating), independent of how the input is spread over lines.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from graphtier.dataset import resources
from graphtier.dataset.finite import NonFiniteGuard
from graphtier.dataset.format import Dataset, index_dtype
from graphtier.dataset.importers import kernels
from graphtier.dataset.writer import DatasetWriter
from graphtier.dataset.csc import compact_csc
from graphtier.errors import DatasetError, OptionError, ResourceError

CHUNK_BYTES = 64 << 20
"""Bytes of text parsed at a time."""

EDGE_CHUNK = 1 << 23
"""Edges per chunk when edges come from arrays rather than text."""

FEATURE_BLOCK_ROWS = 1 << 16
"""Rows per block of :func:`synthetic_features`; fixed so the output does not depend on memory."""

HEADER_MODES = ("auto", "yes", "no")

_GZIP_MAGIC = b"\x1f\x8b"


# ---------------------------------------------------------------------------- text input


def require_file(path: str | os.PathLike[str], what: str = "input file") -> Path:
    """``Path(path)`` if it is an existing file, else :class:`DatasetError` naming it."""
    p = Path(path)
    if not p.exists():
        raise DatasetError(f"{p}: {what} not found")
    if not p.is_file():
        raise DatasetError(f"{p}: expected a file ({what}), found a directory or special file")
    return p


def open_binary(path: Path) -> IO[bytes]:
    """Open ``path`` for reading bytes, transparently decompressing gzip (detected by magic bytes)."""
    try:
        with open(path, "rb") as probe:
            magic = probe.read(2)
        if magic == _GZIP_MAGIC:
            return gzip.open(path, "rb")
        return open(path, "rb")  # noqa: SIM115 - returned to the caller
    except OSError as exc:
        raise DatasetError(f"{path}: cannot open ({exc.strerror})") from None


def iter_line_chunks(path: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[tuple[np.ndarray, int]]:
    """Yield ``(buf, lines_before)``: uint8 [B] arrays of whole lines, and the number of lines before.

    A gzip file is decompressed as a stream; a truncated or damaged one raises :class:`DatasetError`.
    """
    carry = b""
    lines_before = 0
    with open_binary(path) as stream:
        while True:
            try:
                block = stream.read(chunk_bytes)
            except (EOFError, gzip.BadGzipFile, zlib.error, OSError) as exc:
                raise DatasetError(f"{path}: truncated or damaged gzip data ({exc})") from None
            if not block:
                if carry:
                    yield np.frombuffer(carry, dtype=np.uint8), lines_before
                return
            data = carry + block if carry else block
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                continue
            whole, carry = data[: cut + 1], data[cut + 1 :]
            yield np.frombuffer(whole, dtype=np.uint8), lines_before
            lines_before += whole.count(b"\n")


def _line_at(buf: np.ndarray, offset: int) -> str:
    end = offset
    n = buf.shape[0]
    while end < n and end - offset < 80 and buf[end] != 10:
        end += 1
    text = bytes(buf[offset:end]).decode("utf-8", errors="replace").rstrip("\r")
    return text + ("..." if end - offset >= 80 else "")


def parse_error(path: Path, buf: np.ndarray, lines_before: int, code: int, offset: int, expected: str) -> DatasetError:
    """A one-line :class:`DatasetError` for a parse failure at byte ``offset`` of chunk ``buf``."""
    line_number = lines_before + int(np.count_nonzero(buf[:offset] == 10)) + 1
    found = kernels.PARSE_ERROR_TEXT.get(code, f"parse error {code}")
    return DatasetError(f"{path}: line {line_number}: expected {expected}, found {found}: {_line_at(buf, offset)!r}")


def first_data_lines(path: Path, count: int = 2, probe_bytes: int = 1 << 20) -> list[str]:
    """The first ``count`` non-blank, non-comment lines of ``path`` (stripped), read from its start."""
    lines: list[str] = []
    for buf, _ in iter_line_chunks(path, probe_bytes):
        for raw in bytes(buf).decode("utf-8", errors="replace").split("\n"):
            stripped = raw.strip(" \t\r")
            if stripped and stripped[0] not in "#%":
                lines.append(stripped)
                if len(lines) >= count:
                    return lines
        if len(buf) >= probe_bytes:
            break
    return lines


def line_parses_as_ints(line: str, num_columns: int, allow_extra_columns: bool) -> int:
    """The parse code of ``line`` as ``num_columns`` integers (``kernels.PARSE_OK`` when it parses)."""
    buf = np.frombuffer(line.encode("utf-8"), dtype=np.uint8)
    out = np.empty((1, num_columns), dtype=np.int64)
    _, code, _ = kernels.parse_int_rows(buf, num_columns, allow_extra_columns, out)
    return int(code)


def has_header(path: Path, mode: str, num_columns: int, allow_extra_columns: bool = True) -> bool:
    """Whether the first data line of ``path`` is a header (``mode``: ``auto``, ``yes`` or ``no``).

    ``auto``: the first line is a header when it does not parse as integers but the second does.
    """
    if mode not in HEADER_MODES:
        raise OptionError(f"--header: expected one of {', '.join(HEADER_MODES)}, found {mode!r}")
    if mode != "auto":
        return mode == "yes"
    lines = first_data_lines(path, 2)
    if len(lines) < 2:
        return False
    first = line_parses_as_ints(lines[0], num_columns, allow_extra_columns)
    second = line_parses_as_ints(lines[1], num_columns, allow_extra_columns)
    return first == kernels.PARSE_BAD_TOKEN and second == kernels.PARSE_OK


def _skip_first_data_line(buf: np.ndarray) -> np.ndarray:
    i, n = 0, buf.shape[0]
    while i < n:
        j = i
        while j < n and buf[j] in (32, 9, 13):
            j += 1
        end = i
        while end < n and buf[end] != 10:
            end += 1
        if j < end and buf[j] not in (35, 37):  # a data line: drop it
            return buf[end + 1 :]
        i = end + 1
    return buf[n:]


def iter_int_rows(
    path: Path,
    num_columns: int,
    *,
    allow_extra_columns: bool,
    skip_header: bool,
    expected: str,
    chunk_bytes: int = CHUNK_BYTES,
) -> Iterator[np.ndarray]:
    """Parse ``path`` into int64 [R, num_columns] blocks, one per text chunk.

    ``expected`` describes a good line for error messages (for example ``"two integer node ids"``).
    """
    first = True
    for buf, lines_before in iter_line_chunks(path, chunk_bytes):
        if first and skip_header:
            skipped = _skip_first_data_line(buf)
            lines_before += int(np.count_nonzero(buf[: buf.shape[0] - skipped.shape[0]] == 10))
            buf = skipped
        first = False
        capacity = int(np.count_nonzero(buf == 10)) + 1
        out = np.empty((capacity, num_columns), dtype=np.int64)
        rows, code, offset = kernels.parse_int_rows(buf, num_columns, allow_extra_columns, out)
        if code != kernels.PARSE_OK:
            raise parse_error(path, buf, lines_before, code, offset, expected)
        yield out[:rows]


def iter_float_rows(
    path: Path, num_columns: int, *, expected: str, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[np.ndarray]:
    """Parse ``path`` into float32 [R, num_columns] blocks, one per text chunk."""
    for buf, lines_before in iter_line_chunks(path, chunk_bytes):
        capacity = int(np.count_nonzero(buf == 10)) + 1
        out = np.empty((capacity, num_columns), dtype=np.float32)
        rows, code, offset = kernels.parse_float_rows(buf, out)
        if code != kernels.PARSE_OK:
            raise parse_error(path, buf, lines_before, code, offset, expected)
        yield out[:rows]


def count_columns(line: str) -> int:
    """Number of columns of a data line (separators: blanks with at most one comma)."""
    return len(re.split(r"[ \t]*,[ \t]*|[ \t]+", line.strip(" \t\r")))


# ---------------------------------------------------------------------------- edge spill


class EdgeSpill:
    """Edge chunks (int64 ids, any range) stored in a scratch file, read back chunk by chunk.

    Each chunk is stored as int32 when its ids fit, else int64. Tracks the id range and count.
    """

    def __init__(self, directory: Path, name: str = "edges.spill") -> None:
        self.path = Path(directory) / name
        self._file: IO[bytes] | None = open(self.path, "w+b")  # noqa: SIM115 - closed in remove()
        self._chunks: list[tuple[int, int, np.dtype]] = []
        self._offset = 0
        self.num_edges = 0
        self.min_id: int | None = None
        self.max_id: int | None = None

    def append(self, src: np.ndarray, dst: np.ndarray) -> None:
        """Store one chunk of edges ``src[i] -> dst[i]`` (integer arrays [K])."""
        if src.shape[0] == 0:
            return
        assert self._file is not None
        low = int(min(src.min(), dst.min()))
        high = int(max(src.max(), dst.max()))
        self.min_id = low if self.min_id is None else min(self.min_id, low)
        self.max_id = high if self.max_id is None else max(self.max_id, high)
        dtype = np.dtype(np.int32) if low >= -(2**31) and high < 2**31 else np.dtype(np.int64)
        nbytes = 2 * src.shape[0] * dtype.itemsize
        resources.require_disk(self.path.parent, nbytes, f"{self.path}: spilling parsed edges")
        try:
            for part in (src, dst):
                data = np.ascontiguousarray(part, dtype=dtype)
                self._file.write(memoryview(data).cast("B"))
        except OSError as exc:
            if exc.errno not in resources.RESOURCE_ERRNOS:
                raise
            raise ResourceError(
                f"{self.path}: cannot spill parsed edges ({resources.human_bytes(nbytes)}, {nbytes:,} bytes): "
                f"{exc.strerror}"
            ) from None
        self._chunks.append((self._offset, src.shape[0], dtype))
        self._offset += 2 * src.shape[0] * dtype.itemsize
        self.num_edges += src.shape[0]

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield the stored chunks as ``(src, dst)`` arrays (int32 or int64 [K])."""
        assert self._file is not None
        self._file.flush()
        for offset, count, dtype in self._chunks:
            self._file.seek(offset)
            both = np.fromfile(self._file, dtype=dtype, count=2 * count)
            yield both[:count], both[count:]

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


# ---------------------------------------------------------------------------- id maps


@dataclass
class IdMap:
    """Map original integer node ids to dense ids ``0..num_nodes-1``, keeping their order.

    Exactly one representation is used: identity (``table`` and ``sorted_ids`` are None), a lookup
    ``table`` (int64 [span], -1 for absent ids; new id of ``i`` is ``table[i - offset]``), or the
    ``sorted_ids`` themselves (int64 [N]; mapped with a binary search).
    """

    num_nodes: int
    offset: int = 0
    table: np.ndarray | None = None
    sorted_ids: np.ndarray | None = None
    nodes_only_in_node_data: int = 0
    """Nodes that no edge touches but a features/labels file covers (kept as isolated nodes)."""

    @property
    def is_identity(self) -> bool:
        return self.table is None and self.sorted_ids is None

    def original_ids(self) -> np.ndarray | None:
        """int64 [N]: the original id of every new id, or None for the identity map."""
        if self.sorted_ids is not None:
            return self.sorted_ids
        if self.table is not None:
            return (np.flatnonzero(self.table >= 0) + self.offset).astype(np.int64)
        return None

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """New ids (int64 [K]) of original ``ids`` (int [K]); -1 where an id is unknown."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.is_identity:
            return np.where((ids >= 0) & (ids < self.num_nodes), ids, -1)
        if self.table is not None:
            rel = ids - self.offset
            inside = (rel >= 0) & (rel < self.table.shape[0])
            out = np.full(ids.shape, -1, dtype=np.int64)
            out[inside] = self.table[rel[inside]]
            return out
        assert self.sorted_ids is not None
        pos = np.searchsorted(self.sorted_ids, ids)
        pos_clipped = np.minimum(pos, max(self.sorted_ids.shape[0] - 1, 0))
        found = (pos < self.sorted_ids.shape[0]) & (self.sorted_ids[pos_clipped] == ids) if self.sorted_ids.size else np.zeros(ids.shape, bool)
        return np.where(found, pos, -1).astype(np.int64)

    def map_known(self, ids: np.ndarray) -> np.ndarray:
        """New ids of ids known to be present (edge endpoints); int32 when N < 2^31, else int64."""
        dtype = index_dtype(self.num_nodes)
        if self.is_identity:
            return ids.astype(dtype, copy=False)
        if self.table is not None:
            return self.table[np.asarray(ids, dtype=np.int64) - self.offset].astype(dtype, copy=False)
        assert self.sorted_ids is not None
        return np.searchsorted(self.sorted_ids, ids).astype(dtype, copy=False)


def build_id_map(
    spill: EdgeSpill, num_nodes: int | None, source: Path, coverage: Any = None
) -> IdMap:
    """The dense id map of the ids in ``spill`` and of the ids node data files cover.

    With ``num_nodes`` the ids must lie in ``[0, num_nodes)`` and are kept. Otherwise ids that
    already are ``0..max`` (every one used) are kept, and anything else (gaps, negative or huge
    ids) is renumbered densely in ascending order of original id. ``coverage`` (a
    :class:`~graphtier.dataset.importers.node_data.NodeCoverage`) adds the ids that features or
    labels cover, so a node without edges is never dropped; their count is
    ``nodes_only_in_node_data`` of the result.
    """
    if num_nodes is not None:
        if num_nodes < 0:
            raise OptionError(f"--num-nodes: expected a non-negative integer, found {num_nodes}")
        if spill.num_edges and (spill.min_id < 0 or spill.max_id >= num_nodes):  # type: ignore[operator]
            raise DatasetError(
                f"{source}: expected node ids in [0, {num_nodes}) (--num-nodes), "
                f"found ids in [{spill.min_id}, {spill.max_id}]"
            )
        require_csc_memory(num_nodes, spill.num_edges, f"--num-nodes {num_nodes:,}")
        return IdMap(num_nodes=num_nodes)
    extra = coverage.bounds() if coverage is not None else None
    if spill.num_edges == 0 and extra is None:
        return IdMap(num_nodes=0)
    bounds = [b for b in ((spill.min_id, spill.max_id) if spill.num_edges else None, extra) if b is not None]
    low = int(min(b[0] for b in bounds))
    high = int(max(b[1] for b in bounds))
    span = high - low + 1
    extra_count = 0 if coverage is None else coverage.dense_rows + (0 if coverage.ids is None else coverage.ids.size)
    if span <= spill.num_edges + extra_count + (1 << 22):
        present = np.zeros(span, dtype=np.bool_)
        for src, dst in spill:
            kernels.mark_present(src.astype(np.int64, copy=False), low, present)
            kernels.mark_present(dst.astype(np.int64, copy=False), low, present)
        in_edges = int(np.count_nonzero(present))
        if coverage is not None:
            present[0 - low : coverage.dense_rows - low] = True
            if coverage.ids is not None:
                present[coverage.ids - low] = True
        used = int(np.count_nonzero(present))
        if low == 0 and used == span:
            return IdMap(num_nodes=span, nodes_only_in_node_data=used - in_edges)
        table = np.cumsum(present, dtype=np.int64) - 1
        table[~present] = -1
        return IdMap(num_nodes=used, offset=low, table=table, nodes_only_in_node_data=used - in_edges)
    unique = np.empty(0, dtype=np.int64)
    for src, dst in spill:
        chunk_ids = np.unique(np.concatenate([src, dst]).astype(np.int64, copy=False))
        unique = np.union1d(unique, chunk_ids)
    in_edges = int(unique.shape[0])
    if coverage is not None:
        if coverage.dense_rows:
            unique = np.union1d(unique, np.arange(coverage.dense_rows, dtype=np.int64))
        if coverage.ids is not None:
            unique = np.union1d(unique, coverage.ids.astype(np.int64))
    return IdMap(num_nodes=int(unique.shape[0]), sorted_ids=unique, nodes_only_in_node_data=int(unique.shape[0]) - in_edges)


# ---------------------------------------------------------------------------- CSC


EdgeChunks = Callable[[], Iterable[tuple[np.ndarray, np.ndarray]]]


def build_csc(
    chunks: EdgeChunks,
    num_nodes: int,
    *,
    undirected: bool = False,
    dedup: bool = False,
    drop_self_loops: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Build the CSC arrays from edge chunks in two passes (count, then scatter).

    Args:
        chunks: called twice; each call yields ``(src, dst)`` integer arrays [K] of dense ids in
            ``[0, num_nodes)`` (CPU), the same edges in the same order both times.
        num_nodes: N.
        undirected: also add ``v -> u`` for every ``u -> v`` with ``u != v``.
        dedup: keep one copy of repeated edges.
        drop_self_loops: drop ``v -> v``.

    Returns:
        ``(indptr, indices)``: int64 [N + 1] and int32 (N < 2^31) or int64 [E'], lists sorted.
    """
    dtype = index_dtype(num_nodes)
    resources.require_memory(3 * 8 * (num_nodes + 1), f"building the CSC of {num_nodes:,} nodes (degree counts)")

    def directed_chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for src, dst in chunks():
            if drop_self_loops or undirected:
                loops = src == dst
                if drop_self_loops:
                    keep = ~loops
                    src, dst = src[keep], dst[keep]
                    yield src, dst
                    if undirected:
                        yield dst, src
                else:
                    yield src, dst
                    keep = ~loops
                    yield dst[keep], src[keep]
            else:
                yield src, dst

    counts = np.zeros(num_nodes, dtype=np.int64)
    for src, dst in directed_chunks():
        kernels.count_destinations(dst, counts)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    del counts
    num_edges = int(indptr[-1])
    resources.require_memory(
        num_edges * dtype.itemsize * (2 if dedup else 1) + 8 * (num_nodes + 1),
        f"building the CSC of {num_nodes:,} nodes and {num_edges:,} edges",
    )
    indices = np.empty(num_edges, dtype=dtype)
    cursor = indptr[:-1].copy()
    for src, dst in directed_chunks():
        kernels.scatter_sources(src.astype(dtype, copy=False), dst, cursor, indices)
    if not np.array_equal(cursor, indptr[1:]):
        raise DatasetError("edge chunks changed between the two passes (input modified while importing?)")
    del cursor
    kernels.sort_neighbour_lists(indptr, indices)
    if dedup:
        indptr, indices = compact_csc(indptr, indices, dedup=True, drop_self_loops=False)
    return indptr, indices


def require_csc_memory(num_nodes: int, num_edges: int, what: str) -> None:
    """Refuse (:class:`ResourceError`) a graph whose CSC build cannot fit in the available memory.

    The build needs ``indptr``, the degree counts and a cursor (int64 [N + 1] each) and ``indices``
    ([E], int32 below 2^31 nodes); checked before anything that large is allocated.
    """
    needed = 3 * 8 * (num_nodes + 1) + num_edges * index_dtype(num_nodes).itemsize
    resources.require_memory(needed, f"{what}: the CSC of {num_nodes:,} nodes and {num_edges:,} edges")


def array_edge_chunks(src: np.ndarray, dst: np.ndarray, chunk: int = EDGE_CHUNK) -> EdgeChunks:
    """An :data:`EdgeChunks` over two in-memory integer arrays [E]."""

    def gen() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for start in range(0, src.shape[0], chunk):
            yield np.asarray(src[start : start + chunk]), np.asarray(dst[start : start + chunk])

    return gen


# ---------------------------------------------------------------------------- splits and features


def parse_fractions(text: str) -> tuple[float, float, float]:
    """``"0.6,0.2,0.2"`` -> ``(0.6, 0.2, 0.2)``; :class:`OptionError` unless three fractions summing to <= 1."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise OptionError(f"--split: expected three fractions like 0.6,0.2,0.2, found {text!r}") from None
    if len(values) != 3:
        raise OptionError(f"--split: expected three fractions (train,valid,test), found {len(values)} in {text!r}")
    check_fractions(values)
    return values  # type: ignore[return-value]


def check_fractions(fractions: Sequence[float]) -> None:
    """Raise :class:`OptionError` unless ``fractions`` are three numbers in [0, 1] summing to <= 1."""
    if len(fractions) != 3 or any(not (0.0 <= f <= 1.0) for f in fractions) or sum(fractions) > 1.0 + 1e-9:
        raise OptionError(
            f"--split: expected three fractions in [0, 1] summing to at most 1, found {tuple(fractions)}"
        )


def random_split(
    num_nodes: int,
    fractions: Sequence[float],
    seed: int,
    labelled_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random train/valid/test split of the nodes (only labelled ones when a mask is given).

    Args:
        num_nodes: N.
        fractions: ``(train, valid, test)`` fractions of the candidate nodes, summing to <= 1.
        seed: the split is a pure function of ``(num_nodes, fractions, seed, labelled_mask)``.
        labelled_mask: bool [N] or None; only ``True`` nodes are assigned.

    Returns:
        Three disjoint sorted int64 arrays of node ids. Sizes are ``floor(c * cumulative fraction)``
        differences, so a split of fractions summing to 1 covers every candidate.
    """
    check_fractions(fractions)
    if labelled_mask is not None:
        mask = np.asarray(labelled_mask, dtype=np.bool_)
        if mask.shape != (num_nodes,):
            raise OptionError(f"labelled_mask: expected shape ({num_nodes},), found {mask.shape}")
        candidates = np.flatnonzero(mask).astype(np.int64)
    else:
        candidates = np.arange(num_nodes, dtype=np.int64)
    rng = np.random.default_rng(seed)
    order = rng.permutation(candidates)
    c = order.shape[0]
    cum = np.cumsum(np.asarray(fractions, dtype=np.float64))
    bounds = [0] + [min(c, int(np.floor(c * f + 1e-9))) for f in cum]
    parts = tuple(np.sort(order[bounds[i] : bounds[i + 1]]) for i in range(3))
    return parts  # type: ignore[return-value]


def synthetic_features(
    labels: np.ndarray | None,
    dim: int,
    seed: int,
    *,
    num_nodes: int | None = None,
    out: np.ndarray | None = None,
    signal: float = 0.0,
) -> np.ndarray:
    """Deterministic random features; they carry label information only when ``signal > 0``.

    Row ``v`` is standard normal noise plus, when ``signal > 0`` and ``labels[v] >= 0``, ``signal``
    times the centroid of its class (centroids are standard normal vectors drawn from ``seed``).
    With the default ``signal`` 0 the rows are pure noise, identical whatever the labels: features
    that encode the labels make any model look perfect, so that is opt-in only. Rows are generated in
    blocks of :data:`FEATURE_BLOCK_ROWS` from a generator seeded by ``(seed, block)``, so the
    result depends only on the arguments, and a memory map can be filled block by block.

    Args:
        labels: int64 [N] with -1 for unlabelled, or None (then ``num_nodes`` is required).
        dim: D > 0.
        seed: random seed.
        num_nodes: N when ``labels`` is None.
        out: optional float32/float16 [N, D] array (e.g. a memory map) to fill.
        signal: scale of the class centroids added to labelled rows (0: no label information).

    Returns:
        float32 [N, D] (or ``out``), on the CPU.
    """
    if dim <= 0:
        raise OptionError(f"--synthetic-features: expected a positive dimension, found {dim}")
    if labels is None and num_nodes is None:
        raise OptionError("synthetic_features: pass labels or num_nodes")
    n = int(labels.shape[0]) if labels is not None else int(num_nodes)  # type: ignore[arg-type]
    if out is None:
        out = np.empty((n, dim), dtype=np.float32)
    elif out.shape != (n, dim):
        raise OptionError(f"synthetic_features: out has shape {out.shape}, expected {(n, dim)}")
    if not np.isfinite(signal) or signal < 0:
        raise OptionError(f"--synthetic-feature-signal: expected a finite number >= 0, found {signal}")
    centroids = None
    if signal > 0 and labels is not None and labels.shape[0] and int(np.max(labels)) >= 0:
        num_classes = int(np.max(labels)) + 1
        centroids = np.random.default_rng([seed, 2**32 - 1]).standard_normal((num_classes, dim), dtype=np.float32)
        centroids *= np.float32(signal)
    for block, start in enumerate(range(0, n, FEATURE_BLOCK_ROWS)):
        stop = min(n, start + FEATURE_BLOCK_ROWS)
        rows = np.random.default_rng([seed, block]).standard_normal((stop - start, dim), dtype=np.float32)
        if centroids is not None:
            block_labels = np.asarray(labels[start:stop])  # type: ignore[index]
            labelled = block_labels >= 0
            rows[labelled] += centroids[block_labels[labelled]]
        out[start:stop] = rows
    return out


# ---------------------------------------------------------------------------- labels and features


def gather_rows(
    path: Path, rows_available: int, idmap: IdMap, what: str
) -> np.ndarray | None:
    """The original row of every new id (int64 [N]) when ids were remapped, after a range check."""
    original = idmap.original_ids()
    if original is None:
        if rows_available != idmap.num_nodes:
            raise DatasetError(
                f"{path}: expected {idmap.num_nodes} {what} rows (one per node), found {rows_available}"
            )
        return None
    if original.size and (int(original[-1]) >= rows_available or int(original[0]) < 0):
        bad = int(original[-1]) if int(original[-1]) >= rows_available else int(original[0])
        raise DatasetError(
            f"{path}: node id {bad} out of range for {what} rows: expected ids in [0, {rows_available}) "
            "(row k holds original node id k)"
        )
    return original


def note_replaced(writer: DatasetWriter, guard: NonFiniteGuard) -> None:
    """Record in ``meta.json`` (``source.non_finite_replaced``) how many feature values ``guard`` replaced."""
    if guard.replaced:
        writer.source_notes["non_finite_replaced"] = writer.source_notes.get("non_finite_replaced", 0) + guard.replaced


def write_feature_file(
    path: str | os.PathLike[str] | np.ndarray,
    idmap: IdMap,
    writer: DatasetWriter,
    source: str | os.PathLike[str] | None = None,
    non_finite: str = "error",
) -> tuple[int, str]:
    """Copy the rows of the feature matrix ``path`` into ``features.npy`` of ``writer``.

    ``path`` is a ``.npy`` or text matrix file (see :mod:`~graphtier.dataset.importers.node_data`)
    or an already read [rows, D] array (``source``: its file, for messages). Row ``k`` belongs to original node id ``k``; with remapped
    ids the rows of the nodes in the graph are gathered in new-id order. float16/float32 are
    kept, other numeric dtypes become float32. NaN/±Inf values are refused or, with ``non_finite="replace"``,
    replaced by 0 (see :class:`~graphtier.dataset.finite.NonFiniteGuard`). Returns ``(feature_dim, feature_dtype)``.
    """
    from graphtier.dataset.importers import node_data

    if not isinstance(path, (str, os.PathLike)):
        feats = path
        p = Path(source) if source is not None else Path("--features")
    else:
        p = require_file(path, "--features file")
        feats = node_data.read_feature_matrix(p, writer.tmp / "features.scratch")
    guard = NonFiniteGuard(p, non_finite)
    out_dtype = feats.dtype if feats.dtype in (np.float16, np.float32) else np.dtype(np.float32)
    rows = gather_rows(p, feats.shape[0], idmap, "--features")
    dim = int(feats.shape[1])
    out = writer.open_memmap("features", (idmap.num_nodes, dim), out_dtype)
    step = max(1, (64 << 20) // max(1, dim * out_dtype.itemsize))
    for start in range(0, idmap.num_nodes, step):
        stop = min(idmap.num_nodes, start + step)
        block = feats[start:stop] if rows is None else feats[rows[start:stop]]
        out[start:stop] = guard.apply(np.asarray(block).astype(out_dtype, copy=False), start)
    out.flush()
    del out, feats
    (writer.tmp / "features.scratch").unlink(missing_ok=True)
    note_replaced(writer, guard)
    return dim, str(out_dtype)


@dataclass
class Labels:
    """Node labels in new-id order: int64 [N] with -1 for unlabelled, and the class count."""

    values: np.ndarray
    num_classes: int
    class_names: list[str] | None = None


def labels_from_pairs(
    path: Path, ids: np.ndarray, classes: np.ndarray, idmap: IdMap
) -> Labels:
    """Labels of original ``ids`` (int [K]) with integer ``classes`` (int [K]; < 0 = unlabelled)."""
    new = idmap.lookup(ids)
    unknown = np.flatnonzero(new < 0)
    if unknown.size:
        raise DatasetError(
            f"{path}: expected labels for node ids of the graph, found {unknown.size} unknown id(s), "
            f"first {int(ids[unknown[0]])}"
        )
    values = np.full(idmap.num_nodes, -1, dtype=np.int64)
    classes = np.asarray(classes, dtype=np.int64)
    values[new] = np.where(classes >= 0, classes, -1)
    num_classes = int(values.max()) + 1 if values.size and values.max() >= 0 else 0
    return Labels(values, num_classes)


def read_labels(
    path: str | os.PathLike[str], idmap: IdMap, header: str = "auto", layout: str = "auto"
) -> Labels:
    """Read ``--labels`` (``.npy``, ``id,label`` lines or one label per line) for the nodes of ``idmap``.

    See :func:`graphtier.dataset.importers.node_data.read_raw_labels` for the layouts.
    """
    from graphtier.dataset.importers import node_data

    p = require_file(path, "--labels file")
    return node_data.read_raw_labels(p, layout, header).to_labels(p, idmap)


def enumerate_data_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, stripped line)`` of every non-blank, non-comment line, decoded as UTF-8."""
    for buf, lines_before in iter_line_chunks(path):
        text = bytes(buf).decode("utf-8", errors="replace")
        for k, raw in enumerate(text.split("\n")):
            stripped = raw.strip(" \t\r")
            if stripped and stripped[0] not in "#%":
                yield lines_before + k + 1, stripped


# ---------------------------------------------------------------------------- meta


def default_name(output: str | os.PathLike[str]) -> str:
    """The default dataset name: the name of the output directory (``data/acm`` -> ``acm``)."""
    return Path(output).name or Path(output).resolve().name


@dataclass
class NodeData:
    """What :func:`write_node_data` wrote, for ``meta.json``."""

    feature_dim: int
    feature_dtype: str
    num_classes: int
    provenance: dict[str, Any]


def dataset_meta(
    *,
    name: str,
    num_nodes: int,
    num_edges: int,
    directed: bool,
    feature_dim: int,
    feature_dtype: str,
    num_classes: int,
    importer: str,
    inputs: Sequence[str | os.PathLike[str]],
    options: dict[str, Any],
    provenance: dict[str, Any] | None = None,
    nodes_only_in_node_data: int = 0,
) -> dict[str, Any]:
    """The ``meta.json`` fields every importer fills (``node_order`` is set by the writer).

    ``provenance`` says whether features and labels are input or synthetic (see
    :mod:`graphtier.dataset.provenance`); ``nodes_only_in_node_data`` counts nodes that only a
    features/labels file knows (no edge), recorded when positive.
    """
    from graphtier.dataset import provenance as prov

    meta: dict[str, Any] = {
        "name": name,
        "num_nodes": int(num_nodes),
        "num_edges": int(num_edges),
        "directed": bool(directed),
        "feature_dim": int(feature_dim),
        "feature_dtype": feature_dtype if feature_dim > 0 else "float32",
        "num_classes": int(num_classes),
        "source": {
            "importer": importer,
            "inputs": [str(Path(p).resolve()) for p in inputs],
            "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in options.items()},
        },
        "provenance": provenance
        or {
            "features": prov.input_data() if feature_dim > 0 else prov.no_data(),
            "labels": prov.input_data() if num_classes > 0 else prov.no_data(),
        },
    }
    if nodes_only_in_node_data > 0:
        meta["nodes_only_in_node_data"] = int(nodes_only_in_node_data)
    return meta


def save_splits(writer: DatasetWriter, splits: Sequence[np.ndarray | None]) -> None:
    """Write ``train_idx``/``valid_idx``/``test_idx`` (int64) for the splits that are not None."""
    for split_name, idx in zip(("train", "valid", "test"), splits):
        if idx is not None:
            writer.save(f"{split_name}_idx", np.asarray(idx, dtype=np.int64))


def finish_edge_import(
    writer: DatasetWriter,
    idmap: IdMap,
    *,
    importer: str,
    source: Path,
    name: str | None,
    num_edges: int,
    undirected: bool,
    labels: Labels | None,
    labels_path: str | os.PathLike[str] | None,
    features: str | os.PathLike[str] | np.ndarray | None,
    features_path: str | os.PathLike[str] | None = None,
    synthetic_dim: int,
    synthetic_signal: float = 0.0,
    synthetic_classes: int = 0,
    split: Sequence[float] | None,
    seed: int,
    options: dict[str, Any],
    non_finite: str = "error",
) -> Dataset:
    """The common end of the edge-list-like importers: node data, ``meta.json``, validate and rename."""
    written = write_node_data(
        writer,
        idmap,
        labels=labels,
        features=features,
        synthetic_dim=synthetic_dim,
        synthetic_signal=synthetic_signal,
        synthetic_classes=synthetic_classes,
        split=split,
        seed=seed,
        features_path=features_path,
        non_finite=non_finite,
    )
    if features_path is None and isinstance(features, (str, os.PathLike)):
        features_path = features
    meta = dataset_meta(
        name=name or default_name(writer.output),
        num_nodes=idmap.num_nodes,
        num_edges=num_edges,
        directed=not undirected,
        feature_dim=written.feature_dim,
        feature_dtype=written.feature_dtype,
        num_classes=written.num_classes,
        importer=importer,
        inputs=[p for p in (source, labels_path, features_path) if p is not None],
        options=options,
        provenance=written.provenance,
        nodes_only_in_node_data=idmap.nodes_only_in_node_data,
    )
    return writer.finish(meta)


def write_node_data(
    writer: DatasetWriter,
    idmap: IdMap,
    *,
    labels: Labels | None,
    features: str | os.PathLike[str] | np.ndarray | None,
    synthetic_dim: int,
    split: Sequence[float] | None,
    seed: int,
    synthetic_signal: float = 0.0,
    synthetic_classes: int = 0,
    features_path: str | os.PathLike[str] | None = None,
    non_finite: str = "error",
) -> NodeData:
    """Write labels, features (from a file or synthetic) and a random split for ``idmap.num_nodes`` nodes.

    ``synthetic_classes`` K > 0 generates uniformly random labels for an unlabelled graph;
    synthetic features (``synthetic_dim`` D > 0) are pure noise unless ``synthetic_signal`` > 0.
    Returns the :class:`NodeData` for ``meta.json`` (dims, class count, provenance).
    """
    import json

    from graphtier.dataset import provenance as prov
    from graphtier.dataset.importers import node_data

    n = idmap.num_nodes
    label_values: np.ndarray | None = None
    num_classes = 0
    labels_prov = prov.no_data()
    if synthetic_classes:
        if labels is not None and labels.num_classes > 0:
            raise OptionError("--synthetic-labels: the graph already has labels; expected an unlabelled graph")
        label_values, num_classes = node_data.synthetic_labels(n, synthetic_classes, seed), synthetic_classes
        writer.save("labels", label_values)
        labels_prov = prov.synthetic_labels(synthetic_classes, seed)
    elif labels is not None and labels.num_classes > 0:
        label_values, num_classes = labels.values, labels.num_classes
        writer.save("labels", label_values)
        if labels.class_names is not None:
            writer.write_text("label_names.json", json.dumps(labels.class_names) + "\n")
        labels_prov = prov.input_data()
    feature_dim, feature_dtype = 0, "float32"
    features_prov = prov.no_data()
    if features is not None:
        feature_dim, feature_dtype = write_feature_file(features, idmap, writer, features_path, non_finite)
        features_prov = prov.input_data()
    elif synthetic_dim:
        if synthetic_signal > 0 and label_values is None:
            raise OptionError(
                "--synthetic-feature-signal: expected labels (--labels or --synthetic-labels) to encode, found none"
            )
        out = writer.open_memmap("features", (n, synthetic_dim), np.float32)
        synthetic_features(label_values, synthetic_dim, seed, num_nodes=n, out=out, signal=synthetic_signal)
        out.flush()
        del out
        feature_dim = synthetic_dim
        features_prov = prov.synthetic_features(synthetic_signal, seed)
    if split is not None:
        mask = label_values >= 0 if label_values is not None else None
        save_splits(writer, random_split(n, split, seed, mask))
    return NodeData(feature_dim, feature_dtype, num_classes, {"features": features_prov, "labels": labels_prov})


def check_node_data_options(
    labels: str | os.PathLike[str] | None,
    features: str | os.PathLike[str] | None,
    synthetic_dim: int,
    split: Sequence[float] | None,
    synthetic_signal: float = 0.0,
    synthetic_classes: int = 0,
) -> None:
    """Reject conflicting or malformed labels/features/split options before any heavy work."""
    if features is not None and synthetic_dim:
        raise OptionError("--features and --synthetic-features: expected at most one, found both")
    if synthetic_dim < 0:
        raise OptionError(f"--synthetic-features: expected a positive dimension, found {synthetic_dim}")
    if not np.isfinite(synthetic_signal) or synthetic_signal < 0:
        raise OptionError(f"--synthetic-feature-signal: expected a finite number >= 0, found {synthetic_signal}")
    if synthetic_signal > 0 and not synthetic_dim:
        raise OptionError("--synthetic-feature-signal: expected --synthetic-features DIM as well, found none")
    if synthetic_signal > 0 and labels is None and not synthetic_classes:
        raise OptionError(
            "--synthetic-feature-signal: expected labels (--labels or --synthetic-labels) to encode, found none"
        )
    if labels is not None and synthetic_classes:
        raise OptionError("--labels and --synthetic-labels: expected at most one, found both")
    if synthetic_classes < 0 or synthetic_classes == 1:
        raise OptionError(f"--synthetic-labels: expected at least 2 classes, found {synthetic_classes}")
    if labels is not None:
        require_file(labels, "--labels file")
    if features is not None:
        require_file(features, "--features file")
    if split is not None:
        check_fractions(split)
