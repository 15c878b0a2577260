"""CPU kernels of the row-wise Adam step of the learnable tables (numba): the touched rows' summed gradient
(:func:`sum_by_id`) and the update in place (:func:`adam_rows`).

``adam_rows(weight, exp_avg, exp_avg_sq, steps, rows, grad, ...)`` updates only the touched ``rows`` of a table
and its moments where they are, one row per parallel iteration (the rows are distinct): no gathered copy of the
rows and no scatter back, which took 4 gathers and 4 scatters of ``[rows, dim]`` per table and step (0.56 s of a
1.9 s typed R-GCN epoch on 2 cores, measured 2026-11-28). The formula is ``torch.optim.SparseAdam``'s (what an
``nn.Embedding(sparse=True)`` trains with): one step count for the table, the moments of untouched rows left as they
are, ``eps`` added before the bias correction; plus an L2 ``weight_decay`` on the touched rows. In the table's float
type: :func:`graphtier.train.nn.tiered_embedding.adam_rows_reference` (torch ops) is the reference the tests compare
against.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(parallel=True, cache=True, nogil=True)
def adam_rows(
    weight: np.ndarray,
    exp_avg: np.ndarray,
    exp_avg_sq: np.ndarray,
    steps: np.ndarray,
    rows: np.ndarray,
    grad: np.ndarray,
    step: int,
    lr: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
) -> None:
    """Step ``step`` (>= 1, the table's count of steps) of Adam on ``rows`` (int64 [k], distinct) of
    ``weight``/``exp_avg``/``exp_avg_sq`` (float [N, D]) with ``grad`` (float [k, D], row i for ``rows[i]``), in
    place; ``steps`` (int32 [N]) records ``step`` as each touched row's last step."""
    ftype = weight.dtype.type
    b1, b2 = ftype(beta1), ftype(beta2)
    one_minus_b1, one_minus_b2 = ftype(1.0 - beta1), ftype(1.0 - beta2)
    decay, epsilon = ftype(weight_decay), ftype(eps)
    step_size = ftype(lr * math.sqrt(1.0 - beta2**step) / (1.0 - beta1**step))
    for i in numba.prange(rows.shape[0]):
        r = rows[i]
        steps[r] = step
        for d in range(weight.shape[1]):
            g = grad[i, d]
            if weight_decay != 0.0:
                g = g + decay * weight[r, d]
            m = exp_avg[r, d] * b1 + one_minus_b1 * g
            v = exp_avg_sq[r, d] * b2 + one_minus_b2 * g * g
            exp_avg[r, d] = m
            exp_avg_sq[r, d] = v
            weight[r, d] = weight[r, d] - step_size * m / (ftype(math.sqrt(v)) + epsilon)


@numba.njit(cache=True, nogil=True)
def sum_by_id(ids: np.ndarray, grads: np.ndarray, slot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct ids int64 [k] in order of first occurrence, float [k, D] the sum of each id's rows of ``grads``
    [n, D] in order of occurrence) of ``ids`` (int64 [n]). ``slot``: int32 [N] scratch, -1 everywhere on entry
    and on return (only the entries of ``ids`` are touched: O(n D), no sort)."""
    n, dim = grads.shape
    unique = np.empty(n, np.int64)
    count = 0
    for i in range(n):
        r = ids[i]
        if slot[r] < 0:
            slot[r] = count
            unique[count] = r
            count += 1
    summed = np.zeros((count, dim), grads.dtype)
    for i in range(n):
        s = slot[ids[i]]
        for d in range(dim):
            summed[s, d] += grads[i, d]
    for j in range(count):
        slot[unique[j]] = -1
    return unique[:count], summed
