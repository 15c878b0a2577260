"""``graphtier demo``: generate a small power-law graph and train on it, end to end."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

DEMO_GRAPH = dict(
    nodes=20_000,
    avg_degree=12,
    feature_dim=64,
    train_fraction=0.1,
    valid_fraction=0.05,
    test_fraction=0.1,
    seed=0,
)


@click.command("demo")
@click.option(
    "--workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("graphtier-demo"),
    show_default=True,
    help="Where the generated dataset and the run reports go (reused on a second run).",
)
@click.option("--epochs", default=5, show_default=True, type=int)
@click.option("--device", default="cpu", show_default=True, help="cpu | cuda.")
def command(workdir: Path, epochs: int, device: str) -> None:
    """Generate a 20k-node power-law graph, train GraphSAGE on it and compare with a features-only MLP.

    The same as running `graphtier generate` and then `graphtier train` twice; the reports are
    written to WORKDIR/sage.json and WORKDIR/mlp.json.
    """
    from graphtier._process import configure_process
    from graphtier.dataset import Dataset
    from graphtier.dataset.synthetic.generate import generate
    from graphtier.train import TrainConfig, Trainer
    from graphtier.train.loop.report import epoch_summary

    data_path = workdir / "data"
    if (data_path / "meta.json").is_file():
        dataset = Dataset.open(data_path)
        click.echo(f"using the demo dataset at {data_path}")
    else:
        click.echo(f"generating a demo dataset at {data_path} ...")
        dataset = generate(data_path, **DEMO_GRAPH)
    click.echo(
        f"{dataset.num_nodes:,} nodes, {dataset.num_edges:,} edges, {dataset.feature_dim} features, "
        f"{dataset.num_classes} classes, {len(dataset.train_idx) if dataset.train_idx is not None else 0:,} train nodes"
    )
    results: dict[str, Any] = {}
    configure_process(passive_wait=False)  # malloc tuning; the wait policy was set by graphtier.cli.main
    for model in ("sage", "mlp"):
        config = TrainConfig(
            model=model,
            fanouts=(10, 5),
            hidden=128,
            batch_size=256,
            epochs=epochs,
            eval_every=epochs,
            device=device,
            report=str(workdir / f"{model}.json"),
        )
        click.echo(f"\ntraining {model} ({'neighbour sampling, fanouts 10,5' if model != 'mlp' else 'features only'})")
        trainer = Trainer(dataset, config, on_epoch=lambda rec: click.echo(epoch_summary(rec, epochs)))
        results[model] = trainer.fit()["final"]["test_acc"]
    gain = (results["sage"] - results["mlp"]) * 100
    click.echo(
        f"\ntest accuracy: GraphSAGE {results['sage']:.4f}, features-only MLP {results['mlp']:.4f} "
        f"({gain:+.1f} points from the graph); reports in {workdir}/"
    )
