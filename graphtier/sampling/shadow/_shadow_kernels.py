"""Numba kernels of the ShaDow k-hop sampler (parallel over roots).

Per root ``r`` the sampler keeps a sorted node set ``set_nodes[set_ptr[r]:set_ptr[r + 1]]`` and a
frontier (the nodes first reached at the previous hop). A hop samples the frontier's in-neighbours
with :func:`graphtier.sampling.neighbor._neighbor_kernels.sample_sources`, then :func:`new_members` keeps the
candidates not yet in the root's set and :func:`merge_members` merges them in. Finally
:func:`induced_edges_buffered` / :func:`write_induced_edges` extract the induced subgraph by
intersecting each member's sorted in-neighbour list with the sorted set (a merge walk for short
lists, galloping searches for long ones). The reference is
:func:`graphtier.sampling.neighbor.reference.shadow_sample_reference`.
"""

from __future__ import annotations

import numba
import numpy as np

# Neighbour lists longer than this many times the set size are intersected by galloping search.
MERGE_RATIO = 8


@numba.njit(cache=True, nogil=True)
def _lower_bound(values: np.ndarray, start: np.int64, stop: np.int64, key: np.int64) -> np.int64:
    lo, hi = start, stop
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def _gallop(values: np.ndarray, start: np.int64, stop: np.int64, key: np.int64) -> np.int64:
    """First index in [start, stop) with ``values[i] >= key`` (sorted values), probing start+1, +3, +7, ...

    Costs O(log(distance)) and walks forward through memory, so successive searches for ascending
    keys cost O(n log(d / n)) in all.
    """
    if start >= stop or values[start] >= key:
        return start
    step = 1
    low = start  # values[low] < key
    while low + step < stop and values[low + step] < key:
        low += step
        step *= 2
    return _lower_bound(values, low + 1, min(stop, low + step + 1), key)


@numba.njit(parallel=True, cache=True, nogil=True)
def new_members(candidates: np.ndarray, cand_ptr: np.ndarray, set_nodes: np.ndarray, set_ptr: np.ndarray) -> np.ndarray:
    """Per root, sort its candidates (int64, in place) and compact the distinct ones not in its set.

    candidates: int64 [C], root ``r``'s at ``cand_ptr[r]:cand_ptr[r + 1]``; set_nodes: int64 sorted
    per root by ``set_ptr`` (int64 [U + 1]). Returns int64 [U]: how many new nodes root ``r`` now has
    at the start of its candidate range (sorted ascending).
    """
    num_roots = set_ptr.shape[0] - 1
    counts = np.zeros(num_roots, dtype=np.int64)
    for r in numba.prange(num_roots):
        start, stop = cand_ptr[r], cand_ptr[r + 1]
        if stop == start:
            continue
        candidates[start:stop].sort()
        written = 0
        previous = np.int64(-1)
        for i in range(start, stop):
            u = candidates[i]
            if u == previous:
                continue
            previous = u
            at = _lower_bound(set_nodes, set_ptr[r], set_ptr[r + 1], u)
            if at < set_ptr[r + 1] and set_nodes[at] == u:
                continue
            candidates[start + written] = u
            written += 1
        counts[r] = written
    return counts


@numba.njit(parallel=True, cache=True, nogil=True)
def merge_members(
    set_nodes: np.ndarray,
    set_ptr: np.ndarray,
    candidates: np.ndarray,
    cand_ptr: np.ndarray,
    new_ptr: np.ndarray,
    merged_ptr: np.ndarray,
    merged: np.ndarray,
    frontier: np.ndarray,
) -> None:
    """Merge each root's new nodes (``candidates[cand_ptr[r]:][:new_ptr[r+1]-new_ptr[r]]``, sorted) into its set.

    Writes the merged sorted sets to ``merged`` (int64, laid out by ``merged_ptr``) and the new nodes
    to ``frontier[new_ptr[r]:new_ptr[r + 1]]`` (int64).
    """
    num_roots = set_ptr.shape[0] - 1
    for r in numba.prange(num_roots):
        a, a_stop = set_ptr[r], set_ptr[r + 1]
        b = cand_ptr[r]
        b_stop = b + new_ptr[r + 1] - new_ptr[r]
        f = new_ptr[r]
        for i in range(b, b_stop):
            frontier[f + i - b] = candidates[i]
        out = merged_ptr[r]
        while a < a_stop or b < b_stop:
            if b >= b_stop or (a < a_stop and set_nodes[a] < candidates[b]):
                merged[out] = set_nodes[a]
                a += 1
            else:
                merged[out] = candidates[b]
                b += 1
            out += 1


@numba.njit(parallel=True, cache=True, nogil=True)
def assign_local_ids(
    roots: np.ndarray, set_nodes: np.ndarray, set_ptr: np.ndarray, n_id: np.ndarray, subgraph: np.ndarray
) -> np.ndarray:
    """Local ids of the set entries: root ``r`` -> ``r``; its other nodes follow all roots, root after root.

    Fills ``n_id`` and ``subgraph`` (int64 [total]) and returns int64 [len(set_nodes)], the local id of
    each set entry.
    """
    num_roots = roots.shape[0]
    local = np.empty(set_nodes.shape[0], dtype=np.int64)
    for r_index in numba.prange(num_roots):
        r = np.int64(r_index)  # the prange index may be unsigned; keep the arithmetic in int64
        root = roots[r]
        base = num_roots + set_ptr[r] - r  # non-root nodes of earlier roots come first
        skipped = 0
        for i in range(set_ptr[r], set_ptr[r + 1]):
            if set_nodes[i] == root:
                local[i] = r
                skipped = 1
                lid = r
            else:
                lid = base + i - set_ptr[r] - skipped
                local[i] = lid
            n_id[lid] = set_nodes[i]
            subgraph[lid] = r
    return local


@numba.njit(cache=True, nogil=True)
def _intersect(
    members: np.ndarray,
    local: np.ndarray,
    start: np.int64,
    stop: np.int64,
    indices: np.ndarray,
    nbr_start: np.int64,
    nbr_stop: np.int64,
    dst_local: np.int64,
    edge_index: np.ndarray,
    out: np.int64,
    limit: np.int64,
) -> np.int64:
    """Count the edges u -> dst with u in members[start:stop] (sorted); store them from column ``out``
    of ``edge_index`` as long as the column is below ``limit`` (local ids from ``local``)."""
    size = stop - start
    degree = nbr_stop - nbr_start
    count = 0
    if degree <= MERGE_RATIO * size:
        b = start
        for i in range(nbr_start, nbr_stop):
            u = indices[i]
            while b < stop and members[b] < u:
                b += 1
            if b == stop:
                break
            if members[b] == u:
                if out + count < limit:
                    edge_index[0, out + count] = local[b]
                    edge_index[1, out + count] = dst_local
                count += 1
    else:
        at = nbr_start
        for b in range(start, stop):
            u = members[b]
            at = _gallop(indices, at, nbr_stop, u)  # members ascend, so the search only moves forward
            if at == nbr_stop:
                break
            while at < nbr_stop and indices[at] == u:
                if out + count < limit:
                    edge_index[0, out + count] = local[b]
                    edge_index[1, out + count] = dst_local
                count += 1
                at += 1
    return count


@numba.njit(cache=True, nogil=True)
def _root_edges(
    indptr: np.ndarray,
    indices: np.ndarray,
    set_nodes: np.ndarray,
    set_ptr: np.ndarray,
    local: np.ndarray,
    r: np.int64,
    edge_index: np.ndarray,
    out: np.int64,
    limit: np.int64,
) -> np.int64:
    """Count root ``r``'s induced edges (:func:`_intersect` of each member's in-neighbours with the set); store
    them from column ``out`` of ``edge_index`` as long as the column is below ``limit`` (local ids)."""
    count = 0
    for a in range(set_ptr[r], set_ptr[r + 1]):
        v = set_nodes[a]
        count += _intersect(
            set_nodes,
            local,
            set_ptr[r],
            set_ptr[r + 1],
            indices,
            indptr[v],
            indptr[v + 1],
            local[a],
            edge_index,
            out + count,
            limit,
        )
    return count


@numba.njit(parallel=True, cache=True, nogil=True)
def induced_edges_buffered(
    indptr: np.ndarray,
    indices: np.ndarray,
    set_nodes: np.ndarray,
    set_ptr: np.ndarray,
    local: np.ndarray,
    buffer_ptr: np.ndarray,
    buffer: np.ndarray,
) -> np.ndarray:
    """First pass: root ``r``'s induced edges (local ids) into ``buffer[:, buffer_ptr[r]:buffer_ptr[r + 1]]``
    (int64 [2, C]) while they fit. Returns int64 [U + 1], the exclusive prefix sum of every root's
    full edge count; a root whose count exceeds its buffer is redone by :func:`write_induced_edges`."""
    num_roots = set_ptr.shape[0] - 1
    counts = np.zeros(num_roots, dtype=np.int64)
    for r in numba.prange(num_roots):
        counts[r] = _root_edges(indptr, indices, set_nodes, set_ptr, local, r, buffer, buffer_ptr[r], buffer_ptr[r + 1])
    offsets = np.zeros(num_roots + 1, dtype=np.int64)
    for r in range(num_roots):
        offsets[r + 1] = offsets[r] + counts[r]
    return offsets


@numba.njit(parallel=True, cache=True, nogil=True)
def write_induced_edges(
    indptr: np.ndarray,
    indices: np.ndarray,
    set_nodes: np.ndarray,
    set_ptr: np.ndarray,
    local: np.ndarray,
    buffer_ptr: np.ndarray,
    buffer: np.ndarray,
    edge_offsets: np.ndarray,
    edge_index: np.ndarray,
) -> None:
    """Second pass: root ``r``'s edges to ``edge_index[:, edge_offsets[r]:edge_offsets[r + 1]]``, copied
    from the buffer when they fitted, else intersected again."""
    num_roots = set_ptr.shape[0] - 1
    for r in numba.prange(num_roots):
        out = edge_offsets[r]
        count = edge_offsets[r + 1] - out
        if count <= buffer_ptr[r + 1] - buffer_ptr[r]:
            for i in range(count):
                edge_index[0, out + i] = buffer[0, buffer_ptr[r] + i]
                edge_index[1, out + i] = buffer[1, buffer_ptr[r] + i]
            continue
        _root_edges(indptr, indices, set_nodes, set_ptr, local, r, edge_index, out, edge_offsets[r + 1])
