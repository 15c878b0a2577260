"""Numba kernels of the uniform neighbour sampler, and its counter-based random numbers.

Randomness is counter-based so that parallel loops are deterministic: destination ``j`` of hop ``h``
of batch ``b`` gets the key ``node_key(stream_key(seed, b, h), j)`` and its ``i``-th draw is
``draw(key, i)``, whatever thread handles it. Positions are chosen without replacement with
Floyd's algorithm. The plain-Python twins (``*_py``) are what :mod:`graphtier.sampling.neighbor.reference`
uses; tests check that both produce identical batches.
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier._splitmix import GOLDEN, MASK64, MIX1, MIX2, mix64, mix64_int

HOP_MULT = 0xD1B54A32D192ED03
# Floyd's algorithm checks membership by a linear scan up to this many draws, by a hash set above.
LINEAR_SET_LIMIT = 32
# Destinations whose draws are computed, then gathered, together (stage 1 and 2 of sample_sources).
CHUNK = 256
# Edges whose local ids are looked up together before being assigned in order.
RELABEL_BLOCK = 512

_U_GOLDEN = np.uint64(GOLDEN)
_U_MIX1 = np.uint64(MIX1)
_U_MIX2 = np.uint64(MIX2)
_U32 = np.uint64(32)
_U_LOW32 = np.uint64(0xFFFFFFFF)


# ---------------------------------------------------------------------------------------------- RNG
def stream_key(seed: int, batch_id: int, hop: int) -> int:
    """The 64-bit key of hop ``hop`` of batch ``batch_id`` of a sampler seeded with ``seed``."""
    key = mix64_int(seed & MASK64)
    key = mix64_int((key + GOLDEN * (batch_id + 1)) & MASK64)
    return mix64_int(key ^ ((HOP_MULT * (hop + 1)) & MASK64))


def node_key_py(stream: int, position: int) -> int:
    """Key of the destination at ``position`` of a hop with key ``stream``."""
    return mix64_int((stream + position * GOLDEN) & MASK64)


def draw_py(key: int, i: int) -> int:
    """The ``i``-th 32-bit random draw of a destination key (two draws per 64-bit hash: high half first)."""
    word = mix64_int((key + (((i >> 1) + 1) * MIX2)) & MASK64)
    return word >> 32 if i & 1 == 0 else word & 0xFFFFFFFF


def wide_draw_py(key: int, i: int) -> int:
    """The ``i``-th 64-bit draw of a destination key, used only for neighbour lists of >= 2^32 entries."""
    return mix64_int((key ^ GOLDEN) + ((i + 1) * MIX1) & MASK64)


def uniform_below_py(key: int, i: int, bound: int) -> int:
    """Draw ``i`` of ``key`` mapped to [0, bound): multiply-shift of a 32-bit draw (64-bit modulo above 2^32)."""
    if bound < (1 << 32):
        return (draw_py(key, i) * bound) >> 32
    return wide_draw_py(key, i) % bound


def floyd_positions_py(key: int, degree: int, k: int) -> list[int]:
    """k distinct positions in [0, degree) (k < degree), in the order Floyd's algorithm picks them."""
    chosen: list[int] = []
    members: set[int] = set()
    for i, t in enumerate(range(degree - k, degree)):
        j = uniform_below_py(key, i, t + 1)
        pick = t if j in members else j
        chosen.append(pick)
        members.add(pick)
    return chosen


@numba.njit(cache=True, nogil=True)
def node_key(stream: np.uint64, position: np.int64) -> np.uint64:
    """Kernel twin of :func:`node_key_py`."""
    return mix64(stream + np.uint64(position) * _U_GOLDEN)


@numba.njit(cache=True, nogil=True)
def draw(key: np.uint64, i: np.int64) -> np.uint64:
    """Kernel twin of :func:`draw_py` (a 32-bit value in a uint64)."""
    word = mix64(key + np.uint64((i >> 1) + 1) * _U_MIX2)
    return word >> _U32 if i & 1 == 0 else word & _U_LOW32


@numba.njit(cache=True, nogil=True)
def uniform_below(key: np.uint64, i: np.int64, bound: np.int64) -> np.int64:
    """Kernel twin of :func:`uniform_below_py`."""
    if bound < 4294967296:
        return np.int64((draw(key, i) * np.uint64(bound)) >> _U32)
    wide = mix64((key ^ _U_GOLDEN) + np.uint64(i + 1) * _U_MIX1)
    return np.int64(wide % np.uint64(bound))


@numba.njit(cache=True, nogil=True)
def floyd_positions(key: np.uint64, degree: np.int64, k: np.int64, out: np.ndarray, table: np.ndarray) -> None:
    """Write k distinct positions in [0, degree) (k < degree) into ``out[:k]`` (int64), in pick order.

    ``table`` is int64 scratch whose length is a power of two >= 2k (used when k > LINEAR_SET_LIMIT).
    Identical to :func:`floyd_positions_py`.
    """
    use_table = k > LINEAR_SET_LIMIT
    mask = table.shape[0] - 1
    if use_table:
        table[:] = -1
    word = np.uint64(0)
    for i in range(k):
        t = degree - k + i
        if t < 4294967295:  # inline of uniform_below: one 64-bit hash serves two draws
            if i & 1 == 0:
                word = mix64(key + np.uint64((i >> 1) + 1) * _U_MIX2)
                half = word >> _U32
            else:
                half = word & _U_LOW32
            j = np.int64((half * np.uint64(t + 1)) >> _U32)
        else:
            j = uniform_below(key, i, t + 1)
        found = False
        if use_table:
            slot = (j * 0x9E3779B1) & mask
            while table[slot] != -1:
                if table[slot] == j:
                    found = True
                    break
                slot = (slot + 1) & mask
        else:
            hits = 0
            for s in range(i):  # no early exit: the compiler turns this into a few SIMD compares
                hits += out[s] == j
            found = hits > 0
        pick = t if found else j
        out[i] = pick
        if use_table:
            slot = (pick * 0x9E3779B1) & mask
            while table[slot] != -1:
                slot = (slot + 1) & mask
            table[slot] = pick


@numba.njit(cache=True, nogil=True)
def floyd_table(width: np.int64) -> np.ndarray:
    """The int64 ``table`` scratch of :func:`floyd_positions` for up to ``width`` picks: a power of two >= 2 *
    width elements when ``width`` > LINEAR_SET_LIMIT (the hash set), else one (unused)."""
    table_size = 1
    while table_size < 2 * width:
        table_size *= 2
    return np.empty(table_size if width > LINEAR_SET_LIMIT else 1, dtype=np.int64)


# ---------------------------------------------------------------------------------------------- hops
# The hop kernels work on a range [first, stop) of destinations and hold no state, so that callers can
# split a hop between threads (graphtier._threads.ThreadTeam); they release the GIL.
@numba.njit(cache=True, nogil=True)
def list_spans(
    indptr: np.ndarray,
    dst_nodes: np.ndarray,
    fanout: np.int64,
    starts: np.ndarray,
    degrees: np.ndarray,
    counts: np.ndarray,
    first: np.int64,
    stop: np.int64,
) -> None:
    """For destinations ``j`` in [first, stop) of ``dst_nodes`` (int64 [D]) write ``starts[j] = indptr[v]``,
    ``degrees[j]`` (in-degree) and ``counts[j]`` (draws: min(deg, fanout); deg when fanout is -1), all int64.

    Reading ``indptr`` here, in a loop with independent iterations, keeps many cache misses in
    flight; :func:`sample_sources` then never touches ``indptr``.
    """
    for j in range(first, stop):
        v = dst_nodes[j]
        start = indptr[v]
        deg = indptr[v + 1] - start
        starts[j] = start
        degrees[j] = deg
        counts[j] = deg if (fanout < 0 or deg <= fanout) else fanout


@numba.njit(cache=True, nogil=True)
def sample_sources(
    indices: np.ndarray,
    starts: np.ndarray,
    degrees: np.ndarray,
    fanout: np.int64,
    stream: np.uint64,
    offsets: np.ndarray,
    sources: np.ndarray,
    destinations: np.ndarray,
    first: np.int64,
    stop: np.int64,
    edge_ids: np.ndarray,
) -> None:
    """Sample the in-neighbours of destinations [first, stop) given their list spans (:func:`list_spans`).

    Writes the global source ids of destination ``j`` into ``sources[offsets[j]:offsets[j + 1]]``
    (int64; ``offsets`` int64 [D + 1] is the prefix sum of the counts) and ``j`` into the same range
    of ``destinations`` (int64). All neighbours, in list order, when the degree is <= fanout or
    fanout is -1; else Floyd picks keyed by (stream, j). ``edge_ids``: int64 [E] receives each drawn edge's
    CSC position in the same range, or an empty array (the edge ids are not recorded).
    """
    record = edge_ids.shape[0] > 0
    # Floyd draws k = fanout picks only from lists longer than fanout: the table needs 2 * min(fanout, max degree)
    width = np.int64(1)
    if fanout > 0:
        for j in range(first, stop):
            width = max(width, min(degrees[j], fanout))
    table = floyd_table(width)
    for piece in range(first, stop, CHUNK):
        piece_stop = min(stop, piece + CHUNK)
        # Stage 1 (compute only): the absolute positions in ``indices`` of the piece's draws.
        for j in range(piece, piece_stop):
            start = starts[j]
            out = offsets[j]
            k = offsets[j + 1] - out
            if k == degrees[j]:
                for i in range(k):
                    sources[out + i] = start + i
            else:
                floyd_positions(node_key(stream, j), degrees[j], k, sources[out : out + k], table)
                for i in range(k):
                    sources[out + i] += start
            for i in range(k):
                destinations[out + i] = j
        if record:  # the positions are the edge ids (CSC positions)
            for e in range(offsets[piece], offsets[piece_stop]):
                edge_ids[e] = sources[e]
        # Stage 2 (memory only): a branch-free gather, so that many cache misses are in flight at once.
        for e in range(offsets[piece], offsets[piece_stop]):
            sources[e] = indices[sources[e]]


@numba.njit(cache=True, nogil=True)
def unique_seeds(seeds: np.ndarray, local_id: np.ndarray, n_id: np.ndarray, seed_index: np.ndarray) -> np.int64:
    """Give each distinct seed a local id in first-seen order.

    seeds: int64 [B]; local_id: int32/int64 [N] scratch, -1 for unassigned; n_id: int64 [>= B] receives
    the distinct seeds; seed_index: int64 [B] receives each seed's local id. Returns the distinct count.
    """
    count = 0
    for i in range(seeds.shape[0]):
        u = seeds[i]
        lid = local_id[u]
        if lid < 0:
            lid = count
            local_id[u] = count
            n_id[count] = u
            count += 1
        seed_index[i] = lid
    return count


@numba.njit(cache=True, nogil=True)
def relabel(sources: np.ndarray, local_id: np.ndarray, n_id: np.ndarray, count: np.int64) -> np.int64:
    """Replace global ids in ``sources`` (int64 [E], in place) by local ids, appending new nodes.

    New nodes get ids ``count, count + 1, ...`` in first-seen order and are written to ``n_id``
    (int64, capacity >= count + E). Returns the new node count.
    """
    # Look up a block of ids first (independent loads, many misses in flight), then assign in order;
    # an id looked up as unassigned may have been assigned earlier in the same block: look again.
    looked_up = np.empty(RELABEL_BLOCK, dtype=local_id.dtype)
    num_edges = sources.shape[0]
    for first in range(0, num_edges, RELABEL_BLOCK):
        stop = min(num_edges, first + RELABEL_BLOCK)
        for e in range(first, stop):
            looked_up[e - first] = local_id[sources[e]]
        for e in range(first, stop):
            # branch-free: the re-read hits the cache; half the ids are new, so a branch would mispredict
            u = sources[e]
            lid = np.int64(local_id[u])
            is_new = lid < 0
            lid = count if is_new else lid
            local_id[u] = lid
            n_id[count] = u  # capacity >= count + E, and a stale write is overwritten by the next new node
            count += np.int64(is_new)
            sources[e] = lid
    return count


@numba.njit(parallel=True, cache=True, nogil=True)
def relabel_parallel(
    sources: np.ndarray,
    local_id: np.ndarray,
    n_id: np.ndarray,
    count: np.int64,
    num_parts: np.int64,
    out: np.ndarray,
) -> np.int64:
    """Parallel twin of :func:`relabel` with the same result: ``out[e]`` (int64 [E]) = local id of ``sources[e]``.

    1. Part ``p`` of ``num_parts`` owns a contiguous range of node ids and marks the first occurrence
       of each of its new nodes: ``local_id[u] = -2 - e`` (needs E < 2^31 - 2 for int32 scratch).
    2. Per block of edges: known ids and markers are copied to ``out``; first occurrences are counted.
    3. A prefix sum over the blocks gives each first occurrence its first-seen rank, hence its id.
    4. Markers are resolved to their first occurrence's id and the scratch gets the final ids.
    Writes go to contiguous ranges per thread (no false sharing); ``sources`` is read-only.
    """
    num_edges = sources.shape[0]
    num_nodes = local_id.shape[0]
    span = (num_nodes + num_parts - 1) // num_parts
    for part_index in numba.prange(num_parts):
        low = np.int64(part_index) * span
        high = low + span
        for e in range(num_edges):
            u = sources[e]
            if low <= u < high and local_id[u] == -1:
                local_id[u] = -2 - e
    num_blocks = (num_edges + RELABEL_BLOCK - 1) // RELABEL_BLOCK
    block_start = np.zeros(num_blocks + 1, dtype=np.int64)
    for b in numba.prange(num_blocks):
        new = 0
        for e in range(b * RELABEL_BLOCK, min(num_edges, (b + 1) * RELABEL_BLOCK)):
            lid = np.int64(local_id[sources[e]])
            if lid == -2 - e:
                new += 1
                out[e] = -1  # a first occurrence, numbered below
            else:
                out[e] = lid  # a known id, or -2 - (edge of the first occurrence)
        block_start[b + 1] = new
    for b in range(num_blocks):
        block_start[b + 1] += block_start[b]
    for b in numba.prange(num_blocks):
        next_id = count + block_start[b]
        for e in range(b * RELABEL_BLOCK, min(num_edges, (b + 1) * RELABEL_BLOCK)):
            if out[e] == -1:
                out[e] = next_id
                n_id[next_id] = sources[e]
                next_id += 1
    for b in numba.prange(num_blocks):
        first_id = count + block_start[b]
        for e in range(b * RELABEL_BLOCK, min(num_edges, (b + 1) * RELABEL_BLOCK)):
            lid = out[e]
            if lid < 0:
                out[e] = out[-2 - lid]  # the first occurrence's id, final after the loop above
            elif lid >= first_id:  # only this block's first occurrences hold such ids here
                local_id[sources[e]] = lid  # publish the final id
    return count + block_start[num_blocks]


@numba.njit(cache=True, nogil=True)
def reset_local_ids(local_id: np.ndarray, n_id: np.ndarray, first: np.int64, stop: np.int64) -> None:
    """Set ``local_id[n_id[first:stop]] = -1`` (undo part of a batch's relabelling)."""
    for i in range(first, stop):
        local_id[n_id[i]] = -1


@numba.njit(cache=True, nogil=True)
def floyd_picks(
    dst_index: np.ndarray,
    starts: np.ndarray,
    degrees: np.ndarray,
    offsets: np.ndarray,
    stream: np.uint64,
    fanout: np.int64,
    out: np.ndarray,
) -> None:
    """``out[offsets[j] + i] = starts[j] + floyd_positions(node_key(stream, j), degrees[j], fanout)[i]``.

    For every ``j`` of ``dst_index`` (int64 [M], destinations with fanout < degree); all arrays int64.
    The CPU twin of the GPU sampler's Triton kernel (graphtier.sampling.device._device_kernels).
    """
    if dst_index.shape[0] == 0:  # no list longer than fanout: no table (fanout may be up to 2^31 - 1)
        return
    table = floyd_table(fanout)
    for r in range(dst_index.shape[0]):
        j = dst_index[r]
        first = offsets[j]
        picks = out[first : first + fanout]
        floyd_positions(node_key(stream, j), degrees[j], fanout, picks, table)
        for i in range(fanout):
            picks[i] += starts[j]
