"""Numba kernel of the link sampler: the batch's target edges removed from a block in one pass.

The targets of a link batch are pairs of its endpoints, and the endpoints are the batch's seeds, which a
mini-batch numbers first (``n_id`` starts with the unique seeds). So a target edge ``(u, v)`` appears in a
block as the local pair ``(row(u), row(v))`` with both rows below the number of seed rows ``S``, and every
other edge can be kept without a lookup. The targets' keys ``row(u) * S + row(v)`` (and ``row(v) * S +
row(u)`` on an undirected graph) go in a small open-addressing hash set; one pass over a block's edges
copies those whose key is absent. :func:`graphtier.sampling.link.sampler.exclude_edges_reference` is the plain
numpy definition (global ids); tests check that both keep the same edges.
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier._splitmix import mix64

EMPTY = -1


@numba.njit(cache=True, nogil=True)
def _slot(key: np.int64, mask: np.int64) -> np.int64:
    return np.int64(mix64(np.uint64(key)) & np.uint64(mask))


@numba.njit(cache=True, nogil=True)
def target_key_set(src_rows: np.ndarray, dst_rows: np.ndarray, num_rows: np.int64, undirected: bool) -> np.ndarray:
    """The hash set of the targets' keys: int64 [capacity] (a power of two, at most half full; ``EMPTY`` = free).

    ``src_rows``, ``dst_rows``: int64 [T] local rows (< ``num_rows``) of the target edges' endpoints; with
    ``undirected`` the reverse edges' keys are added too.
    """
    count = src_rows.shape[0] * (2 if undirected else 1)
    capacity = 16
    while capacity < 2 * count:
        capacity *= 2
    table = np.full(capacity, EMPTY, dtype=np.int64)
    mask = capacity - 1
    for i in range(src_rows.shape[0]):
        for direction in range(2 if undirected else 1):
            a, b = (src_rows[i], dst_rows[i]) if direction == 0 else (dst_rows[i], src_rows[i])
            key = a * num_rows + b
            slot = _slot(key, mask)
            while table[slot] != EMPTY and table[slot] != key:
                slot = (slot + 1) & mask
            table[slot] = key
    return table


@numba.njit(cache=True, nogil=True)
def compact_non_targets(
    edge_index: np.ndarray, table: np.ndarray, num_rows: np.int64, edge_ids: np.ndarray
) -> np.int64:
    """Remove the target edges of ``edge_index`` in place; returns K, the edges kept.

    ``edge_ids``: int64 [E], the block's ``edge_id``, compacted the same way (its first K entries are the kept
    edges' ids), or an empty array.

    ``edge_index``: int64 [2, E], C-contiguous, local ids. An edge ``(s, d)`` is a target when ``s <
    num_rows``, ``d < num_rows`` and ``s * num_rows + d`` is in the set built by :func:`target_key_set`.
    Afterwards the first ``2 K`` entries of the flat buffer are the kept edges as a contiguous int64
    [2, K] array (sources, then destinations), in their order: no allocation, so a batch-sized block costs
    one pass and no fresh pages.
    """
    num_edges = edge_index.shape[1]
    flat = edge_index.reshape(2 * num_edges)
    mask = table.shape[0] - 1
    count = 0
    for e in range(num_edges):
        s = flat[e]
        d = flat[num_edges + e]
        if s < num_rows and d < num_rows:
            key = s * num_rows + d
            slot = _slot(key, mask)
            found = False
            while table[slot] != EMPTY:
                if table[slot] == key:
                    found = True
                    break
                slot = (slot + 1) & mask
            if found:
                continue
        flat[count] = s  # count <= e: the entry was read already
        flat[num_edges + count] = d
        if edge_ids.shape[0] > 0:
            edge_ids[count] = edge_ids[e]
        count += 1
    # destinations to [count, 2 count): ascending copy, target index <= source index
    for e in range(count):
        flat[count + e] = flat[num_edges + e]
    return count
