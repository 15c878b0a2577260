"""The typed schema of a dataset: node types and relations (a homogeneous graph is one type, one relation).

A heterogeneous dataset numbers its nodes in ONE global id space: the node types occupy consecutive ranges in the
order ``meta.json["hetero"]["node_types"]`` lists them (type ``t`` holds global ids ``offset[t] <= g <
offset[t] + count[t]``; its local id is ``g - offset[t]``). Its relations ``(src_type, name, dst_type)`` are stored
as the CSCs of their in-edges, back to back in ``indptr.npy`` / ``indices.npy``: relation ``r``'s destination ``v``
(a local id of its destination type) is row ``row_offset[r] + v`` of ``indptr``, and ``indices`` holds GLOBAL source
ids. A homogeneous dataset is the case of one type (``"_N"``) and one relation (``("_N", "_E", "_N")``), with
row == node id: its ``meta.json`` needs no ``hetero`` entry (:meth:`Schema.homogeneous`).

Per-type features live in ``features_<type>.npy`` (``features.npy`` for the homogeneous case), labels and splits
in ``labels.npy`` / ``<split>_idx.npy`` in LOCAL ids of the target type.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset import resources
from graphtier.errors import DatasetError

HOMOGENEOUS_TYPE = "_N"
HOMOGENEOUS_RELATION = "_E"
TYPE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
REVERSE_PREFIX = "rev_"

RelationType = tuple[str, str, str]
"""``(src_type, name, dst_type)``, PyG's ``EdgeType``."""


@dataclass(frozen=True)
class NodeType:
    """One node type: ``count`` nodes at global ids ``[offset, offset + count)``; features of ``feature_dim``
    columns of ``feature_dtype`` (``feature_dim == 0``: featureless)."""

    name: str
    count: int
    offset: int
    feature_dim: int = 0
    feature_dtype: str = "float32"

    @property
    def stop(self) -> int:
        return self.offset + self.count


@dataclass(frozen=True)
class Relation:
    """One relation: its in-edge CSC is rows ``[row_offset, row_offset + count(dst))`` of ``indptr``."""

    src: str
    name: str
    dst: str
    num_edges: int
    row_offset: int

    @property
    def type(self) -> RelationType:
        return (self.src, self.name, self.dst)

    def __str__(self) -> str:
        return f"({self.src}, {self.name}, {self.dst})"


@dataclass(frozen=True)
class Schema:
    """Node types, relations and the target type of a dataset (see the module)."""

    node_types: tuple[NodeType, ...]
    relations: tuple[Relation, ...]
    target: str
    hetero: bool

    # ------------------------------------------------------------------ construction
    @classmethod
    def homogeneous(
        cls, num_nodes: int, num_edges: int, feature_dim: int = 0, feature_dtype: str = "float32"
    ) -> Schema:
        """The schema of a homogeneous dataset: one type ``_N``, one relation ``(_N, _E, _N)``."""
        node = NodeType(HOMOGENEOUS_TYPE, int(num_nodes), 0, int(feature_dim), feature_dtype)
        rel = Relation(HOMOGENEOUS_TYPE, HOMOGENEOUS_RELATION, HOMOGENEOUS_TYPE, int(num_edges), 0)
        return cls((node,), (rel,), HOMOGENEOUS_TYPE, False)

    @classmethod
    def build(
        cls,
        types: Iterable[tuple[str, int, int, str]],
        relations: Iterable[tuple[RelationType, int]],
        target: str,
    ) -> Schema:
        """A heterogeneous schema from ``(name, count, feature_dim, feature_dtype)`` per type and
        ``((src, name, dst), num_edges)`` per relation, offsets in the order given."""
        node_types: list[NodeType] = []
        offset = 0
        for name, count, dim, dtype in types:
            node_types.append(NodeType(str(name), int(count), offset, int(dim), str(dtype)))
            offset += int(count)
        by_name = {t.name: t for t in node_types}
        rels: list[Relation] = []
        row = 0
        for (src, name, dst), num_edges in relations:
            rels.append(Relation(str(src), str(name), str(dst), int(num_edges), row))
            row += by_name[dst].count if dst in by_name else 0
        schema = cls(tuple(node_types), tuple(rels), str(target), True)
        schema.check(Path("meta.json"))
        return schema

    @classmethod
    def from_meta(cls, meta: dict[str, Any], path: Path) -> Schema:
        """The schema of ``meta.json`` (``path``, for errors): its ``hetero`` entry, or the homogeneous case."""
        entry = meta.get("hetero")
        if entry is None:
            return cls.homogeneous(
                int(meta["num_nodes"]), int(meta["num_edges"]), int(meta["feature_dim"]), str(meta["feature_dtype"])
            )
        if not isinstance(entry, dict):
            raise DatasetError(f"{path}: field 'hetero' expected an object, found {type(entry).__name__}")
        try:
            types = [
                (
                    t["name"],
                    _count(path, f"hetero.node_types[{i}].count", t["count"]),
                    _count(path, f"hetero.node_types[{i}].feature_dim", t.get("feature_dim", 0)),
                    t.get("feature_dtype") or "float32",
                )
                for i, t in enumerate(entry["node_types"])
            ]
            rels = [
                (tuple(r["type"]), _count(path, f"hetero.relations[{i}].num_edges", r["num_edges"]))
                for i, r in enumerate(entry["relations"])
            ]
            target = entry["target"]
        except (KeyError, TypeError) as exc:
            raise DatasetError(f"{path}: field 'hetero' malformed ({type(exc).__name__}: {exc})") from None
        for i, (rel, _) in enumerate(rels):
            if len(rel) != 3:
                raise DatasetError(f"{path}: field 'hetero.relations[{i}].type' expected [src, name, dst], found {rel}")
        node_types: list[NodeType] = []
        offset = 0
        for name, count, dim, dtype in types:
            node_types.append(NodeType(str(name), count, offset, dim, str(dtype)))
            offset += count
        counts = {t.name: t.count for t in node_types}
        relations: list[Relation] = []
        row = 0
        for (src, name, dst), num_edges in rels:  # type: ignore[misc]
            relations.append(Relation(str(src), str(name), str(dst), num_edges, row))
            row += counts.get(str(dst), 0)
        schema = cls(tuple(node_types), tuple(relations), str(target), True)
        schema.check(path)
        return schema

    def to_meta(self) -> dict[str, Any]:
        """The ``meta.json`` ``hetero`` entry (offsets are derived, not stored)."""
        return {
            "node_types": [
                {
                    "name": t.name,
                    "count": t.count,
                    "feature_dim": t.feature_dim,
                    "feature_dtype": t.feature_dtype if t.feature_dim else None,
                }
                for t in self.node_types
            ],
            "relations": [{"type": list(r.type), "num_edges": r.num_edges} for r in self.relations],
            "target": self.target,
        }

    def check(self, path: Path) -> None:
        """Raise :class:`DatasetError` naming ``path`` and the field on a malformed schema."""
        names = [t.name for t in self.node_types]
        for name in names:
            if not TYPE_NAME.match(name):
                raise DatasetError(
                    f"{path}: node type {name!r}: expected a name of letters, digits, '_', '.', '-' (at most 64)"
                )
        if len(set(names)) != len(names):
            raise DatasetError(f"{path}: node types must be distinct, found {names}")
        if self.target not in names:
            raise DatasetError(f"{path}: target type {self.target!r} is not a node type ({', '.join(names)})")
        seen: set[RelationType] = set()
        for rel in self.relations:
            for end in (rel.src, rel.dst):
                if end not in names:
                    raise DatasetError(f"{path}: relation {rel}: unknown node type {end!r} (types: {', '.join(names)})")
            if not TYPE_NAME.match(rel.name):
                raise DatasetError(f"{path}: relation {rel}: expected a name of letters, digits, '_', '.', '-'")
            if rel.type in seen:
                raise DatasetError(f"{path}: relation {rel} listed twice")
            seen.add(rel.type)
        if not self.relations:
            raise DatasetError(f"{path}: expected at least one relation, found none")
        if self.hetero:  # a homogeneous count is backed by indptr.npy's length, a typed one is not
            resources.require_type_capacity({t.name: t.count for t in self.node_types}, f"{path}: hetero.node_types")

    # ------------------------------------------------------------------ queries
    @property
    def num_nodes(self) -> int:
        """Nodes of every type (the size of the global id space)."""
        return sum(t.count for t in self.node_types)

    @property
    def num_edges(self) -> int:
        return sum(r.num_edges for r in self.relations)

    @property
    def num_rows(self) -> int:
        """Rows of ``indptr`` minus one: the destinations of every relation."""
        return sum(self.node_type(r.dst).count for r in self.relations)

    @property
    def type_names(self) -> list[str]:
        return [t.name for t in self.node_types]

    @property
    def target_type(self) -> NodeType:
        return self.node_type(self.target)

    def node_type(self, name: str) -> NodeType:
        """The node type called ``name``; :class:`KeyError` naming the known types otherwise."""
        for t in self.node_types:
            if t.name == name:
                return t
        raise KeyError(f"unknown node type {name!r} (types: {', '.join(self.type_names)})")

    def relation(self, key: RelationType | str) -> Relation:
        """The relation of type ``(src, name, dst)``, or the one whose name is ``key`` (must be unique)."""
        if isinstance(key, str):
            found = [r for r in self.relations if r.name == key]
            if len(found) != 1:
                raise KeyError(
                    f"relation {key!r}: expected one relation of that name, found {len(found)} "
                    f"(relations: {', '.join(str(r) for r in self.relations)})"
                )
            return found[0]
        for r in self.relations:
            if r.type == tuple(key):
                return r
        raise KeyError(f"unknown relation {key} (relations: {', '.join(str(r) for r in self.relations)})")

    def relations_into(self, dst: str) -> list[Relation]:
        """The relations whose destination type is ``dst``, in schema order."""
        return [r for r in self.relations if r.dst == dst]

    def in_degrees(self, indptr: np.ndarray) -> np.ndarray:
        """int64 [N] (global ids): each node's in-edges over every relation into its type, from the dataset's
        ``indptr`` (one row per (relation, destination); a homogeneous dataset's lists)."""
        if not self.hetero:
            return np.diff(np.asarray(indptr)).astype(np.int64, copy=False)
        degrees = np.zeros(self.num_nodes, dtype=np.int64)
        for rel in self.relations:
            dst = self.node_type(rel.dst)
            rows = np.asarray(indptr[rel.row_offset : rel.row_offset + dst.count + 1], dtype=np.int64)
            degrees[dst.offset : dst.stop] += np.diff(rows)
        return degrees

    def offsets(self) -> np.ndarray:
        """int64 [T + 1]: type ``t`` holds global ids ``[offsets[t], offsets[t + 1])``."""
        out = np.zeros(len(self.node_types) + 1, dtype=np.int64)
        np.cumsum([t.count for t in self.node_types], out=out[1:])
        return out

    def type_of(self, global_ids: np.ndarray) -> np.ndarray:
        """int64 [n]: the type index (position in ``node_types``) of each global id."""
        return np.searchsorted(self.offsets(), np.asarray(global_ids), side="right").astype(np.int64) - 1

    def feature_file(self, name: str) -> str:
        """The file stem of type ``name``'s features: ``features`` (homogeneous) or ``features_<type>``."""
        return "features" if not self.hetero else f"features_{name}"


def _count(path: Path, field: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DatasetError(f"{path}: field {field!r} expected a non-negative integer, found {value!r}")
    return int(value)


def reverse_name(name: str) -> str:
    """The name of the reverse of relation ``name`` (``--add-reverse``): ``rev_<name>``."""
    return f"{REVERSE_PREFIX}{name}"


def reverse_relation(schema: Schema, rel: Relation) -> Relation | None:
    """The relation ``(dst, rev_<name>, src)`` of ``rel`` (``--add-reverse``), None when the schema has none."""
    wanted = (rel.dst, reverse_name(rel.name), rel.src)
    return next((r for r in schema.relations if r.type == wanted), None)
