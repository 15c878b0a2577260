"""Numba kernels of the typed (heterogeneous) neighbour sampler, each with a plain-Python twin (``*_py``).

A hop of the typed sampler is a list of WORK ITEMS, relation-major: relation ``r`` (schema order) owns the items
``[item_start[r], item_start[r + 1])``, one per frontier node of its destination type, in that type's frontier
order. Item ``i`` of relation ``r`` reads row ``row_offset[r] + local`` of the back-to-back CSC (``local``: the
frontier node's local id) with fanout ``fanout[r]``. The spans of all items come from ONE call of
:func:`typed_spans`; the draws reuse :func:`graphtier.sampling.neighbor._neighbor_kernels.sample_sources` (its per-item
draw count comes from the offsets, its key from the item index), and the relabel reuses
:func:`~graphtier.sampling.neighbor._neighbor_kernels.relabel` over the hop's global source ids. :func:`assign_types` then
gives every new node its type and its position within that type.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def typed_spans(
    indptr: np.ndarray,
    frontier_local: np.ndarray,
    item_start: np.ndarray,
    type_start: np.ndarray,
    row_offset: np.ndarray,
    fanout: np.ndarray,
    starts: np.ndarray,
    degrees: np.ndarray,
    counts: np.ndarray,
    first: np.int64,
    stop: np.int64,
) -> None:
    """Spans of items ``[first, stop)`` of a hop over all relations (see the module).

    ``frontier_local``: int64 [F] the frontier's local ids grouped by type (type ``t`` at ``type_start``-based
    ranges); per relation ``r`` (int64 arrays): ``item_start`` [R + 1], ``type_start`` [R] (where its destination
    type's frontier begins in ``frontier_local``), ``row_offset`` [R], ``fanout`` [R] (-1 = all). Writes
    ``starts[i] = indptr[row]``, ``degrees[i]`` and ``counts[i] = min(degree, fanout)`` (int64 [I]).
    """
    if first >= stop:
        return
    r = np.int64(np.searchsorted(item_start, first, side="right") - 1)
    for i in range(first, stop):
        while i >= item_start[r + 1]:
            r += 1
        row = row_offset[r] + frontier_local[type_start[r] + i - item_start[r]]
        start = indptr[row]
        deg = indptr[row + 1] - start
        f = fanout[r]
        starts[i] = start
        degrees[i] = deg
        counts[i] = deg if (f < 0 or deg <= f) else f


def typed_spans_py(
    indptr: np.ndarray,
    frontier_local: np.ndarray,
    item_start: np.ndarray,
    type_start: np.ndarray,
    row_offset: np.ndarray,
    fanout: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Plain twin of :func:`typed_spans` over all items: ``(starts, degrees, counts)``, int64 [I] each."""
    starts, degrees, counts = [], [], []
    for r in range(len(row_offset)):
        for k in range(int(item_start[r + 1] - item_start[r])):
            row = int(row_offset[r]) + int(frontier_local[int(type_start[r]) + k])
            start, deg = int(indptr[row]), int(indptr[row + 1] - indptr[row])
            starts.append(start)
            degrees.append(deg)
            counts.append(deg if (fanout[r] < 0 or deg <= fanout[r]) else int(fanout[r]))
    return tuple(np.array(a, dtype=np.int64) for a in (starts, degrees, counts))  # type: ignore[return-value]


@numba.njit(cache=True, nogil=True)
def assign_types(
    n_id: np.ndarray,
    first: np.int64,
    stop: np.int64,
    offsets: np.ndarray,
    node_type: np.ndarray,
    type_position: np.ndarray,
    type_count: np.ndarray,
) -> None:
    """For nodes ``p`` in ``[first, stop)`` of ``n_id`` (int64 global ids, first-seen order): ``node_type[p]`` =
    its type (``offsets`` int64 [T + 1], the types' global id ranges) and ``type_position[p]`` = its position
    among the batch's nodes of that type (``type_count`` int64 [T], the counts so far, incremented)."""
    for p in range(first, stop):
        t = np.int64(np.searchsorted(offsets, n_id[p], side="right") - 1)
        node_type[p] = t
        type_position[p] = type_count[t]
        type_count[t] += 1


def assign_types_py(
    n_id: np.ndarray, first: int, stop: int, offsets: np.ndarray, type_count: list[int]
) -> list[tuple[int, int]]:
    """Plain twin of :func:`assign_types`: ``(type, position within type)`` per node; updates ``type_count``."""
    out = []
    for p in range(first, stop):
        t = int(np.searchsorted(offsets, int(n_id[p]), side="right")) - 1
        out.append((t, type_count[t]))
        type_count[t] += 1
    return out
