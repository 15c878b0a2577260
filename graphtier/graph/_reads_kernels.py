"""Numba kernels behind the ``fwr`` score (:func:`graphtier.graph.scores.fanout_weighted_reads`).

One hop of the expected-reads propagation is: an element-wise pass that turns each destination
``v``'s weight into what it passes to each of its in-neighbours (:func:`draw_values`), the scatter
of :mod:`graphtier.graph._score_kernels` (``scatter_to_neighbours``: ``partials[p, u] += value[v]``
for every ``u`` in ``v``'s list, CSC), and an element-wise pass that sums the partial rows back into
one score per node (:func:`combine_sums` or :func:`combine_survival`). Every kernel is a small pure
function over CPU numpy arrays with a plain numpy reference (``*_reference``) that the tests compare
against on random inputs.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, inline="always")
def _draw_probability(degree: int, fanout: int) -> float:
    if degree <= 0:
        return 0.0
    if fanout < 0 or fanout >= degree:
        return 1.0
    return fanout / degree


@numba.njit(cache=True, nogil=True, inline="always")
def _store_passed(values: np.ndarray, v: int, weight: float, p: float, survival: bool) -> None:
    """``values[v]`` = what a destination of weight ``weight`` passes to each in-neighbour drawn with chance ``p``
    (see :func:`draw_values`): ``weight * p``, or with ``survival`` ``log(1 - weight * p)`` (``-inf`` at >= 1).

    Stores in each branch rather than returning a value: the compiled loops then split on ``survival``."""
    if survival:
        drawn = weight * p
        values[v] = -np.inf if drawn >= 1.0 else math.log1p(-drawn)
    else:
        values[v] = weight * p


@numba.njit(cache=True, nogil=True, inline="always")
def _drain(partials: np.ndarray, parts: int, u: int) -> float:
    """``sum_p partials[p, u]`` over the ``parts`` rows, zeroing that column of ``partials`` for the next hop."""
    total = 0.0
    for part in range(parts):
        total += partials[part, u]
        partials[part, u] = 0.0
    return total


@numba.njit(parallel=True, cache=True, nogil=True)
def draw_values(indptr: np.ndarray, weights: np.ndarray, fanout: int, survival: bool, out: np.ndarray) -> None:
    """What each destination ``v`` passes to each of its in-neighbours at a hop of fanout ``fanout``.

    ``indptr`` int64 [N + 1] (CSC), ``weights`` float64 [N], ``out`` float64 [N] (written).
    ``p(v) = min(1, fanout / deg(v))`` (1 for ``fanout == -1``, 0 for an empty list) is the chance that
    one given in-neighbour is drawn when ``v`` is a destination. With ``survival`` False:
    ``out[v] = weights[v] * p(v)`` (expected draws); with ``survival`` True ``weights`` are
    probabilities and ``out[v] = log(1 - weights[v] * p(v))`` (log of the chance that ``v`` does not
    draw the neighbour; ``-inf`` when it surely does). Reference: :func:`draw_values_reference`.
    """
    num_nodes = weights.shape[0]
    for v in numba.prange(num_nodes):
        p = _draw_probability(indptr[v + 1] - indptr[v], fanout)
        _store_passed(out, v, weights[v], p, survival)


def draw_values_reference(indptr: np.ndarray, weights: np.ndarray, fanout: int, survival: bool) -> np.ndarray:
    """Reference for :func:`draw_values`: float64 [N] in numpy."""
    degree = np.diff(np.asarray(indptr)).astype(np.float64)
    if fanout < 0:
        p = np.where(degree > 0, 1.0, 0.0)
    else:
        p = np.minimum(1.0, np.divide(float(fanout), degree, out=np.zeros_like(degree), where=degree > 0))
    drawn = np.asarray(weights, dtype=np.float64) * p
    if not survival:
        return drawn
    with np.errstate(divide="ignore"):
        return np.log1p(-np.minimum(drawn, 1.0))


@numba.njit(parallel=True, cache=True, nogil=True)
def combine_sums(partials: np.ndarray, out: np.ndarray) -> None:
    """``out[u] = sum_p partials[p, u]``, then zero ``partials`` for the next hop.

    ``partials`` float64 [parts, N], ``out`` float64 [N]. Reference: ``partials.sum(axis=0)``.
    """
    parts, num_nodes = partials.shape
    for u in numba.prange(num_nodes):
        out[u] = _drain(partials, parts, u)


@numba.njit(parallel=True, cache=True, nogil=True)
def combine_survival(partials: np.ndarray, present: np.ndarray, out: np.ndarray) -> None:
    """``out[u] = 1 - (1 - present[u]) * exp(sum_p partials[p, u])``, then zero ``partials``.

    ``partials`` float64 [parts, N] holds, summed over parts, the log of the chance that no
    destination draws ``u`` at this hop; ``present`` float64 [N] the chance that ``u`` is already in
    the batch. ``out`` float64 [N]: the chance ``u`` is in the batch after the hop (independence of
    the draws assumed). ``out`` may not alias ``present``. Reference: :func:`combine_survival_reference`.
    """
    parts, num_nodes = partials.shape
    for u in numba.prange(num_nodes):
        total = _drain(partials, parts, u)
        out[u] = 1.0 - (1.0 - present[u]) * math.exp(total)


def combine_survival_reference(partials: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Reference for :func:`combine_survival`: float64 [N] in numpy (``partials`` left unchanged)."""
    return 1.0 - (1.0 - np.asarray(present, dtype=np.float64)) * np.exp(np.asarray(partials).sum(axis=0))


@numba.njit(parallel=True, cache=True, nogil=True)
def combine_and_draw(
    partials: np.ndarray,
    present: np.ndarray,
    indptr: np.ndarray,
    next_fanout: int,
    survival: bool,
    out: np.ndarray,
    values: np.ndarray,
) -> None:
    """One pass doing :func:`combine_survival` (``survival``) or :func:`combine_sums` into ``out``, then
    :func:`draw_values` of ``out`` for the next hop (fanout ``next_fanout``) into ``values``.

    Fuses two parallel regions into one (each region costs a thread wake-up). Shapes as there; ``out``
    may not alias ``present``. Reference: the two kernels' references applied in turn.
    """
    parts, num_nodes = partials.shape
    for u in numba.prange(num_nodes):
        total = _drain(partials, parts, u)
        weight = 1.0 - (1.0 - present[u]) * math.exp(total) if survival else total
        out[u] = weight
        _store_passed(values, u, weight, _draw_probability(indptr[u + 1] - indptr[u], next_fanout), survival)
