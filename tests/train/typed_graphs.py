"""Small typed graphs and full-neighbour typed mini-batches for the typed model tests (a plain-Python reference)."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from graphtier.dataset.schema import Schema
from graphtier.dataset.typed_graph import TypedEdges, build_typed_csc
from graphtier.sampling.batch import Block
from graphtier.sampling.typed_batch import TypedBlock, TypedMiniBatch


class TypedGraph:
    """A typed graph in the format's CSC, with dense per-relation adjacency for the reference."""

    def __init__(self, schema: Schema, indptr: np.ndarray, indices: np.ndarray, features: dict[str, Tensor]) -> None:
        self.schema, self.indptr, self.indices, self.features = schema, indptr, indices, features
        offsets = dict(zip(schema.type_names, schema.offsets()[:-1].tolist()))
        self.dense: dict[tuple[str, str, str], Tensor] = {}
        for rel in schema.relations:
            count_dst, count_src = schema.node_type(rel.dst).count, schema.node_type(rel.src).count
            matrix = torch.zeros(count_dst, count_src, dtype=torch.float64)
            for v in range(count_dst):
                row = rel.row_offset + v
                for u in indices[indptr[row] : indptr[row + 1]]:
                    matrix[v, int(u) - offsets[rel.src]] = 1.0
            self.dense[rel.type] = matrix

    @property
    def in_dims(self) -> dict[str, int]:
        """Input feature width per node type (0: featureless), as ``build_typed_model`` takes it."""
        return {t.name: t.feature_dim for t in self.schema.node_types}

    def neighbours(self, rel_index: int, v: int) -> list[int]:
        rel = self.schema.relations[rel_index]
        offset = int(self.schema.node_type(rel.src).offset)
        row = rel.row_offset + v
        return [int(u) - offset for u in self.indices[self.indptr[row] : self.indptr[row + 1]]]


def make_graph(
    types: dict[str, tuple[int, int]], edges: dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]], target: str
) -> TypedGraph:
    """``types``: name -> (count, feature width, 0 = featureless); ``edges``: relation -> (src local, dst local)."""
    counts = {name: count for name, (count, _) in types.items()}
    relations = [TypedEdges(key, np.asarray(src), np.asarray(dst)) for key, (src, dst) in edges.items()]
    indptr, indices, edge_counts = build_typed_csc(counts, relations)
    schema = Schema.build(
        [(name, count, dim, "float32") for name, (count, dim) in types.items()],
        [(rel.type, count) for rel, count in zip(relations, edge_counts)],
        target,
    )
    generator = torch.Generator().manual_seed(0)
    features = {
        name: torch.randn(count, dim, generator=generator, dtype=torch.float64)
        for name, (count, dim) in types.items()
        if dim
    }
    return TypedGraph(schema, indptr, indices, features)


def full_batch(graph: TypedGraph, seeds: np.ndarray, num_layers: int) -> TypedMiniBatch:
    """Every in-neighbour of every relation, ``num_layers`` hops from ``seeds`` (distinct local target ids)."""
    schema = graph.schema
    nodes: dict[str, list[int]] = {t: [] for t in schema.type_names}
    position: dict[str, dict[int, int]] = {t: {} for t in schema.type_names}
    for seed in seeds.tolist():
        position[schema.target][seed] = len(nodes[schema.target])
        nodes[schema.target].append(seed)
    blocks = []
    for _ in range(num_layers):
        num_dst = {t: len(nodes[t]) for t in schema.type_names}
        relations = {}
        for index, rel in enumerate(schema.relations):
            rowptr, col = [0], []
            for v in nodes[rel.dst][: num_dst[rel.dst]]:
                for u in graph.neighbours(index, v):
                    if u not in position[rel.src]:
                        position[rel.src][u] = len(nodes[rel.src])
                        nodes[rel.src].append(u)
                    col.append(position[rel.src][u])
                rowptr.append(len(col))
            if col:  # a relation with no sampled edge is absent
                relations[rel.type] = Block(torch.tensor(rowptr), torch.tensor(col, dtype=torch.int64), 0)
        for (src, _, _), block in relations.items():  # every source of the layer is known now
            block.num_src = len(nodes[src])
        blocks.append(TypedBlock({t: len(nodes[t]) for t in schema.type_names}, num_dst, relations))
    blocks.reverse()
    n_id = {t: torch.tensor(ids, dtype=torch.int64) for t, ids in nodes.items()}
    seeds_t = torch.from_numpy(seeds).long()
    return TypedMiniBatch(n_id, blocks, torch.arange(seeds_t.shape[0]), seeds_t, schema.target)


def batch_inputs(graph: TypedGraph, batch: TypedMiniBatch) -> dict[str, Tensor]:
    return {t: feats[batch.n_id[t]] for t, feats in graph.features.items()}


def mag_like(with_empty: bool = True) -> TypedGraph:
    """paper (target), author, subject (featureless), venue (no incoming relation); optionally an empty relation."""
    rng = np.random.default_rng(1)
    papers, authors, subjects, venues = 24, 18, 4, 3
    edges = {
        ("author", "writes", "paper"): (rng.integers(0, authors, 50), rng.integers(0, papers, 50)),
        ("paper", "about", "subject"): (rng.integers(0, papers, 40), rng.integers(0, subjects, 40)),
        ("paper", "cites", "paper"): (rng.integers(0, papers, 15), rng.integers(0, papers, 15)),
        ("venue", "publishes", "paper"): (rng.integers(0, venues, 40), rng.integers(0, papers, 40)),
    }
    edges[("paper", "rev_writes", "author")] = edges[("author", "writes", "paper")][::-1]
    edges[("subject", "rev_about", "paper")] = edges[("paper", "about", "subject")][::-1]
    if with_empty:
        edges[("author", "advises", "author")] = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return make_graph({"paper": (papers, 5), "author": (authors, 3), "subject": (subjects, 0), "venue": (venues, 2)},
                      edges, "paper")  # fmt: skip
