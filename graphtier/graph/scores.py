"""Node hotness scores: predictions of how often sampling will read each node's features.

Three graph scores (seed 000, section 3.1); the dispatcher over these and the measured ``presample``
ranking is :mod:`graphtier.tiering.hotness`:

* ``degree``: how many neighbour lists a node appears in (``bincount(indices)``), i.e. how many
  destinations can draw it as a neighbour.
* ``rpr``: reverse PageRank. A node's score is the sum over the nodes ``v`` whose neighbour lists
  contain it of ``score[v] / in_degree(v)``, damped: ``x' = (1 - d) / N + d * (M @ (x / deg) + dangling / N)``
  where ``dangling`` is the score of nodes with in-degree 0 (empty lists: nothing can be drawn from
  them), spread uniformly as in standard PageRank. Iterates until the L1 change is below ``tol``.
* ``wrpr``: weighted reverse PageRank (Algorithm 1): the same update, started from ``1 / N`` with the
  training nodes multiplied by ``N / num_train``, for exactly ``iterations`` (5) rounds.

All scores are float64 [N] numpy arrays on the CPU; higher means hotter.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import scipy.sparse

from graphtier.errors import OptionError
from graphtier.graph import _score_kernels as kernels

DEFAULT_DAMPING = 0.85
DEFAULT_RPR_TOL = 1e-10
DEFAULT_RPR_ITERATIONS = 100
DEFAULT_WRPR_ITERATIONS = 5


def degree_scores(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """float64 [N]: how many neighbour lists each node appears in.

    ``indptr`` int64 [N + 1], ``indices`` int32/int64 [E] (CSC, may be memory maps).
    """
    num_nodes = int(np.asarray(indptr).shape[0]) - 1
    if num_nodes == 0:
        return np.zeros(0, dtype=np.float64)
    counts = kernels.count_occurrences(np.asarray(indices), num_nodes, numba.get_num_threads())
    return counts.astype(np.float64)


def _check_damping(damping: float) -> None:
    if not 0.0 <= damping < 1.0:
        raise OptionError(f"--damping: expected a value in [0, 1), found {damping}")


def _pagerank_rounds(
    indptr: np.ndarray,
    indices: np.ndarray,
    initial: np.ndarray,
    *,
    damping: float,
    tol: float,
    max_iterations: int,
    stop_on_tol: bool,
) -> tuple[np.ndarray, int, float]:
    """Run damped reverse-PageRank rounds from ``initial`` (float64 [N]).

    Returns (float64 [N] scores, rounds run, L1 change of the last round).
    """
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    num_nodes = indptr.shape[0] - 1
    parts = numba.get_num_threads()
    bounds = kernels.edge_balanced_bounds(indptr, parts)
    partials = np.zeros((parts, num_nodes), dtype=np.float64)
    current = np.array(initial, dtype=np.float64, copy=True)
    following = np.empty_like(current)
    shares = np.empty_like(current)
    change = float("inf")
    rounds = 0
    while rounds < max_iterations:
        dangling = kernels.share_per_neighbour(indptr, current, shares)
        kernels.scatter_to_neighbours(indptr, indices, shares, bounds, partials)
        teleport = (1.0 - damping) / num_nodes + damping * dangling / num_nodes
        change = kernels.damped_update(partials, teleport, damping, current, following)
        current, following = following, current
        rounds += 1
        if stop_on_tol and change < tol:
            break
    return current, rounds, change


def reverse_pagerank(
    indptr: np.ndarray,
    indices: np.ndarray,
    *,
    damping: float = DEFAULT_DAMPING,
    tol: float = DEFAULT_RPR_TOL,
    max_iterations: int = DEFAULT_RPR_ITERATIONS,
) -> tuple[np.ndarray, int, float]:
    """Reverse PageRank from the uniform start ``1 / N`` until the L1 change < ``tol``.

    ``indptr`` int64 [N + 1], ``indices`` int32/int64 [E] (CSC). Returns (float64 [N] scores summing
    to 1, rounds run, last L1 change).
    """
    _check_damping(damping)
    if max_iterations < 1:
        raise OptionError(f"--iterations: expected at least 1, found {max_iterations}")
    num_nodes = np.asarray(indptr).shape[0] - 1
    if num_nodes == 0:
        return np.zeros(0, dtype=np.float64), 0, 0.0
    initial = np.full(num_nodes, 1.0 / num_nodes, dtype=np.float64)
    return _pagerank_rounds(
        indptr, indices, initial, damping=damping, tol=tol, max_iterations=max_iterations, stop_on_tol=True
    )


def weighted_initial_scores(num_nodes: int, train_idx: np.ndarray) -> np.ndarray:
    """float64 [N]: ``1 / N`` everywhere, times ``N / num_train`` on the training nodes (Alg. 1, lines 4-11)."""
    initial = np.full(num_nodes, 1.0 / num_nodes, dtype=np.float64)
    train_idx = np.asarray(train_idx, dtype=np.int64)
    if train_idx.size:
        initial[train_idx] *= num_nodes / train_idx.size
    return initial


def weighted_reverse_pagerank(
    indptr: np.ndarray,
    indices: np.ndarray,
    train_idx: np.ndarray,
    *,
    damping: float = DEFAULT_DAMPING,
    iterations: int = DEFAULT_WRPR_ITERATIONS,
    with_change: bool = False,
) -> Any:
    """Weighted reverse PageRank (seed 000, Algorithm 1): exactly ``iterations`` rounds.

    ``train_idx``: int64 [T] training node ids (the sampling seeds). Returns float64 [N], or with
    ``with_change`` (scores, L1 change of the last round).
    """
    _check_damping(damping)
    if iterations < 1:
        raise OptionError(f"--iterations: expected at least 1, found {iterations}")
    num_nodes = np.asarray(indptr).shape[0] - 1
    if num_nodes == 0:
        empty = np.zeros(0, dtype=np.float64)
        return (empty, 0.0) if with_change else empty
    if np.asarray(train_idx).size == 0:
        raise OptionError("wrpr: expected a non-empty training split, found 0 training nodes")
    initial = weighted_initial_scores(num_nodes, train_idx)
    scores, _, change = _pagerank_rounds(
        indptr, indices, initial, damping=damping, tol=0.0, max_iterations=iterations, stop_on_tol=False
    )
    return (scores, change) if with_change else scores


def rank_matrix(indptr: np.ndarray, indices: np.ndarray) -> scipy.sparse.csc_matrix:
    """float64 scipy CSC [N, N] ``M`` with ``M[u, v]`` = times ``u`` occurs in ``v``'s neighbour list."""
    indptr = np.asarray(indptr)
    num_nodes = indptr.shape[0] - 1
    return scipy.sparse.csc_matrix(
        (np.ones(np.asarray(indices).shape[0], dtype=np.float64), np.asarray(indices), indptr),
        shape=(num_nodes, num_nodes),
    )


def reverse_pagerank_reference(
    indptr: np.ndarray,
    indices: np.ndarray,
    initial: np.ndarray,
    *,
    damping: float,
    iterations: int,
    matrix: scipy.sparse.csc_matrix | None = None,
) -> np.ndarray:
    """scipy.sparse reference for the PageRank rounds: ``iterations`` SpMV rounds from ``initial``.

    Uses ``matrix`` (from :func:`rank_matrix`, built when None) and iterates
    ``x = (1 - d) / N + d * (M @ (x / deg) + dangling / N)``. Returns float64 [N].
    """
    indptr = np.asarray(indptr)
    num_nodes = indptr.shape[0] - 1
    if matrix is None:
        matrix = rank_matrix(indptr, indices)
    degree = np.diff(indptr).astype(np.float64)
    has_list = degree > 0
    inverse_degree = np.zeros(num_nodes, dtype=np.float64)
    inverse_degree[has_list] = 1.0 / degree[has_list]
    scores = np.array(initial, dtype=np.float64, copy=True)
    for _ in range(iterations):
        dangling = scores[~has_list].sum()
        scores = (1.0 - damping) / num_nodes + damping * (matrix @ (scores * inverse_degree) + dangling / num_nodes)
    return scores
