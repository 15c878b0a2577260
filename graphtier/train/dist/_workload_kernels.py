"""Expected size of a node's sampled computation graph under uniform neighbour sampling (numba).

``expected_tree_edges(indptr, indices, fanouts)`` returns, for every node v, the expected number of
edges of the L-layer computation graph the neighbour sampler draws for v alone. The top block draws
``s(v) = min(d_v, f_1)`` in-neighbours (all of them for -1); since a block's destinations are a prefix of
its sources, v and each drawn neighbour u are destinations of the next block down and bring their own
(L-1)-layer graphs; every neighbour is drawn with probability ``s(v) / d_v``:

    T_0(v) = 0,   T_k(v) = s_k(v) + T_{k-1}(v) + s_k(v) / d_v * sum_{u in N(v)} T_{k-1}(u)

where level k uses fanout ``f_{L-k+1}`` (the deepest hop first). This is the quantity the Unified CPU-GPU Protocol's load
balancer estimates by running the sampler, computed exactly in L passes over the edges.
:func:`expected_tree_edges_reference` is the plain numpy version.
"""

from __future__ import annotations

from typing import Sequence

import numba
import numpy as np


@numba.njit(parallel=True, cache=True, nogil=True)
def _tree_level(indptr: np.ndarray, indices: np.ndarray, fanout: int, previous: np.ndarray, out: np.ndarray) -> None:
    for v in numba.prange(indptr.shape[0] - 1):
        start, stop = indptr[v], indptr[v + 1]
        degree = stop - start
        if degree == 0:
            out[v] = previous[v]
            continue
        drawn = degree if fanout < 0 or fanout >= degree else fanout
        below = 0.0
        for i in range(start, stop):
            below += previous[indices[i]]
        out[v] = drawn + previous[v] + drawn / degree * below


def expected_tree_edges(indptr: np.ndarray, indices: np.ndarray, fanouts: Sequence[int]) -> np.ndarray:
    """float64 [N]: expected sampled edges of each node's own L-hop tree (fanouts in PyG order)."""
    n = indptr.shape[0] - 1
    previous = np.zeros(n, dtype=np.float64)
    current = np.zeros(n, dtype=np.float64)
    for fanout in reversed(list(fanouts)):
        _tree_level(indptr, indices, int(fanout), previous, current)
        previous, current = current, previous
    return previous


def expected_tree_edges_reference(indptr: np.ndarray, indices: np.ndarray, fanouts: Sequence[int]) -> np.ndarray:
    """Plain numpy reference of :func:`expected_tree_edges`."""
    n = indptr.shape[0] - 1
    degree = np.diff(indptr).astype(np.float64)
    level = np.zeros(n)
    for fanout in reversed(list(fanouts)):
        drawn = degree if fanout < 0 else np.minimum(degree, fanout)
        sums = np.array([level[indices[indptr[v] : indptr[v + 1]]].sum() for v in range(n)])
        with np.errstate(divide="ignore", invalid="ignore"):
            level = np.where(degree > 0, drawn + level + drawn / np.maximum(degree, 1) * sums, level)
    return level
