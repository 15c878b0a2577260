"""``graphtier generate OUTPUT --nodes N --avg-degree D ...``: a synthetic power-law dataset.

Mirrors :func:`graphtier.dataset.synthetic.generate`; see its module docstring for the model.
"""

from __future__ import annotations

import time
from typing import Any

import click

from graphtier.cli.options import SEED
from graphtier.dataset import synthetic
from graphtier.dataset.format import FEATURE_DTYPES

_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9, "b": 10**9}


class CountType(click.ParamType):
    """A non-negative integer, optionally written ``20M``, ``1.5k``, ``2_000_000`` or ``2,000,000``."""

    name = "count"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip().replace("_", "").replace(",", "")
        scale = 1
        if text and text[-1].lower() in _SUFFIXES:
            scale = _SUFFIXES[text[-1].lower()]
            text = text[:-1]
        try:
            number = float(text) * scale if scale != 1 or "." in text or "e" in text.lower() else int(text)
        except ValueError:
            self.fail(f"expected an integer such as 1000000, 1M or 2_000_000, found {value!r}", param, ctx)
        if number != int(number):
            self.fail(f"expected a whole number, found {value!r}", param, ctx)
        return int(number)


COUNT = CountType()


@click.command("generate")
@click.argument("output", type=click.Path(file_okay=False, dir_okay=True))
@click.option("--nodes", type=COUNT, required=True, help="Number of nodes (accepts 1M, 10k, 2_000_000).")
@click.option(
    "--avg-degree",
    type=float,
    required=True,
    help="Expected in-degree before duplicate edges/self-loops are dropped (edges ~ nodes * this).",
)
@click.option("--num-classes", type=int, default=synthetic.DEFAULT_NUM_CLASSES, show_default=True)
@click.option(
    "--feature-dim", type=int, default=synthetic.DEFAULT_FEATURE_DIM, show_default=True, help="0 writes no features."
)
@click.option(
    "--degree-exponent",
    type=float,
    default=synthetic.DEFAULT_DEGREE_EXPONENT,
    show_default=True,
    help="Power-law exponent gamma of the degree weights.",
)
@click.option(
    "--homophily",
    type=float,
    default=synthetic.DEFAULT_HOMOPHILY,
    show_default=True,
    help="Probability that an edge stays inside its destination's class.",
)
@click.option(
    "--feature-noise",
    type=float,
    default=synthetic.DEFAULT_FEATURE_NOISE,
    show_default=True,
    help="Per-dimension std of the noise around unit-norm class centroids.",
)
@click.option("--train-fraction", type=float, default=synthetic.DEFAULT_TRAIN_FRACTION, show_default=True)
@click.option("--valid-fraction", type=float, default=synthetic.DEFAULT_VALID_FRACTION, show_default=True)
@click.option("--test-fraction", type=float, default=synthetic.DEFAULT_TEST_FRACTION, show_default=True)
@click.option("--feature-dtype", type=click.Choice(FEATURE_DTYPES), default="float32", show_default=True)
@click.option(
    "--undirected/--directed",
    default=True,
    show_default=True,
    help="Store every drawn pair in both directions (default), or keep edges directed.",
)
@click.option(
    "--max-degree",
    type=float,
    default=None,
    help="Largest expected degree (hub size). Default: 4 * sqrt(nodes * avg-degree).",
)
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option(
    "--edge-split",
    default=None,
    metavar="TRAIN,VALID,TEST",
    help="Link prediction: hold out random edges, fractions summing to 1 (as graphtier prepare --edge-split).",
)
@click.option(
    "--eval-negatives",
    type=int,
    default=0,
    show_default=True,
    metavar="K",
    help="Negatives of each valid/test edge: 0 = random non-edge pairs, K = K destinations per positive.",
)
@click.option(
    "--chunk-edges",
    type=COUNT,
    default=synthetic.DEFAULT_CHUNK_EDGES,
    show_default=True,
    help="Edges drawn per kernel call and feature values per written block (the feature buffer); "
    "does not change the output.",
)
@click.option("--overwrite", is_flag=True, help="Replace OUTPUT if it is a graphtier dataset and holds nothing else.")
@click.option("--quiet", "-q", is_flag=True, help="Print only the final summary line.")
def command(output: str, quiet: bool, **options: Any) -> None:
    """Generate a synthetic power-law dataset (degree-corrected stochastic block model) at OUTPUT.

    Every node gets a class and a power-law degree weight; every edge picks its endpoints
    proportionally to the weights, inside one class with probability --homophily. Features are
    class centroid + Gaussian noise, so the graph helps predict labels. The output depends only
    on the options and --seed.
    """
    started = time.perf_counter()
    progress = None if quiet else (lambda message: click.echo(f"  {message}", err=True))
    dataset = synthetic.generate(output, progress=progress, **options)
    seconds = time.perf_counter() - started
    click.echo(
        f"wrote {dataset.path}: {dataset.num_nodes:,} nodes, {dataset.num_edges:,} edges "
        f"({'directed' if dataset.directed else 'undirected'}), {dataset.feature_dim} features, "
        f"{dataset.num_classes} classes in {seconds:.1f}s ({dataset.num_edges / max(seconds, 1e-9) / 1e6:.1f}M edges/s)"
    )
