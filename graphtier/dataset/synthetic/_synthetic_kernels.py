"""Numba kernels of the synthetic graph generator, each with a plain numpy reference.

Randomness is counter based: the i-th random number of a stream is ``mix64(key + i * GOLDEN)``
(the splitmix64 finaliser), so every edge, node and feature value is a pure function of the seed
and its own index. The output therefore does not depend on the chunk size or the thread count.

Kernels (numba) and their references (numpy, ``*_reference``):

- :func:`random_bits` / :func:`random_bits_reference`: uint64 hashes of counters.
- :func:`build_alias_tables` / :func:`build_alias_tables_reference`: Vose alias tables, one per class.
- :func:`sample_bipartite_edges` / :func:`sample_bipartite_edges_reference`: degree-corrected SBM edge endpoints
  between two node sets (:func:`sample_edges`: one set, both ends).
- :func:`fill_features` / :func:`fill_features_reference`: class centroid + Gaussian noise rows.

The kernels that turn the sampled edges into a CSC are in :mod:`graphtier.dataset.synthetic._synthetic_csc_kernels`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from graphtier._splitmix import GOLDEN, MIX1, MIX2, mix64, mix64_int

_MIX1 = MIX1
_MIX2 = MIX2
_TO_UNIT53 = 1.0 / 9007199254740992.0  # 2^-53
_TO_UNIT32 = 1.0 / 4294967296.0  # 2^-32
UNIFORMS_PER_EDGE = 4

_U_GOLDEN = np.uint64(GOLDEN)
_U_S11 = np.uint64(11)
_U_S32 = np.uint64(32)
_U_LOW32 = np.uint64(0xFFFFFFFF)


# ---------------------------------------------------------------------------------------------- hashing
def stream_key(seed: int, stream: int) -> int:
    """The uint64 key (as a Python int) of random stream ``stream`` for ``seed``."""
    return mix64_int(mix64_int(seed + GOLDEN) ^ mix64_int((stream + 1) * GOLDEN))


@numba.njit(cache=True, nogil=True, inline="always")
def _hash(key: np.uint64, counter: np.int64) -> np.uint64:
    return mix64(key + np.uint64(counter) * _U_GOLDEN)


@numba.njit(cache=True, nogil=True, inline="always")
def _uniform(key: np.uint64, counter: np.int64) -> float:
    return np.float64(_hash(key, counter) >> _U_S11) * _TO_UNIT53


@numba.njit(parallel=True, cache=True, nogil=True)
def random_bits(key: np.uint64, first: np.int64, count: np.int64) -> np.ndarray:
    """uint64 [count]: the hashes of counters ``first .. first + count - 1`` of stream ``key``."""
    out = np.empty(count, dtype=np.uint64)
    for i in numba.prange(count):
        out[i] = _hash(key, first + i)
    return out


def random_bits_reference(key: int, counters: np.ndarray) -> np.ndarray:
    """Numpy reference of :func:`random_bits`: uint64 hashes of the int64 ``counters`` [k]."""
    z = np.uint64(key) + np.asarray(counters, dtype=np.uint64) * np.uint64(GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    return z ^ (z >> np.uint64(31))


def uniforms_reference(key: int, counters: np.ndarray) -> np.ndarray:
    """float64 [k] uniforms in [0, 1) for the int64 ``counters`` of stream ``key`` (numpy)."""
    return (random_bits_reference(key, counters) >> np.uint64(11)).astype(np.float64) * _TO_UNIT53


# ---------------------------------------------------------------------------------------------- alias tables
@numba.njit(parallel=True, cache=True, nogil=True)
def build_alias_tables(weights: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose alias tables for the groups ``weights[offsets[c]:offsets[c + 1]]``.

    Args:
        weights: float64 [M], positive, grouped by class (members of class c are contiguous).
        offsets: int64 [C + 1], group boundaries.

    Returns:
        ``(accept, alias)``: float64 [M] acceptance thresholds and int64 [M] global positions.
        Sampling slot k of group c keeps position k when ``frac < accept[k]``, else takes ``alias[k]``.
    """
    m = weights.shape[0]
    accept = np.ones(m, dtype=np.float64)
    alias = np.arange(m).astype(np.int64)
    small = np.empty(m, dtype=np.int64)  # each class uses its own slice [start, stop) of the stacks
    large = np.empty(m, dtype=np.int64)
    for c in numba.prange(offsets.shape[0] - 1):
        start, stop = offsets[c], offsets[c + 1]
        size = stop - start
        if size == 0:
            continue
        total = 0.0
        for i in range(start, stop):
            total += weights[i]
        n_small = 0
        n_large = 0
        for i in range(start, stop):
            accept[i] = weights[i] * size / total
            if accept[i] < 1.0:
                small[start + n_small] = i
                n_small += 1
            else:
                large[start + n_large] = i
                n_large += 1
        while n_small > 0 and n_large > 0:
            n_small -= 1
            s = small[start + n_small]
            g = large[start + n_large - 1]
            alias[s] = g
            accept[g] = (accept[g] + accept[s]) - 1.0
            if accept[g] < 1.0:
                n_large -= 1
                small[start + n_small] = g
                n_small += 1
        for j in range(n_large):
            accept[large[start + j]] = 1.0
        for j in range(n_small):  # only reachable through rounding
            accept[small[start + j]] = 1.0
    return accept, alias


def build_alias_tables_reference(weights: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Plain Python/numpy reference of :func:`build_alias_tables` (same algorithm, same order)."""
    weights = np.asarray(weights, dtype=np.float64)
    m = weights.shape[0]
    accept = np.ones(m, dtype=np.float64)
    alias = np.arange(m, dtype=np.int64)
    for c in range(len(offsets) - 1):
        start, stop = int(offsets[c]), int(offsets[c + 1])
        size = stop - start
        if size == 0:
            continue
        total = 0.0
        for i in range(start, stop):
            total += float(weights[i])
        small: list[int] = []
        large: list[int] = []
        for i in range(start, stop):
            accept[i] = float(weights[i]) * size / total
            (small if accept[i] < 1.0 else large).append(i)
        while small and large:
            s = small.pop()
            g = large[-1]
            alias[s] = g
            accept[g] = (accept[g] + accept[s]) - 1.0
            if accept[g] < 1.0:
                large.pop()
                small.append(g)
        for g in large + small:
            accept[g] = 1.0
    return accept, alias


def alias_table_probabilities(accept: np.ndarray, alias: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """float64 [M]: the probability that the alias tables pick each position, within its group."""
    probs = np.zeros(accept.shape[0], dtype=np.float64)
    for c in range(len(offsets) - 1):
        start, stop = int(offsets[c]), int(offsets[c + 1])
        size = stop - start
        if size == 0:
            continue
        group = slice(start, stop)
        probs[group] += accept[group] / size
        np.add.at(probs, alias[group], (1.0 - accept[group]) / size)
    return probs


# ---------------------------------------------------------------------------------------------- edges
@numba.njit(cache=True, nogil=True, inline="always")
def _pick_class(class_cum: np.ndarray, target: float) -> np.int64:
    # first c with target < class_cum[c] (np.searchsorted side="right"), clamped to the last class
    low = np.int64(0)
    high = np.int64(class_cum.shape[0] - 1)
    while low < high:
        mid = (low + high) >> 1
        if target < class_cum[mid]:
            high = mid
        else:
            low = mid + 1
    return low


def alias_slot_dtype(node_dtype: np.dtype) -> np.dtype:
    """Record of one alias slot: ``accept`` float64, ``keep`` and ``alias`` node ids (16 bytes for int32)."""
    return np.dtype([("accept", np.float64), ("keep", node_dtype), ("alias", node_dtype)], align=True)


def pack_alias_slots(accept: np.ndarray, alias: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Pack alias tables into one record per slot so that a draw touches a single cache line.

    ``accept`` float64 [M], ``alias`` int64 [M] positions, ``members`` int32/int64 [M] node ids at each
    position. Returns a structured array [M] of :func:`alias_slot_dtype`.
    """
    slots = np.empty(accept.shape[0], dtype=alias_slot_dtype(members.dtype))
    slots["accept"] = accept
    slots["keep"] = members
    slots["alias"] = members[alias]
    return slots


@numba.njit(cache=True, nogil=True, inline="always")
def _pick_member(c: np.int64, u: float, offsets: np.ndarray, slots: np.ndarray) -> np.int64:
    start = offsets[c]
    size = offsets[c + 1] - start
    x = u * size
    k = np.int64(x)
    if k >= size:
        k = size - 1
    slot = slots[start + k]
    if x - k < slot.accept:
        return np.int64(slot.keep)
    return np.int64(slot.alias)


@numba.njit(parallel=True, cache=True, nogil=True)
def sample_bipartite_edges(
    key: np.uint64,
    first_edge: np.int64,
    dst_cum: np.ndarray,
    dst_mass: np.ndarray,
    dst_offsets: np.ndarray,
    dst_slots: np.ndarray,
    src_cum: np.ndarray,
    src_mass: np.ndarray,
    src_offsets: np.ndarray,
    src_slots: np.ndarray,
    homophily: float,
    src_out: np.ndarray,
    dst_out: np.ndarray,
) -> None:
    """Draw edges ``first_edge .. first_edge + len(src_out) - 1`` of a degree-corrected SBM between two node sets.

    The destination's class is drawn proportionally to the destination set's class weight masses (``dst_mass``
    float64 [C], ``dst_cum`` its inclusive cumulative sum), the destination inside it proportionally to the node
    weights (alias ``dst_slots`` from :func:`pack_alias_slots`, grouped by class at ``dst_offsets`` int64 [C + 1]).
    The source comes from the source set (``src_*``, same C classes) in the destination's class with probability
    ``homophily``, otherwise from another class drawn proportionally to its source mass. Writes node ids (local to
    each set) into ``src_out`` and ``dst_out`` (same integer dtype, length B). A class empty in the source set
    must have zero ``src_mass``; the kernel then falls back to another class.
    """
    total = dst_cum[dst_cum.shape[0] - 1]
    src_total = src_cum[src_cum.shape[0] - 1]
    for i in numba.prange(src_out.shape[0]):
        base = (first_edge + i) * UNIFORMS_PER_EDGE
        dst_class = _pick_class(dst_cum, _uniform(key, base) * total)
        dst = _pick_member(dst_class, _uniform(key, base + 1), dst_offsets, dst_slots)
        u_class = _uniform(key, base + 2)
        src_class = dst_class
        own_mass = src_mass[dst_class]
        other_mass = src_total - own_mass
        if (u_class >= homophily or own_mass <= 0.0) and other_mass > 0.0:
            if u_class >= homophily:
                target = (u_class - homophily) / (1.0 - homophily) * other_mass
            else:
                target = u_class / homophily * other_mass
            start_mass = src_cum[dst_class] - own_mass
            if target >= start_mass:
                target += own_mass
            src_class = _pick_class(src_cum, target)
            if src_class == dst_class:  # rounding at a class boundary
                src_class = dst_class + 1 if dst_class + 1 < src_cum.shape[0] else dst_class - 1
        src = _pick_member(src_class, _uniform(key, base + 3), src_offsets, src_slots)
        src_out[i] = src
        dst_out[i] = dst


def sample_edges(
    key: np.uint64,
    first_edge: np.int64,
    class_cum: np.ndarray,
    class_mass: np.ndarray,
    offsets: np.ndarray,
    slots: np.ndarray,
    homophily: float,
    src_out: np.ndarray,
    dst_out: np.ndarray,
) -> None:
    """Draw edges of a degree-corrected SBM on one node set: :func:`sample_bipartite_edges` with the same tables
    (``class_cum``, ``class_mass``, ``offsets``, ``slots``) on both ends."""
    sample_bipartite_edges(
        key, first_edge, class_cum, class_mass, offsets, slots, class_cum, class_mass, offsets, slots,
        homophily, src_out, dst_out,
    )  # fmt: skip


def sample_bipartite_edges_reference(
    key: int,
    first_edge: int,
    count: int,
    dst_tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    src_tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    homophily: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Numpy reference of :func:`sample_bipartite_edges`: int64 ``(src, dst)`` arrays [count]; each of
    ``dst_tables`` / ``src_tables`` is ``(cum, mass, offsets, slots)``."""
    dst_cum, _, dst_offsets, dst_slots = dst_tables
    src_cum, src_mass, src_offsets, src_slots = src_tables
    edges = np.arange(first_edge, first_edge + count, dtype=np.int64)
    base = edges * UNIFORMS_PER_EDGE
    u = [uniforms_reference(key, base + j) for j in range(UNIFORMS_PER_EDGE)]
    last = src_cum.shape[0] - 1

    def pick_class(cum: np.ndarray, target: np.ndarray) -> np.ndarray:
        return np.minimum(np.searchsorted(cum, target, side="right"), cum.shape[0] - 1)

    def pick_member(classes: np.ndarray, uu: np.ndarray, offsets: np.ndarray, slots: np.ndarray) -> np.ndarray:
        start = offsets[classes]
        size = offsets[classes + 1] - start
        x = uu * size
        k = np.minimum(x.astype(np.int64), size - 1)
        pos = start + k
        keep = (x - k) < slots["accept"][pos]
        return np.where(keep, slots["keep"][pos], slots["alias"][pos]).astype(np.int64)

    dst_class = pick_class(dst_cum, u[0] * dst_cum[-1])
    dst = pick_member(dst_class, u[1], dst_offsets, dst_slots)
    own_mass = src_mass[dst_class]
    other_mass = src_cum[-1] - own_mass
    leave = u[2] >= homophily
    cross = (leave | (own_mass <= 0.0)) & (other_mass > 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        target = np.where(leave, (u[2] - homophily) / (1.0 - homophily), u[2] / homophily) * other_mass
    start_mass = src_cum[dst_class] - own_mass
    target = np.where(target >= start_mass, target + own_mass, target)
    other_class = pick_class(src_cum, np.where(cross, target, 0.0))
    clash = other_class == dst_class
    other_class = np.where(clash, np.where(dst_class + 1 <= last, dst_class + 1, dst_class - 1), other_class)
    src_class = np.where(cross, other_class, dst_class)
    src = pick_member(src_class, u[3], src_offsets, src_slots)
    return src, dst


def sample_edges_reference(
    key: int,
    first_edge: int,
    count: int,
    class_cum: np.ndarray,
    class_mass: np.ndarray,
    offsets: np.ndarray,
    slots: np.ndarray,
    homophily: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Numpy reference of :func:`sample_edges`: int64 ``(src, dst)`` arrays [count]."""
    tables = (class_cum, class_mass, offsets, slots)
    return sample_bipartite_edges_reference(key, first_edge, count, tables, tables, homophily)


# ---------------------------------------------------------------------------------------------- CSC build
@numba.njit(parallel=True, cache=True, nogil=True)
def fill_features(
    key: np.uint64,
    first_row: np.int64,
    labels: np.ndarray,
    centroids: np.ndarray,
    noise: float,
    out: np.ndarray,
) -> None:
    """Rows ``first_row ..`` of the feature matrix: ``centroids[label] + noise * N(0, 1)``.

    ``labels`` int64 [R] (classes of the rows), ``centroids`` float64 [C, D], ``out`` float32 [R, D].
    The normals come from Box-Muller on the hash of (row, column pair).
    """
    dim = out.shape[1]
    pairs = (dim + 1) // 2
    for r in numba.prange(out.shape[0]):
        row = first_row + r
        c = labels[r]
        for p in range(pairs):
            h = _hash(key, row * pairs + p)
            u1 = (np.float64(h >> _U_S32) + 1.0) * _TO_UNIT32
            u2 = np.float64(h & _U_LOW32) * _TO_UNIT32
            radius = math.sqrt(-2.0 * math.log(u1))
            angle = 2.0 * math.pi * u2
            j = 2 * p
            out[r, j] = centroids[c, j] + noise * (radius * math.cos(angle))
            if j + 1 < dim:
                out[r, j + 1] = centroids[c, j + 1] + noise * (radius * math.sin(angle))


def standard_normals_reference(key: int, counters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Numpy Box-Muller pairs (float64 [k] each) for the int64 ``counters`` of stream ``key``."""
    h = random_bits_reference(key, counters)
    u1 = ((h >> np.uint64(32)).astype(np.float64) + 1.0) * _TO_UNIT32
    u2 = (h & np.uint64(0xFFFFFFFF)).astype(np.float64) * _TO_UNIT32
    radius = np.sqrt(-2.0 * np.log(u1))
    angle = 2.0 * np.pi * u2
    return radius * np.cos(angle), radius * np.sin(angle)


def fill_features_reference(
    key: int, first_row: int, labels: np.ndarray, centroids: np.ndarray, noise: float, dim: int
) -> np.ndarray:
    """Numpy reference of :func:`fill_features`: float32 [R, dim]."""
    rows = np.arange(first_row, first_row + labels.shape[0], dtype=np.int64)
    pairs = (dim + 1) // 2
    counters = rows[:, None] * pairs + np.arange(pairs, dtype=np.int64)[None, :]
    z0, z1 = standard_normals_reference(key, counters)
    z = np.empty((labels.shape[0], 2 * pairs), dtype=np.float64)
    z[:, 0::2] = z0
    z[:, 1::2] = z1
    return (centroids[labels] + noise * z[:, :dim]).astype(np.float32)
