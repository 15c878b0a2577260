"""The rows a training run reads, gathered through one feature store (``graphtier bench gather DATASET``).

The trace is one epoch of neighbour-sampled mini-batches (or uniform ids), replayed until enough time was
measured; the baseline is ``torch.index_select`` on the same ids in the same run.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.sampling import DEFAULT_FANOUTS, iter_seed_batches

__all__ = ["run_dataset_gather"]


def run_dataset_gather(
    dataset: Any,
    *,
    ids_from: str = "sampler",
    features_on: str = "cpu-gather",
    device: torch.device = torch.device("cpu"),  # noqa: B008 - an immutable value
    gpu_budget: str | None = None,
    cache_budget: str | None = None,
    ram_budget: str | None = None,
    fanouts: Sequence[int] = DEFAULT_FANOUTS,
    batch_size: int = 1024,
    batches: int | None = None,
    min_seconds: float = 2.0,
    seed: int = 0,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Gather the rows a real training run reads from ``dataset`` through the ``features_on`` store.

    A typed dataset's trace is the typed sampler's rows of every featured type (seeds of its target type), gathered
    as one dict per batch; the baseline reads each type's table.

    The trace is ``batches`` mini-batches (default: one whole epoch of the training split, further
    epochs when ``batches`` asks for more); it is replayed whole, pass after pass, until at least
    ``min_seconds`` of gathering were timed, so the figure does not rest on a handful of calls. Each pass
    through the store is followed by one through the baseline, so both see the machine alike.

    ``ids_from="sampler"`` replays the neighbour sampler over training batches (the skewed access trace
    the tiers are built for); ``"uniform"`` draws the same number of ids uniformly. The baseline is
    ``torch.index_select(out=...)`` on the same ids in the same run (followed by a copy to the device on
    CUDA). Returns gb_per_s, rows_per_s, bytes_by_tier, index_select_gb_per_s and the configuration.
    """
    if dataset.features is None and not (dataset.is_hetero and dataset.type_features):
        raise OptionError(f"{dataset.path}: dataset has no features to gather")
    if ids_from not in ("sampler", "uniform"):
        raise OptionError(f"--ids: expected sampler or uniform, found {ids_from!r}")
    if batches is not None and batches < 1:
        raise OptionError(f"--batches: expected a positive integer, found {batches}")
    store = GraphStore.open(
        dataset, device=device, features_on=features_on, feature_budget=gpu_budget, cache_budget=cache_budget,
        ram_budget=ram_budget, seed=seed, batch_size=batch_size, fanouts=fanouts, log=log,
    )  # fmt: skip
    configuration = {
        "features_on": features_on,
        "device": str(device),
        "gpu_budget": gpu_budget,
        "cache_budget": cache_budget,
    }
    try:
        return _measure(store, device, ids_from, fanouts, batch_size, batches, min_seconds, seed, configuration)
    finally:
        store.close()


def _measure(
    store: GraphStore,
    device: torch.device,
    ids_from: str,
    fanouts: Sequence[int],
    batch_size: int,
    batches: int | None,
    min_seconds: float,
    seed: int,
    configuration: dict[str, Any],
) -> dict[str, Any]:
    """The timed passes of :func:`run_dataset_gather` through ``store``; ``configuration`` goes into the result."""
    dataset = store.dataset
    tables = _tables(dataset)  # per featured type (None: the homogeneous table) its rows, as index_select reads them
    seeds_pool = store.split("train")
    if not seeds_pool.size:
        seeds_pool = np.arange(store.num_nodes if not dataset.is_hetero else dataset.schema.target_type.count)
    sample = store.sampler(fanouts, seed=seed)
    traces: list[dict[str | None, np.ndarray]] = []
    epoch = 0
    while not traces or (batches is not None and len(traces) < batches):
        for seeds in iter_seed_batches(np.asarray(seeds_pool), batch_size, shuffle=True, seed=seed, epoch=epoch):
            if batches is not None and len(traces) == batches:
                break
            n_id = sample(seeds, len(traces)).n_id
            ids = n_id if isinstance(n_id, dict) else {None: n_id}
            traces.append({t: ids[t].numpy().copy() for t in tables})
        epoch += 1
    if ids_from == "uniform":
        rng = np.random.default_rng(seed)
        traces = [{t: rng.integers(0, tables[t].shape[0], ids.shape[0], dtype=np.int64) for t, ids in trace.items()}
                  for trace in traces]  # fmt: skip
    sync = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else (lambda: None)
    trace_tensors = [{t: torch.from_numpy(ids) for t, ids in trace.items()} for trace in traces]
    gather_ids = [ids[None] if None in ids else ids for ids in trace_tensors]  # a typed store gathers dicts
    out = {t: torch.empty((max(1, max(tr[t].shape[0] for tr in traces)), table.shape[1]), dtype=table.dtype)
           for t, table in tables.items()}  # fmt: skip

    def store_pass() -> None:
        for ids in gather_ids:
            store.gather(ids)
        sync()

    def baseline_pass() -> None:
        for trace in trace_tensors:
            for t, ids in trace.items():
                gathered = torch.index_select(tables[t], 0, ids, out=out[t][: ids.shape[0]])
                if device.type == "cuda":
                    gathered.to(device)
        sync()

    store_pass()  # warm-up passes: JIT, page faults of memory-mapped rows, cache fill
    baseline_pass()
    before = store.traffic()["features"]
    # the passes alternate (store, baseline, store, ...): a drift of the machine during the run reaches both alike
    passes = 0
    seconds = baseline_seconds = 0.0
    while passes == 0 or seconds < min_seconds:
        started = time.perf_counter()
        store_pass()
        seconds += time.perf_counter() - started
        started = time.perf_counter()
        baseline_pass()
        baseline_seconds += time.perf_counter() - started
        passes += 1
    features_read = store.traffic()["features"] - before
    hit_ratio = store.cache_hit_ratio
    type_rows = {t: sum(trace[t].shape[0] for trace in traces) for t in tables}
    trace_bytes = sum(type_rows[t] * int(table.shape[1]) * table.element_size() for t, table in tables.items())
    rows = sum(type_rows.values()) * passes
    total_bytes = trace_bytes * passes
    row_bytes = trace_bytes // max(1, sum(type_rows.values()))  # a typed dataset: the mean over the rows read
    return {
        "benchmark": "gather-dataset",
        "dataset": str(dataset.path),
        "ids": ids_from,
        **configuration,
        "batches": len(traces),
        "passes": passes,
        "rows": rows,
        "row_bytes": row_bytes,
        "rows_by_type": None if None in tables else {t: type_rows[t] * passes for t in tables},
        "seconds": seconds,
        "gb_per_s": total_bytes / seconds / 1e9,
        "rows_per_s": rows / seconds,
        "bytes_by_tier": features_read.by_tier(),
        "cache_hit_ratio": hit_ratio,
        "index_select_gb_per_s": total_bytes / baseline_seconds / 1e9,
        "vs_index_select": baseline_seconds / seconds,
    }


def _tables(dataset: Any) -> dict[str | None, torch.Tensor]:
    """The feature tables a trace reads, as CPU tensors over the dataset's arrays (memory maps stay mapped): the
    homogeneous table under ``None``, or each featured type's of a typed dataset."""
    with warnings.catch_warnings():  # read-only memory map: index_select only reads it
        warnings.simplefilter("ignore", UserWarning)
        if dataset.is_hetero:
            return {t: torch.from_numpy(np.asarray(table)) for t, table in dataset.type_features.items()}
        return {None: torch.from_numpy(np.asarray(dataset.features))}
