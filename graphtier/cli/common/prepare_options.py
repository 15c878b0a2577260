"""The options shared by the ``graphtier prepare`` subcommands.

:func:`common_options` declares SOURCE, OUTPUT, ``--name`` and ``--overwrite``; :func:`import_options` declares
the click option of each :class:`~graphtier.dataset.importers.assemble.options.ImportOptions` field a format accepts
(one definition per option, in :data:`IMPORT_OPTION_DECLARATIONS`) and hands the command one built
``options: ImportOptions`` instead of the separate values, and next to it the command's ``progress`` display
(:func:`graphtier.cli.common.progress.cli_progress`), which the command passes on to its importer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from graphtier.cli.common.options import SEED
from graphtier.cli.common.progress import cli_progress
from graphtier.dataset.edges.link_split import SPLIT_BY
from graphtier.dataset.finite import NON_FINITE_MODES
from graphtier.dataset.importers.assemble.options import ImportOptions
from graphtier.dataset.importers.common.node_data import LABEL_LAYOUTS

_PATH = click.Path(path_type=Path)


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """SOURCE, OUTPUT, --name and --overwrite, shared by every format."""
    func = click.option(
        "--overwrite", is_flag=True, help="Replace OUTPUT if it is a graphtier dataset and holds nothing else."
    )(func)
    func = click.option("--name", default=None, help="Dataset name stored in meta.json (default: the name of OUTPUT).")(
        func
    )
    func = click.argument("output", type=_PATH)(func)
    func = click.argument("source", type=_PATH)(func)
    return func


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def _keep_duplicates(func: Callable[..., Any]) -> Callable[..., Any]:
    func = click.option(
        "--dedup",
        is_flag=True,
        hidden=True,
        expose_value=False,
        help="Accepted for old scripts: dropping repeated edges is the default.",
    )(func)
    return click.option(
        "--keep-duplicates",
        is_flag=True,
        help="Keep repeated edges (default: keep one copy of each and say how many were dropped).",
    )(func)


IMPORT_OPTION_DECLARATIONS: dict[str, Decorator] = {
    "undirected": click.option(
        "--undirected",
        is_flag=True,
        help="Add the reverse of every edge that lacks it (the dataset is marked undirected); an input that "
        "already lists both directions gives the same graph.",
    ),
    "drop_self_loops": click.option("--drop-self-loops", is_flag=True, help="Drop edges v -> v."),
    "keep_duplicates": _keep_duplicates,
    "labels": click.option(
        "--labels",
        type=_PATH,
        default=None,
        metavar="FILE",
        help="Node labels: 'id,label' lines, one label per line (line k = node k), or .npy (row k = node id k); "
        "integer class ids must be below 2^24 (16,777,216).",
    ),
    "features": click.option(
        "--features",
        type=_PATH,
        default=None,
        metavar="FILE",
        help="Features: a .npy [rows, D] or a text matrix (one row per node, blank- or comma-separated); "
        "row k belongs to original node id k. Rows without edges become isolated nodes.",
    ),
    "labels_layout": click.option(
        "--labels-layout",
        type=click.Choice(LABEL_LAYOUTS),
        default="auto",
        show_default=True,
        help="--labels text layout: pairs ('id,label' lines), lines (line k = label of node k); "
        "auto: lines when a line has one column.",
    ),
    "labels_column": click.option(
        "--labels-column",
        type=int,
        default=None,
        metavar="C",
        help="Take column C (0-based) of a 2-d labels array (.npy, text matrix, .mat variable); its codes "
        "(years, ids) are renumbered 0..K-1 and kept as class names.",
    ),
    "unlabelled_value": click.option(
        "--unlabelled-value",
        type=int,
        default=None,
        metavar="V",
        help="Class id that means 'no label' (e.g. 0 in Facebook100); those nodes are unlabelled (-1).",
    ),
    "synthetic_features": click.option(
        "--synthetic-features",
        type=int,
        default=0,
        metavar="DIM",
        help="Generate DIM deterministic random features: pure noise, no label information "
        "(see --synthetic-feature-signal). Marked synthetic in meta.json.",
    ),
    "synthetic_feature_signal": click.option(
        "--synthetic-feature-signal",
        type=float,
        default=0.0,
        show_default=True,
        metavar="S",
        help="Add S times a random class centroid to the synthetic features of labelled nodes: the features "
        "then ENCODE the labels (accuracy measures nothing about the graph). 0 = no label information.",
    ),
    "synthetic_labels": click.option(
        "--synthetic-labels",
        type=int,
        default=0,
        metavar="K",
        help="Generate uniformly random labels over K classes for an unlabelled graph (for throughput runs; "
        "accuracy is about 1/K). Marked synthetic in meta.json.",
    ),
    "split": click.option(
        "--split",
        default=None,
        metavar="TRAIN,VALID,TEST",
        help="Random split fractions, e.g. 0.6,0.2,0.2 (over labelled nodes when there are labels).",
    ),
    "seed": click.option(
        "--seed",
        type=SEED,
        default=0,
        show_default=True,
        help="Seed of --split, --edge-split, --synthetic-features and --synthetic-labels.",
    ),
    "non_finite": click.option(
        "--non-finite",
        type=click.Choice(NON_FINITE_MODES),
        default="error",
        show_default=True,
        help="NaN/Inf feature values: refuse the import (error) or replace them by 0 and say how many (replace).",
    ),
    "edge_split": click.option(
        "--edge-split",
        default=None,
        metavar="TRAIN,VALID,TEST",
        help="Link prediction: hold out random edges, fractions summing to 1, e.g. 0.85,0.05,0.1. Valid and test "
        "edges leave the graph (both directions on an undirected graph); stored with negatives (non-edges).",
    ),
    "edge_split_files": click.option(
        "--edge-split-files",
        default=None,
        metavar="train=FILE,valid=FILE,test=FILE",
        help="Link prediction: the edge split as pair files ('src dst' lines or .npy [P, 2], the input's node ids): "
        "valid= and test= positives (held out of the graph), optional train= (default: every remaining edge), "
        "valid_neg= and test_neg= negatives ([Q, 2] pairs, or [P, K] destinations with --eval-negatives K; "
        "default: drawn).",
    ),
    "split_by": click.option(
        "--split-by",
        type=click.Choice(SPLIT_BY),
        default="random",
        show_default=True,
        help="How --edge-split picks its held-out edges: random (they leave the graph), or time (needs "
        "--time-column: the earliest edges train, the latest test; held-out edges STAY in the graph with their "
        "times and every pair gets its time: leak-free only with a time-aware sampler).",
    ),
    "split_relation": click.option(
        "--split-relation",
        default=None,
        metavar="SRC,REL,DST",
        help="Link prediction on a typed graph: the relation whose edges --edge-split holds out (its reverse "
        "relation of --add-reverse loses them too); negatives are drawn from DST.",
    ),
    "eval_negatives": click.option(
        "--eval-negatives",
        type=int,
        default=0,
        show_default=True,
        metavar="K",
        help="Negatives of each valid/test positive: 0 = as many random non-edge pairs as positives (AUC, AP); "
        "K = K negative destinations per positive (MRR, Hits@K).",
    ),
}
"""The click option of each :class:`ImportOptions` field (its parameter name is the field name)."""


def import_options(accepted: Sequence[str]) -> Decorator:
    """Declare the click options of the ``accepted`` :class:`ImportOptions` fields and pass the command
    ``options=ImportOptions(...)`` built from them (validated there; errors name the CLI flags) and
    ``progress=``, the stage display its importer reports to (:func:`cli_progress`)."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def command(**values: Any) -> Any:
            built = ImportOptions(**{field: values.pop(field) for field in accepted})
            return func(options=built, progress=cli_progress(), **values)

        for field in reversed(accepted):
            command = IMPORT_OPTION_DECLARATIONS[field](command)
        return command

    return decorate
