"""The random draws of the degree-corrected stochastic block model (:mod:`graphtier.dataset.synthetic.generate`), shared
with the typed generator (:mod:`graphtier.dataset.synthetic.synthetic_mag`): degree weights (a truncated Pareto law), classes,
class centroids and split masks, each from its own counter-based stream (:func:`graphtier.dataset.synthetic._synthetic_kernels.stream_key`).
"""

from __future__ import annotations

import math

import numpy as np

from graphtier.dataset.synthetic import _synthetic_kernels as kernels

# Independent random streams (see kernels.stream_key).
STREAM_LABELS = 0
STREAM_WEIGHTS = 1
STREAM_EDGES = 2
STREAM_SPLITS = 3
STREAM_CENTROIDS = 4
STREAM_FEATURES = 5
STREAM_EDGE_FEATURES = 6


# ---------------------------------------------------------------------------------------------- weights
def truncated_pareto_mean(exponent: float, cap: float) -> float:
    """Mean of the Pareto law with density ~ w^-exponent on [1, cap] (exponent > 1, cap >= 1)."""
    if cap <= 1.0:
        return 1.0
    alpha = exponent - 1.0
    if abs(alpha - 1.0) < 1e-9:
        return math.log(cap) / (1.0 - 1.0 / cap)
    return alpha / (1.0 - cap**-alpha) * (cap ** (1.0 - alpha) - 1.0) / (1.0 - alpha)


def weight_cap(exponent: float, max_to_mean: float) -> float:
    """The truncation point H >= 1 with ``H / mean(H) == max_to_mean`` (1 when max_to_mean <= 1)."""
    if max_to_mean <= 1.0:
        return 1.0

    def ratio(log_cap: float) -> float:
        cap = math.exp(log_cap)
        return cap / truncated_pareto_mean(exponent, cap)

    low, high = 0.0, 1.0
    while ratio(high) < max_to_mean and high < 700.0:
        high *= 2.0
    for _ in range(100):
        mid = 0.5 * (low + high)
        if ratio(mid) < max_to_mean:
            low = mid
        else:
            high = mid
    return math.exp(0.5 * (low + high))


def degree_weights(seed: int, num_nodes: int, exponent: float, cap: float) -> np.ndarray:
    """float64 [N]: truncated-Pareto degree weights in [1, cap], a pure function of the seed."""
    bits = kernels.random_bits(np.uint64(kernels.stream_key(seed, STREAM_WEIGHTS)), 0, num_nodes)
    u = (bits >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
    del bits
    alpha = exponent - 1.0
    span = 1.0 - cap**-alpha
    return (1.0 - u * span) ** (-1.0 / alpha)


def node_classes(seed: int, num_nodes: int, num_classes: int) -> np.ndarray:
    """int64 [N]: the class of every node, uniform over ``num_classes``."""
    bits = kernels.random_bits(np.uint64(kernels.stream_key(seed, STREAM_LABELS)), 0, num_nodes)
    return (bits % np.uint64(num_classes)).astype(np.int64)


def class_centroids(seed: int, num_classes: int, feature_dim: int) -> np.ndarray:
    """float64 [C, D]: random unit-norm class centroids."""
    pairs = (feature_dim + 1) // 2
    counters = np.arange(num_classes * pairs, dtype=np.int64)
    z0, z1 = kernels.standard_normals_reference(kernels.stream_key(seed, STREAM_CENTROIDS), counters)
    z = np.empty((num_classes, 2 * pairs), dtype=np.float64)
    z[:, 0::2] = z0.reshape(num_classes, pairs)
    z[:, 1::2] = z1.reshape(num_classes, pairs)
    z = z[:, :feature_dim]
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    return z / np.where(norms > 0, norms, 1.0)


def split_nodes(
    seed: int, num_nodes: int, fractions: tuple[float, float, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint sorted int64 (train, valid, test) node ids, ``round(fraction * N)`` of each."""
    sizes = [int(round(f * num_nodes)) for f in fractions]
    bounds = np.cumsum([0] + sizes)
    if bounds[-1] > num_nodes:  # rounding up of three fractions summing to 1
        sizes[-1] -= int(bounds[-1] - num_nodes)
        bounds = np.cumsum([0] + sizes)
    # nodes ordered by a random hash (distinct with overwhelming probability; ties broken by id):
    # only the first sum(sizes) are needed, so partition first and sort just those
    bits = kernels.random_bits(np.uint64(kernels.stream_key(seed, STREAM_SPLITS)), 0, num_nodes)
    chosen = int(bounds[-1])
    if 0 < chosen < num_nodes:
        candidates = np.argpartition(bits, chosen - 1)[:chosen]
    else:
        candidates = np.arange(num_nodes if chosen else 0, dtype=np.int64)
    candidates = np.sort(candidates)  # by id first, so that the stable sort below breaks ties by id
    order = candidates[np.argsort(bits[candidates], kind="stable")]
    del bits
    train, valid, test = (np.sort(order[bounds[i] : bounds[i + 1]]).astype(np.int64) for i in range(3))
    return train, valid, test


def edge_feature_rows(seed: int, first: int, count: int, dim: int) -> np.ndarray:
    """float32 [count, dim]: the edge feature rows of the edges ``first .. first + count - 1`` (CSC positions), each
    value uniform in [-1, 1) from its own counter (``position * dim + column``) of its own stream: any chunking of
    the rows gives the same table."""
    bits = kernels.random_bits(np.uint64(kernels.stream_key(seed, STREAM_EDGE_FEATURES)), first * dim, count * dim)
    return ((bits >> np.uint64(40)).astype(np.float32) * np.float32(2.0**-23) - np.float32(1.0)).reshape(count, dim)
