"""``graphtier analyze DATASET``: replay the sampler and measure each score's hit ratio (Data Tiering Fig. 7/9)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from graphtier.cli.common.options import merge_alias, replay_options
from graphtier.cli.common.progress import cli_progress
from graphtier.cli.score import SCORE_METHODS
from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError

if TYPE_CHECKING:
    from graphtier.tiering.replay import Replay


def format_table(curves: dict[str, dict[str, float]]) -> str:
    """A plain-text table: one row per ranking, one column per top-x% tier, shares in %."""
    keys = list(next(iter(curves.values())).keys())
    header = f"{'ranking':<10}" + "".join(f"{'top ' + k + '%':>9}" for k in keys)
    rows = [header, "-" * len(header)]
    for name, curve in curves.items():
        rows.append(f"{name:<10}" + "".join(f"{100 * curve[k]:>8.1f}%" for k in keys))
    return "\n".join(rows)


@click.command("analyze")
@click.argument("dataset", type=click.Path(path_type=Path))
@replay_options
@click.option(
    "--score",
    "-s",
    "score_list",
    default=None,
    help=f"Comma-separated scores to evaluate, from: {', '.join(SCORE_METHODS)}  [default: all]",
)
@click.option("--scores", "scores_alias", default=None, hidden=True, help="Old spelling of --score.")
@click.option("--presample-seed", type=int, default=None, help="Seed of the presample ranking (default seed+1).")
@click.option("--presample-epochs", type=int, default=None, help="Epochs of the presample ranking (default --epochs).")
@click.option("--damping", type=float, default=0.85, show_default=True, help="rpr/wrpr damping.")
@click.option("--iterations", type=int, default=None, help="wrpr: iterations run (default 5, as in Algorithm 1).")
@click.option(
    "--wrpr-iterations", "iterations_alias", type=int, default=None, hidden=True, help="Old spelling of --iterations."
)
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Write the curves as JSON.")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Write a cumulative-access PNG (needs matplotlib).",
)
@click.option(
    "--cache-budget",
    "cache_budgets",
    default=None,
    metavar="B1,B2,...",
    help="Also replay the trace against a RAM cache of each budget (fractions like 10%,25%,50%, or bytes) under "
    "static (fwr), static+lru, LRU, CLOCK, SIEVE, S3-FIFO and Belady's optimum; one warm-up epoch first.",
)
def command(
    dataset: Path,
    replay: Replay,
    score_list: str | None,
    scores_alias: str | None,
    presample_seed: int | None,
    presample_epochs: int | None,
    damping: float,
    iterations: int | None,
    iterations_alias: int | None,
    json_path: Path | None,
    plot_path: Path | None,
    cache_budgets: str | None,
) -> None:
    """Measure how much of all feature reads a hot tier of the top x% nodes would serve, per score (a typed
    dataset: in total and per node type)."""
    chosen = score_list is not None or scores_alias is not None
    score_list = merge_alias(score_list, scores_alias, "--score", "--scores", default=",".join(SCORE_METHODS))
    wrpr_iterations = merge_alias(iterations, iterations_alias, "--iterations", "--wrpr-iterations")
    methods = [m.strip() for m in score_list.split(",") if m.strip()]
    if not methods:
        raise OptionError(f"--score: expected names from {', '.join(SCORE_METHODS)}, found {score_list!r}")
    unknown = [m for m in methods if m not in SCORE_METHODS]
    if unknown:
        raise OptionError(f"--score: expected names from {', '.join(SCORE_METHODS)}, found {', '.join(unknown)!r}")
    data = Dataset.open(dataset)
    from graphtier.tiering.access import HIT_PERCENTS, analyze_access, interpret_access, plot_access
    from graphtier.tiering.cache.simulate import cache_budgets as check_cache_budgets
    from graphtier.tiering.cache.simulate import cache_policy_table

    if cache_budgets is not None:
        check_cache_budgets(data, cache_budgets)  # a bad budget fails before the replay
    from graphtier.tiering.hotness import TYPED_SCORE_METHODS

    if data.is_hetero and not chosen:  # all the scores a typed dataset defines
        methods = [m for m in methods if m in TYPED_SCORE_METHODS]
    for path, name in ((json_path, "--json"), (plot_path, "--plot")):
        if path is not None and not path.parent.is_dir():
            raise OptionError(f"{name}: directory {path.parent} does not exist")
    analysis = analyze_access(
        data, replay=replay, methods=methods, presample_seed=presample_seed, presample_epochs=presample_epochs,
        percents=HIT_PERCENTS, damping=damping, wrpr_iterations=wrpr_iterations, progress=cli_progress(),
        option="score",
    )  # fmt: skip
    nodes_read = int((analysis.counts > 0).sum())
    click.echo(
        f"{data.name}: {analysis.total_reads:,} feature reads of {nodes_read:,} / {data.num_nodes:,} nodes "
        f"({replay.epochs} epoch(s), {replay.summary()}, replay {analysis.seconds['replay']:.1f} s)"
    )
    click.echo(format_table(analysis.curves))
    for name, curves in analysis.curves_by_type.items():
        count = data.schema.node_type(name).count
        share = analysis.reads_by_type[name] / max(1, analysis.total_reads)
        click.echo(
            f"{name}: {count:,} nodes, {analysis.reads_by_type[name]:,} reads ({100 * share:.1f}%), top x% of {name}"
        )
        click.echo(format_table(curves))
    if "presample" in analysis.scores:
        click.echo(
            f"presample ranking: seed {analysis.config['presample_seed']}, "
            f"{analysis.config['presample_epochs']} epoch(s), {analysis.seconds['presample']:.1f} s of sampling"
        )
    click.echo(interpret_access(analysis))
    record = analysis.to_json()
    if cache_budgets is not None:
        table = cache_policy_table(
            data, cache_budgets, replay=replay, scores=analysis.scores.get("fwr"), progress=cli_progress()
        )
        click.echo(
            f"cache policies: {table.accesses:,} reads of {table.distinct:,} rows in {replay.epochs} epoch(s) after "
            "one warm-up epoch; static = the fwr-hottest rows fixed"
        )
        click.echo(table.format())
        record["cache_policies"] = table.to_json()
    if json_path is not None:
        tmp = json_path.with_name(f".{json_path.name}.tmp")
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        tmp.replace(json_path)
        click.echo(f"wrote {json_path}")
    if plot_path is not None:
        plot_access(analysis, plot_path)
        click.echo(f"wrote {plot_path}")
