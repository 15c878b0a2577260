"""A typed graph given as ONE adjacency over global node ids plus a type id per node (MAGNN, HGB, OpenHGNN).

The manifest's ``"adjacency"`` entry (instead of, or beside, per-relation ``"edges"``)::

    "adjacency": {"path": "adjM.npz", "node_types": "node_types.npy",
                  "type_names": ["movie", "director", "actor"],
                  "relations": [["movie", "directed_by", "director"]]}

``path``: a square sparse matrix [N, N] (``scipy.sparse.save_npz``, or ``PATH:KEY`` of a ``.mat`` variable or
a dense ``.npz`` member); entry ``[u, v] != 0`` is an edge ``u -> v`` between GLOBAL ids. ``node_types``: an
integer vector [N], the type of each node (``type_names[t]`` names type ``t``). A node's local id is its rank
among the nodes of its type in global order. Every (source type, destination type) pair that has an edge is a
relation, named ``SRC_to_DST`` unless ``relations`` names it. :func:`split_adjacency` reads the matrix by
blocks of rows into per-relation local-id edge spills, which go on through the same typed CSC build as edge
files (:func:`~graphtier.dataset.importers.assemble.typed_graph.write_typed_graph`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset.importers.assemble.typed_graph import TypedEdges
from graphtier.dataset.importers.common import node_data
from graphtier.dataset.importers.common.edges import EdgeSpill
from graphtier.dataset.importers.common.members import MemberPath, load_member
from graphtier.dataset.importers.common.sparse import load_sparse_npz
from graphtier.errors import DatasetError

ADJACENCY_KEYS = ("path", "node_types", "type_names", "relations")
ROW_BLOCK = 1 << 16
"""Rows of the adjacency turned into edges at a time."""


@dataclass
class AdjacencySpec:
    """The parsed ``"adjacency"`` entry of a manifest: files, type names in type-id order, relation names."""

    path: Path
    node_types: Path
    type_names: list[str]
    names: dict[tuple[str, str], str] = field(default_factory=dict)


@dataclass
class GlobalTypes:
    """The node types of a global id space: ``types`` int64 [N] (type id per node), ``local`` int64 [N] (local
    id per node), ``counts`` (nodes per type, in type-id order)."""

    types: np.ndarray
    local: np.ndarray
    counts: list[int]
    names: list[str]

    def to_local(self, ids: np.ndarray, type_name: str, where: str) -> np.ndarray:
        """Global ids (int64 [K], in ``[0, N)``) of nodes of ``type_name`` -> their local ids (int64 [K])."""
        t = self.names.index(type_name)
        wrong = np.flatnonzero(self.types[ids] != t)
        if wrong.size:
            bad = int(ids[wrong[0]])
            raise DatasetError(
                f"{where}: expected global ids of {type_name} nodes (the adjacency's ids; {wrong.size:,} of "
                f"{ids.size:,} are not), found id {bad} of type {self.names[int(self.types[bad])]}; "
                'for local ids set "ids": "local" in the split'
            )
        return self.local[ids]


def read_global_types(spec: AdjacencySpec, what: str) -> GlobalTypes:
    """The type of every node (``adjacency.node_types``, checked against ``type_names``) and its local id."""
    raw = np.asarray(node_data.load_npy(spec.node_types, what))
    if raw.ndim == 2 and 1 in raw.shape:
        raw = raw.reshape(-1)
    if raw.ndim != 1 or raw.dtype.kind not in "iu":
        raise DatasetError(
            f"{spec.node_types}: {what}: expected a 1-d integer array (a type id per node), "
            f"found {raw.dtype} {tuple(raw.shape)}"
        )
    num_types = len(spec.type_names)
    if raw.size and (int(raw.min()) < 0 or int(raw.max()) >= num_types):
        raise DatasetError(
            f"{spec.node_types}: {what}: expected type ids in [0, {num_types}) (one per name of type_names), "
            f"found values in [{int(raw.min())}, {int(raw.max())}]"
        )
    types = raw.astype(np.int64)
    counts = np.bincount(types, minlength=num_types)
    order = np.argsort(types, kind="stable")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    local = np.empty_like(types)
    local[order] = np.arange(types.size, dtype=np.int64) - starts[types[order]]
    return GlobalTypes(types, local, [int(c) for c in counts], list(spec.type_names))


def _matrix(path: Path, what: str, num_nodes: int) -> Any:
    import scipy.sparse as sp

    kind, description = node_data.sniff(path)
    if isinstance(path, MemberPath):
        matrix = load_member(path)
    elif kind == "npz":
        matrix = load_sparse_npz(path)
    elif kind == "npy":
        matrix = node_data.load_npy(path, what)
    else:
        raise DatasetError(
            f"{path}: {what}: expected a scipy.sparse .npz, a .npy or PATH:KEY of an .npz or .mat, got {description}"
        )
    if matrix.ndim != 2 or tuple(matrix.shape) != (num_nodes, num_nodes):
        raise DatasetError(
            f"{path}: {what}: expected a square adjacency [{num_nodes}, {num_nodes}] (one row and column per entry "
            f"of node_types), found shape {tuple(matrix.shape)}"
        )
    return matrix.tocsr() if sp.issparse(matrix) else sp.csr_matrix(np.asarray(matrix))


def split_adjacency(spec: AdjacencySpec, nodes: GlobalTypes, what: str, scratch: Path) -> list[TypedEdges]:
    """The relations of the adjacency ``spec.path``: one :class:`TypedEdges` (local ids) per (source type,
    destination type) pair with at least one edge, in (source, destination) type-id order; a pair named in
    ``spec.names`` that has no edge is an error. Each relation's edges are spilled block by block to a scratch
    file in the folder ``scratch`` (:class:`~graphtier.dataset.importers.common.edges.EdgeSpill`)."""
    n = int(nodes.types.size)
    csr = _matrix(spec.path, f"{what}.path", n)
    csr.sum_duplicates()
    num_types = len(nodes.names)
    spills: dict[int, EdgeSpill] = {}
    try:
        for start in range(0, n, ROW_BLOCK):
            block = csr[start : start + ROW_BLOCK].tocoo()
            keep = block.data != 0
            src = block.row[keep].astype(np.int64) + start
            dst = block.col[keep].astype(np.int64)
            pair = nodes.types[src] * num_types + nodes.types[dst]
            order = np.argsort(pair, kind="stable")
            pair, src, dst = pair[order], src[order], dst[order]
            keys, firsts = np.unique(pair, return_index=True)
            bounds = list(firsts[1:]) + [pair.size]
            for key, lo, hi in zip(keys.tolist(), firsts.tolist(), bounds, strict=True):
                if key not in spills:
                    spills[key] = EdgeSpill(scratch, f"adjacency-{key}-{uuid.uuid4().hex}.spill")
                spills[key].append(nodes.local[src[lo:hi]], nodes.local[dst[lo:hi]])
        del csr
        named = {(nodes.names.index(s), nodes.names.index(d)): name for (s, d), name in spec.names.items()}
        for (s, d), name in named.items():
            if s * num_types + d not in spills:
                raise DatasetError(
                    f"{spec.path}: {what}.relations: relation {name!r} expected edges from {nodes.names[s]} to "
                    f"{nodes.names[d]} nodes, found none"
                )
    except BaseException:
        for spill in spills.values():
            spill.remove()
        raise
    relations = []
    for key in sorted(spills):
        s, d = divmod(key, num_types)
        name = named.get((s, d), f"{nodes.names[s]}_to_{nodes.names[d]}")
        relations.append(
            TypedEdges(
                (nodes.names[s], name, nodes.names[d]),
                where=f"{spec.path} ({nodes.names[s]} -> {nodes.names[d]} entries)",
                spill=spills[key],
            )
        )
    return relations
