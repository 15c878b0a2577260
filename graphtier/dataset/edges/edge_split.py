"""The pieces of an edge split (docs/dataset-format.md, "Edge split"): removing node pairs from a CSC graph
(held-out edges leave the message-passing graph) and drawing evaluation negatives that are never edges.
The random split itself (``--edge-split``) is :mod:`graphtier.dataset.importers.split.holdout`.

The graph is CSC (``indices[indptr[v]:indptr[v + 1]]``: the sources of the edges into ``v``, ascending). The
kernels are in :mod:`graphtier.dataset.edges._edge_split_kernels`; memory stays O(N + E + pairs), with no Python loop per
edge.
"""

from __future__ import annotations

import numpy as np

from graphtier.dataset.checks import index_range
from graphtier.dataset.csc import csc_to_edges
from graphtier.dataset.edges import _edge_split_kernels as kernels
from graphtier.errors import OptionError

REJECTION_DRAWS_PER_NEGATIVE = 8
"""Rejection draws per wanted negative (plus :data:`REJECTION_EXTRA_DRAWS`) before an exact enumeration."""
REJECTION_EXTRA_DRAWS = 64
NEGATIVE_PAIR_ROUNDS = 16
"""Rounds of uniform pair draws for the negative pairs before an exact enumeration."""
MAX_ENUMERATED_PAIRS = 20_000_000
"""The largest source x destination space enumerated exactly when rejection draws found too few negatives."""


def as_pairs(pairs: np.ndarray, num_nodes: int, what: str) -> np.ndarray:
    """``pairs`` as int64 [P, 2] with ids in ``[0, num_nodes)``; :class:`OptionError` naming ``what`` otherwise."""
    array = np.asarray(pairs)
    if array.size == 0:
        return np.empty((0, 2), np.int64)
    if array.ndim != 2 or array.shape[1] != 2 or not np.issubdtype(array.dtype, np.integer):
        raise OptionError(
            f"{what}: expected integer node pairs of shape [P, 2], found {array.dtype} {list(array.shape)}"
        )
    lo, hi = index_range(array.reshape(-1))
    if lo < 0 or hi >= num_nodes:
        raise OptionError(f"{what}: expected node ids in [0, {num_nodes}), found values in [{lo}, {hi}]")
    return np.ascontiguousarray(array, dtype=np.int64)


def pair_keys(pairs: np.ndarray, num_nodes: int, *, undirected: bool) -> np.ndarray:
    """Sorted unique int64 keys ``dst * N + src`` of ``pairs`` int64 [P, 2] (and of their reverses when
    ``undirected``): the order of a CSC graph's edges."""
    src, dst = pairs[:, 0], pairs[:, 1]
    if undirected:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return np.unique(dst * np.int64(num_nodes) + src)


def graph_pairs(indptr: np.ndarray, indices: np.ndarray, *, undirected: bool) -> np.ndarray:
    """int64 [E', 2] ``(src, dst)``: the edges of the CSC graph that can be link targets. Each unordered pair
    ``u < v`` once when ``undirected``, every directed edge otherwise; a repeated edge once; no self-loops."""
    src, dst = csc_to_edges(indptr, indices)
    keep = src < dst if undirected else src != dst
    keep[1:] &= (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])  # CSC order: repeated edges are adjacent
    return np.stack([src[keep], dst[keep]], axis=1)


def edge_keys(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """int64 [E] keys ``dst * N + src`` of the CSC graph's edges, sorted (lists ascending), as :func:`pair_keys`."""
    src, dst = csc_to_edges(indptr, indices)
    return dst * np.int64(max(indptr.shape[0] - 1, 1)) + src


def remove_pairs(
    indptr: np.ndarray, indices: np.ndarray, pairs: np.ndarray, *, undirected: bool
) -> tuple[np.ndarray, np.ndarray, int]:
    """The CSC graph without the edges ``(src, dst)`` of ``pairs`` (every copy of a repeated edge) and, when
    ``undirected``, without ``(dst, src)`` too.

    Args:
        indptr: int64 [N + 1]; indices: int32/int64 [E], ascending within each column.
        pairs: int64 [P, 2] ``(src, dst)``; pairs that are not edges remove nothing.
        undirected: remove the reverse of every pair as well.

    Returns:
        ``(indptr int64 [N + 1], indices [E - removed] of the input dtype, removed)``.
    """
    indptr = np.asarray(indptr, np.int64)
    n = indptr.shape[0] - 1
    pairs = as_pairs(pairs, n, "pairs")
    if pairs.shape[0] == 0:
        return indptr.copy(), np.array(indices, copy=True), 0
    keys = pair_keys(pairs, n, undirected=undirected)
    removed_dst = keys // n
    removed_src = keys - removed_dst * n
    removed_ptr = np.searchsorted(removed_dst, np.arange(n + 1, dtype=np.int64)).astype(np.int64)
    counts = kernels.kept_counts(indptr, indices, removed_ptr, removed_src)
    new_indptr = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    out = np.empty(int(new_indptr[-1]), np.asarray(indices).dtype)
    kernels.compact_kept(indptr, indices, removed_ptr, removed_src, new_indptr, out)
    return new_indptr, out, int(indptr[-1] - new_indptr[-1])


def draw_eval_negatives(
    indptr: np.ndarray,
    indices: np.ndarray,
    positives: np.ndarray,
    *,
    k: int,
    dst_range: tuple[int, int] | list[int],
    seed: int,
    undirected: bool,
    forbidden: np.ndarray | None = None,
    src_range: tuple[int, int] | list[int] | None = None,
    num_pairs: int | None = None,
    option: str = "eval_negatives",
) -> np.ndarray:
    """Evaluation negatives for ``positives``: never an edge of the graph given (nor a ``forbidden`` pair), in
    either direction when ``undirected``, never a self-loop, all distinct; seeded.

    Args:
        indptr, indices: the FULL graph (CSC, ascending lists): every pair that must not be a negative.
        positives: int64 [P, 2] ``(src, dst)`` positive pairs.
        k: 0: negative pairs (the GAE protocol), source uniform in ``src_range`` and destination uniform in
            ``dst_range``, distinct (as unordered pairs when ``undirected``); K > 0: K distinct negative
            destinations in ``dst_range`` per positive, whose source is the positive's source (the OGB protocol).
        dst_range: ``[lo, hi)`` of the destinations; src_range: ``[lo, hi)`` of the sources (default all nodes).
        seed: the result is a pure function of the inputs and ``seed``.
        forbidden: int64 [F, 2] more pairs that are no negatives (e.g. held-out positives of a graph without them).
        num_pairs: Q, the number of negative pairs when ``k == 0`` (default P).
        option: the option named by the error when too few negatives exist (``eval_negatives``).

    Returns:
        int64 [Q, 2] pairs (``k == 0``) or int64 [P, K] destinations.

    Raises:
        OptionError: the graph is too dense: fewer non-edges than negatives wanted.
    """
    indptr = np.asarray(indptr, np.int64)
    n = indptr.shape[0] - 1
    positives = as_pairs(positives, n, "positives")
    lo, hi = (int(v) for v in dst_range)
    src_lo, src_hi = (0, n) if src_range is None else (int(v) for v in src_range)
    if not (0 <= lo < hi <= n and 0 <= src_lo < src_hi <= n):
        raise OptionError(f"dst_range/src_range: expected 0 <= lo < hi <= {n}, found {[lo, hi]}/{[src_lo, src_hi]}")
    if k < 0:
        raise OptionError.invalid(option, "an integer >= 0", k)
    extra = as_pairs(forbidden, n, "forbidden") if forbidden is not None else np.empty((0, 2), np.int64)
    forbidden_keys = pair_keys(extra, n, undirected=False)
    if k > 0:
        return _negative_destinations(indptr, indices, forbidden_keys, positives, k, (lo, hi), seed, undirected, option)
    count = positives.shape[0] if num_pairs is None else int(num_pairs)
    return _negative_pairs(indptr, indices, forbidden_keys, count, (src_lo, src_hi), (lo, hi), seed, undirected, option)


def _negative_destinations(
    indptr: np.ndarray,
    indices: np.ndarray,
    forbidden_keys: np.ndarray,
    positives: np.ndarray,
    k: int,
    dst_range: tuple[int, int],
    seed: int,
    undirected: bool,
    option: str,
) -> np.ndarray:
    lo, hi = dst_range
    sources = np.ascontiguousarray(positives[:, 0])
    out = np.zeros((sources.shape[0], k), np.int64)
    max_draws = REJECTION_DRAWS_PER_NEGATIVE * k + REJECTION_EXTRA_DRAWS
    filled = kernels.draw_destinations(
        indptr,
        indices,
        forbidden_keys,
        sources,
        k,
        lo,
        hi,
        np.uint64(seed & ((1 << 64) - 1)),
        undirected,
        max_draws,
        out,
    )
    for row in np.flatnonzero(filled < k).tolist():  # rows of a (nearly) complete neighbourhood: enumerate exactly
        source = int(sources[row])
        valid = kernels.valid_destinations(indptr, indices, forbidden_keys, source, lo, hi, undirected)
        if valid.shape[0] < k:
            raise OptionError(
                f"{{{option}}}: expected {k} negative destinations per positive, found only {valid.shape[0]} nodes "
                f"in [{lo}, {hi}) that are not neighbours of node {source} (the graph is too dense)",
                options=(option,),
            )
        rng = np.random.default_rng([seed, row])
        out[row] = rng.choice(valid, size=k, replace=False)
    return out


def canonical_pair_keys(src: np.ndarray, dst: np.ndarray, n: int, undirected: bool) -> np.ndarray:
    """int64 keys ``dst * n + src`` of the pairs; with ``undirected`` a pair and its reverse get one key."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if undirected:
        src, dst = np.minimum(src, dst), np.maximum(src, dst)
    return dst * np.int64(n) + src


def _negative_pairs(
    indptr: np.ndarray,
    indices: np.ndarray,
    forbidden_keys: np.ndarray,
    count: int,
    src_range: tuple[int, int],
    dst_range: tuple[int, int],
    seed: int,
    undirected: bool,
    option: str,
) -> np.ndarray:
    """int64 [count, 2]: ``count`` distinct random negative pairs ``(src, dst)`` (not self-loops, edges of the CSC
    ``indptr``/``indices`` or ``forbidden_keys``) with ``src`` in ``src_range`` and ``dst`` in ``dst_range``: rounds
    of rejection draws, then, where they find too few, a draw among all the valid pairs (``option`` names the
    option in the error when there are not enough)."""
    n = indptr.shape[0] - 1
    if count == 0:  # an empty split (a zero fraction of --edge-split) has no negatives
        return np.empty((0, 2), np.int64)
    rng = np.random.default_rng(seed)
    chosen_src: list[np.ndarray] = []
    chosen_dst: list[np.ndarray] = []
    seen = np.empty(0, np.int64)
    got = 0
    for _ in range(NEGATIVE_PAIR_ROUNDS):
        if got >= count:
            break
        size = 2 * (count - got) + REJECTION_EXTRA_DRAWS
        src = rng.integers(src_range[0], src_range[1], size, dtype=np.int64)
        dst = rng.integers(dst_range[0], dst_range[1], size, dtype=np.int64)
        ok = ~kernels.pairs_excluded(indptr, indices, forbidden_keys, src, dst, undirected)
        src, dst = src[ok], dst[ok]
        keys = canonical_pair_keys(src, dst, n, undirected)
        _, first = np.unique(keys, return_index=True)
        first = np.sort(first)
        first = first[~np.isin(keys[first], seen)][: count - got]
        chosen_src.append(src[first])
        chosen_dst.append(dst[first])
        seen = np.union1d(seen, keys[first])
        got += first.shape[0]
    if got >= count:
        return np.stack([np.concatenate(chosen_src), np.concatenate(chosen_dst)], axis=1)[:count]
    # a dense graph where the rejection draws failed: every valid negative pair, then ``count`` of them at random
    space = (src_range[1] - src_range[0]) * (dst_range[1] - dst_range[0])
    what = f"{count} negative pairs (node pairs that are not edges)"
    if space > MAX_ENUMERATED_PAIRS:
        raise OptionError(
            f"{{{option}}}: expected {what}, found too few in {NEGATIVE_PAIR_ROUNDS} rounds of random draws "
            "(the graph is too dense)",
            options=(option,),
        )
    src_parts, dst_parts = [], []
    for source in range(*src_range):
        valid = kernels.valid_destinations(
            indptr, indices, forbidden_keys, source, dst_range[0], dst_range[1], undirected
        )
        src_parts.append(np.full(valid.shape[0], source, np.int64))
        dst_parts.append(valid)
    src, dst = np.concatenate(src_parts), np.concatenate(dst_parts)
    _, first = np.unique(canonical_pair_keys(src, dst, n, undirected), return_index=True)
    if first.shape[0] < count:
        raise OptionError(
            f"{{{option}}}: expected {what}, found only {first.shape[0]} (the graph is too dense)", options=(option,)
        )
    rows = np.random.default_rng([seed, 1]).choice(first, size=count, replace=False)
    return np.stack([src[rows], dst[rows]], axis=1)
