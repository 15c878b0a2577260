"""``graphtier bench gather``: parse options, run :mod:`graphtier.bench.gather` (random tables) or
:mod:`graphtier.bench.gather_dataset` (a dataset's trace), print the table."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from graphtier._choices import GATHER_DTYPES
from graphtier.cli.common.options import SEED, fanouts_option
from graphtier.errors import OptionError


@click.command(name="gather")
@click.argument("dataset", required=False, type=click.Path(file_okay=False, path_type=str))
@click.option(
    "--ids", "ids_from", default="sampler", show_default=True, help="With DATASET: sampler | uniform row ids."
)
@click.option("--features-on", default="cpu-gather", show_default=True, help="With DATASET: the store to measure.")
@click.option("--gpu-budget", default=None, help="With DATASET: hot rows on the GPU (tiered modes).")
@click.option("--cache-budget", default=None, help="With DATASET: GPU row cache (tiered+cache).")
@fanouts_option("With DATASET: sampler fanouts of the trace.")
@click.option("--batch-size", default=1024, show_default=True, type=int, help="With DATASET: seeds per batch.")
@click.option(
    "--batches",
    default=None,
    type=int,
    help="With DATASET: batches in the trace [default: one epoch of the training split].",
)
@click.option(
    "--min-seconds",
    default=2.0,
    show_default=True,
    type=click.FloatRange(min=0),
    help="With DATASET: replay the trace until this much gathering was timed.",
)
@click.option("--row-bytes", default="128,512,4096", show_default=True, help="Feature row sizes to measure, in bytes.")
@click.option("--table-size", default="512MiB", show_default=True, help="Bytes of each random table (a budget string).")
@click.option("--batch-rows", type=click.IntRange(min=1), default=65536, show_default=True, help="Rows per gather.")
@click.option("--threads", default=None, help="CPU thread counts to measure, e.g. 1,2 [default: 1 and all cores].")
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True, help="Timed gathers per method.")
@click.option("--dtype", type=click.Choice(sorted(GATHER_DTYPES)), default="float32", show_default=True)
@click.option(
    "--device", default=None, help="Also measure the GPU paths on this CUDA device [default: cuda if available]."
)
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Also save results here.")
def command(
    dataset: str | None,
    ids_from: str,
    features_on: str,
    gpu_budget: str | None,
    cache_budget: str | None,
    fanouts: str,
    batch_size: int,
    batches: int | None,
    min_seconds: float,
    row_bytes: str,
    table_size: str,
    batch_rows: int,
    threads: str | None,
    repeats: int,
    dtype: str,
    device: str | None,
    seed: int,
    json_path: Path | None,
) -> None:
    """Feature gather throughput against torch.index_select measured in the same run.

    With DATASET: gather the rows a training run reads (sampler trace, or uniform ids) through the
    --features-on store; prints and saves gb_per_s, rows_per_s, bytes_by_tier, index_select_gb_per_s.
    Without: random tables of --row-bytes rows, every CPU method (and the GPU paths with CUDA).
    """
    import numba
    import torch

    from graphtier.bench.gather import format_gather_table, parse_int_list, run_gather_benchmark
    from graphtier.bench.gather_dataset import run_dataset_gather
    from graphtier.memory.plan.placement import parse_budget

    if dataset is not None:
        from graphtier.dataset import Dataset

        compute_device = (
            torch.device(device) if device else torch.device("cuda" if torch.cuda.is_available() else "cpu")
        )
        opened = Dataset.open(dataset)
        result = run_dataset_gather(
            opened,
            ids_from=ids_from,
            features_on=features_on,
            device=compute_device,
            gpu_budget=gpu_budget,
            cache_budget=cache_budget,
            fanouts=list(fanouts),
            batch_size=batch_size,
            batches=batches,
            min_seconds=min_seconds,
            seed=seed,
            log=click.echo,
        )
        click.echo(
            f"{result['features_on']} on {result['device']}, {result['ids']} ids: {result['rows']:,} rows of "
            f"{result['row_bytes']} B ({result['batches']} batches x {result['passes']} passes) in "
            f"{result['seconds'] * 1e3:.1f} ms = {result['gb_per_s']:.2f} GB/s, "
            f"{result['rows_per_s'] / 1e6:.2f} M rows/s; index_select {result['index_select_gb_per_s']:.2f} GB/s "
            f"({result['vs_index_select']:.2f}x); bytes by tier "
            + ", ".join(f"{tier} {count:,}" for tier, count in result["bytes_by_tier"].items() if count)
        )
        if json_path is not None:
            _write_json(json_path, result)
        return

    budget = parse_budget(table_size, "table_size")
    if budget.num_bytes is None:
        raise OptionError(f'--table-size: expected bytes with a unit ("512MiB"), found {table_size!r}')
    cores = numba.config.NUMBA_NUM_THREADS
    thread_list = parse_int_list(threads, "--threads") if threads else sorted({1, cores})
    if device is None:
        compute = torch.device("cuda") if torch.cuda.is_available() else None
    else:
        compute = torch.device(device)
    report = run_gather_benchmark(
        row_bytes=parse_int_list(row_bytes, "--row-bytes"),
        table_bytes=budget.num_bytes,
        batch_rows=batch_rows,
        threads=thread_list,
        repeats=repeats,
        dtype=dtype,
        seed=seed,
        device=compute,
        log=click.echo,
    )
    click.echo(format_gather_table(report))
    if compute is None or compute.type != "cuda":
        click.echo("GPU paths: not measured (no CUDA device)")
    if json_path is not None:
        _write_json(json_path, report)


def _write_json(json_path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` to ``json_path`` atomically; OptionError naming --json when it cannot."""
    try:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = json_path.with_name(f".{json_path.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(report, indent=2) + "\n")
        os.replace(tmp, json_path)
    except OSError as exc:
        raise OptionError(f"--json: cannot write {json_path} ({exc.strerror})") from None
