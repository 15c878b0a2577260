"""GPU sampler throughput against the CPU sampler, same graph, same seed batches, same run (``bench sample --device cuda``).

The device sampler reads the graph from a :class:`TieredTopology` placed by ``topology_budget`` (the
share of edge lists in GPU memory; the rest is read zero-copy from host RAM), so the benchmark also
reports the bytes each topology tier served. The first timed batch of both samplers is compared: they
must be identical (same counter-based random stream), or the benchmark refuses to report a speed.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch

from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError
from graphtier.memory import make_topology
from graphtier.sampling import DeviceNeighborSampler, MiniBatch, NeighborSampler


def same_batch(first: MiniBatch, second: MiniBatch) -> bool:
    """True when two mini-batches have equal node lists, seeds, blocks and seed indices (compared on the CPU)."""
    if len(first.blocks) != len(second.blocks):
        return False
    pairs = [(first.n_id, second.n_id), (first.seed_index, second.seed_index), (first.seeds, second.seeds)]
    pairs += [(a.edge_index, b.edge_index) for a, b in zip(first.blocks, second.blocks)]
    sizes_equal = all((a.num_src, a.num_dst) == (b.num_src, b.num_dst) for a, b in zip(first.blocks, second.blocks))
    return sizes_equal and all(torch.equal(a.cpu(), b.cpu()) for a, b in pairs)


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
) -> dict[str, Any]:
    """Time :class:`DeviceNeighborSampler` on ``seed_batches[warmup:]`` (the first ``warmup`` untimed).

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
        sampler = DeviceNeighborSampler(topology, fanouts, seed=seed, picks=picks, kernels=kernels)
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
        reference = NeighborSampler(np.asarray(ds.indptr), np.asarray(ds.indices), fanouts, seed=seed)
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
