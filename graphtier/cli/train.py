"""``graphtier train DATASET``: mini-batch GNN training with stage timing and a run report."""

from __future__ import annotations

from typing import Any

import click

from graphtier._choices import LINK_TARGETS, TEMPORAL_STRATEGIES
from graphtier.cli.common.options import RELATION_FANOUTS, SEED, fanouts_option_type

# The fixed choices, spelled here so that `graphtier train --help` shows them without importing torch
# (tests/cli/test_train_cli.py checks they equal MODEL_NAMES, SAMPLER_NAMES, NORM_NAMES, GCN_DEGREES_OPTIONS, FEATURE_MODES,
# BALANCE_MODES, TASK_NAMES, DECODER_NAMES, NEGATIVE_SAMPLING, FEATURELESS_MODES).
MODEL_CHOICES = ("sage", "gcn", "gat", "gine", "mlp", "rgcn", "rgat", "hsage")
FEATURELESS_CHOICES = ("embedding", "onehot", "zeros")
SAMPLER_CHOICES = ("neighbor", "shadow")
NORM_CHOICES = ("none", "batch", "layer")
GCN_DEGREES_CHOICES = ("auto", "full", "block")
FEATURES_ON_CHOICES = ("cpu-gather", "zero-copy", "tiered", "tiered+cache")
BALANCE_CHOICES = ("dynamic", "static", "off")
TASK_CHOICES = ("node", "link")
DECODER_CHOICES = ("dot", "mlp")
NEGATIVE_SAMPLING_CHOICES = ("uniform", "degree")
# The default --fanouts, graphtier.sampling.DEFAULT_FANOUTS (the one default of every command), spelled here for
# the same reason (tests/cli/test_train_cli.py checks they agree).
FANOUTS_DEFAULT = "25,10"


@click.command("train")
@click.argument("dataset", type=click.Path(file_okay=False, path_type=str))
@click.option(
    "--task",
    type=click.Choice(TASK_CHOICES),
    default="node",
    show_default=True,
    help="node: classify nodes (labels); link: predict edges of the dataset's edge split (prepare --edge-split).",
)
@click.option(
    "--decoder",
    type=click.Choice(DECODER_CHOICES),
    default="dot",
    show_default=True,
    help="--task link: score a pair by the dot product of its embeddings, or an MLP of their Hadamard product.",
)
@click.option(
    "--num-negatives", default=1, show_default=True, type=int, help="--task link: negatives per training positive."
)
@click.option(
    "--negative-sampling",
    type=click.Choice(NEGATIVE_SAMPLING_CHOICES),
    default="uniform",
    show_default=True,
    help="--task link: training negatives' destinations uniform, or by in-degree^0.75.",
)
@click.option("--hits-k", default=10, show_default=True, type=int, help="--task link: the K of the reported Hits@K.")
@click.option(
    "--link-target",
    type=click.Choice(LINK_TARGETS),
    default=None,
    help="--task link on a dataset with edge-level targets (link_train_label.npy, e.g. prepare movielens's "
    "ratings): regression predicts each pair's value (MSE; RMSE, MAE), binary whether it exceeds --link-threshold "
    "(BCE; AUC, AP). No negatives are drawn.",
)
@click.option(
    "--link-threshold",
    default=0.0,
    show_default=True,
    type=float,
    help="--link-target binary: a pair is positive when its label is above this value.",
)
@click.option(
    "--model",
    type=click.Choice(MODEL_CHOICES),
    default="sage",
    show_default=True,
    help="GNN (sage, gcn, gat, gine: one node type; rgcn, rgat, hsage: typed datasets, or any), or mlp (features "
    "only, the baseline; the target type's features on a typed dataset). gat and gine read edge inputs (edge "
    "features, --time-encoding); gine needs them.",
)
@click.option(
    "--sampler",
    type=click.Choice(SAMPLER_CHOICES),
    default="neighbor",
    show_default=True,
    help="Neighbour sampling, or ShaDow subgraphs.",
)
@click.option(
    "--fanouts",
    default=FANOUTS_DEFAULT,
    show_default=True,
    type=fanouts_option_type("fanouts"),
    help="Neighbours per hop, first hop from the seeds first (PyG order); -1 = all neighbours.",
)
@click.option(
    "--fanouts-per-relation",
    type=RELATION_FANOUTS,
    default=None,
    help="Typed datasets: override --fanouts for some relations, e.g. writes=5,cites=10/5 (NAME=F at every hop or "
    "NAME=F1/F2 per hop; NAME a relation name, or src___name___dst when the name is not unique).",
)
@click.option(
    "--layers", type=int, default=None, help="Model depth (default: number of fanouts; ShaDow/MLP may differ)."
)
@click.option("--batch-size", default=1024, show_default=True, type=int)
@click.option("--hidden", default=256, show_default=True, type=int)
@click.option("--heads", default=4, show_default=True, type=int, help="GAT / R-GAT attention heads.")
@click.option(
    "--featureless",
    type=click.Choice(FEATURELESS_CHOICES),
    default="embedding",
    show_default=True,
    help="Typed models: input of a node type without features (a learnable table per type, the first layer's "
    "weight indexed by id, or a constant zero).",
)
@click.option(
    "--num-bases", default=0, show_default=True, type=int, help="R-GCN basis decomposition (0: a weight per relation)."
)
@click.option(
    "--norm", type=click.Choice(NORM_CHOICES), default="none", show_default=True, help="Normalisation between layers."
)
@click.option(
    "--gcn-degrees",
    type=click.Choice(GCN_DEGREES_CHOICES),
    default="auto",
    show_default=True,
    help="GCN only: normalise a sampled block by full-graph in-degrees (unbiased estimate of the "
    "full-graph GCN) or by the block's own in-degrees (as DGL's GraphConv); auto: full with "
    "--full-inference, else block (the better one of each evaluation, measured). Exact inference "
    "uses full in-degrees with either.",
)
@click.option("--dropout", default=0.5, show_default=True, type=float)
@click.option("--epochs", default=10, show_default=True, type=int)
@click.option("--lr", default=0.003, show_default=True, type=float)
@click.option("--weight-decay", default=0.0, show_default=True, type=float)
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--device", default="cpu", show_default=True, help="cpu | cuda | cuda:N.")
@click.option("--eval-every", default=1, show_default=True, type=int, help="Evaluate every N epochs.")
@click.option(
    "--eval-fanouts",
    default=None,
    type=fanouts_option_type("eval_fanouts"),
    help="Fanouts for sampled evaluation (default: --fanouts); larger is closer to exact.",
)
@click.option(
    "--temporal",
    type=click.Choice(TEMPORAL_STRATEGIES),
    default=None,
    help="Sample each seed at its time, reading only strictly earlier edges, uniformly or the most recent: link "
    "prediction on a time split (prepare ... --time-column T --split-by time; without it a time split trains on the "
    "training period's graph as a static snapshot), or node classification with node times (each node at its own "
    "time; prepare ogb reads raw/node_year).",
)
@click.option(
    "--time-encoding",
    default=0,
    show_default=True,
    type=int,
    metavar="DIM",
    help="--temporal with --model gat|gine: each edge's age (its destination's time minus the edge's) as DIM "
    "features cos(age * w + b) (TGAT's time encoding; 0: off).",
)
@click.option(
    "--time-encoding-fixed",
    is_flag=True,
    default=False,
    help="Keep the time encoding's frequencies w = 1/10^linspace(0, 9, DIM) and b = 0 instead of learning them.",
)
@click.option("--eval-batch-size", default=4096, show_default=True, type=int)
@click.option(
    "--full-inference/--sampled-inference",
    default=False,
    show_default=True,
    help="Final valid/test accuracy by exact layer-wise full-neighbour inference (neighbour sampler); "
    "--task link: every epoch's validation too (it picks the best epoch).",
)
@click.option("--num-threads", type=int, default=None, help="CPU threads for sampling and compute.")
@click.option(
    "--prefetch",
    default=4,
    show_default=True,
    type=int,
    help="Mini-batches prepared ahead by a background thread (0: none, no overlap).",
)
@click.option("--checkpoint", type=click.Path(path_type=str), default=None, help="Directory: save every epoch, resume.")
@click.option(
    "--report", type=click.Path(dir_okay=False, path_type=str), default=None, help="Write the run report JSON."
)
@click.option(
    "--save-model",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="Write the best model (weights, model options, dataset fingerprint) for 'graphtier predict'.",
)
@click.option(
    "--features-on",
    type=click.Choice(FEATURES_ON_CHOICES),
    default="cpu-gather",
    show_default=True,
    help="Where features live (cpu-gather: the DGL/PyG baseline).",
)
@click.option(
    "--gpu-budget", default=None, help="Hot rows kept on the GPU (tiered): bytes (4GiB), fraction (10%) or auto."
)
@click.option(
    "--cache-budget",
    default=None,
    help="GPU row cache in front of the cold tiers (tiered+cache): bytes, fraction or auto.",
)
@click.option(
    "--ram-budget", default=None, help="Rows kept in RAM; the rest are read from the memory-mapped file (disk tier)."
)
@click.option(
    "--peer-partitions", default=1, show_default=True, type=int, help="GPUs the hot tier is interleaved over."
)
@click.option(
    "--tables-on",
    type=click.Choice(["ram", "disk"]),
    default="ram",
    show_default=True,
    help="Typed models' learnable tables (featureless types): rows beyond the device's share in RAM, or in unlinked "
    "scratch files on disk (a CPU run: every row), read through the page cache; for tables larger than RAM.",
)
@click.option(
    "--scratch-dir",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    help="--tables-on disk: the directory of the scratch files (deleted at once, nothing left) [default: the "
    "system's temporary directory].",
)
@click.option(
    "--edge-features",
    is_flag=True,
    default=False,
    help="Feed each sampled edge's row of edge_feat.npy to the model (PyG's edge_attr; a model with edge inputs), "
    "placed like the node features by --features-on and the budgets; bytes per tier reported apart.",
)
@click.option(
    "--sample-on",
    type=click.Choice(("cpu", "gpu")),
    default="cpu",
    show_default=True,
    help="Neighbour sampling on the CPU (numba) or the GPU (Triton, needs --device cuda); same batches either way.",
)
@click.option(
    "--topology-budget",
    default=None,
    help="--sample-on gpu: edge lists kept in GPU memory (hottest first): bytes, fraction of edges or auto; "
    "the rest is read zero-copy from host RAM (and from the memory map beyond --ram-budget).",
)
@click.option(
    "--devices",
    default=None,
    help="Several trainer processes at once, e.g. cpu,cuda:0 or cpu,cpu (synchronous SGD over torch.distributed).",
)
@click.option(
    "--balance",
    type=click.Choice(BALANCE_CHOICES),
    default="dynamic",
    show_default=True,
    help="Workload balancing of multi-process runs.",
)
@click.option("--cpu-share", type=float, default=None, help="Starting workload share of the CPU ranks (mixed runs).")
@click.option(
    "--shares", default=None, help="Starting workload share of every rank, e.g. 0.3,0.7 (overrides --cpu-share)."
)
@click.option("--rebalance-every", default=10, show_default=True, type=int, help="Iterations between rebalances.")
@click.option("--cpu-threads", type=int, default=None, help="Threads per rank (default: cores / ranks).")
@click.option("--quiet", is_flag=True, help="Print only the final result line.")
def command(dataset: str, **options: Any) -> None:
    """Train a GNN on DATASET with mini-batch neighbour sampling.

    Prints one line per epoch (loss, accuracies, mini-batches/s, time per stage: sample, extract,
    transfer, train, total) and the final test accuracy of the best-validation model. With --task link:
    validation AUC/AP/Hits@K per epoch and the final test metrics from exact layer-wise embeddings.
    """
    from graphtier.dataset import Dataset
    from graphtier.train.options.config import TrainConfig

    # every option goes to the spec with a field of its name, which parses and checks it (TrainConfig)
    config = TrainConfig(**options)
    data = Dataset.open(dataset)
    # the models and PyG only now: a mistyped option or dataset path is reported without waiting for them
    from graphtier._process import configure_process
    from graphtier.cli.common.progress import cli_progress
    from graphtier.train.loop.launch import launch, under_torchrun
    from graphtier.train.loop.report import epoch_summary, final_summary
    from graphtier.train.loop.trainer import Trainer

    devices = config.distributed.devices
    if devices is not None and (len(devices) > 1 or under_torchrun()):
        config.validate(data)
        if not config.run.quiet and not under_torchrun():
            click.echo(
                f"training {config.network.model} on {data.name} with {len(devices)} trainer processes "
                f"({', '.join(devices)}), balance {config.distributed.balance}"
            )
        multi_report = launch(dataset, config)
        if multi_report is not None:
            final = multi_report["final"]
            balancer = multi_report["balancer"]
            click.echo(
                final_summary(final, multi_report["config"])
                + "  shares "
                + ", ".join(f"{device} {share:.3f}" for device, share in zip(devices, balancer["final_shares"]))
            )
        return
    if devices is not None:
        config = config.with_options(device=devices[0])
    quiet = config.run.quiet

    def on_epoch(record: dict[str, Any]) -> None:
        if not quiet:
            click.echo(epoch_summary(record, config.optim.epochs))

    configure_process(config.run.num_threads, passive_wait=False)  # --num-threads, malloc (wait policy: cli.main)
    trainer = Trainer(
        data,
        config,
        on_epoch=on_epoch,
        progress=cli_progress(quiet),
    )
    if not quiet:
        layers = config.num_layers
        seeds = f"{len(trainer.train_idx):,} train {'pairs' if config.objective.task == 'link' else 'nodes'}"
        fanouts = f"fanouts {config.sampling.fanouts}"
        if data.is_hetero:
            from graphtier.sampling.relation_fanouts import differing_fanouts_text

            differing = differing_fanouts_text(
                config.sampling.fanouts_per_relation, data.schema, config.sampling.fanouts
            )
            fanouts += f" (per relation: {differing})" if differing else ""
        click.echo(
            f"training {config.network.model} ({layers} layers, hidden {config.network.hidden}) on {data.name}: "
            f"{data.num_nodes:,} nodes, {data.num_edges:,} edges, {seeds}, "
            f"sampler {config.sampling.sampler} {fanouts} on {config.placement.sample_on}, "
            f"device {config.run.device}"
        )
        from graphtier.dataset.provenance import describe

        for note in describe(data.meta):
            click.echo(f"note: {note}")
        if trainer.start_epoch > 1:
            click.echo(f"resumed from {config.run.checkpoint} after epoch {trainer.start_epoch - 1}")
    report = trainer.fit()
    click.echo(final_summary(report["final"], report["config"]))
    if config.run.report and not quiet:
        click.echo(f"report written to {config.run.report}")
    if config.run.save_model and not quiet:
        click.echo(f"model written to {config.run.save_model}")
