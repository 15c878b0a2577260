"""Node hotness scores: predictions of how often sampling will read each node's features.

Three graph scores (Data Tiering, section 3.1); the dispatcher over these and the measured ``presample``
ranking is :mod:`graphtier.tiering.hotness`:

* ``degree``: how many neighbour lists a node appears in (``bincount(indices)``), i.e. how many
  destinations can draw it as a neighbour.
* ``rpr``: reverse PageRank. A node's score is the sum over the nodes ``v`` whose neighbour lists
  contain it of ``score[v] / in_degree(v)``, damped: ``x' = (1 - d) / N + d * (M @ (x / deg) + dangling / N)``
  where ``dangling`` is the score of nodes with in-degree 0 (empty lists: nothing can be drawn from
  them), spread uniformly as in standard PageRank. Iterates until the L1 change is below ``tol``.
* ``wrpr``: weighted reverse PageRank (Algorithm 1): the same update, started from ``1 / N`` with the
  training nodes multiplied by ``N / num_train`` (link seeds: each node's share of the epoch's seeds),
  for exactly ``iterations`` (5) rounds.
* ``fwr``: fanout-weighted reads, the expected number of mini-batches that read each node under the
  sampler's fanouts, from the training nodes, hop-limited to the number of layers
  (:func:`fanout_weighted_reads`; ``mode="sum"`` is the per-hop expected draw count without the
  per-batch dedup); from any per-node seed weights, e.g. link prediction's endpoints and negatives,
  with :func:`seeded_fanout_weighted_reads`.

All scores are float64 [N] numpy arrays on the CPU; higher means hotter.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import scipy.sparse

from graphtier._fanouts import check_fanouts
from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.csc import edge_balanced_bounds
from graphtier.errors import OptionError
from graphtier.graph import _reads_kernels as reads_kernels
from graphtier.graph import _score_kernels as kernels
from graphtier.graph.seed_weights import SeedWeights, node_seed_weights

DEFAULT_DAMPING = 0.85
DEFAULT_RPR_TOL = 1e-10
DEFAULT_RPR_ITERATIONS = 100
DEFAULT_WRPR_ITERATIONS = 5
FWR_MODES = ("batch", "sum")


def degree_scores(indptr: np.ndarray, indices: np.ndarray, *, num_nodes: int | None = None) -> np.ndarray:
    """float64 [N]: how many neighbour lists each node appears in.

    ``indptr`` int64 [N + 1], ``indices`` int32/int64 [E] (CSC, may be memory maps). ``num_nodes``: the size
    of the id space when it differs from the rows (a typed CSC: one row per relation and destination).
    """
    if num_nodes is None:
        num_nodes = int(np.asarray(indptr).shape[0]) - 1
    if num_nodes == 0:
        return np.zeros(0, dtype=np.float64)
    counts = kernels.count_occurrences(np.asarray(indices), num_nodes, numba.get_num_threads())
    return counts.astype(np.float64)


def _check_damping(damping: float) -> None:
    if not 0.0 <= damping < 1.0:
        raise OptionError(f"{{damping}}: expected a value in [0, 1), found {damping}", options=("damping",))


def check_iterations(iterations: int, option: str = "iterations") -> None:
    """OptionError naming ``option`` (a Python argument name, rendered as its flag on the CLI) unless
    ``iterations`` is at least 1."""
    if iterations < 1:
        raise OptionError(f"{{{option}}}: expected at least 1, found {iterations}", options=(option,))


def _pagerank_rounds(
    indptr: np.ndarray,
    indices: np.ndarray,
    initial: np.ndarray,
    *,
    damping: float,
    tol: float,
    max_iterations: int,
    stop_on_tol: bool,
    progress: Progress = NO_PROGRESS,
) -> tuple[np.ndarray, int, float]:
    """Run damped reverse-PageRank rounds from ``initial`` (float64 [N]), reported as the stage
    ``score: PageRank rounds`` (its total the cap: ``rpr`` may stop before).

    Returns (float64 [N] scores, rounds run, L1 change of the last round).
    """
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    num_nodes = indptr.shape[0] - 1
    parts = numba.get_num_threads()
    bounds = edge_balanced_bounds(indptr, parts)
    partials = np.zeros((parts, num_nodes), dtype=np.float64)
    current = np.array(initial, dtype=np.float64, copy=True)
    following = np.empty_like(current)
    shares = np.empty_like(current)
    change = float("inf")
    rounds = 0
    with progress.stage("score: PageRank rounds", total=max_iterations, unit="rounds") as bar:
        while rounds < max_iterations:
            dangling = kernels.share_per_neighbour(indptr, current, shares)
            kernels.scatter_to_neighbours(indptr, indices, shares, bounds, partials)
            teleport = (1.0 - damping) / num_nodes + damping * dangling / num_nodes
            change = kernels.damped_update(partials, teleport, damping, current, following)
            current, following = following, current
            rounds += 1
            bar.advance()
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
    progress: Progress = NO_PROGRESS,
) -> tuple[np.ndarray, int, float]:
    """Reverse PageRank from the uniform start ``1 / N`` until the L1 change < ``tol``.

    ``indptr`` int64 [N + 1], ``indices`` int32/int64 [E] (CSC). Returns (float64 [N] scores summing
    to 1, rounds run, last L1 change).
    """
    _check_damping(damping)
    check_iterations(max_iterations, "max_iterations")
    num_nodes = np.asarray(indptr).shape[0] - 1
    if num_nodes == 0:
        return np.zeros(0, dtype=np.float64), 0, 0.0
    initial = np.full(num_nodes, 1.0 / num_nodes, dtype=np.float64)
    return _pagerank_rounds(
        indptr, indices, initial, damping=damping, tol=tol, max_iterations=max_iterations, stop_on_tol=True,
        progress=progress,
    )  # fmt: skip


def weighted_initial_scores(num_nodes: int, train_idx: np.ndarray) -> np.ndarray:
    """float64 [N]: ``1 / N`` everywhere, times ``N / num_train`` on the training nodes (Alg. 1, lines 4-11)."""
    initial = np.full(num_nodes, 1.0 / num_nodes, dtype=np.float64)
    train_idx = np.asarray(train_idx, dtype=np.int64)
    if train_idx.size:
        initial[train_idx] *= num_nodes / train_idx.size
    return initial


def seed_count_initial_scores(seed_counts: np.ndarray) -> np.ndarray:
    """float64 [N]: Alg. 1's start for seeds of any weight: ``max(1 / N, count / sum(counts))``.

    ``seed_counts`` float64 [N]: expected times each node is a seed per epoch (``SeedWeights.epoch_count``).
    With 1 on each of T training nodes this is :func:`weighted_initial_scores` (``1 / T`` there, ``1 / N``
    elsewhere); link seeds weigh each endpoint by its pairs and negatives.
    """
    seed_counts = np.asarray(seed_counts, dtype=np.float64)
    total = float(seed_counts.sum())
    uniform = np.full(seed_counts.shape[0], 1.0 / max(1, seed_counts.shape[0]), dtype=np.float64)
    return np.maximum(uniform, seed_counts / total) if total > 0 else uniform


def weighted_reverse_pagerank(
    indptr: np.ndarray,
    indices: np.ndarray,
    train_idx: np.ndarray | None,
    *,
    damping: float = DEFAULT_DAMPING,
    iterations: int = DEFAULT_WRPR_ITERATIONS,
    with_change: bool = False,
    seed_counts: np.ndarray | None = None,
    progress: Progress = NO_PROGRESS,
) -> Any:
    """Weighted reverse PageRank (Data Tiering, Algorithm 1): exactly ``iterations`` rounds.

    ``train_idx``: int64 [T] training node ids (the sampling seeds), or None with ``seed_counts`` float64 [N]
    (per-node seed counts of an epoch, e.g. link seeds: :func:`seed_count_initial_scores`). Returns
    float64 [N], or with ``with_change`` (scores, L1 change of the last round).
    """
    _check_damping(damping)
    check_iterations(iterations)
    num_nodes = np.asarray(indptr).shape[0] - 1
    if num_nodes == 0:
        empty = np.zeros(0, dtype=np.float64)
        return (empty, 0.0) if with_change else empty
    if seed_counts is not None:
        if not np.asarray(seed_counts).sum() > 0:
            raise OptionError("wrpr: expected training seeds, found none")
        initial = seed_count_initial_scores(seed_counts)
    else:
        if train_idx is None or np.asarray(train_idx).size == 0:
            raise OptionError("wrpr: expected a non-empty training split, found 0 training nodes")
        initial = weighted_initial_scores(num_nodes, train_idx)
    scores, _, change = _pagerank_rounds(
        indptr, indices, initial, damping=damping, tol=0.0, max_iterations=iterations, stop_on_tol=False,
        progress=progress,
    )  # fmt: skip
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


def _check_fwr_arguments(fanouts, batch_size: int, mode: str) -> list[int]:
    if mode not in FWR_MODES:
        raise OptionError(f"{{mode}}: expected one of {', '.join(FWR_MODES)}, found {mode!r}", options=("mode",))
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise OptionError(f"{{batch_size}}: expected a positive integer, found {batch_size!r}", options=("batch_size",))
    return check_fanouts(fanouts)


def _node_weights(indptr: np.ndarray, train_idx: np.ndarray, batch_size: int) -> SeedWeights:
    train_idx = np.asarray(train_idx, dtype=np.int64)
    if train_idx.size == 0:
        raise OptionError("fwr: expected a non-empty training split, found 0 training nodes")
    return node_seed_weights(np.asarray(indptr).shape[0] - 1, train_idx, batch_size)


def fanout_weighted_reads(
    indptr: np.ndarray,
    indices: np.ndarray,
    train_idx: np.ndarray,
    fanouts,
    *,
    batch_size: int = 1024,
    mode: str = "batch",
    progress: Progress = NO_PROGRESS,
) -> np.ndarray:
    """Fanout-weighted reads (``fwr``) of node-classification training: expected feature reads of each node in
    one epoch. float64 [N].

    ``indptr`` int64 [N + 1], ``indices`` int32/int64 [E] (CSC: ``v``'s list holds the in-neighbours the
    sampler draws), ``train_idx`` int64 [T] (the seeds), ``fanouts`` seed hop first (-1 = all). The seeds'
    weights are :func:`graphtier.graph.seed_weights.node_seed_weights` (``q_0 = min(1, B / T)`` on the
    training nodes); the recurrence is :func:`seeded_fanout_weighted_reads`.
    """
    fanouts = _check_fwr_arguments(fanouts, batch_size, mode)
    if np.asarray(indptr).shape[0] - 1 == 0:
        return np.zeros(0, dtype=np.float64)
    weights = _node_weights(indptr, train_idx, batch_size)
    return seeded_fanout_weighted_reads(indptr, indices, weights, fanouts, mode=mode, progress=progress)


def seeded_fanout_weighted_reads(
    indptr: np.ndarray,
    indices: np.ndarray,
    seeds: SeedWeights,
    fanouts,
    *,
    mode: str = "batch",
    progress: Progress = NO_PROGRESS,
) -> np.ndarray:
    """Fanout-weighted reads from per-node seed weights (node or link seeds: :mod:`graphtier.graph.seed_weights`).

    float64 [N]. ``p_k(v) = min(1, fanouts[k] / deg(v))`` is the chance that hop ``k`` draws a given neighbour
    of ``v``.

    * ``mode="batch"`` (default): the sampler expands every node already in the batch at every hop
      and reads each node once per batch (``n_id`` is unique). With ``q_0 = seeds.batch_chance`` (the
      chance a node is a seed of a given batch), one hop is
      ``q_{k+1}(u) = 1 - (1 - q_k(u)) * prod_{v: u in N(v)} (1 - q_k(v) p_k(v))`` (draws assumed
      independent), and the score is ``seeds.num_batches * q_L(u)``: expected batches that read ``u``.
    * ``mode="sum"``: expected draws with no dedup, ``r_0 = seeds.epoch_count``,
      ``r_{k+1}(u) = sum_{v: u in N(v)} r_k(v) p_k(v)``, score ``sum_{k=0..L} r_k``.

    ``progress`` reports the stage ``score: fanout-weighted hops`` (one pass over the edges per hop).
    """
    fanouts = _check_fwr_arguments(fanouts, 1, mode)
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    num_nodes = indptr.shape[0] - 1
    if num_nodes == 0:
        return np.zeros(0, dtype=np.float64)
    parts = numba.get_num_threads()
    bounds = edge_balanced_bounds(indptr, parts)
    partials = np.zeros((parts, num_nodes), dtype=np.float64)
    values = np.empty(num_nodes, dtype=np.float64)
    survival = mode == "batch"
    current = np.array(seeds.batch_chance if survival else seeds.epoch_count, dtype=np.float64, copy=True)
    following = np.empty_like(current)
    total = current.copy()
    reads_kernels.draw_values(indptr, current, fanouts[0], survival, values)
    edges = int(indices.shape[0])
    with progress.stage("score: fanout-weighted hops", total=edges * len(fanouts), unit="edges") as bar:
        for hop, fanout in enumerate(fanouts):
            kernels.scatter_to_neighbours(indptr, indices, values, bounds, partials)
            if hop + 1 < len(fanouts):
                reads_kernels.combine_and_draw(partials, current, indptr, fanouts[hop + 1], survival, following, values)
            elif survival:
                reads_kernels.combine_survival(partials, current, following)
            else:
                reads_kernels.combine_sums(partials, following)
            if not survival:
                total += following
            current, following = following, current
            bar.advance(edges)
    if survival:
        return current * float(seeds.num_batches)
    return total


def fanout_weighted_reads_reference(
    indptr: np.ndarray,
    indices: np.ndarray,
    train_idx: np.ndarray | SeedWeights,
    fanouts,
    *,
    batch_size: int = 1024,
    mode: str = "batch",
) -> np.ndarray:
    """scipy.sparse reference for :func:`fanout_weighted_reads` (``train_idx`` int64 [T]) and
    :func:`seeded_fanout_weighted_reads` (``train_idx`` a :class:`SeedWeights`; ``batch_size`` unused):
    the same formula, SpMV per hop. float64 [N]."""
    fanouts = _check_fwr_arguments(fanouts, batch_size, mode)
    indptr = np.asarray(indptr)
    matrix = rank_matrix(indptr, indices)
    degree = np.diff(indptr).astype(np.float64)
    seeds = train_idx if isinstance(train_idx, SeedWeights) else _node_weights(indptr, train_idx, batch_size)
    current = np.array(seeds.batch_chance if mode == "batch" else seeds.epoch_count, dtype=np.float64)
    total = current.copy()
    for fanout in fanouts:
        p = (
            np.where(degree > 0, 1.0, 0.0)
            if fanout < 0
            else np.minimum(1.0, np.divide(float(fanout), degree, out=np.zeros_like(degree), where=degree > 0))
        )
        if mode == "batch":
            with np.errstate(divide="ignore"):
                logs = np.log1p(-np.minimum(current * p, 1.0))
            current = 1.0 - (1.0 - current) * np.exp(matrix @ logs)
        else:
            current = matrix @ (current * p)
            total += current
    if mode == "batch":
        return current * float(seeds.num_batches)
    return total
