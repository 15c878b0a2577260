"""Sampler throughput on a dataset against the plain numpy reference sampler in the same run (``graphtier bench sample``)."""

from __future__ import annotations

import os
import platform
import time
from typing import Any

import numba
import numpy as np
import torch

from graphtier.bench.sample_device import time_device_sampler
from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError
from graphtier.sampling import NeighborSampler, ShadowSampler, iter_seed_batches
from graphtier.sampling.reference import (
    neighbor_sample_reference,
    shadow_sample_reference,
)


def run_sample_benchmark(
    ds: Dataset,
    fanouts: list[int],
    *,
    batch_size: int,
    batches: int,
    warmup: int = 3,
    threads: int | None = None,
    sampler: str = "neighbor",
    layers: int | None = None,
    seed: int = 0,
    in_memory: bool = True,
    baseline_seconds: float = 0.0,
    device: str = "cpu",
    topology_budgets: tuple[str, ...] = ("0", "10%", "100%"),
    sorted_reads: bool | None = None,
) -> dict[str, Any]:
    """Sample ``warmup + batches`` mini-batches of ``ds`` and time the last ``batches``; returns a JSON-able dict.

    ``in_memory`` copies ``indptr``/``indices`` into RAM first; otherwise the sampler reads the memory maps.
    With ``baseline_seconds > 0`` the plain numpy/Python reference sampler of
    :mod:`graphtier.sampling.reference` then samples the same timed seed batches, one after another
    until that time is spent (at least one batch): ``baseline`` and ``speedup_vs_baseline`` in the result.
    With ``device`` "cuda[:N]" the GPU sampler then samples the same timed seed batches once per topology
    budget of ``topology_budgets`` (:func:`graphtier.bench.sample_device.time_device_sampler`):
    ``device_samplers`` in the result, each with ``speedup_vs_cpu``.
    """
    if device != "cpu" and sampler != "neighbor":
        raise OptionError(f"--device {device}: the GPU runs the neighbour sampler only, found --sampler {sampler}")
    if device != "cpu" and not torch.cuda.is_available():
        raise OptionError(f"--device {device}: CUDA is not available on this machine (use --device cpu)")
    if threads is not None and threads > numba.config.NUMBA_NUM_THREADS:
        raise OptionError(
            f"--threads: expected at most {numba.config.NUMBA_NUM_THREADS} (the cores numba may use), found {threads}"
        )
    num_threads = threads if threads is not None else numba.config.NUMBA_NUM_THREADS
    if ds.num_nodes == 0:
        raise OptionError(f"{ds.path}: the graph has no nodes to sample from")
    if in_memory:
        indptr, indices = np.array(ds.indptr), np.array(ds.indices)
    else:
        indptr, indices = np.asarray(ds.indptr), np.asarray(ds.indices)
    if sampler == "shadow":
        sampler_obj: NeighborSampler | ShadowSampler = ShadowSampler(
            indptr, indices, fanouts, layers or len(fanouts), seed=seed, num_threads=num_threads
        )
    else:
        sampler_obj = NeighborSampler(indptr, indices, fanouts, seed=seed, num_threads=num_threads)
    pool = ds.train_idx if ds.train_idx is not None and len(ds.train_idx) > 0 else np.arange(ds.num_nodes)
    needed = warmup + batches
    seed_batches: list[np.ndarray] = []
    epoch = 0
    while len(seed_batches) < needed:
        seed_batches.extend(iter_seed_batches(np.asarray(pool), batch_size, shuffle=True, seed=seed, epoch=epoch))
        epoch += 1
    for b in range(warmup):
        sampler_obj.sample(seed_batches[b], batch_id=b)
    edges = 0
    nodes = 0
    start = time.perf_counter()
    cpu_start = time.process_time()
    for b in range(warmup, needed):
        mb = sampler_obj.sample(seed_batches[b], batch_id=b)
        edges += mb.num_sampled_edges
        nodes += mb.num_nodes
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    baseline = None
    if baseline_seconds > 0:
        baseline = _time_reference_sampler(
            indptr,
            indices,
            fanouts,
            seed_batches[warmup:],
            sampler=sampler,
            seed=seed,
            first_batch_id=warmup,
            budget_seconds=baseline_seconds,
        )
    result = {
        "dataset": str(ds.path),
        "num_nodes": ds.num_nodes,
        "num_edges": ds.num_edges,
        "sampler": sampler,
        "fanouts": fanouts,
        "batch_size": batch_size,
        "batches": batches,
        "threads": num_threads,
        "in_memory": in_memory,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,  # all threads of the process; < threads * seconds when it had to wait for a core
        "sampled_edges_per_s": edges / seconds,
        "batches_per_s": batches / seconds,
        "unique_nodes_per_batch": nodes / batches,
        "sampled_edges_per_batch": edges / batches,
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "baseline": baseline,
    }
    if baseline is not None:
        result["speedup_vs_baseline"] = (batches / seconds) / baseline["batches_per_s"]
    if device != "cpu":
        runs = []
        for budget in topology_budgets:
            run = time_device_sampler(
                ds,
                fanouts,
                seed_batches,
                warmup=warmup,
                device=torch.device(device),
                topology_budget=budget,
                seed=seed,
                sorted_reads=sorted_reads,
            )
            run["speedup_vs_cpu"] = run["batches_per_s"] / result["batches_per_s"]
            runs.append(run)
        result["device_samplers"] = runs
    return result


def _time_reference_sampler(
    indptr: np.ndarray,
    indices: np.ndarray,
    fanouts: list[int],
    seed_batches: list[np.ndarray],
    *,
    sampler: str,
    seed: int,
    first_batch_id: int,
    budget_seconds: float,
) -> dict[str, Any]:
    """Time the reference sampler on ``seed_batches`` in order until ``budget_seconds`` is spent (>= 1 batch)."""
    reference = shadow_sample_reference if sampler == "shadow" else neighbor_sample_reference
    done = 0
    start = time.perf_counter()
    while done < len(seed_batches):
        reference(indptr, indices, fanouts, seed_batches[done], seed, first_batch_id + done)
        done += 1
        if time.perf_counter() - start >= budget_seconds:
            break
    seconds = time.perf_counter() - start
    return {
        "name": f"graphtier.sampling.reference.{reference.__name__} (numpy/Python, 1 thread)",
        "batches": done,
        "seconds": seconds,
        "batches_per_s": done / seconds,
    }
