"""Node timestamps of a dataset (docs/dataset-format.md, "Node times").

``node_time.npy`` (int64 [N]) holds the time each node appears (a paper's year, an account's creation); ``meta.json``
``"node_time"`` records ``{"unit": str | None, "min": int, "max": int}``; the file and the entry come together.

A temporal sampler cuts edges, so a node-timed graph needs edge times too: :func:`edge_times_from_nodes` gives each
edge the time of its later endpoint (the edge cannot exist before both ends do; a citation is as old as the citing
paper), which the OGB importer writes when a folder has node years but no edge times. Node classification with
``--temporal`` samples each seed at its own node time (docs/guide/time.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset.checks import index_range
from graphtier.dataset.edges._node_time_kernels import later_endpoint_times
from graphtier.dataset.schema import Schema
from graphtier.errors import DatasetError

NODE_TIME = "node_time"
META_KEY = "node_time"


def load_node_time(root: Path, meta: dict[str, Any], load: Callable[[Path], np.ndarray]) -> np.ndarray | None:
    """``node_time`` of the dataset ``root`` loaded with ``load`` (a memory map), or None without node times; one-line
    :class:`DatasetError` when the file is there without the ``meta.json`` entry, or the entry without the file."""
    path = root / f"{NODE_TIME}.npy"
    if path.is_file() != (META_KEY in meta):
        if path.is_file():
            raise DatasetError(f"{root / 'meta.json'}: field {META_KEY!r} missing (the dataset has {path.name})")
        raise DatasetError(f"{path}: file missing (meta.json has the field {META_KEY!r})")
    return load(path) if path.is_file() else None


def target_node_times(node_time: np.ndarray, schema: Schema, ids: np.ndarray) -> np.ndarray:
    """int64 [B] (CPU) the times of ``ids`` (int [B], local ids of ``schema``'s target type) from ``node_time``
    (int64 [N], indexed by global id: the type's offset is added, 0 on a homogeneous schema)."""
    return np.asarray(node_time[np.asarray(ids, dtype=np.int64) + schema.target_type.offset], dtype=np.int64)


def node_time_meta(times: np.ndarray, unit: str | None) -> dict[str, Any]:
    """The ``meta.json`` entry of ``times`` (int64 [N]): ``{"unit", "min", "max"}`` (min/max null when N == 0)."""
    low, high = index_range(times) if times.size else (None, None)
    return {"unit": unit, "min": low, "max": high}


def validate_node_time(root: Path, meta: dict[str, Any], node_time: np.ndarray | None, num_nodes: int) -> None:
    """Check ``node_time.npy`` against ``meta.json`` (nothing when None): dtype int64, shape [num_nodes], the entry's
    unit (a string or null) and range (the times' min and max). Raises :class:`DatasetError` naming the file,
    expected and found."""
    if node_time is None:
        return
    path = root / f"{NODE_TIME}.npy"
    if str(node_time.dtype) != "int64":
        raise DatasetError(f"{path}: expected dtype int64, found {node_time.dtype}")
    if tuple(node_time.shape) != (num_nodes,):
        raise DatasetError(f"{path}: expected shape {(num_nodes,)}, found {tuple(node_time.shape)}")
    entry = meta[META_KEY]
    meta_path = root / "meta.json"
    if not isinstance(entry, dict) or set(entry) != {"unit", "min", "max"}:
        found = sorted(entry) if isinstance(entry, dict) else type(entry).__name__
        raise DatasetError(f"{meta_path}: field {META_KEY!r} expected an object with unit, min, max, found {found}")
    if entry["unit"] is not None and not isinstance(entry["unit"], str):
        raise DatasetError(f"{meta_path}: field 'node_time.unit' expected a string or null, found {entry['unit']!r}")
    expected = node_time_meta(np.asarray(node_time), entry["unit"])
    for key in ("min", "max"):
        if entry[key] != expected[key] or isinstance(entry[key], bool):
            raise DatasetError(
                f"{meta_path}: field 'node_time.{key}' expected {expected[key]} (the times in {path}), "
                f"found {entry[key]!r}"
            )


def edge_times_from_nodes(
    indptr: np.ndarray, indices: np.ndarray, node_time: np.ndarray, schema: Schema | None = None
) -> np.ndarray:
    """int64 [E]: the time of each CSC edge ``indices[p] -> v`` as the later of its endpoints' node times.

    Args:
        indptr: int64 [R + 1] CSC pointers; indices: int32/int64 [E] sources (global ids); node_time: int64 [N]
            (global ids). CPU arrays. ``schema``: a typed graph's, whose CSC rows are relation rows (the
            destination of row ``r.row_offset + i`` is node ``i`` of the relation's destination type); None: the
            rows are the nodes.
    """
    node_time = np.asarray(node_time, dtype=np.int64)
    row_time = node_time
    if schema is not None:
        row_time = np.empty(schema.num_rows, np.int64)
        for rel in schema.relations:
            kind = schema.node_type(rel.dst)
            row_time[rel.row_offset : rel.row_offset + kind.count] = node_time[kind.offset : kind.offset + kind.count]
    return later_endpoint_times(np.asarray(indptr), np.asarray(indices), node_time, row_time)
