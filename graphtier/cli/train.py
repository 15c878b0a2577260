"""``graphtier train DATASET``: mini-batch GNN training with stage timing and a run report."""

from __future__ import annotations

import time
from typing import Any, Callable

import click

from graphtier.cli.options import fanouts_option_type

SUMMARY_STAGES = ("sample", "extract", "transfer", "train", "total")


def _format_bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if count < 1000 or unit == "TB":
            return f"{count:.1f} {unit}" if unit != "B" else f"{int(count)} B"
        count /= 1000
    return f"{count:.1f} TB"


def _format_acc(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def epoch_summary(record: dict[str, Any], epochs: int) -> str:
    """One line per epoch: loss, accuracies, throughput and where the time went."""
    stages = record["stage_seconds"]
    times = " ".join(f"{name} {stages[name]:.2f}s" for name in SUMMARY_STAGES)
    return (
        f"epoch {record['epoch']}/{epochs}  loss {record['loss']:.4f}  train {record['train_acc']:.4f}  "
        f"valid {_format_acc(record['valid_acc'])}  test {_format_acc(record['test_acc'])}  |  "
        f"{record['batches_per_s']:.1f} batch/s  {times}  features {_format_bytes(record['feature_bytes'])}"
    )


def _progress_factory(console: Any) -> Callable[[str, int], Callable[[int, dict[str, Any]], None]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    def factory(label: str, total: int) -> Callable[[int, dict[str, Any]], None]:
        progress = Progress(
            TextColumn("{task.description:>9}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("{task.fields[loss]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        task = progress.add_task(label, total=total, rate="", loss="")
        progress.start()
        started = time.perf_counter()

        def tick(done: int, info: dict[str, Any]) -> None:
            elapsed = max(time.perf_counter() - started, 1e-9)
            loss = f"loss {info['loss']:.4f}" if "loss" in info else ""
            progress.update(task, completed=done, rate=f"{done / elapsed:.1f} batch/s", loss=loss)
            if done >= total:
                progress.stop()

        return tick

    return factory


@click.command("train")
@click.argument("dataset", type=click.Path(file_okay=False, path_type=str))
@click.option("--model", default="sage", show_default=True, help="sage | gcn | gat | mlp (features only).")
@click.option("--sampler", default="neighbor", show_default=True, help="neighbor | shadow.")
@click.option(
    "--fanouts",
    default="25,10",
    show_default=True,
    type=fanouts_option_type("--fanouts"),
    help="Neighbours per hop, first hop from the seeds first (PyG order); -1 = all neighbours.",
)
@click.option("--layers", type=int, default=None, help="Model depth (default: number of fanouts; ShaDow/MLP may differ).")
@click.option("--batch-size", default=1024, show_default=True, type=int)
@click.option("--hidden", default=256, show_default=True, type=int)
@click.option("--heads", default=4, show_default=True, type=int, help="GAT attention heads.")
@click.option("--norm", default="none", show_default=True, help="none | batch | layer.")
@click.option("--dropout", default=0.5, show_default=True, type=float)
@click.option("--epochs", default=10, show_default=True, type=int)
@click.option("--lr", default=0.003, show_default=True, type=float)
@click.option("--weight-decay", default=0.0, show_default=True, type=float)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--device", default="cpu", show_default=True, help="cpu | cuda | cuda:N.")
@click.option("--eval-every", default=1, show_default=True, type=int, help="Evaluate every N epochs.")
@click.option(
    "--eval-fanouts",
    default=None,
    type=fanouts_option_type("--eval-fanouts"),
    help="Fanouts for sampled evaluation (default: --fanouts); larger is closer to exact.",
)
@click.option("--eval-batch-size", default=4096, show_default=True, type=int)
@click.option(
    "--full-inference/--sampled-inference",
    default=False,
    show_default=True,
    help="Final valid/test accuracy by exact layer-wise full-neighbour inference (neighbour sampler).",
)
@click.option("--num-threads", type=int, default=None, help="CPU threads for sampling and compute.")
@click.option("--prefetch", default=4, show_default=True, type=int, help="Mini-batches prepared ahead.")
@click.option("--checkpoint", type=click.Path(path_type=str), default=None, help="Directory: save every epoch, resume.")
@click.option("--report", type=click.Path(dir_okay=False, path_type=str), default=None, help="Write the run report JSON.")
@click.option("--quiet", is_flag=True, help="Print only the final result line.")
def command(dataset: str, **options: Any) -> None:
    """Train a GNN on DATASET with mini-batch neighbour sampling.

    Prints one line per epoch (loss, accuracies, mini-batches/s, time per stage: sample, extract,
    transfer, train, total) and the final test accuracy of the best-validation model.
    """
    from rich.console import Console

    from graphtier.dataset import Dataset
    from graphtier.train import TrainConfig, Trainer

    config = TrainConfig(**options)
    data = Dataset.open(dataset)
    console = Console(stderr=True)
    quiet = config.quiet

    def on_epoch(record: dict[str, Any]) -> None:
        if not quiet:
            click.echo(epoch_summary(record, config.epochs))

    trainer = Trainer(
        data,
        config,
        on_epoch=on_epoch,
        progress=None if quiet or not console.is_terminal else _progress_factory(console),
    )
    if not quiet:
        layers = config.num_layers
        click.echo(
            f"training {config.model} ({layers} layers, hidden {config.hidden}) on {data.name}: "
            f"{data.num_nodes:,} nodes, {data.num_edges:,} edges, {len(data.train_idx) if data.train_idx is not None else 0:,} train nodes, "
            f"sampler {config.sampler} fanouts {','.join(map(str, config.fanouts))}, device {config.device}"
        )
        if trainer.start_epoch > 1:
            click.echo(f"resumed from {config.checkpoint} after epoch {trainer.start_epoch - 1}")
    report = trainer.fit()
    final = report["final"]
    click.echo(
        f"final ({final['method']} inference, best epoch {final['epoch']}): "
        f"valid_acc {_format_acc(final['valid_acc'])}  test_acc {_format_acc(final['test_acc'])}"
    )
    if config.report and not quiet:
        click.echo(f"report written to {config.report}")
