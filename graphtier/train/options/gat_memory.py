"""The memory a GAT training step needs for its per-edge attention tensors, bounded before the run.

Kept apart from :mod:`graphtier.train.nn.models` (which imports PyG), so that :meth:`graphtier.train.TrainConfig.validate`
checks it without loading the models.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

GAT_SCALARS_PER_EDGE_HEAD = 10
"""float32 values GATConv keeps per edge and head for the backward pass (source and destination scores,
their sum, LeakyReLU, softmax max/exp/sum/output, dropout output and mask): an estimate."""
EDGE_INDEX_BYTES = 16
"""int64 source and destination of one edge."""


def block_size_bounds(batch_size: int, fanouts: Sequence[int], in_degrees: np.ndarray) -> list[tuple[int, int]]:
    """Upper bounds ``(destinations, edges)`` of every sampled block, seed hop first (``fanouts`` in PyG order).

    ``in_degrees``: int [N] of the graph. Hop ``h`` draws ``min(fanout, degree)`` in-edges of each of
    its destinations (all with -1); at most the ``n`` largest such counts when it has ``n`` destinations,
    and the next hop's destinations are at most ``n`` plus the edges drawn (and at most N).
    """
    degrees = np.sort(np.asarray(in_degrees, dtype=np.int64))[::-1]
    num_nodes = int(degrees.shape[0])
    destinations = min(int(batch_size), num_nodes)
    bounds = []
    for fanout in fanouts:
        drawn = degrees if fanout == -1 else np.minimum(degrees, int(fanout))
        edges = int(drawn[:destinations].sum())
        bounds.append((destinations, edges))
        destinations = min(destinations + edges, num_nodes)
    return bounds


def gat_training_bytes(
    batch_size: int, fanouts: Sequence[int], in_degrees: np.ndarray, hidden: int, heads: int, out_dim: int,
    edge_width: int = 0,
) -> int:  # fmt: skip
    """Upper bound of the bytes the edge-wise tensors of a GAT training step keep for the backward pass.

    Per layer (input layer on the widest, last hop's block) every edge, plus PyG's added self loops,
    keeps the gathered source rows and the weighted messages (2 x heads x channels float32),
    :data:`GAT_SCALARS_PER_EDGE_HEAD` attention values per head and its int64 edge index. Sizes from
    :func:`block_size_bounds`. With edge inputs (``edge_width`` > 0: edge features and time encoding) every edge
    also keeps its edge vector, its projection (heads x channels) and one more attention term per head.
    """
    bounds = block_size_bounds(batch_size, fanouts, in_degrees)
    total = 0
    for layer, (destinations, edges) in enumerate(reversed(bounds)):
        last = layer == len(bounds) - 1
        layer_heads, channels = (1, out_dim) if last else (heads, hidden // heads)
        per_edge = 4 * (2 * layer_heads * channels + GAT_SCALARS_PER_EDGE_HEAD * layer_heads) + EDGE_INDEX_BYTES
        if edge_width:
            per_edge += 4 * (edge_width + layer_heads * channels + layer_heads)
        total += (edges + destinations) * per_edge
    return total
