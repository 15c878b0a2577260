"""CPU tiered row gather (numba) and its plain numpy reference.

``tiered_gather_rows`` reads each requested row of positions [first, stop) from the tier that holds
it, choosing the source by comparing the id with the tier boundaries (Data Tiering Listing 1), and writes
it to ``out[positions[i]]``:

* id < local_rows:             ``local[id]``                                  ("gpu" tier)
* local_rows <= id < peer_end: ``peers[o % P, o // P]`` with o = id - local_rows  ("gpu-peer", interleaved)
* peer_end <= id < host_end:   ``host[id - peer_end]``                        ("host" tier, RAM)
* host_end <= id:              ``disk[id]``                                   ("disk": the memory-mapped table)

Both kernels also count, while copying, the rows each static tier served and the ids outside [0, N)
(N = ``disk.shape[0]``; those rows are left unwritten), so neither the bounds check nor the traffic
accounting costs a pass of its own. They return ``(gpu, gpu_peer, host, disk, out_of_range)``
counts; "gpu" includes the peer rows of partition 0 (on the compute device), as in
:meth:`graphtier.memory.placement.TierPlan.tier_counts`.

All arrays are raw-bit views (unsigned ints of the feature width: numba has no CPU float16).
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier.memory._gather_kernels import copy_row


def _tier_copier(in_order: bool):  # returns a numba function
    """The per-tier copy loops, with the output row ``i`` (in order) or ``positions[i]`` fixed at compile time."""

    @numba.njit(inline="always", nogil=True, cache=True)
    def copy_tier_rows(
        local: np.ndarray,
        peers: np.ndarray,
        host: np.ndarray,
        disk: np.ndarray,
        local_rows: int,
        peer_end: int,
        host_end: int,
        ids: np.ndarray,
        positions: np.ndarray,
        out: np.ndarray,
        first: int,
        stop: int,
    ) -> tuple[int, int, int, int, int]:
        """Copy rows ids[first:stop] from their tiers, one pass over the ids per non-empty tier; return the
        (gpu, gpu-peer, host, disk, out-of-range) counts ("gpu" includes peer partition 0).

        Each pass has one copy site, as the plain gather has: a single loop choosing among four copy
        sites measured 1.4-1.7x slower than the plain gather on 512-byte rows of a 512 MB table (its
        row loads overlap less), while the extra passes only re-read ids that are in cache.
        """
        num_rows = disk.shape[0]
        partitions = peers.shape[0]
        in_local = 0
        own = 0
        other = 0
        in_host = 0
        on_disk = 0
        if local_rows > 0:
            for i in range(first, stop):
                row = ids[i]
                if row >= 0 and row < local_rows:
                    copy_row(out, i if in_order else positions[i], local, row)
                    in_local += 1
        if peer_end > local_rows:
            for i in range(first, stop):
                row = ids[i]
                if row >= local_rows and row < peer_end and row >= 0:
                    offset = row - local_rows
                    partition = offset % partitions
                    copy_row(out, i if in_order else positions[i], peers[partition], offset // partitions)
                    if partition == 0:
                        own += 1
                    else:
                        other += 1
        if host_end > peer_end:
            for i in range(first, stop):
                row = ids[i]
                if row >= peer_end and row < host_end and row >= 0:
                    copy_row(out, i if in_order else positions[i], host, row - peer_end)
                    in_host += 1
        if num_rows > host_end:
            for i in range(first, stop):
                row = ids[i]
                if row >= host_end and row < num_rows and row >= 0:
                    copy_row(out, i if in_order else positions[i], disk, row)
                    on_disk += 1
        copied = in_local + own + other + in_host + on_disk
        return in_local + own, other, in_host, on_disk, stop - first - copied

    return copy_tier_rows


_copy_tier_rows_in_order = _tier_copier(True)
_copy_tier_rows_at = _tier_copier(False)


@numba.njit(cache=True, nogil=True)
def tiered_gather_rows(
    local: np.ndarray,
    peers: np.ndarray,
    host: np.ndarray,
    disk: np.ndarray,
    local_rows: int,
    peer_end: int,
    host_end: int,
    ids: np.ndarray,
    positions: np.ndarray,
    out: np.ndarray,
    first: int,
    stop: int,
) -> tuple[int, int, int, int, int]:
    """out[positions[i]] = row ids[i] of the tiered table for i in [first, stop); local [L, D], peers [P, Q, D],
    host [H, D], disk [N, D]. Returns the (gpu, gpu-peer, host, disk, out-of-range) row counts of that range.

    One thread's share of a gather (the store splits [0, B) between threads); releases the GIL.
    """
    return _copy_tier_rows_at(
        local, peers, host, disk, local_rows, peer_end, host_end, ids, positions, out, first, stop
    )


@numba.njit(cache=True, nogil=True)
def tiered_gather_rows_in_order(
    local: np.ndarray,
    peers: np.ndarray,
    host: np.ndarray,
    disk: np.ndarray,
    local_rows: int,
    peer_end: int,
    host_end: int,
    ids: np.ndarray,
    out: np.ndarray,
    first: int,
    stop: int,
) -> tuple[int, int, int, int, int]:
    """:func:`tiered_gather_rows` with ``positions = arange(B)`` (the no-cache path): out[i] = row ids[i]."""
    return _copy_tier_rows_in_order(
        local, peers, host, disk, local_rows, peer_end, host_end, ids, ids, out, first, stop
    )


def interleave_partitions(rows: np.ndarray, num_partitions: int) -> np.ndarray:
    """[R, D] rows -> [P, ceil(R / P), D]: row o goes to partition o % P at index o // P (zero padded)."""
    per_partition = -(-rows.shape[0] // num_partitions)
    parts = np.zeros((num_partitions, per_partition, rows.shape[1]), dtype=rows.dtype)
    for p in range(num_partitions):
        chunk = rows[p::num_partitions]
        parts[p, : chunk.shape[0]] = chunk
    return parts


def tiered_gather_reference(table: np.ndarray, ids: np.ndarray, positions: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Plain numpy reference: ``out[positions] = table[ids]`` (the tiers only change where rows live)."""
    out[np.asarray(positions)] = np.asarray(table)[np.asarray(ids)]
    return out


def tiered_counts_reference(
    ids: np.ndarray, num_rows: int, local_rows: int, peer_end: int, host_end: int, partitions: int
) -> tuple[int, int, int, int, int]:
    """Plain numpy reference of the kernels' (gpu, gpu-peer, host, disk, out-of-range) counts."""
    ids = np.asarray(ids, dtype=np.int64)
    valid = ids[(ids >= 0) & (ids < num_rows)]
    in_peer = valid[(valid >= local_rows) & (valid < peer_end)]
    own = int(np.count_nonzero((in_peer - local_rows) % partitions == 0))
    return (
        int(np.count_nonzero(valid < local_rows)) + own,
        in_peer.shape[0] - own,
        int(np.count_nonzero((valid >= peer_end) & (valid < host_end))),
        int(np.count_nonzero(valid >= host_end)),
        ids.shape[0] - valid.shape[0],
    )
