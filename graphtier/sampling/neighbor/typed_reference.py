"""Plain Python reference of :class:`~graphtier.sampling.NeighborSampler` with a schema (slow; tests only).

Per-type frontiers in lists, Python dicts for deduplication, the same counter-based random numbers (item ``i`` of
hop ``h``, relation-major, draws with ``node_key(stream_key(seed, batch_id, h), i)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from graphtier.dataset.schema import RelationType, Schema
from graphtier.sampling.neighbor._neighbor_kernels import stream_key
from graphtier.sampling.neighbor.reference import sample_neighbors_of

ReferenceBlock = tuple[dict[str, int], dict[str, int], dict[RelationType, tuple[np.ndarray, np.ndarray]]]
"""``(num_src per type, num_dst per type, per relation (rowptr int64 [num_dst + 1], col int64 [E]))``."""


def typed_sample_reference(
    indptr: np.ndarray,
    indices: np.ndarray,
    schema: Schema,
    fanouts: Mapping[RelationType, Sequence[int]],
    seeds: np.ndarray,
    seed: int,
    batch_id: int,
) -> tuple[dict[str, np.ndarray], list[ReferenceBlock], np.ndarray]:
    """Reference of :meth:`NeighborSampler.sample` with a schema: ``(n_id per type, blocks input layer first, seed_index)``.

    ``seeds``: LOCAL ids of the target type. ``n_id[t]``: int64 local ids of type ``t`` in batch order.
    """
    offsets = {t.name: t.offset for t in schema.node_types}
    frontier: dict[str, list[int]] = {t.name: [] for t in schema.node_types}  # local ids per type, batch order
    position: dict[int, tuple[str, int]] = {}  # global id -> (type, row among that type's nodes)
    seed_index = []
    for s in seeds:
        g = int(s) + offsets[schema.target]
        if g not in position:
            position[g] = (schema.target, len(frontier[schema.target]))
            frontier[schema.target].append(int(s))
        seed_index.append(position[g][1])
    num_hops = len(next(iter(fanouts.values())))
    blocks: list[ReferenceBlock] = []
    for hop in range(num_hops):
        stream = stream_key(seed, batch_id, hop)
        num_dst = {t: len(nodes) for t, nodes in frontier.items()}
        item = 0
        relations = {}
        for rel in schema.relations:
            fanout = int(fanouts[rel.type][hop])
            rowptr, col = [0], []
            for v in frontier[rel.dst][: num_dst[rel.dst]]:
                for u in sample_neighbors_of(indptr, indices, rel.row_offset + v, fanout, stream, item):
                    if u not in position:
                        assert offsets[rel.src] <= u < offsets[rel.src] + schema.node_type(rel.src).count
                        position[u] = (rel.src, len(frontier[rel.src]))
                        frontier[rel.src].append(u - offsets[rel.src])
                    col.append(position[u][1])
                rowptr.append(len(col))
                item += 1
            relations[rel.type] = (np.array(rowptr, dtype=np.int64), np.array(col, dtype=np.int64))
        num_src = {t: len(nodes) for t, nodes in frontier.items()}
        blocks.append((num_src, num_dst, relations))
    n_id = {t: np.array(nodes, dtype=np.int64) for t, nodes in frontier.items()}
    return n_id, blocks[::-1], np.array(seed_index, dtype=np.int64)
