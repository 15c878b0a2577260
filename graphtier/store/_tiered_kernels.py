"""CPU tiered row gather (numba) and its plain numpy reference.

``tiered_gather_rows`` reads each requested row from the tier that holds it, choosing the source by
comparing the id with the tier boundaries (seed 000 Listing 1), and writes it to ``out[positions[i]]``:

* id < local_rows:             ``local[id]``                                  ("gpu" tier)
* local_rows <= id < peer_end: ``peers[o % P, o // P]`` with o = id - local_rows  ("gpu-peer", interleaved)
* peer_end <= id < host_end:   ``host[id - peer_end]``                        ("host" tier, RAM)
* host_end <= id:              ``disk[id]``                                   ("disk": the memory-mapped table)

All arrays are raw-bit views (unsigned ints of the feature width: numba has no CPU float16).
"""

from __future__ import annotations

import numba
import numpy as np

from graphtier.store._gather_kernels import copy_row


@numba.njit(inline="always", cache=True, nogil=True)
def _copy_tiered_row(
    local: np.ndarray,
    peers: np.ndarray,
    host: np.ndarray,
    disk: np.ndarray,
    local_rows: int,
    peer_end: int,
    host_end: int,
    row: int,
    out: np.ndarray,
    target: int,
) -> None:
    if row < local_rows:
        copy_row(out, target, local, row)
    elif row < peer_end:
        offset = row - local_rows
        copy_row(out, target, peers[offset % peers.shape[0]], offset // peers.shape[0])
    elif row < host_end:
        copy_row(out, target, host, row - peer_end)
    else:
        copy_row(out, target, disk, row)


@numba.njit(parallel=True, cache=True, nogil=True)
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
) -> None:
    """out[positions[i]] = row ids[i] of the tiered table; local [L, D], peers [P, Q, D], host [H, D], disk [N, D]."""
    for i in numba.prange(ids.shape[0]):
        _copy_tiered_row(local, peers, host, disk, local_rows, peer_end, host_end, ids[i], out, positions[i])


@numba.njit(parallel=True, cache=True, nogil=True)
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
) -> None:
    """:func:`tiered_gather_rows` with ``positions = arange(B)`` (the no-cache path): out[i] = row ids[i]."""
    for i in numba.prange(ids.shape[0]):
        _copy_tiered_row(local, peers, host, disk, local_rows, peer_end, host_end, ids[i], out, i)


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
