"""Feature-row gather throughput of each feature path on this machine (``graphtier bench gather``).

For every row size (bytes per feature row) a random table of ``--table-size`` bytes is built in RAM
and batches of ``--batch-rows`` uniformly random row ids are gathered by

* ``index_select``: ``torch.index_select(table, 0, ids, out=buffer)`` (the baseline, same threads),
* ``cpu-gather``: graphtier's parallel numba gather into a reusable buffer (:class:`HostFeatureStore`),
* ``tiered``: the tiered store's CPU path (10 % of the rows in the "gpu" tier, the rest "host"),
* ``copy``: a contiguous copy of the same number of bytes (the memory bandwidth ceiling),

at each ``--threads`` count, and, when CUDA is available, on the GPU by

* ``cpu-gather+h2d``: the CPU gather into pinned memory plus the copy to the device (GPU baseline),
* ``zero-copy-naive`` / ``zero-copy-aligned``: the Triton kernels reading registered host memory,
* ``tiered-gpu``: the tiered store with 10 % of the rows in GPU memory,
* ``device-index``: ``index_select`` on a table already in GPU memory (the ceiling).

Throughput is gathered bytes per second (median of ``--repeats`` timed calls after one warm-up).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from typing import Any, Callable, Sequence

import numba
import numpy as np
import torch

from graphtier._choices import GATHER_DTYPES
from graphtier.errors import OptionError
from graphtier.memory import HostFeatureStore, TieredFeatureStore
from graphtier.memory.features.unified import UnifiedTensor
from graphtier.memory.plan.placement import plan_tiers

CPU_METHODS = ("index_select", "cpu-gather", "tiered", "copy")
GPU_METHODS = ("cpu-gather+h2d", "zero-copy-naive", "zero-copy-aligned", "tiered-gpu", "device-index")
DTYPES = {name: getattr(np, name) for name in GATHER_DTYPES}


def median_seconds(action: Callable[[], Any], repeats: int, synchronize: Callable[[], None] | None = None) -> float:
    """Median wall seconds of ``repeats`` calls of ``action`` after one untimed warm-up call."""
    action()
    if synchronize:
        synchronize()
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        if synchronize:
            synchronize()
        runs.append(time.perf_counter() - started)
    return statistics.median(runs)


def _set_threads(threads: int) -> None:
    numba.set_num_threads(threads)
    torch.set_num_threads(threads)


def _cpu_methods(table: np.ndarray, ids: np.ndarray) -> dict[str, Callable[[], Any]]:
    table_t = torch.from_numpy(table)
    ids_t = torch.from_numpy(ids)
    out = torch.empty((ids.shape[0], table.shape[1]), dtype=table_t.dtype)
    host = HostFeatureStore(table, ring_size=1)
    row_bytes = table.shape[1] * table.dtype.itemsize
    plan = plan_tiers(table.shape[0], row_bytes, device=torch.device("cpu"), gpu_budget="10%", log=lambda _: None)
    tiered = TieredFeatureStore(table, plan, device=torch.device("cpu"), ring_size=1, log=lambda _: None)
    start = (table.shape[0] - ids.shape[0]) // 2
    block = table_t[start : start + ids.shape[0]]
    return {
        "index_select": lambda: torch.index_select(table_t, 0, ids_t, out=out),
        "cpu-gather": lambda: host.gather(ids_t),
        "tiered": lambda: tiered.gather(ids_t),
        "copy": lambda: out.copy_(block),
    }


def _gpu_methods(
    table: np.ndarray, ids: np.ndarray, device: torch.device
) -> tuple[dict[str, Callable[[], Any]], list[Any]]:
    """The GPU methods and the objects to close afterwards."""
    from graphtier.memory.features import (
        _triton_kernels,  # optional dependency (Triton): loaded only with CUDA
    )

    ids_t = torch.from_numpy(ids)
    ids_dev = ids_t.to(device)
    dim = table.shape[1]
    host = HostFeatureStore(table, ring_size=1, pin=True)
    unified = UnifiedTensor.from_rows(table, 0, table.shape[0])  # a registered copy: the tiered store copies its own
    out = torch.empty((ids.shape[0], dim), dtype=unified.tensor.dtype, device=device)
    row_bytes = dim * table.dtype.itemsize
    plan = plan_tiers(table.shape[0], row_bytes, device=device, gpu_budget="10%", log=lambda _: None)
    tiered = TieredFeatureStore(table, plan, device=device, ring_size=1, log=lambda _: None)
    on_device = torch.from_numpy(table).to(device)

    def zero_copy(aligned: bool) -> None:
        _triton_kernels.gather_rows_triton(unified.tensor, ids_dev, out, aligned=aligned)
        unified.record_use(torch.cuda.current_stream(device))  # unregistered only once this read is done

    methods = {
        "cpu-gather+h2d": lambda: host.gather(ids_t).to(device, non_blocking=True),
        "zero-copy-naive": lambda: zero_copy(False),
        "zero-copy-aligned": lambda: zero_copy(True),
        "tiered-gpu": lambda: tiered.gather(ids_t),
        "device-index": lambda: torch.index_select(on_device, 0, ids_dev, out=out),
    }
    return methods, [tiered, unified, host]


def run_gather_benchmark(
    *,
    row_bytes: Sequence[int],
    table_bytes: int,
    batch_rows: int,
    threads: Sequence[int],
    repeats: int = 5,
    dtype: str = "float32",
    seed: int = 0,
    device: torch.device | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Measure every method for every row size (and thread count on the CPU); returns a JSON-able dict.

    ``results`` rows: row_bytes, method, threads (None on the GPU), seconds, gb_per_s, and
    ``vs_baseline`` (throughput / the baseline's: index_select at the same threads on the CPU,
    cpu-gather+h2d on the GPU) and ``vs_copy`` (throughput / contiguous copy at the same threads, CPU).
    """
    if dtype not in DTYPES:
        raise OptionError(f"--dtype: expected one of {', '.join(DTYPES)}, found {dtype!r}")
    max_threads = numba.config.NUMBA_NUM_THREADS
    for count in threads:
        if not 1 <= count <= max_threads:
            raise OptionError(
                f"--threads: expected counts in [1, {max_threads}] (the cores numba may use), found {count}"
            )
    np_dtype = np.dtype(DTYPES[dtype])
    use_gpu = device is not None and device.type == "cuda"
    if device is not None and device.type == "cuda" and not torch.cuda.is_available():
        raise OptionError(f"--device {device}: CUDA is not available on this machine")
    previous_threads = (numba.get_num_threads(), torch.get_num_threads())
    rng = np.random.default_rng(seed)
    results: list[dict[str, Any]] = []
    try:
        for size in row_bytes:
            if size % np_dtype.itemsize:
                raise OptionError(f"--row-bytes: expected multiples of {np_dtype.itemsize} for {dtype}, found {size}")
            dim = size // np_dtype.itemsize
            num_rows = max(table_bytes // size, batch_rows)
            log(
                f"row {size} B: table {num_rows:,} x {dim} {dtype} ({num_rows * size / 2**20:,.0f} MiB), batch {batch_rows:,} rows"
            )
            table = rng.random((num_rows, dim), dtype=np.float32).astype(np_dtype, copy=False)
            ids = rng.integers(0, num_rows, batch_rows, dtype=np.int64)
            batch_bytes = batch_rows * size
            methods = _cpu_methods(table, ids)
            for count in threads:
                _set_threads(count)
                measured = {name: median_seconds(action, repeats) for name, action in methods.items()}
                for name in CPU_METHODS:
                    seconds = measured[name]
                    results.append(
                        {
                            "row_bytes": size,
                            "method": name,
                            "threads": count,
                            "seconds": seconds,
                            "gb_per_s": batch_bytes / seconds / 1e9,
                            "vs_baseline": measured["index_select"] / seconds,
                            "vs_copy": measured["copy"] / seconds,
                        }
                    )
            del methods
            if use_gpu:
                assert device is not None
                _set_threads(max(threads))
                with torch.cuda.device(device):
                    gpu_methods, to_close = _gpu_methods(table, ids, device)
                    sync = lambda: torch.cuda.synchronize(device)  # noqa: E731
                    measured = {name: median_seconds(action, repeats, sync) for name, action in gpu_methods.items()}
                    for obj in to_close:
                        obj.close()
                for name in GPU_METHODS:
                    seconds = measured[name]
                    results.append(
                        {
                            "row_bytes": size,
                            "method": name,
                            "threads": None,
                            "seconds": seconds,
                            "gb_per_s": batch_bytes / seconds / 1e9,
                            "vs_baseline": measured["cpu-gather+h2d"] / seconds,
                            "vs_copy": None,
                        }
                    )
            del table
    finally:
        _set_threads(previous_threads[0])
        torch.set_num_threads(previous_threads[1])
    return {
        "benchmark": "gather",
        "dtype": dtype,
        "table_bytes": table_bytes,
        "batch_rows": batch_rows,
        "repeats": repeats,
        "device": str(device) if use_gpu else "cpu",
        "gpu": torch.cuda.get_device_name(device) if use_gpu else None,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "results": results,
    }


def format_gather_table(report: dict[str, Any]) -> str:
    """The results of :func:`run_gather_benchmark` as an aligned text table."""
    header = f"{'row B':>6} {'method':<18} {'threads':>7} {'ms/batch':>9} {'GB/s':>7} {'vs base':>8} {'vs copy':>8}"
    lines = [header, "-" * len(header)]
    for row in report["results"]:
        threads = "-" if row["threads"] is None else str(row["threads"])
        vs_copy = "-" if row["vs_copy"] is None else f"{row['vs_copy']:.2f}x"
        lines.append(
            f"{row['row_bytes']:>6} {row['method']:<18} {threads:>7} {1e3 * row['seconds']:>9.2f} "
            f"{row['gb_per_s']:>7.2f} {row['vs_baseline']:>7.2f}x {vs_copy:>8}"
        )
    return "\n".join(lines)


def parse_int_list(text: str, option: str) -> list[int]:
    """``"128,512"`` -> [128, 512]; OptionError naming ``option`` otherwise."""
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise OptionError(f"{option}: expected comma-separated positive integers, found {text!r}") from None
    if not values or min(values) < 1:
        raise OptionError(f"{option}: expected comma-separated positive integers, found {text!r}")
    return values
