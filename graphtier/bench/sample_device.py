"""GPU sampler throughput against the CPU sampler, same graph, same seed batches, same run (``bench sample --device cuda``).

The device sampler reads the graph from a :class:`TieredTopology` placed by ``topology_budget`` (the
share of edge lists in GPU memory; the rest is read zero-copy from host RAM), so the benchmark also
reports the bytes each topology tier served. The first timed batch of both samplers is compared: they
must be identical (same counter-based random stream), or the benchmark refuses to report a speed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from graphtier.dataset.format import Dataset
from graphtier.dataset.schema import RelationType
from graphtier.errors import OptionError
from graphtier.memory import make_topology
from graphtier.sampling import DeviceNeighborSampler, MiniBatch, NeighborSampler, TypedMiniBatch


def same_batch(first: MiniBatch | TypedMiniBatch, second: MiniBatch | TypedMiniBatch) -> bool:
    """True when two mini-batches (both plain or both typed) have equal node lists, seeds, blocks and seed indices
    (compared on the CPU)."""
    if len(first.blocks) != len(second.blocks) or type(first) is not type(second):
        return False
    pairs = [(first.seed_index, second.seed_index), (first.seeds, second.seeds)]
    if isinstance(first, TypedMiniBatch) and isinstance(second, TypedMiniBatch):
        if first.n_id.keys() != second.n_id.keys():
            return False
        pairs += [(first.n_id[t], second.n_id[t]) for t in first.n_id]
        for a, b in zip(first.blocks, second.blocks):
            if (a.num_src, a.num_dst) != (b.num_src, b.num_dst) or a.relations.keys() != b.relations.keys():
                return False
            pairs += [(a.relations[k].rowptr, b.relations[k].rowptr) for k in a.relations]
            pairs += [(a.relations[k].col, b.relations[k].col) for k in a.relations]
    else:
        pairs.append((first.n_id, second.n_id))  # type: ignore[arg-type]
        for a, b in zip(first.blocks, second.blocks):
            if (a.num_src, a.num_dst) != (b.num_src, b.num_dst):
                return False
            pairs.append((a.edge_index, b.edge_index))  # type: ignore[union-attr]
    return all(torch.equal(a.cpu(), b.cpu()) for a, b in pairs)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_device_sampler(
    ds: Dataset,
    fanouts: list[int],
    seed_batches: list[np.ndarray],
    *,
    warmup: int,
    device: torch.device,
    topology_budget: str,
    seed: int = 0,
    sorted_reads: bool | None = None,
    picks: str = "auto",
    kernels: Any = None,
    relation_fanouts: Mapping[RelationType, Sequence[int]] | None = None,
) -> dict[str, Any]:
    """Time :class:`DeviceNeighborSampler` on ``seed_batches[warmup:]`` (the first ``warmup`` untimed); a typed
    dataset with its schema and ``relation_fanouts`` (every relation's fanouts), its seeds local target ids.

    Returns batches/s, sampled edges/s, the topology bytes per tier of the timed batches, and
    ``identical_to_cpu``: whether the first timed batch equals the CPU sampler's.
    """
    if device.type == "cuda" and not torch.cuda.is_available():
        raise OptionError(f"--device {device}: CUDA is not available on this machine (use --device cpu)")
    topology = make_topology(
        np.asarray(ds.indptr),
        np.asarray(ds.indices),
        device=device,
        topology_budget=topology_budget,
        sorted_reads=sorted_reads,
        log=lambda _line: None,
    )
    try:
        schema = ds.schema if ds.is_hetero else None
        per_relation = fanouts if relation_fanouts is None else relation_fanouts
        sampler = DeviceNeighborSampler(topology, per_relation, schema=schema, seed=seed, picks=picks, kernels=kernels)
        for b in range(warmup):
            sampler.sample(seed_batches[b], batch_id=b)
        _synchronize(device)
        before = topology.traffic()
        edges = 0
        start = time.perf_counter()
        first = None
        for b in range(warmup, len(seed_batches)):
            batch = sampler.sample(seed_batches[b], batch_id=b)
            edges += batch.num_sampled_edges
            first = batch if first is None else first
        _synchronize(device)
        seconds = time.perf_counter() - start
        after = topology.traffic()
        reference = NeighborSampler(
            np.asarray(ds.indptr), np.asarray(ds.indices), per_relation, schema=schema, seed=seed
        )
        identical = first is not None and same_batch(first, reference.sample(seed_batches[warmup], batch_id=warmup))
        timed = len(seed_batches) - warmup
        return {
            "device": str(device),
            "topology_budget": topology_budget,
            "sorted_reads": sorted_reads,
            "tier_plan": topology.describe(),
            "seconds": seconds,
            "batches_per_s": timed / seconds,
            "sampled_edges_per_s": edges / seconds,
            "topology_bytes_by_tier": {tier: after[tier] - before.get(tier, 0) for tier in after},
            "identical_to_cpu": identical,
        }
    finally:
        topology.close()
