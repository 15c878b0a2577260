"""Shared helpers for the sampler tests: small random graphs in CSC form."""

from __future__ import annotations

import numpy as np

from graphtier.dataset.csc import edges_to_csc


def random_csc(
    num_nodes: int,
    num_edges: int,
    seed: int,
    *,
    dedup: bool = False,
    index_dtype: type = np.int32,
    skew: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """A random graph as (indptr int64 [N+1], indices int32/int64 [E]); ``skew`` gives power-law in-degrees."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, num_nodes, num_edges)
    if skew:
        dst = (rng.pareto(1.2, num_edges) * 3).astype(np.int64) % num_nodes
    else:
        dst = rng.integers(0, num_nodes, num_edges)
    indptr, indices = edges_to_csc(src, dst, num_nodes, dedup=dedup)
    return indptr, indices.astype(index_dtype)


def star_in(num_leaves: int, index_dtype: type = np.int32) -> tuple[np.ndarray, np.ndarray]:
    """Node 0 has in-edges from nodes 1..num_leaves; the leaves have no in-edges."""
    indptr = np.full(num_leaves + 2, num_leaves, dtype=np.int64)
    indptr[0] = 0
    indices = np.arange(1, num_leaves + 1, dtype=index_dtype)
    return indptr, indices
