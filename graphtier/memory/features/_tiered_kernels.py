"""CPU tiered row gather (numba) and the plain numpy reference of its tier counts (its rows: ``gather_rows_reference``).

``tiered_gather_rows`` copies each requested row of positions [first, stop) to ``out[i]``, choosing the source
by comparing the id with the tier boundaries (Data Tiering Listing 1):

* id < host_end:  ``ram[id]``  (the "gpu", "gpu-peer" and "host" tiers; on the CPU all of them are RAM)
* host_end <= id: ``disk[id]`` ("disk": the memory-mapped table)

and counts the rows each tier served (id < local_rows: "gpu"; local_rows <= id < peer_end: "gpu-peer", or "gpu"
for the interleaved partition 0 that lives on the compute device; the rest of [0, host_end): "host") and the
ids outside [0, N) (N = ``disk.shape[0]``; those rows are left unwritten): the bounds check is the copy's own,
the tier counts a branch-free pass over the ids (in cache by then). It returns ``(gpu, gpu_peer, host, disk,
out_of_range)`` counts, as :meth:`graphtier.memory.plan.placement.TierPlan.tier_counts` does.

All arrays are raw-bit views (unsigned ints of the feature width: numba has no CPU float16).
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier._prefetch import PREFETCH_DISTANCE, prefetch_row
from graphtier.memory.features._gather_kernels import copy_row, gather_rows_checked


@numba.njit(cache=True, nogil=True)
def tiered_gather_rows(
    ram: np.ndarray,
    disk: np.ndarray,
    local_rows: int,
    peer_end: int,
    partitions: int,
    host_end: int,
    ids: np.ndarray,
    out: np.ndarray,
    first: int,
    stop: int,
) -> tuple[int, int, int, int, int]:
    """``out[i] = table[ids[i]]`` for i in [first, stop); the range's (gpu, gpu-peer, host, disk, out-of-range) counts.

    ``ram`` [>= host_end, D] holds rows [0, host_end) of the table; ``disk`` [N, D] is the whole (memory-mapped)
    table, read for rows [host_end, N). Without a disk tier the copy is the plain gather
    (:func:`~graphtier.memory.features._gather_kernels.gather_rows_checked`); with one, the RAM rows are copied at one
    site and the disk rows in a second pass (a loop choosing among several copy sites measured 1.4-1.7x slower
    than the plain gather on 512-byte rows). The tiers are then counted by comparisons added up without
    branches, in passes over the ids apart from the copy (counting inside it measured 7-20% slower on a
    sampler trace). ``partitions``: the interleaved
    GPU partitions of [local_rows, peer_end). One thread's share of a gather (the store splits [0, B) between
    threads); releases the GIL. The RAM row ``PREFETCH_DISTANCE`` positions ahead is prefetched
    (:mod:`graphtier._prefetch`); disk rows are not (their cost is the page fault, not the cache miss).
    """
    num_rows = disk.shape[0]
    if host_end >= num_rows and ram.shape[0] == num_rows:
        # no disk tier: exactly the plain gather (a loop that also chose or counted tiers measured 7-20% slower)
        out_of_range = gather_rows_checked(ram, ids, out, first, stop)
        copied = stop - first - out_of_range
        on_disk = 0
    else:
        copied = 0
        for i in range(first, stop):
            if i + PREFETCH_DISTANCE < stop and ids[i + PREFETCH_DISTANCE] < host_end:
                prefetch_row(ram, ids[i + PREFETCH_DISTANCE])
            row = ids[i]
            if row >= 0 and row < host_end:
                copy_row(out, i, ram, row)
                copied += 1
        on_disk = 0
        for i in range(first, stop):
            row = ids[i]
            if row >= host_end and row < num_rows:
                copy_row(out, i, disk, row)
                on_disk += 1
        out_of_range = stop - first - copied - on_disk
    # the tiers of the RAM rows: branch-free passes over the ids, apart from the copy
    below_peer = 0
    for i in range(first, stop):
        below_peer += (ids[i] >= 0) & (ids[i] < peer_end)
    other_partition = 0
    if partitions > 1:
        for i in range(first, stop):
            row = ids[i]
            if row >= local_rows and row < peer_end and (row - local_rows) % partitions != 0:
                other_partition += 1
    return below_peer - other_partition, other_partition, copied - below_peer, on_disk, out_of_range


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
