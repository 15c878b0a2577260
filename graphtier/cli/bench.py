"""``graphtier bench``: micro-benchmarks users run on their own machine (``bench sample``, ...)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from graphtier.cli.common.options import SEED, fanouts_option, relation_fanouts_option
from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError


@click.group(name="bench")
def command() -> None:
    """Measure graphtier's building blocks on this machine."""


@command.command(name="sample")
@click.argument("dataset", type=click.Path(path_type=Path))
@fanouts_option("Neighbours per hop, seeds' hop first; -1 = all.")
@relation_fanouts_option()
@click.option("--batch-size", type=click.IntRange(min=1), default=1024, show_default=True)
@click.option("--batches", type=click.IntRange(min=1), default=50, show_default=True, help="Timed mini-batches.")
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True, help="Untimed batches first.")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Sampler threads [default: all cores].")
@click.option("--sampler", type=click.Choice(["neighbor", "shadow"]), default="neighbor", show_default=True)
@click.option("--layers", type=click.IntRange(min=1), default=None, help="ShaDow model layers [default: len(fanouts)].")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--in-memory/--mmap", default=True, show_default=True, help="Load the graph into RAM or memory-map it.")
@click.option(
    "--baseline-seconds",
    type=click.FloatRange(min=0),
    default=2.0,
    show_default=True,
    help="Time budget of the numpy reference sampler baseline (0: skip it).",
)
@click.option(
    "--device",
    default="cpu",
    show_default=True,
    help="cuda[:N]: also time the GPU sampler on the same seed batches (neighbour sampler).",
)
@click.option(
    "--topology-budgets",
    default="0,10%,100%",
    show_default=True,
    help="--device cuda: share of the edge lists in GPU memory, one GPU run per value.",
)
@click.option(
    "--sorted-reads/--unsorted-reads",
    default=None,
    help="--device cuda: read edge lists in ascending order (GraphBolt) or not; default: sorted when more than "
    "1 in 50 of a hop's positions is read off the GPU.",
)
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Also save results here.")
def sample_command(
    dataset: Path,
    fanouts: str,
    fanouts_per_relation: str | None,
    batch_size: int,
    batches: int,
    warmup: int,
    threads: int | None,
    sampler: str,
    layers: int | None,
    seed: int,
    in_memory: bool,
    baseline_seconds: float,
    device: str,
    topology_budgets: str,
    sorted_reads: bool | None,
    json_path: Path | None,
) -> None:
    """Time the mini-batch sampler on DATASET: sampled edges/s, mini-batches/s, unique nodes per batch.

    Seeds are batches of the training split (shuffled), or of all nodes when the dataset has none. A typed
    dataset samples every relation (--fanouts-per-relation overrides --fanouts per relation) from seeds of its
    target type.
    """
    fanout_list = list(fanouts)
    if device != "cpu" and not device.startswith("cuda"):
        raise OptionError(f"--device: expected cpu or cuda[:N], found {device!r}")
    budgets = tuple(part.strip() for part in topology_budgets.split(",") if part.strip())
    if not budgets:
        raise OptionError(
            f"--topology-budgets: expected comma-separated budgets like 0,10%,100%, found {topology_budgets!r}"
        )
    ds = Dataset.open(dataset, validate=False)
    from graphtier.bench.sample import run_sample_benchmark

    results = run_sample_benchmark(
        ds,
        fanout_list,
        batch_size=batch_size,
        batches=batches,
        warmup=warmup,
        threads=threads,
        sampler=sampler,
        layers=layers,
        seed=seed,
        in_memory=in_memory,
        baseline_seconds=baseline_seconds,
        device=device,
        topology_budgets=budgets,
        sorted_reads=sorted_reads,
        relation_fanouts=fanouts_per_relation,
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
            f"({baseline['name']}, same seeds, {baseline['batches']} batches)"
        )
        click.echo(f"{'speed-up':>22}  {results['speedup_vs_baseline']:,.1f}x mini-batches/s over the baseline")
    for run in results.get("device_samplers", []):
        tiers = run["topology_bytes_by_tier"]
        click.echo(
            f"{'GPU sampler':>22}  {run['batches_per_s']:,.2f} mini-batches/s ({run['speedup_vs_cpu']:.2f}x the CPU sampler) "
            f"at topology budget {run['topology_budget']}: gpu {tiers['gpu'] / 1e6:,.1f} MB, host {tiers['host'] / 1e6:,.1f} MB, "
            f"disk {tiers['disk'] / 1e6:,.1f} MB read; identical batches: {'yes' if run['identical_to_cpu'] else 'NO'}"
        )
    if json_path is not None:
        try:
            json_path.parent.mkdir(parents=True, exist_ok=True)
            tmp = json_path.with_name(f".{json_path.name}.tmp-{os.getpid()}")
            tmp.write_text(json.dumps(results, indent=2) + "\n")
            os.replace(tmp, json_path)
        except OSError as exc:
            raise OptionError(f"--json: cannot write {json_path} ({exc.strerror})") from None


def _attach_gather() -> None:
    from graphtier.cli.bench_gather import command as gather_command

    command.add_command(gather_command)


_attach_gather()
