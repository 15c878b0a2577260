"""``graphtier bench``: micro-benchmarks users run on their own machine (``bench sample``, ...)."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from graphtier.cli.options import SEED
from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError


def parse_fanouts(text: str) -> list[int]:
    """``"15,10,5"`` -> [15, 10, 5]; OptionError (naming --fanouts) on anything else."""
    from graphtier.sampling import check_fanouts

    parts = [p.strip() for p in text.split(",")]
    values = []
    for part in parts:
        try:
            values.append(int(part))
        except ValueError:
            raise OptionError(
                f"--fanouts: expected comma-separated integers (>= 1, or -1 for all), found {text!r}"
            ) from None
    return check_fanouts(values, name="--fanouts")


@click.group(name="bench")
def command() -> None:
    """Measure graphtier's building blocks on this machine."""


@command.command(name="sample")
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option("--fanouts", default="15,10,5", show_default=True, help="Neighbours per hop, seeds' hop first; -1 = all.")
@click.option("--batch-size", type=click.IntRange(min=1), default=1024, show_default=True)
@click.option("--batches", type=click.IntRange(min=1), default=50, show_default=True, help="Timed mini-batches.")
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True, help="Untimed batches first.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Sampler threads [default: all cores].")
@click.option("--sampler", type=click.Choice(["neighbor", "shadow"]), default="neighbor", show_default=True)
@click.option("--layers", type=click.IntRange(min=1), default=None, help="ShaDow model layers [default: len(fanouts)].")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--in-memory/--mmap", default=True, show_default=True, help="Load the graph into RAM or memory-map it.")
@click.option("--baseline-seconds", type=click.FloatRange(min=0), default=2.0, show_default=True,
              help="Time budget of the numpy reference sampler baseline (0: skip it).")
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Also save results here.")
def sample_command(
    dataset: Path,
    fanouts: str,
    batch_size: int,
    batches: int,
    warmup: int,
    threads: int | None,
    sampler: str,
    layers: int | None,
    seed: int,
    in_memory: bool,
    baseline_seconds: float,
    json_path: Path | None,
) -> None:
    """Time the mini-batch sampler on DATASET: sampled edges/s, mini-batches/s, unique nodes per batch.

    Seeds are batches of the training split (shuffled), or of all nodes when the dataset has none.
    """
    fanout_list = parse_fanouts(fanouts)
    ds = Dataset.open(dataset, validate=False)
    results = run_sample_benchmark(
        ds, fanout_list, batch_size=batch_size, batches=batches, warmup=warmup, threads=threads,
        sampler=sampler, layers=layers, seed=seed, in_memory=in_memory, baseline_seconds=baseline_seconds,
    )
    for key, label, fmt in (
        ("sampled_edges_per_s", "sampled edges/s", "{:,.0f}"),
        ("batches_per_s", "mini-batches/s", "{:,.2f}"),
        ("unique_nodes_per_batch", "unique nodes/batch", "{:,.0f}"),
        ("sampled_edges_per_batch", "sampled edges/batch", "{:,.0f}"),
        ("seconds", "timed seconds", "{:.3f}"),
        ("cpu_seconds", "CPU seconds", "{:.3f}"),
    ):
        click.echo(f"{label:>22}  {fmt.format(results[key])}")
    click.echo(
        f"{'':>22}  ({sampler}, fanouts {fanouts}, batch {batch_size}, {results['batches']} batches, "
        f"{results['threads']} threads, {ds.name})"
    )
    baseline = results.get("baseline")
    if baseline is not None:
        click.echo(
            f"{'baseline':>22}  {baseline['batches_per_s']:,.2f} mini-batches/s: plain numpy/Python reference sampler "
            f"(graphtier/sampling/reference.py, 1 thread, same seeds, {baseline['batches']} batches)"
        )
        click.echo(f"{'speed-up':>22}  {results['speedup_vs_baseline']:,.1f}x mini-batches/s over the baseline")
    if json_path is not None:
        try:
            json_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = json_path.with_name(f".{json_path.name}.tmp-{os.getpid()}")
            tmp.write_text(json.dumps(results, indent=2) + "\n")
            os.replace(tmp, json_path)
        except OSError as exc:
            raise OptionError(f"--json: cannot write {json_path} ({exc.strerror})") from None


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
) -> dict[str, Any]:
    """Sample ``warmup + batches`` mini-batches of ``ds`` and time the last ``batches``; returns a JSON-able dict.

    ``in_memory`` copies ``indptr``/``indices`` into RAM first; otherwise the sampler reads the memory maps.
    With ``baseline_seconds > 0`` the plain numpy/Python reference sampler of
    :mod:`graphtier.sampling.reference` then samples the same timed seed batches, one after another
    until that time is spent (at least one batch): ``baseline`` and ``speedup_vs_baseline`` in the result.
    """
    import numba

    from graphtier.sampling import NeighborSampler, ShadowSampler, iter_seed_batches

    if threads is not None and threads > numba.config.NUMBA_NUM_THREADS:
        raise OptionError(f"--threads: expected at most {numba.config.NUMBA_NUM_THREADS} (the cores numba may use), found {threads}")
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
            indptr, indices, fanouts, seed_batches[warmup:], sampler=sampler, seed=seed, first_batch_id=warmup,
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
    from graphtier.sampling.reference import (
        neighbor_sample_reference,
        shadow_sample_reference,
    )

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


def _attach_gather() -> None:
    from graphtier.cli.bench_gather import command as gather_command

    command.add_command(gather_command)


_attach_gather()
