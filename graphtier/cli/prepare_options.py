"""The options shared by the ``graphtier prepare`` subcommands (one decorator per group of options)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from graphtier.cli.options import SEED
from graphtier.dataset.finite import NON_FINITE_MODES

_PATH = click.Path(path_type=Path)


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """SOURCE, OUTPUT, --name and --overwrite, shared by every format."""
    func = click.option("--overwrite", is_flag=True,
                        help="Replace OUTPUT if it is a graphtier dataset and holds nothing else.")(func)
    func = click.option("--name", default=None, help="Dataset name stored in meta.json (default: the name of OUTPUT).")(func)
    func = click.argument("output", type=_PATH)(func)
    func = click.argument("source", type=_PATH)(func)
    return func


def graph_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Edge handling options: --undirected, --drop-self-loops, --keep-duplicates (--dedup: the default, hidden)."""
    func = click.option("--dedup", is_flag=True, hidden=True, expose_value=False,
                        help="Accepted for old scripts: dropping repeated edges is the default.")(func)
    func = click.option(
        "--keep-duplicates", is_flag=True,
        help="Keep repeated edges (default: keep one copy of each and say how many were dropped).",
    )(func)
    func = click.option("--drop-self-loops", is_flag=True, help="Drop edges v -> v.")(func)
    func = click.option(
        "--undirected", is_flag=True,
        help="Add the reverse of every edge that lacks it (the dataset is marked undirected); an input that "
             "already lists both directions gives the same graph.",
    )(func)
    return func


def node_data_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--synthetic-features, --synthetic-feature-signal, --synthetic-labels, --split and --seed."""
    func = click.option("--seed", type=SEED, default=0, show_default=True,
                        help="Seed of --split, --synthetic-features and --synthetic-labels.")(func)
    func = click.option(
        "--split",
        "split_text",
        default=None,
        metavar="TRAIN,VALID,TEST",
        help="Random split fractions, e.g. 0.6,0.2,0.2 (over labelled nodes when there are labels).",
    )(func)
    func = click.option(
        "--synthetic-features",
        type=int,
        default=0,
        metavar="DIM",
        help="Generate DIM deterministic random features: pure noise, no label information "
             "(see --synthetic-feature-signal). Marked synthetic in meta.json.",
    )(func)
    func = click.option(
        "--synthetic-feature-signal",
        type=float,
        default=0.0,
        show_default=True,
        metavar="S",
        help="Add S times a random class centroid to the synthetic features of labelled nodes: the features "
             "then ENCODE the labels (accuracy measures nothing about the graph). 0 = no label information.",
    )(func)
    func = click.option(
        "--synthetic-labels",
        type=int,
        default=0,
        metavar="K",
        help="Generate uniformly random labels over K classes for an unlabelled graph (for throughput runs; "
             "accuracy is about 1/K). Marked synthetic in meta.json.",
    )(func)
    return func


def label_choice_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--labels-column and --unlabelled-value (for --labels files and .mat label variables)."""
    func = click.option(
        "--unlabelled-value", type=int, default=None, metavar="V",
        help="Class id that means 'no label' (e.g. 0 in Facebook100); those nodes are unlabelled (-1).",
    )(func)
    func = click.option(
        "--labels-column", type=int, default=None, metavar="C",
        help="Take column C (0-based) of a 2-d labels array (.npy, text matrix, .mat variable); its codes "
             "(years, ids) are renumbered 0..K-1 and kept as class names.",
    )(func)
    return func


def labels_features_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = label_choice_options(func)
    func = click.option(
        "--labels-layout", type=click.Choice(("auto", "pairs", "lines")), default="auto", show_default=True,
        help="--labels text layout: pairs ('id,label' lines), lines (line k = label of node k); "
             "auto: lines when a line has one column.",
    )(func)
    func = click.option(
        "--features", type=_PATH, default=None, metavar="FILE",
        help="Features: a .npy [rows, D] or a text matrix (one row per node, blank- or comma-separated); "
             "row k belongs to original node id k. Rows without edges become isolated nodes.",
    )(func)
    func = click.option(
        "--labels", type=_PATH, default=None, metavar="FILE",
        help="Node labels: 'id,label' lines, one label per line (line k = node k), or .npy (row k = node id k); "
             "integer class ids must be below 2^24 (16,777,216).",
    )(func)
    return func


def non_finite_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """--non-finite error|replace: what to do with NaN/Inf feature values."""
    return click.option(
        "--non-finite", type=click.Choice(NON_FINITE_MODES), default="error", show_default=True,
        help="NaN/Inf feature values: refuse the import (error) or replace them by 0 and say how many (replace).",
    )(func)
