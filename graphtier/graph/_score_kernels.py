"""Numba kernels behind :mod:`graphtier.graph.scores` (node hotness scores).

Every kernel is a small pure function over CPU numpy arrays with a plain numpy reference
(``*_reference``) that the tests compare against on random inputs. The graph is CSC:
``indices[indptr[v]:indptr[v + 1]]`` are the in-neighbours of ``v`` (the nodes a sampler draws
when ``v`` is a destination). Scatters into a shared array are made race-free by giving every
parallel part its own row of a ``partials`` [parts, N] array (memory O(parts * N), parts = the
number of numba threads), summed afterwards.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(parallel=True, cache=True, nogil=True)
def count_occurrences(indices: np.ndarray, num_nodes: int, parts: int) -> np.ndarray:
    """int64 [N]: how many times each node id occurs in ``indices`` (int32/int64 [E]).

    Reference: :func:`count_occurrences_reference` (``np.bincount``).
    """
    num_edges = indices.shape[0]
    partials = np.zeros((parts, num_nodes), dtype=np.int64)
    step = (num_edges + parts - 1) // parts
    for part in numba.prange(parts):
        row = partials[part]
        for e in range(part * step, min(num_edges, (part + 1) * step)):
            row[indices[e]] += 1
    counts = np.empty(num_nodes, dtype=np.int64)
    for u in numba.prange(num_nodes):
        total = 0
        for part in range(parts):
            total += partials[part, u]
        counts[u] = total
    return counts


def count_occurrences_reference(indices: np.ndarray, num_nodes: int) -> np.ndarray:
    """Reference for :func:`count_occurrences`: int64 [N] via ``np.bincount``."""
    return np.bincount(np.asarray(indices, dtype=np.int64), minlength=num_nodes).astype(np.int64)


@numba.njit(parallel=True, cache=True, nogil=True)
def share_per_neighbour(indptr: np.ndarray, scores: np.ndarray, out: np.ndarray) -> float:
    """Split every node's score evenly over its neighbour list.

    ``indptr``: int64 [N + 1]; ``scores``: float64 [N]; ``out``: float64 [N] written with
    ``scores[v] / in_degree(v)`` (0 where the in-degree is 0). Returns the float64 sum of the scores
    of nodes with in-degree 0 (the dangling mass, which has no neighbour to go to).
    """
    num_nodes = scores.shape[0]
    dangling = 0.0
    for v in numba.prange(num_nodes):
        degree = indptr[v + 1] - indptr[v]
        if degree > 0:
            out[v] = scores[v] / degree
        else:
            out[v] = 0.0
            dangling += scores[v]
    return dangling


def share_per_neighbour_reference(indptr: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, float]:
    """Reference for :func:`share_per_neighbour`: (float64 [N] shares, float dangling mass)."""
    degree = np.diff(np.asarray(indptr)).astype(np.float64)
    shares = np.divide(scores, degree, out=np.zeros_like(scores, dtype=np.float64), where=degree > 0)
    return shares, float(scores[degree == 0].sum())


@numba.njit(parallel=True, cache=True, nogil=True)
def scatter_to_neighbours(
    indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, bounds: np.ndarray, partials: np.ndarray
) -> None:
    """Add ``values[v]`` to every in-neighbour ``u`` of ``v``: ``partials[p, u] += values[v]``.

    ``indptr`` int64 [N + 1], ``indices`` int32/int64 [E], ``values`` float64 [N], ``bounds`` int64
    [parts + 1] (node ranges, one per part, from :func:`edge_balanced_bounds`), ``partials``
    float64 [parts, N], zero on entry; summing its rows gives ``M @ values`` where ``M[u, v]`` is
    the number of times ``u`` occurs in ``v``'s list. Reference: :func:`scatter_reference`.
    """
    parts = bounds.shape[0] - 1
    for part in numba.prange(parts):
        row = partials[part]
        for v in range(bounds[part], bounds[part + 1]):
            value = values[v]
            if value == 0.0:
                continue
            for e in range(indptr[v], indptr[v + 1]):
                row[indices[e]] += value


def scatter_reference(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Reference for :func:`scatter_to_neighbours` (rows summed): float64 [N] via ``np.add.at``."""
    num_nodes = np.asarray(indptr).shape[0] - 1
    out = np.zeros(num_nodes, dtype=np.float64)
    np.add.at(out, np.asarray(indices, dtype=np.int64), np.repeat(values, np.diff(np.asarray(indptr))))
    return out


@numba.njit(parallel=True, cache=True, nogil=True)
def damped_update(
    partials: np.ndarray, teleport: float, damping: float, previous: np.ndarray, out: np.ndarray
) -> float:
    """``out[u] = teleport + damping * sum_p partials[p, u]``; zero ``partials``; return the L1 change.

    ``partials`` float64 [parts, N] (reset to 0 for the next iteration), ``previous`` and ``out``
    float64 [N]. Returns ``sum |out - previous|`` as a float.
    """
    parts, num_nodes = partials.shape
    change = 0.0
    for u in numba.prange(num_nodes):
        total = 0.0
        for part in range(parts):
            total += partials[part, u]
            partials[part, u] = 0.0
        value = teleport + damping * total
        out[u] = value
        change += abs(value - previous[u])
    return change


@numba.njit(cache=True, nogil=True)
def accumulate_counts(counts: np.ndarray, ids: np.ndarray) -> None:
    """``counts[ids[i]] += 1`` for every i (repeats counted). ``counts`` int64 [N], ``ids`` int [K].

    Reference: ``np.add.at(counts, ids, 1)``.
    """
    for i in range(ids.shape[0]):
        counts[ids[i]] += 1
