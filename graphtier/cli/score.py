"""``graphtier score DATASET --score S``: node hotness scores (degree, rpr, wrpr, fwr, fwr-sum, presample)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click
import numpy as np

from graphtier._choices import DEFAULT_SCORE, SCORE_METHODS
from graphtier.cli.common.options import merge_alias, score_options
from graphtier.cli.common.progress import cli_progress
from graphtier.dataset.format import Dataset
from graphtier.dataset.outputs import check_outputs, save_npy
from graphtier.dataset.schema import Schema
from graphtier.errors import OptionError
from graphtier.graph.typed_scores import split_by_type

if TYPE_CHECKING:
    from graphtier.tiering.hotness import ScoreResult
    from graphtier.tiering.replay import Replay


def describe_types(schema: Schema, scores: np.ndarray, top: int = 0) -> list[str]:
    """One line per node type of a typed dataset: its nodes, its share of the total score and (``top`` > 0) its
    top-scored LOCAL ids; nothing for a homogeneous one."""
    if not schema.hetero:
        return []
    total = float(scores.sum())
    lines = ["per type (local ids):"]
    for name, values in split_by_type(scores, schema).items():
        share = float(values.sum()) / total if total > 0 else 0.0
        line = f"  {name}: {values.shape[0]:,} nodes, {100 * share:.1f}% of the total score"
        if top > 0 and values.shape[0]:
            order = np.argsort(-values, kind="stable")[:top]
            line += "; top " + ", ".join(f"{int(v)} ({values[v]:.4g})" for v in order)
        lines.append(line)
    return lines


def describe(result: ScoreResult) -> str:
    """One summary line of a score run."""
    scores = result.scores
    text = f"{result.method}: {scores.shape[0]:,} nodes scored in {result.seconds:.2f} s"
    if result.iterations:
        text += f" ({result.iterations} iterations"
        text += f", last L1 change {result.last_change:.2e})" if result.last_change is not None else ")"
    if result.method == "presample":
        text += f"; sampling cost {result.seconds:.2f} s for {result.params['epochs']} epoch(s)"
        text += f", {int(scores.sum()):,} feature reads, {int(np.count_nonzero(scores)):,} nodes read"
    return text


@click.command("score")
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option(
    "--score",
    "-s",
    "score",
    type=click.Choice(SCORE_METHODS),
    default=None,
    help=f"Score to compute [default: {DEFAULT_SCORE}] (fwr: expected reads under --fanouts/--batch-size).",
)
@click.option(
    "--method",
    "-m",
    "method",
    type=click.Choice(SCORE_METHODS),
    default=None,
    hidden=True,
    help="Old spelling of --score.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="Write the float64 [N] scores to this .npy file.",
)
@score_options
@click.option("--top", type=int, default=5, show_default=True, help="Print the ids of the top-scored nodes.")
def command(
    dataset: Path,
    score: str | None,
    method: str | None,
    output: Path | None,
    damping: float,
    tol: float,
    iterations: int | None,
    replay: Replay,
    top: int,
) -> None:
    """Score every node of DATASET by how often sampling is expected to read its features."""
    method = merge_alias(score, method, "--score", "--method")
    if method is None:
        method = DEFAULT_SCORE
    check_outputs([("output", output, "file")], dataset=dataset)
    if output is not None and output.suffix != ".npy":
        raise OptionError(f"--output: expected a file name ending in .npy, found {str(output)!r}")
    data = Dataset.open(dataset)
    from graphtier.tiering.hotness import compute_scores

    result = compute_scores(
        data, method, damping=damping, tol=tol, iterations=iterations, replay=replay, progress=cli_progress(),
        option="score",
    )  # fmt: skip
    click.echo(describe(result))
    warning = result.convergence_warning(tol)
    if warning:
        click.echo(f"graphtier: warning: {warning}", err=True)
    for line in describe_types(data.schema, result.scores, top):
        click.echo(line)
    if top > 0 and data.num_nodes:
        order = np.argsort(-result.scores, kind="stable")[:top]
        click.echo("top nodes: " + ", ".join(f"{int(v)} ({result.scores[v]:.4g})" for v in order))
    if output is not None:
        save_npy(output, result.scores, "output")
        click.echo(f"wrote {output}")
