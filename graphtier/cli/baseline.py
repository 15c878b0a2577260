"""``graphtier baseline DATASET``: the metrics of EdgeBank, the memory baseline of temporal link prediction, on
the evaluation pairs of a split by time (``prepare edgelist --time-column T --edge-split F --split-by time``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from graphtier.dataset.edges.edgebank import edgebank_split_scores
from graphtier.dataset.edges.link_split import EVAL_SPLITS
from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError


def edgebank_metrics(dataset: Dataset, split: str, hits_k: int) -> dict[str, Any]:
    """EdgeBank's metrics on ``split`` of ``dataset``'s split by time: ``auc``, ``ap`` (negative pairs) or ``mrr``
    (K negatives per positive), ``hits@K``, the ``positives``/``negatives`` counts and ``positive_hit_rate``
    (the share of positives whose edge happened before: EdgeBank's score 1)."""
    # the metrics of training (LinkTask.metrics) load torch: only when the command runs, so --help stays fast
    from graphtier.train.loop.task import LinkTask
    from graphtier.train.options.spec import TaskSpec

    positive, negative = edgebank_split_scores(dataset, split)
    task = LinkTask(TaskSpec(task="link", hits_k=hits_k), per_positive=negative.ndim == 2)
    metrics: dict[str, Any] = {"method": "edgebank", "split": split, "positives": int(positive.shape[0]),
                               "negatives": int(negative.size)}  # fmt: skip
    metrics.update(
        {key.removeprefix(f"{split}_"): value for key, value in task.metrics(split, positive, negative).items()}
    )
    metrics["positive_hit_rate"] = float(positive.mean()) if positive.size else None
    return metrics


@click.command("baseline")
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option(
    "--method",
    type=click.Choice(("edgebank",)),
    default="edgebank",
    show_default=True,
    help="edgebank: a pair scores 1 when its edge is in the graph with an earlier time than the pair's "
    "(Poursafaei et al. 2022, unlimited memory); needs a split by time (prepare --split-by time).",
)
@click.option("--split", type=click.Choice(EVAL_SPLITS), default="test", show_default=True, help="The pairs scored.")
@click.option("--hits-k", type=int, default=10, show_default=True, help="K of Hits@K.")
@click.option("--json", "as_json", is_flag=True, help="Print the metrics as one JSON object.")
def command(dataset: Path, method: str, split: str, hits_k: int, as_json: bool) -> None:
    """Score the held-out pairs of DATASET's split by time with a baseline that learns nothing, and print AUC
    and AP (negative pairs) or MRR (K negatives per positive) and Hits@K: the bar a temporal model must clear.

    \b
    graphtier prepare edgelist soc-sign-bitcoinalpha.csv data/btc-time --time-column timestamp \\
        --edge-split 0.70,0.15,0.15 --split-by time
    graphtier baseline data/btc-time --split test
    """
    if hits_k < 1:
        raise OptionError.invalid("hits_k", "an integer >= 1", hits_k)
    metrics = edgebank_metrics(Dataset.open(dataset), split, hits_k)
    if as_json:
        click.echo(json.dumps(metrics))
        return
    shown = "  ".join(f"{key} {value:.4f}" for key, value in metrics.items()
                      if key in ("auc", "ap", "mrr", f"hits@{hits_k}") and value is not None)  # fmt: skip
    click.echo(
        f"{method} on {split} ({metrics['positives']:,} positives, {metrics['negatives']:,} negatives): {shown}; "
        f"{100 * (metrics['positive_hit_rate'] or 0):.1f}% of the positives repeat an earlier edge"
    )
