"""Import a compressed sparse adjacency from an ``.npz``: ``graphtier prepare csr-npz SOURCE OUTPUT``.

The archive holds ``indptr`` and ``indices`` (a scipy ``save_npz`` file also has ``data``, ``shape``
and ``format``, which are honoured). With ``--layout csr`` (the default unless the file says
``csc``) row ``u`` lists the targets of ``u``'s out-edges; with ``--layout csc`` column ``v`` lists the
sources of ``v``'s in-edges. Either way the result is the dataset's CSC layout.
"""

from __future__ import annotations

import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.checks import index_range, is_non_decreasing
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble import finish
from graphtier.dataset.importers.assemble.options import ImportOptions
from graphtier.dataset.importers.common import edges, node_data, textio
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError

LAYOUTS = ("auto", "csr", "csc")


def _load_member(archive: np.lib.npyio.NpzFile, path: Path, key: str) -> np.ndarray:
    if key not in archive.files:
        raise DatasetError(f"{path}: expected an array {key!r} in the archive, found {sorted(archive.files)}")
    try:
        return archive[key]
    except Exception as exc:  # damaged member
        raise DatasetError(f"{path}: array {key!r} is not readable ({exc})") from None


def _format_entry(path: Path, raw: np.ndarray) -> str:
    """The archive's ``format`` entry (a 0-d string array as scipy writes it) as text."""
    if raw.ndim != 0 or raw.dtype.kind not in "SU":
        raise DatasetError(
            f"{path}: 'format' expected a string such as 'csr' or 'csc', found {raw.dtype} array of shape {raw.shape}"
        )
    value = raw.item()
    return value.decode("latin-1") if isinstance(value, bytes) else str(value)


def _shape_entry(path: Path, raw: np.ndarray) -> tuple[int, ...]:
    """The archive's ``shape`` entry: a 1-d array of two integers."""
    if raw.ndim != 1 or raw.shape[0] != 2 or not np.issubdtype(raw.dtype, np.integer):
        raise DatasetError(
            f"{path}: 'shape' expected two integers (rows, columns), found {raw.dtype} array of shape {raw.shape}"
        )
    return tuple(int(s) for s in raw)


def read_compressed_adjacency(path: Path, layout: str) -> tuple[np.ndarray, np.ndarray, int, str]:
    """Read and check ``indptr``/``indices`` from ``path``.

    Returns ``(indptr int64 [M + 1], indices int [E], num_nodes, layout)`` where ``layout`` is
    ``csr`` or ``csc`` (``auto`` becomes the file's ``format`` or ``csr``).
    """
    if layout not in LAYOUTS:
        raise OptionError(f"--layout: expected one of {', '.join(LAYOUTS)}, found {layout!r}")
    kind, description = node_data.sniff(path)
    if kind != "npz":  # np.load would try other formats (a .npy, a pickle) and say so confusingly
        raise DatasetError(
            f"{path}: expected an .npz archive (numpy.savez or scipy.sparse.save_npz), got {description}"
        )
    try:
        archive = np.load(path, allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise DatasetError(f"{path}: not a readable .npz archive ({exc})") from None
    with archive:
        indptr = _load_member(archive, path, "indptr")
        indices = _load_member(archive, path, "indices")
        file_format = None
        if "format" in archive.files:
            file_format = _format_entry(path, _load_member(archive, path, "format"))
        shape = _shape_entry(path, _load_member(archive, path, "shape")) if "shape" in archive.files else None
    if layout == "auto":
        layout = file_format if file_format in ("csr", "csc") else "csr"
    elif file_format in ("csr", "csc") and file_format != layout:
        raise DatasetError(f"{path}: --layout {layout} given, but the archive says format {file_format!r}")
    if indptr.ndim != 1 or indptr.shape[0] < 1 or not np.issubdtype(indptr.dtype, np.integer):
        raise DatasetError(f"{path}: 'indptr' expected a 1-d integer array, found {indptr.dtype} {indptr.shape}")
    if indices.ndim != 1 or not np.issubdtype(indices.dtype, np.integer):
        raise DatasetError(f"{path}: 'indices' expected a 1-d integer array, found {indices.dtype} {indices.shape}")
    indptr = indptr.astype(np.int64, copy=False)  # also native byte order
    indices = indices.astype(indices.dtype.newbyteorder("="), copy=False)  # the kernels need native order
    if int(indptr[0]) != 0 or int(indptr[-1]) != indices.shape[0]:
        raise DatasetError(
            f"{path}: 'indptr' expected to run from 0 to len(indices) = {indices.shape[0]}, "
            f"found {int(indptr[0])} .. {int(indptr[-1])}"
        )
    if not is_non_decreasing(indptr):
        raise DatasetError(f"{path}: 'indptr' expected non-decreasing values, found a decrease")
    num_nodes = indptr.shape[0] - 1
    if shape is not None and (len(shape) != 2 or shape[0] != shape[1]):
        raise DatasetError(f"{path}: 'shape' expected a square adjacency matrix, found {shape}")
    if shape is not None and shape[0] != num_nodes:
        raise DatasetError(f"{path}: 'shape' {shape} does not match len(indptr) - 1 = {num_nodes}")
    if indices.size:
        low, high = index_range(indices)
        if low < 0 or high >= num_nodes:
            raise DatasetError(f"{path}: 'indices' expected ids in [0, {num_nodes}), found [{low}, {high}]")
    return indptr, indices, num_nodes, layout


def compressed_edge_chunks(
    indptr: np.ndarray, indices: np.ndarray, layout: str, chunk: int = edges.EDGE_CHUNK
) -> edges.EdgeChunks:
    """Edge chunks ``(src, dst)`` of a CSR (rows = sources) or CSC (columns = destinations)."""
    num_rows = indptr.shape[0] - 1

    def gen() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        row = 0
        while row < num_rows:
            # take whole rows until about `chunk` edges
            stop = int(np.searchsorted(indptr, indptr[row] + chunk, side="right")) - 1
            stop = min(num_rows, max(stop, row + 1))
            lo, hi = int(indptr[row]), int(indptr[stop])
            owners = np.repeat(np.arange(row, stop, dtype=np.int64), np.diff(indptr[row : stop + 1]))
            others = np.asarray(indices[lo:hi])
            if layout == "csr":
                yield owners, others
            else:
                yield others, owners
            row = stop

    return gen


def import_csr_npz(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    name: str | None = None,
    overwrite: bool = False,
    layout: str = "auto",
    options: ImportOptions | None = None,
    progress: Progress = NO_PROGRESS,
    **option_values: Any,
) -> Dataset:
    """Import the adjacency in the ``.npz`` ``source`` into ``output``.

    Args: as :func:`graphtier.dataset.importers.formats.edgelist.import_edgelist` (``options`` /
    ``option_values``: the shared :class:`ImportOptions`); ``layout`` is ``auto``,
    ``csr`` (rows = sources) or ``csc`` (columns = destinations). Node ids are the row numbers,
    so labels/features rows are indexed by them; when features or labels cover more rows than the
    adjacency, the extra rows become nodes without edges (meta ``nodes_only_in_node_data``).
    ``indptr``/``indices`` may have any integer dtype and byte order. ``progress`` reports building the CSC,
    copying the features and validating.

    Returns:
        The written :class:`Dataset`.
    """
    path = textio.require_file(source, "npz archive")
    options = ImportOptions.of(options, option_values)
    options.check_inputs()
    labels, features = options.labels, options.features
    indptr_in, indices_in, n, layout = read_compressed_adjacency(path, layout)
    raw_labels = (
        node_data.read_raw_labels(
            labels, options.labels_layout, column=options.labels_column, unlabelled=options.unlabelled_value
        )
        if labels is not None
        else None
    )
    if raw_labels is not None and raw_labels.ids is not None and raw_labels.ids.size:
        low = int(raw_labels.ids.min())
        if low < 0:
            raise DatasetError(f"{labels}: expected labels for node ids >= 0, found id {low}")
    adjacency_nodes = n
    built = edges.build_csc(
        compressed_edge_chunks(indptr_in, indices_in, layout),
        n,
        undirected=options.undirected,
        keep_duplicates=options.keep_duplicates,
        drop_self_loops=options.drop_self_loops,
        progress=progress,
        num_input_edges=int(indices_in.shape[0]),
    )
    del indptr_in, indices_in
    indptr, indices, edge_counts = built.indptr, built.indices, built.counts
    del built
    with DatasetWriter(output, overwrite=overwrite) as writer:
        feature_matrix = (
            node_data.read_feature_matrix(features, writer.tmp / "features.scratch") if features is not None else None
        )
        coverage = node_data.NodeCoverage.of(feature_matrix, raw_labels)
        bounds = coverage.bounds()
        if bounds is not None and bounds[1] >= n:
            # rows of node data beyond the adjacency: isolated nodes, never dropped
            extra = bounds[1] + 1 - n
            indptr = np.concatenate([indptr, np.full(extra, indptr[-1], dtype=indptr.dtype)])
            n = bounds[1] + 1
        idmap = edges.IdMap(num_nodes=n, nodes_only_in_node_data=n - adjacency_nodes)
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        num_edges = int(indices.shape[0])
        del indices
        return finish.finish_edge_import(
            writer,
            idmap,
            importer="csr-npz",
            source=path,
            name=name,
            num_edges=num_edges,
            edge_counts=edge_counts,
            labels=raw_labels.to_labels(labels, idmap) if raw_labels is not None else None,  # type: ignore[arg-type]
            features=feature_matrix,
            options=options,
            format_options={"layout": layout},
            progress=progress,
        )
