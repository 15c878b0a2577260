"""What ``graphtier prepare`` prints after an import: the dataset's size, the per-type lines of a typed dataset,
and one note per thing the importer did (edges dropped or added, the edge split, provenance, integer-code feature
columns, replaced NaN/Inf values)."""

from __future__ import annotations

import time
from typing import Any

import click

from graphtier.cli.info import typed_info, typed_lines
from graphtier.dataset.edges.edge_data import edge_data_lines
from graphtier.dataset.edges.edge_time import time_range_text
from graphtier.dataset.format import Dataset
from graphtier.dataset.provenance import describe


def edge_notes(meta: dict[str, Any]) -> list[str]:
    """One line per thing the import did to the edges (``meta.json`` ``source.edges``), or nothing for old metas."""
    counts = (meta.get("source") or {}).get("edges")
    if not isinstance(counts, dict):
        return []
    options = (meta.get("source") or {}).get("options") or {}
    notes = []
    if counts.get("self_loops_dropped"):
        notes.append(f"dropped {counts['self_loops_dropped']:,} self-loops (--drop-self-loops)")
    if counts.get("duplicates_dropped"):
        notes.append(f"dropped {counts['duplicates_dropped']:,} duplicate edges (--keep-duplicates keeps them)")
    if options.get("undirected"):
        notes.append(
            f"--undirected: {counts.get('reverse_present', 0):,} edges already had their reverse, "
            f"added {counts.get('reverses_added', 0):,} reverse edges"
        )
    elif "symmetric" in meta:
        kept = int(meta.get("num_edges", 0))
        if meta["symmetric"]:
            notes.append(f"every edge has its reverse (the graph is symmetric; {kept:,} directed edges)")
        else:
            notes.append(
                f"directed: {counts.get('reverse_present', 0):,} of {kept:,} edges have their reverse "
                "(--undirected adds the missing ones)"
            )
    return notes


def edge_split_notes(meta: dict[str, Any]) -> list[str]:
    """One sentence on the ``--edge-split`` of a dataset (none without one)."""
    link = meta.get("link")
    if not isinstance(link, dict) or link.get("method") not in ("random", "time"):
        return []
    k = int(link.get("eval_negatives", 0))
    negatives = f"{k} negative destinations per positive" if k else "one negative pair per positive"
    if link.get("method") == "time":
        return [
            f"edge split by time: {link.get('train', 0):,} train, {link.get('valid', 0):,} valid (from "
            f"{link.get('valid_from')}), {link.get('test', 0):,} test (from {link.get('test_from')}) pairs; the "
            f"held-out edges stay in the graph (leak-free only with a time-aware sampler); {negatives}"
        ]
    both = ", both directions" if link.get("undirected") else ""
    return [
        f"edge split: {link.get('train', 0):,} train, {link.get('valid', 0):,} valid, {link.get('test', 0):,} test "
        f"pairs; {link.get('held_out_edges', 0):,} stored edges (the valid and test pairs{both}) left the graph; "
        f"{negatives}"
    ]


def report_import(dataset: Dataset, started: float) -> None:
    """Print what an import wrote (sizes, per-type lines, notes on edges, splits and provenance, warnings) and how
    long it took since ``started`` (``time.perf_counter()``)."""
    seconds = time.perf_counter() - started
    rate = dataset.num_edges / seconds if seconds > 0 else float("inf")
    schema = dataset.schema
    shape = (
        f"{len(schema.node_types)} node types, {len(schema.relations)} relations"
        if dataset.is_hetero
        else f"feature_dim {dataset.feature_dim}"
    )
    click.echo(
        f"wrote {dataset.path}: {dataset.num_nodes:,} nodes, {dataset.num_edges:,} edges, "
        f"{shape}, {dataset.num_classes} classes "
        f"in {seconds:.1f} s ({rate:,.0f} edges/s)"
    )
    hetero = typed_info(dataset)
    for field, value in typed_lines(hetero) if hetero is not None else ():
        click.echo(f"  {field}: {value}")
    for note in edge_notes(dataset.meta) + describe(dataset.meta) + edge_split_notes(dataset.meta):
        click.echo(f"note: {note}")
    times = time_range_text(dataset.meta.get("edge_time"))
    if times is not None:
        column = (dataset.meta.get("source") or {}).get("options", {}).get("time_column")
        click.echo(f"note: edge times{f' (--time-column {column})' if column is not None else ''}: {times}")
    node_times = time_range_text(dataset.meta.get("node_time"))
    if node_times is not None:
        click.echo(f"note: node times: {node_times}")
    for field_name, text in edge_data_lines(dataset.meta):
        click.echo(f"note: {field_name}: {text}")
    split_note = dataset.meta.get("source", {}).get("split")
    if split_note:
        click.echo(f"note: split: {split_note}")
    if dataset.train_idx is None and dataset.link is None:
        click.echo(
            "note: no train/valid/test split was made, and `graphtier train` needs one: "
            "run this command again with --split TRAIN,VALID,TEST (e.g. --split 0.8,0.1,0.1)"
        )
    codes = dataset.meta.get("source", {}).get("category_code_columns") or []
    if codes:
        columns = ", ".join(str(c["column"]) for c in codes)
        widest = max(codes, key=lambda c: c["distinct"])
        click.echo(
            f"graphtier: warning: feature column(s) {columns} (0-based) hold integer codes, not values (column "
            f"{widest['column']}: {widest['distinct']:,} distinct integers up to {widest['max']:,}; years or ids?): "
            "a model reads them as magnitudes; --labels-column C takes one as the labels",
            err=True,
        )
    replaced = dataset.meta.get("source", {}).get("non_finite_replaced", 0)
    if replaced:
        click.echo(
            f"graphtier: note: replaced {replaced:,} NaN/Inf feature values by 0 (--non-finite replace)", err=True
        )
