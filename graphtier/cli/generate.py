"""``graphtier generate OUTPUT --nodes N --avg-degree D ...``: a synthetic power-law dataset.

Mirrors :func:`graphtier.dataset.synthetic.generate.generate`; see its module docstring for the model. With ``--hetero
mag``: :func:`graphtier.dataset.synthetic.synthetic_mag.generate_mag`, a typed MAG-like graph.
"""

from __future__ import annotations

import time
from typing import Any

import click

from graphtier.cli.common.options import SEED
from graphtier.cli.common.progress import cli_progress
from graphtier.dataset.format import FEATURE_DTYPES
from graphtier.dataset.synthetic import generate as synthetic
from graphtier.dataset.synthetic import synthetic_mag
from graphtier.errors import OptionError

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
    default=None,
    help="Expected in-degree before duplicate edges/self-loops are dropped (edges ~ nodes * this); required "
    "without --hetero. With --hetero mag: the citations per paper (default "
    f"{synthetic_mag.DEFAULT_DEGREES['cites']:g}).",
)
@click.option(
    "--hetero",
    type=click.Choice([synthetic_mag.KIND]),
    default=None,
    help="Generate a typed graph instead: 'mag' = papers (--nodes, the labelled type with features), authors, "
    "institutions and fields with cites / writes / affiliated_with / has_topic relations.",
)
@click.option(
    "--relation-degrees",
    default=None,
    metavar="NAME=D,...",
    help="--hetero: edges drawn per node of the relation's counted type (cites, writes, has_topic: per paper; "
    "affiliated_with: per author); default "
    + ",".join(f"{name}={degree:g}" for name, degree in synthetic_mag.DEFAULT_DEGREES.items())
    + ".",
)
@click.option(
    "--add-reverse/--no-reverse",
    default=None,
    help="--hetero: also store (dst, rev_NAME, src) for every relation (default: yes).",
)
@click.option("--num-classes", type=int, default=synthetic.DEFAULT_NUM_CLASSES, show_default=True)
@click.option(
    "--feature-dim", type=int, default=synthetic.DEFAULT_FEATURE_DIM, show_default=True, help="0 writes no features."
)
@click.option(
    "--edge-feature-dim",
    type=int,
    default=0,
    show_default=True,
    metavar="D",
    help="Write edge_feat.npy: D random values in [-1, 1) per edge (--feature-dtype; deterministic per --seed); "
    "0 writes none.",
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
    "--split-relation",
    default=None,
    metavar="SRC,REL,DST",
    help="--hetero: the relation whose edges --edge-split holds out (or its name alone, e.g. writes).",
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

    With --hetero mag: a typed graph of --nodes papers (features, labels, splits), as many authors,
    1/50 as many institutions and 1/100 as many fields, the same model per relation, and the
    reverse of every relation unless --no-reverse.
    """
    started = time.perf_counter()
    progress = cli_progress(quiet)
    hetero, degrees, add_reverse = options.pop("hetero"), options.pop("relation_degrees"), options.pop("add_reverse")
    if hetero is None:
        split_relation = options.pop("split_relation")
        for flag, value in (
            ("--relation-degrees", degrees),
            ("--add-reverse/--no-reverse", add_reverse),
            ("--split-relation", split_relation),
        ):
            if value is not None:
                raise OptionError(f"generate: option {flag} applies to --hetero only, found {value!r}")
        if options["avg_degree"] is None:
            raise OptionError("generate: option --avg-degree expected a number (required without --hetero), found none")
        dataset = synthetic.generate(output, progress=progress, **options)
    else:
        edge_dim = options.pop("edge_feature_dim")
        if edge_dim:
            raise OptionError(
                f"generate: option --edge-feature-dim applies to homogeneous graphs only, found {edge_dim}"
            )
        cites = options.pop("avg_degree")
        if cites is not None:
            degrees = f"cites={cites}" + (f",{degrees}" if degrees else "")
        dataset = synthetic_mag.generate_mag(
            output, degrees=degrees, add_reverse=add_reverse is not False, progress=progress, **options
        )
        seconds = time.perf_counter() - started
        counts = ", ".join(f"{t.count:,} {t.name}" for t in dataset.schema.node_types)
        click.echo(
            f"wrote {dataset.path}: {counts}; {dataset.num_edges:,} edges of {len(dataset.schema.relations)} "
            f"relations, {dataset.type_features[synthetic_mag.TARGET].shape[1] if dataset.type_features else 0} "
            f"paper features, {dataset.num_classes} classes in {seconds:.1f}s"
        )
        return
    seconds = time.perf_counter() - started
    click.echo(
        f"wrote {dataset.path}: {dataset.num_nodes:,} nodes, {dataset.num_edges:,} edges "
        f"({'directed' if dataset.directed else 'undirected'}), {dataset.feature_dim} features, "
        f"{dataset.num_classes} classes in {seconds:.1f}s ({dataset.num_edges / max(seconds, 1e-9) / 1e6:.1f}M edges/s)"
    )
