"""Sampler throughput on a dataset against the plain numpy reference sampler in the same run (``graphtier bench sample``)."""

from __future__ import annotations

import functools
import os
import platform
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numba
import numpy as np
import torch

from graphtier.bench.sample_device import time_device_sampler
from graphtier.dataset.format import Dataset
from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling import NeighborSampler, ShadowSampler, iter_seed_batches
from graphtier.sampling.neighbor.reference import (
    neighbor_sample_reference,
    shadow_sample_reference,
)
from graphtier.sampling.neighbor.typed_reference import typed_sample_reference
from graphtier.sampling.relation_fanouts import parse_relation_fanouts


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
    relation_fanouts: str | Mapping[Any, Any] | None = None,
) -> dict[str, Any]:
    """Sample ``warmup + batches`` mini-batches of ``ds`` and time the last ``batches``; returns a JSON-able dict.

    A typed dataset is sampled with its schema (every relation; ``relation_fanouts`` overrides ``fanouts`` per
    relation, as ``--fanouts-per-relation``), its seeds local ids of the target type; ShaDow is refused there.

    ``in_memory`` copies ``indptr``/``indices`` into RAM first; otherwise the sampler reads the memory maps.
    With ``baseline_seconds > 0`` the plain numpy/Python reference sampler of
    :mod:`graphtier.sampling.neighbor.reference` then samples the same timed seed batches, one after another
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
    schema = ds.schema if ds.is_hetero else None
    if schema is not None and sampler == "shadow":
        raise OptionError(
            f"--sampler shadow: {ds.path} is a typed dataset; ShaDow extracts one induced subgraph of one node type "
            "(use --sampler neighbor)"
        )
    if schema is None and relation_fanouts is not None:
        raise OptionError(f"--fanouts-per-relation: {ds.path} has one relation; use --fanouts")
    per_relation = None if schema is None else parse_relation_fanouts(relation_fanouts, schema, fanouts)
    if in_memory:
        indptr, indices = np.array(ds.indptr), np.array(ds.indices)
    else:
        indptr, indices = np.asarray(ds.indptr), np.asarray(ds.indices)
    if sampler == "shadow":
        sampler_obj: NeighborSampler | ShadowSampler = ShadowSampler(
            indptr, indices, fanouts, layers or len(fanouts), seed=seed, num_threads=num_threads
        )
    else:
        sampler_obj = NeighborSampler(indptr, indices, per_relation or fanouts, schema=schema, seed=seed,
                                      num_threads=num_threads)  # fmt: skip
    seed_count = ds.num_nodes if schema is None else schema.target_type.count
    pool = ds.train_idx if ds.train_idx is not None and len(ds.train_idx) > 0 else np.arange(seed_count)
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
            typed=None if schema is None or per_relation is None else (schema, per_relation),
        )
    result = {
        "dataset": str(ds.path),
        "num_nodes": ds.num_nodes,
        "num_edges": ds.num_edges,
        "sampler": sampler,
        "fanouts": fanouts,
        "fanouts_per_relation": None
        if per_relation is None
        else {"___".join(k): list(v) for k, v in per_relation.items()},
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
                relation_fanouts=per_relation,
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
    typed: tuple[Schema, Mapping[RelationType, Sequence[int]]] | None = None,
) -> dict[str, Any]:
    """Time the reference sampler on ``seed_batches`` in order until ``budget_seconds`` is spent (>= 1 batch);
    ``typed``: a typed dataset's (schema, per-relation fanouts), sampled by the typed reference."""
    reference: Any = shadow_sample_reference if sampler == "shadow" else neighbor_sample_reference
    if typed is not None:
        reference = functools.partial(typed_sample_reference, indptr, indices, *typed)
    done = 0
    start = time.perf_counter()
    while done < len(seed_batches):
        if typed is not None:
            reference(seed_batches[done], seed, first_batch_id + done)
        else:
            reference(indptr, indices, fanouts, seed_batches[done], seed, first_batch_id + done)
        done += 1
        if time.perf_counter() - start >= budget_seconds:
            break
    seconds = time.perf_counter() - start
    return {
        "name": f"graphtier.sampling.{'typed_reference.typed_sample_reference' if typed else 'reference.' + reference.__name__} (numpy/Python, 1 thread)",
        "batches": done,
        "seconds": seconds,
        "batches_per_s": done / seconds,
    }
