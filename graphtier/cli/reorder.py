"""``graphtier reorder DATASET OUTPUT --score S``: renumber nodes hottest-first (Data Tiering, Alg. 2)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from graphtier.cli.common.options import score_options
from graphtier.cli.common.progress import cli_progress
from graphtier.cli.score import DEFAULT_SCORE, SCORE_METHODS, describe_types
from graphtier.dataset.format import Dataset
from graphtier.errors import DatasetError
from graphtier.graph.reorder import EDGE_ORDERS, load_score_file, reorder_dataset

if TYPE_CHECKING:
    from graphtier.tiering.replay import Replay


@click.command("reorder")
@click.argument("dataset", type=click.Path(path_type=Path))
@click.argument("output", type=click.Path(path_type=Path))
@click.option(
    "--score",
    "-s",
    "score",
    default=DEFAULT_SCORE,
    show_default=True,
    help=f"One of {', '.join(SCORE_METHODS)}, or a .npy file of float scores [N].",
)
@score_options
@click.option(
    "--edge-order",
    type=click.Choice(EDGE_ORDERS),
    default="auto",
    show_default=True,
    help="A dataset with edge features: write edge_feat.npy list by list in descending expected reads per edge "
    "(reads: fwr over the --fanouts and --task seeds, with edge_row.npy mapping each edge to its row), or in CSC "
    "order (csc); auto: reads when the task has training seeds, else csc.",
)
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it is a graphtier dataset and holds nothing else.")
def command(
    dataset: Path,
    output: Path,
    score: str,
    damping: float,
    tol: float,
    iterations: int | None,
    replay: Replay,
    edge_order: str,
    overwrite: bool,
) -> None:
    """Write DATASET to OUTPUT with nodes renumbered by descending score (ties by old id).

    OUTPUT is a normal dataset; its perm.npy maps each new id to the original id. A typed dataset is reordered
    per node type (each type by its own scores, within its id range), its relations remapped.
    """
    data = Dataset.open(dataset)
    progress = cli_progress()
    if score in SCORE_METHODS:
        from graphtier.tiering.hotness import compute_scores

        result = compute_scores(
            data, score, damping=damping, tol=tol, iterations=iterations, replay=replay, progress=progress,
            option="score",
        )  # fmt: skip
        scores, label, params = result.scores, score, result.params
        click.echo(f"scored {data.num_nodes:,} nodes by {score} in {result.seconds:.2f} s")
        warning = result.convergence_warning(tol)
        if warning:
            click.echo(f"graphtier: warning: {warning}", err=True)
    else:
        scores = load_score_file(score, data.num_nodes)
        label, params = str(Path(score).resolve()), {}
    for text in describe_types(data.schema, scores):
        click.echo(text)
    edge_reads = None
    if edge_order != "csc" and data.edge_features is not None:
        from graphtier.tiering.hotness import list_reads
        from graphtier.tiering.seeds import training_seeds

        try:
            training_seeds(data, replay.seeds)  # reads order needs the task's training seeds; auto goes without them
        except DatasetError as error:
            if edge_order == "reads":
                raise
            click.echo(f"graphtier: note: the edge table stays in CSC order (--edge-order reads: {error})", err=True)
        else:
            edge_reads = list_reads(data, replay=replay, progress=progress)
            click.echo(f"edge table: lists in descending expected reads per edge (fwr, fanouts {list(replay.fanouts)})")
    reordered, timings = reorder_dataset(
        data, output, scores, score_label=label, score_params=params, overwrite=overwrite, progress=progress,
        edge_list_reads=edge_reads,
    )  # fmt: skip
    edges_per_s = timings.num_edges / timings.topology_seconds if timings.topology_seconds > 0 else float("inf")
    line = (
        f"reordered {data.num_nodes:,} nodes / {timings.num_edges:,} edges: sort {timings.sort_seconds:.2f} s, "
        f"topology {timings.topology_seconds:.2f} s ({edges_per_s / 1e6:.1f} M edges/s)"
    )
    if timings.feature_bytes:
        line += f", features {timings.feature_bytes / 2**30:.2f} GiB in {timings.feature_seconds:.2f} s"
    click.echo(line)
    if timings.dropped_arrays:
        click.echo(f"not carried over (unknown meaning): {', '.join(timings.dropped_arrays)}")
    click.echo(f"wrote {reordered.path}")
