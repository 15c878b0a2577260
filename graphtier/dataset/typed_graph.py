"""Writing a typed (heterogeneous) graph: per-relation edge lists -> the back-to-back CSCs of the format.

See :mod:`graphtier.dataset.schema` for the layout. Every importer of typed data (the manifest, OGB's
heterogeneous layout, the MAG-like generator) ends here::

    schema = write_typed_graph(writer, types, relations, target="paper", add_reverse=True)
    # then labels.npy / <split>_idx.npy (local ids of the target type) and meta["hetero"] = schema.to_meta()
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources
from graphtier.dataset.csc import edges_to_csc
from graphtier.dataset.format import index_dtype
from graphtier.dataset.schema import RelationType, Schema, reverse_name
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError


@dataclass
class TypedNodes:
    """One node type to write: ``count`` nodes, ``features`` [count, dim] float32/float16 or None (featureless)."""

    name: str
    count: int
    features: np.ndarray | None = None


@dataclass
class TypedEdges:
    """One relation's edges in LOCAL ids: ``src`` [E] of type ``type[0]``, ``dst`` [E] of type ``type[2]``;
    ``where`` names their origin (a file) in errors; ``shape``: ``(source count, destination count)`` when they
    came from an adjacency matrix (checked against the node types' counts), else None."""

    type: RelationType
    src: np.ndarray
    dst: np.ndarray
    where: str = ""
    shape: tuple[int, int] | None = None


def with_reverse(relations: Sequence[TypedEdges]) -> list[TypedEdges]:
    """``relations`` followed by ``(dst, rev_<name>, src)`` for each (``--add-reverse``)."""
    names = {r.type for r in relations}
    out = list(relations)
    for rel in relations:
        src, name, dst = rel.type
        reverse = (dst, reverse_name(name), src)
        if reverse in names:
            raise DatasetError(
                f"{rel.where or rel.type}: reverse relation {reverse} already exists; drop --add-reverse"
            )
        out.append(TypedEdges(reverse, rel.dst, rel.src, rel.where))
    return out


def build_typed_csc(
    counts: dict[str, int],
    relations: Sequence[TypedEdges],
    *,
    dedup: bool = True,
    progress: Progress = NO_PROGRESS,
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The format's ``(indptr, indices, edges per relation)`` of typed edges.

    ``counts``: nodes per type, in global-id order. Returns int64 [sum over relations of count(dst) + 1],
    int32/int64 [E] GLOBAL source ids (sorted within each row), and each relation's edge count after
    ``dedup`` (repeated edges kept once). Raises :class:`DatasetError` naming the relation and its origin
    when an id exceeds its type's count. ``progress`` reports the stage ``build the typed CSC``
    relation by relation (input edges).
    """
    offsets: dict[str, int] = {}
    total = 0
    for name, count in counts.items():
        offsets[name] = total
        total += int(count)
    out_dtype = index_dtype(total)
    indptr_parts = [np.zeros(1, dtype=np.int64)]
    index_parts: list[np.ndarray] = []
    edge_counts: list[int] = []
    edge_base = 0
    with progress.stage("build the typed CSC", total=sum(len(r.src) for r in relations), unit="edges") as bar:
        for rel in relations:
            src_type, _, dst_type = rel.type
            for end, ids in ((src_type, rel.src), (dst_type, rel.dst)):
                if end not in counts:
                    raise DatasetError(f"{rel.where or rel.type}: relation {rel.type}: unknown node type {end!r}")
                ids = np.asarray(ids)
                if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= counts[end]):
                    raise DatasetError(
                        f"{rel.where or rel.type}: relation {rel.type}: expected {end} ids in [0, {counts[end]}), "
                        f"found values in [{int(ids.min())}, {int(ids.max())}]"
                    )
            indptr, indices = edges_to_csc(
                np.asarray(rel.src, dtype=np.int64), np.asarray(rel.dst, dtype=np.int64), counts[dst_type], dedup=dedup
            )
            indptr_parts.append(indptr[1:] + edge_base)
            index_parts.append(indices.astype(out_dtype) + out_dtype.type(offsets[src_type]))
            edge_counts.append(int(indices.size))
            edge_base += int(indices.size)
            bar.advance(len(rel.src))
    indices = np.concatenate(index_parts) if index_parts else np.zeros(0, dtype=out_dtype)
    return np.concatenate(indptr_parts), indices.astype(out_dtype, copy=False), edge_counts


def write_typed_graph(
    writer: DatasetWriter,
    types: Sequence[TypedNodes],
    relations: Sequence[TypedEdges],
    *,
    target: str,
    add_reverse: bool = False,
    progress: Progress = NO_PROGRESS,
) -> Schema:
    """Write ``indptr.npy``, ``indices.npy`` and ``features_<type>.npy`` of a typed graph; return its schema.

    The caller writes labels and splits (local ids of ``target``) and puts ``schema.to_meta()`` under
    ``meta["hetero"]`` with ``num_nodes = schema.num_nodes``, ``num_edges = schema.num_edges`` and
    ``feature_dim = 0``. ``progress`` reports building the CSC (:func:`build_typed_csc`).
    """
    if add_reverse:
        relations = with_reverse(relations)
    counts = {t.name: int(t.count) for t in types}
    largest = max(types, key=lambda t: t.count)
    resources.require_node_capacity(
        sum(counts.values()), f"{writer.output}: node types ({largest.name} count {largest.count:,})"
    )
    if len(counts) != len(types):
        raise DatasetError(f"{writer.output}: node types must be distinct, found {[t.name for t in types]}")
    for rel in relations:
        expected = (counts.get(rel.type[0]), counts.get(rel.type[2]))
        if rel.shape is not None and tuple(rel.shape) != expected:
            raise DatasetError(
                f"{rel.where}: relation {rel.type}: expected an adjacency of shape {expected} "
                f"({rel.type[0]} x {rel.type[2]} nodes), found {tuple(rel.shape)}"
            )
    indptr, indices, edge_counts = build_typed_csc(counts, relations, progress=progress)
    schema = Schema.build(
        [
            (
                t.name,
                t.count,
                0 if t.features is None else int(t.features.shape[1]),
                "float32" if t.features is None else str(t.features.dtype),
            )
            for t in types
        ],
        [(rel.type, count) for rel, count in zip(relations, edge_counts, strict=True)],
        target,
    )
    writer.save("indptr", indptr)
    writer.save("indices", indices)
    for t in types:
        if t.features is not None:
            writer.save(schema.feature_file(t.name), t.features)
    return schema
