"""Plain Python/numpy reference samplers (slow; for tests on small graphs).

They draw the same counter-based random numbers as the numba kernels (the ``*_py`` twins in
:mod:`graphtier.sampling.neighbor._neighbor_kernels`), use Python sets/dicts for deduplication, and must
produce exactly the batches of :class:`~graphtier.sampling.NeighborSampler` and
:class:`~graphtier.sampling.ShadowSampler`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphtier.sampling.neighbor._neighbor_kernels import floyd_positions_py, node_key_py, stream_key


def sample_neighbors_of(
    indptr: np.ndarray, indices: np.ndarray, v: int, fanout: int, stream: int, position: int
) -> list[int]:
    """Global ids of the in-neighbours drawn for node ``v`` at ``position`` of a hop with key ``stream``."""
    start, stop = int(indptr[v]), int(indptr[v + 1])
    neighbours = [int(u) for u in indices[start:stop]]
    degree = stop - start
    if fanout < 0 or degree <= fanout:
        return neighbours
    return [neighbours[p] for p in floyd_positions_py(node_key_py(stream, position), degree, fanout)]


def _first_seen_ids(seeds: np.ndarray) -> tuple[list[int], dict[int, int], list[int]]:
    """The distinct ``seeds`` in first-seen order, each one's index in that list, and every seed's index:
    ``(ids, index_of, seed_index)``."""
    ids: list[int] = []
    index_of: dict[int, int] = {}
    seed_index = []
    for s in seeds:
        s = int(s)
        if s not in index_of:
            index_of[s] = len(ids)
            ids.append(s)
        seed_index.append(index_of[s])
    return ids, index_of, seed_index


def neighbor_sample_reference(
    indptr: np.ndarray, indices: np.ndarray, fanouts: Sequence[int], seeds: np.ndarray, seed: int, batch_id: int
) -> tuple[np.ndarray, list[tuple[np.ndarray, int, int]], np.ndarray]:
    """Reference of :meth:`NeighborSampler.sample`.

    Returns ``(n_id, blocks, seed_index)``: int64 [M]; per block (input layer first) a tuple
    ``(edge_index int64 [2, E], num_src, num_dst)``; int64 [B].
    """
    n_id, local, seed_index = _first_seen_ids(seeds)
    hop_blocks = []
    for hop, fanout in enumerate(fanouts):
        stream = stream_key(seed, batch_id, hop)
        num_dst = len(n_id)
        src: list[int] = []
        dst: list[int] = []
        for j in range(num_dst):
            for u in sample_neighbors_of(indptr, indices, n_id[j], fanout, stream, j):
                if u not in local:
                    local[u] = len(n_id)
                    n_id.append(u)
                src.append(local[u])
                dst.append(j)
        edge_index = np.array([src, dst], dtype=np.int64).reshape(2, -1)
        hop_blocks.append((edge_index, len(n_id), num_dst))
    return np.array(n_id, dtype=np.int64), hop_blocks[::-1], np.array(seed_index, dtype=np.int64)


def shadow_sample_reference(
    indptr: np.ndarray, indices: np.ndarray, fanouts: Sequence[int], seeds: np.ndarray, seed: int, batch_id: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Reference of :meth:`ShadowSampler.sample`.

    Per distinct root (first-seen order): a ``len(fanouts)``-hop sampled neighbourhood (hop ``h``
    samples the nodes first reached at hop ``h - 1``; frontiers of all roots are laid out root after
    root, each sorted by global id), then the subgraph induced by the union. Node layout: the roots
    first, then root after root its other nodes by ascending global id. Edges: root after root, by
    destination in ascending global id, then source ascending (repeated graph edges repeat).

    Returns ``(n_id int64 [M], edge_index int64 [2, E], seed_index int64 [B], subgraph int64 [M])``.
    """
    roots, _, seed_index = _first_seen_ids(seeds)
    members = [{r} for r in roots]
    frontiers = [[r] for r in roots]
    for hop, fanout in enumerate(fanouts):
        stream = stream_key(seed, batch_id, hop)
        position = 0
        new_frontiers = []
        for r in range(len(roots)):
            found: set[int] = set()
            for v in frontiers[r]:
                found.update(sample_neighbors_of(indptr, indices, v, fanout, stream, position))
                position += 1
            fresh = sorted(found - members[r])
            members[r].update(fresh)
            new_frontiers.append(fresh)
        frontiers = new_frontiers
    n_id = list(roots)
    subgraph = list(range(len(roots)))
    local_maps = []
    for r, root in enumerate(roots):
        mapping = {root: r}
        for u in sorted(members[r] - {root}):
            mapping[u] = len(n_id)
            n_id.append(u)
            subgraph.append(r)
        local_maps.append(mapping)
    src: list[int] = []
    dst: list[int] = []
    for r in range(len(roots)):
        mapping = local_maps[r]
        for v in sorted(mapping):
            for u in indices[int(indptr[v]) : int(indptr[v + 1])]:
                if int(u) in mapping:
                    src.append(mapping[int(u)])
                    dst.append(mapping[v])
    return (
        np.array(n_id, dtype=np.int64),
        np.array([src, dst], dtype=np.int64).reshape(2, -1),
        np.array(seed_index, dtype=np.int64),
        np.array(subgraph, dtype=np.int64),
    )
