"""CPU kernel (numba) of layer-wise inference's GAT attention over a relation's whole in-neighbour lists, and its
reference.

R-GAT's layer-wise inference (:mod:`graphtier.train.infer.typed_tables`) projects every source row once into a table
``[N, H * C + H]``: its ``H`` heads of ``C`` channels (``x W_src^T``) and then its ``H`` source attention scores
(``<h, att_src>`` per head). ``attention_rows`` then computes each destination's output straight from that table by
the sources' ids: per head, the softmax over the node's in-edges of ``leaky_relu(score_src[u] + score_dst[v], 0.2)``
(PyG's ``softmax``: the maximum subtracted, ``1e-16`` added to the sum) weighting the sources' head rows. A node
without in-edges gets zeros, as the block path's sum over no edge.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, inline="always")
def _logit(table: np.ndarray, width: int, score_dst: np.ndarray, i: int, u: int, h: int) -> np.float32:
    """Head ``h``'s logit of the edge from table row ``u`` into destination ``i``: ``leaky_relu(score_src[u] +
    score_dst[i], 0.2)`` (the source's score is column ``width + h`` of the table)."""
    s = table[u, width + h] + score_dst[i, h]
    return s if s > 0 else np.float32(0.2) * s


@numba.njit(parallel=True, cache=True, nogil=True)
def attention_rows(
    table: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    first: int,
    stop: int,
    score_dst: np.ndarray,
    heads: int,
    base: int,
    out: np.ndarray,
) -> int:
    """``out[v - first]`` (float32 [stop - first, H * C]): the attention-weighted sum of the in-neighbours' head rows
    for ``first <= v < stop`` (see the module), in parallel over the nodes.

    ``table`` float32 [N, H * C + H] (row ``i``: source id ``base + i``; possibly a memory map), ``indptr`` int64
    [>= stop + 1], ``indices`` int32/int64 [E] source ids, ``score_dst`` float32 [stop - first, H] each destination's
    scores. Returns how many indices - base were outside [0, N) (skipped)."""
    width = out.shape[1]
    channels = width // heads
    num_rows = table.shape[0]
    bad = 0
    for i in numba.prange(stop - first):
        node = first + i
        start, end = indptr[node], indptr[node + 1]
        acc = out[i]
        for k in range(width):
            acc[k] = 0.0
        top = np.full(heads, -np.inf, dtype=np.float32)
        total = np.zeros(heads, dtype=np.float32)
        for e in range(start, end):  # each head's largest logit: one read of the source's scores
            u = indices[e] - base
            if u < 0 or u >= num_rows:
                bad += 1
                continue
            for h in range(heads):
                s = _logit(table, width, score_dst, i, u, h)
                if s > top[h]:
                    top[h] = s
        for e in range(start, end):  # the unnormalised weighted sum: one read of the source's row
            u = indices[e] - base
            if u < 0 or u >= num_rows:
                continue
            for h in range(heads):
                s = _logit(table, width, score_dst, i, u, h)
                weight = np.float32(math.exp(s - top[h]))
                total[h] += weight
                for c in range(h * channels, (h + 1) * channels):
                    acc[c] += weight * table[u, c]
        for h in range(heads):
            scale = np.float32(1.0) / (total[h] + np.float32(1e-16))
            for c in range(h * channels, (h + 1) * channels):
                acc[c] *= scale
    return bad


def attention_rows_reference(
    table: np.ndarray,
    indptr: np.ndarray,
    indices: np.ndarray,
    first: int,
    stop: int,
    score_dst: np.ndarray,
    heads: int,
    base: int = 0,
) -> np.ndarray:
    """Plain numpy reference of :func:`attention_rows` (float64): float32 [stop - first, H * C]."""
    table = np.asarray(table, dtype=np.float64)
    width = table.shape[1] - heads
    channels = width // heads
    out = np.zeros((stop - first, width), dtype=np.float64)
    for i, node in enumerate(range(first, stop)):
        sources = np.asarray(indices[indptr[node] : indptr[node + 1]], dtype=np.int64) - base
        if sources.size == 0:
            continue
        logits = table[sources, width:] + np.asarray(score_dst[i], dtype=np.float64)  # [deg, H]
        logits = np.where(logits > 0, logits, 0.2 * logits)
        weights = np.exp(logits - logits.max(axis=0))
        weights /= weights.sum(axis=0) + 1e-16
        rows = table[sources, :width].reshape(-1, heads, channels)
        out[i] = (weights[:, :, None] * rows).sum(axis=0).reshape(width)
    return out.astype(np.float32)
