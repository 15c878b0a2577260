"""``graphtier info DATASET [--json]``: size, degree skew, features, labels and splits of a dataset.

``--json`` prints one JSON object (field names are stable; see :func:`dataset_info`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import numpy as np

from graphtier.dataset.csc import reciprocity
from graphtier.dataset.edges.edge_data import (
    EDGE_FEAT,
    EDGE_LABEL,
    FEATURES_KEY,
    LABEL_KEY,
    edge_data_lines,
    link_label_file,
    link_labels,
)
from graphtier.dataset.edges.edge_rows import EDGE_ROW
from graphtier.dataset.edges.edge_time import time_range_text
from graphtier.dataset.edges.link_split import (
    EVAL_SPLITS,
    LINK_SPLITS,
    negative_times_file,
    negatives_file,
    positive_times_file,
    positives_file,
)
from graphtier.dataset.format import SPLITS, Dataset
from graphtier.dataset.provenance import describe, provenance_of
from graphtier.dataset.writer import json_default
from graphtier.graph.stats import CHUNK, in_degree_stats


def class_counts(labels: np.ndarray, num_classes: int) -> tuple[np.ndarray, int]:
    """(int64 [max(num_classes, largest label + 1)] nodes per class, unlabelled nodes (label < 0)) of ``labels``
    (int [N], scanned CHUNK nodes at a time: memory maps work)."""
    counts = np.zeros(max(num_classes, 0), dtype=np.int64)
    unlabelled = 0
    for start in range(0, labels.shape[0], CHUNK):
        chunk = np.asarray(labels[start : start + CHUNK]).astype(np.int64, copy=False)
        labelled = chunk[chunk >= 0]
        unlabelled += int(chunk.shape[0] - labelled.shape[0])
        chunk_counts = np.bincount(labelled, minlength=counts.shape[0])
        if chunk_counts.shape[0] > counts.shape[0]:
            counts = np.concatenate([counts, np.zeros(chunk_counts.shape[0] - counts.shape[0], dtype=np.int64)])
        counts += chunk_counts
    return counts, unlabelled


LARGEST_CLASSES_SHOWN = 3


def describe_classes(
    counts: list[int], unlabelled: int, shown: int = LARGEST_CLASSES_SHOWN, names: list[str] | None = None
) -> str:
    """``"largest 3: 818 (30.2%), 4: 426 (15.7%), 2: 418 (15.4%) of 7 classes; 0 unlabelled"``: the ``shown``
    largest classes (id, nodes, share of the labelled nodes), the number of classes and the unlabelled nodes.
    With ``names`` (the dataset's class names) each id is followed by its name: ``3 (cat): 818 (30.2%)``."""
    labelled = sum(counts)
    order = sorted(range(len(counts)), key=lambda c: (-counts[c], c))[:shown]

    def label(c: int) -> str:
        return f"{c} ({names[c]})" if names is not None and c < len(names) else str(c)

    largest = ", ".join(f"{label(c)}: {counts[c]:,} ({100 * counts[c] / labelled:.1f}%)" for c in order if counts[c])
    return f"largest {largest or '-'} of {len(counts)} classes; {unlabelled:,} unlabelled"


def _array_entry(path: Path, array: np.ndarray) -> dict[str, Any]:
    return {"shape": list(array.shape), "dtype": str(array.dtype), "bytes": path.stat().st_size}


def count_self_loops(indptr: np.ndarray, indices: np.ndarray) -> int:
    """The number of edges ``v -> v`` of a CSC graph, scanned CHUNK nodes at a time (memory maps work)."""
    loops = 0
    num_nodes = indptr.shape[0] - 1
    for start in range(0, num_nodes, CHUNK):
        end = min(num_nodes, start + CHUNK)
        bounds = np.asarray(indptr[start : end + 1])
        owners = np.repeat(np.arange(start, end, dtype=np.int64), np.diff(bounds))
        loops += int(np.count_nonzero(np.asarray(indices[bounds[0] : bounds[-1]]) == owners))
    return loops


def undirected_pairs(dataset: Dataset) -> int | None:
    """For a symmetric (undirected) dataset, its undirected edges: each pair is stored as 2 directed edges,
    a self-loop as 1. None for a directed dataset."""
    if dataset.directed:
        return None
    loops = count_self_loops(dataset.indptr, dataset.indices)
    return (dataset.num_edges - loops) // 2 + loops


SYMMETRY_SCAN_EDGES = 1 << 27
"""Largest graph whose symmetry ``info`` computes when ``meta.json`` does not record it (older datasets)."""


def symmetric(dataset: Dataset) -> bool | None:
    """Whether every edge ``u -> v`` has its reverse: ``meta.json`` ``symmetric`` (recorded at import), else a
    scan of at most :data:`SYMMETRY_SCAN_EDGES` edges (O(E log degree)), else None (unknown; always for a
    heterogeneous dataset, whose relations are directed by type)."""
    if isinstance(dataset.meta.get("symmetric"), bool):
        return bool(dataset.meta["symmetric"])
    if dataset.num_edges > SYMMETRY_SCAN_EDGES or dataset.is_hetero:
        return None
    return reciprocity(dataset.indptr, dataset.indices)[2]


def edge_split_info(dataset: Dataset) -> dict[str, Any] | None:
    """The link-prediction edge split of ``dataset`` (None without one): ``method``, pairs per split (``train``,
    ``valid``, ``test``), ``valid_negatives``/``test_negatives`` (rows), ``split_by`` (``random`` or ``time``; a time
    split adds ``valid_from``/``test_from``, the first valid/test times), ``eval_negatives`` K, ``negatives``
    (``"pairs"`` or ``"per_positive"``), ``undirected``, ``dst_range`` and the provenance (``fractions``, ``seed``); a typed dataset's ``relation``
    ``[SRC, REL, DST]`` and ``reverse`` (the reverse relation's name, or None)."""
    link = dataset.link
    if link is None:
        return None
    info: dict[str, Any] = {"method": link.meta.get("method")}
    for split in LINK_SPLITS:
        pairs = link.splits.get(split)
        info[split] = None if pairs is None else pairs.num_positives
        if split in EVAL_SPLITS:
            info[f"{split}_negatives"] = None if pairs is None or pairs.negatives is None else len(pairs.negatives)
    info.update(
        eval_negatives=link.eval_negatives,
        negatives="per_positive" if link.eval_negatives > 0 else "pairs",
        undirected=link.undirected,
        dst_range=list(link.dst_range),
    )
    info["split_by"] = link.split_by
    if link.by_time:
        info.update(valid_from=link.boundary("valid"), test_from=link.boundary("test"))
    for key in ("fractions", "seed", "held_out_edges", "relation", "reverse", "label"):
        if key in link.meta:
            info[key] = link.meta[key]
    return info


def _describe_edge_split(link: dict[str, Any]) -> str:
    counts = "  ".join(f"{s} {'-' if link[s] is None else format(link[s], ',')}" for s in LINK_SPLITS)
    how = str(link.get("method") or "")
    if link.get("fractions") is not None:
        how += " " + ",".join(f"{f:g}" for f in link["fractions"]) + f" (seed {link.get('seed')})"
    k = link["eval_negatives"]
    negatives = f"{k} negative destinations per positive" if k > 0 else "negative pairs, one per positive"
    kind = "undirected: held-out edges removed both ways" if link["undirected"] else "directed"
    if link.get("split_by") == "time":
        kind = (
            f"split by time: valid from {link.get('valid_from')}, test from {link.get('test_from')}; held-out "
            f"edges stay in the graph (a time-aware sampler keeps them out of earlier queries); "
            f"{'undirected' if link['undirected'] else 'directed'}"
        )
    if link.get("relation"):  # a typed dataset: one relation's edges, local ids
        src, name, dst = link["relation"]
        by_time = link.get("split_by") == "time"
        kind = f"relation {name} ({src} -> {dst}), local ids" + (
            f"; {kind}" if by_time else f"; held-out edges left {link['reverse']} too" if link.get("reverse") else ""
        )
    label = f"; edge-level targets: {link['label']['column']} (link_{{split}}_label.npy)" if link.get("label") else ""
    return f"{how}: {counts} pairs; {negatives}; {kind}{label}".strip()


def node_in_degree_indptr(dataset: Dataset) -> np.ndarray:
    """int64 [N + 1]: a CSC pointer array of every node's in-degree (a heterogeneous dataset's in-edges summed
    over the relations into the node's type; the dataset's own ``indptr`` when homogeneous)."""
    if not dataset.schema.hetero:
        return np.asarray(dataset.indptr)
    out = np.zeros(dataset.num_nodes + 1, dtype=np.int64)
    np.cumsum(dataset.in_degrees(), out=out[1:])
    return out


def typed_info(dataset: Dataset) -> dict[str, Any] | None:
    """Per node type and per relation counts of a heterogeneous dataset (None when homogeneous): ``target``,
    ``node_types`` (``name``, ``count``, ``feature_dim``, ``feature_dtype``, ``feature_bytes``; dim 0 =
    featureless) and ``relations`` (``type`` [src, name, dst], ``num_edges``, ``mean_in_degree`` per destination)."""
    schema = dataset.schema
    if not schema.hetero:
        return None
    types = []
    for t in schema.node_types:
        table = dataset.type_features.get(t.name)
        types.append(
            {
                "name": t.name,
                "count": t.count,
                "feature_dim": t.feature_dim,
                "feature_dtype": t.feature_dtype if t.feature_dim else None,
                "feature_bytes": 0 if table is None else int(table.nbytes),
            }
        )
    relations = [
        {
            "type": list(r.type),
            "num_edges": r.num_edges,
            "mean_in_degree": r.num_edges / max(1, schema.node_type(r.dst).count),
        }
        for r in schema.relations
    ]
    return {"target": schema.target, "node_types": types, "relations": relations}


def typed_lines(hetero: dict[str, Any]) -> list[tuple[str, str]]:
    """``(field, value)`` rows describing :func:`typed_info`'s result: one per node type, one per relation."""
    rows = []
    for t in hetero["node_types"]:
        features = (
            f"{t['feature_dim']} {t['feature_dtype']} features ({human_bytes(t['feature_bytes'])})"
            if t["feature_dim"]
            else "featureless"
        )
        target = "  (target)" if t["name"] == hetero["target"] else ""
        rows.append((f"type {t['name']}", f"{t['count']:,} nodes, {features}{target}"))
    for r in hetero["relations"]:
        src, name, dst = r["type"]
        rows.append(
            (f"relation {name}", f"({src} -> {dst}) {r['num_edges']:,} edges, {r['mean_in_degree']:.2f} per {dst}")
        )
    return rows


def dataset_info(dataset: Dataset) -> dict[str, Any]:
    """Everything ``graphtier info`` reports, as a JSON-ready dict.

    Fields: ``path``, ``name``, ``format_version``, ``num_nodes``, ``num_edges`` (directed edges as
    stored), ``directed``, ``symmetric`` (every edge has its reverse; null when unknown), ``undirected_pairs`` (symmetric datasets; null when directed),
    ``node_order``, ``in_degree`` (``min``, ``mean``, ``median``, ``p99``, ``max``,
    ``zero_in_degree_nodes``, ``top1pct_edge_share``, ``top10pct_edge_share``), ``features``
    (``shape``, ``dtype``, ``bytes``; null without features), ``labels`` (``num_classes``,
    ``labelled``, ``unlabelled``, ``class_counts``: nodes per class id, ``class_names``: the name of each class id or null; null without labels), ``splits`` (``train``/``valid``/``test`` sizes, null when
    absent), ``arrays`` (per ``.npy`` stem: ``shape``, ``dtype``, ``bytes`` on disk), ``total_bytes``
    (every file of the directory), ``source`` (``meta.json``'s ``source``), ``provenance``
    (``features``/``labels``: input, synthetic or none; see :mod:`graphtier.dataset.provenance`),
    ``notes`` (one sentence per synthetic part), ``nodes_only_in_node_data``, ``edge_split`` (link prediction's
    pairs, :func:`edge_split_info`; null without one), ``edge_time`` (``unit``, ``min``, ``max`` of the edge times;
    null without them), ``edge_features`` (``dim``, ``dtype``, ``columns``; null without them), ``edge_label``
    (``column``; null without one) and ``hetero`` (per node type and relation,
    :func:`typed_info`; null when homogeneous). A heterogeneous dataset's ``in_degree`` counts every node's
    in-edges over all relations.
    """
    root = dataset.path
    degree = in_degree_stats(node_in_degree_indptr(dataset)).as_dict()
    degree.pop("num_nodes")
    degree.pop("num_edges")
    arrays: dict[str, Any] = {
        "indptr": _array_entry(root / "indptr.npy", dataset.indptr),
        "indices": _array_entry(root / "indices.npy", dataset.indices),
    }
    features = None
    if dataset.features is not None:
        arrays["features"] = _array_entry(root / "features.npy", dataset.features)
        features = {
            "shape": list(dataset.features.shape),
            "dtype": str(dataset.features.dtype),
            "bytes": arrays["features"]["bytes"],
        }
    labels = None
    if dataset.labels is not None:
        arrays["labels"] = _array_entry(root / "labels.npy", dataset.labels)
        counts, unlabelled = class_counts(dataset.labels, dataset.num_classes)
        labels = {
            "num_classes": dataset.num_classes,
            "labelled": int(counts.sum()),
            "unlabelled": unlabelled,
            "class_counts": counts.tolist(),
            "class_names": dataset.class_names,
        }
    splits: dict[str, int | None] = {}
    for name in SPLITS:
        ids = dataset.split(name)
        splits[name] = None if ids is None else int(ids.shape[0])
        if ids is not None:
            arrays[f"{name}_idx"] = _array_entry(root / f"{name}_idx.npy", ids)
    for split, pairs in dataset.link.splits.items() if dataset.link is not None else ():
        arrays[positives_file(split)] = _array_entry(root / f"{positives_file(split)}.npy", pairs.positives)
        if pairs.negatives is not None:
            arrays[negatives_file(split)] = _array_entry(root / f"{negatives_file(split)}.npy", pairs.negatives)
        for stem, times in ((positive_times_file(split), pairs.positive_times),
                            (negative_times_file(split), pairs.negative_times)):  # fmt: skip
            if times is not None:
                arrays[stem] = _array_entry(root / f"{stem}.npy", times)
    for type_name, table in dataset.type_features.items() if dataset.is_hetero else ():
        stem = dataset.schema.feature_file(type_name)
        arrays[stem] = _array_entry(root / f"{stem}.npy", table)
    for stem, array in (("edge_time", dataset.edge_time), ("edge_time_order", dataset.edge_time_order),
                        ("node_time", dataset.node_time), (EDGE_FEAT, dataset.edge_features),
                        (EDGE_LABEL, dataset.edge_label)):  # fmt: skip
        if array is not None:
            arrays[stem] = _array_entry(root / f"{stem}.npy", array)
    for split in LINK_SPLITS:
        pair_labels = link_labels(dataset, split)
        if pair_labels is not None:
            arrays[link_label_file(split)] = _array_entry(root / f"{link_label_file(split)}.npy", pair_labels)
    for stem, array in sorted(dataset.extra.items()):
        arrays[stem] = _array_entry(root / f"{stem}.npy", array)
    total_bytes = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    return {
        "path": str(root),
        "name": dataset.name,
        "format_version": dataset.meta["format_version"],
        "num_nodes": dataset.num_nodes,
        "num_edges": dataset.num_edges,
        "directed": dataset.directed,
        "symmetric": symmetric(dataset),
        "undirected_pairs": undirected_pairs(dataset),
        "node_order": dataset.meta["node_order"],
        "in_degree": degree,
        "features": features,
        "labels": labels,
        "splits": splits,
        "arrays": arrays,
        "total_bytes": total_bytes,
        "source": dataset.meta.get("source"),
        "provenance": provenance_of(dataset.meta),
        "notes": describe(dataset.meta),
        "nodes_only_in_node_data": int(dataset.meta.get("nodes_only_in_node_data", 0) or 0),
        "edge_split": edge_split_info(dataset),
        "edge_time": dataset.meta.get("edge_time") if dataset.edge_time is not None else None,
        "node_time": dataset.meta.get("node_time") if dataset.node_time is not None else None,
        "edge_features": dataset.meta.get(FEATURES_KEY) if dataset.edge_features is not None else None,
        "edge_rows": None if dataset.edge_features is None else "read" if EDGE_ROW in dataset.extra else "csc",
        "edge_label": dataset.meta.get(LABEL_KEY) if dataset.edge_label is not None else None,
        "hetero": typed_info(dataset),
    }


def human_bytes(count: int) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _render_table(info: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{info['name']}  ({info['path']})", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value")
    table.add_row("nodes", f"{info['num_nodes']:,}")
    for field, value in typed_lines(info["hetero"]) if info.get("hetero") else ():
        table.add_row(field, value)
    pairs = info.get("undirected_pairs")
    table.add_row(
        "edges",
        f"{info['num_edges']:,} directed edges" + (f" ({pairs:,} undirected pairs)" if pairs is not None else ""),
    )
    sym = info.get("symmetric")
    table.add_row(
        "symmetric",
        "n/a (heterogeneous: each relation has its direction; --add-reverse adds their reverses)"
        if sym is None and info.get("hetero")
        else "unknown (not recorded; re-import to record it)"
        if sym is None
        else "yes (every edge has its reverse)"
        if sym
        else "no (some edges lack their reverse)",
    )
    if info.get("edge_time") is not None:
        table.add_row("edge times", time_range_text(info["edge_time"]) or "")
    if info.get("node_time") is not None:
        table.add_row("node times", time_range_text(info["node_time"]) or "")
    for field_name, text in edge_data_lines({FEATURES_KEY: info["edge_features"], LABEL_KEY: info["edge_label"]}):
        table.add_row(field_name, text)
    if info.get("edge_rows") is not None:
        order = "read order (edge_row.npy)" if info["edge_rows"] == "read" else "CSC order"
        table.add_row("edge table rows", f"{order}; hot tier: the first rows")
    table.add_row("node order", str(info["node_order"]))
    d = info["in_degree"]
    table.add_row(
        "in-degree",
        f"min {d['min']:,}  mean {d['mean']:.2f}  median {d['median']:g}  p99 {d['p99']:g}  max {d['max']:,}",
    )
    table.add_row("zero in-degree", f"{d['zero_in_degree_nodes']:,} nodes")
    table.add_row(
        "edges into top nodes",
        f"top 1%: {100 * d['top1pct_edge_share']:.1f}%  top 10%: {100 * d['top10pct_edge_share']:.1f}%",
    )
    f = info["features"]
    prov = info.get("provenance") or {}

    def origin(part: str) -> str:
        entry = prov.get(part) or {}
        if entry.get("kind") != "synthetic":
            return ""
        if part == "features" and not entry.get("generated"):
            signal = float(entry.get("signal", 0.0))
            return f"  SYNTHETIC ({'label signal ' + format(signal, 'g') if signal > 0 else 'noise, no label information'})"
        return "  SYNTHETIC"

    table.add_row(
        "features",
        ("per node type (above)" if info.get("hetero") else "none")
        if f is None
        else f"{f['shape'][0]:,} x {f['shape'][1]} {f['dtype']} ({human_bytes(f['bytes'])}){origin('features')}",
    )
    lab = info["labels"]
    table.add_row(
        "labels",
        "none"
        if lab is None
        else f"{lab['num_classes']} classes, {lab['labelled']:,} labelled nodes{origin('labels')}",
    )
    if lab is not None:
        table.add_row("classes", describe_classes(lab["class_counts"], lab["unlabelled"], names=lab.get("class_names")))
    for note in info.get("notes") or []:
        table.add_row("note", note)
    s = info["splits"]
    table.add_row("splits", "  ".join(f"{k} {'-' if v is None else format(v, ',')}" for k, v in s.items()))
    if info.get("edge_split") is not None:
        table.add_row("edge split", _describe_edge_split(info["edge_split"]))
    for stem, entry in info["arrays"].items():
        shape = " x ".join(f"{x:,}" for x in entry["shape"])
        table.add_row(f"  {stem}.npy", f"[{shape}] {entry['dtype']}  {human_bytes(entry['bytes'])}")
    table.add_row("total", human_bytes(info["total_bytes"]))
    source = info.get("source") or {}
    if isinstance(source, dict):
        origin = source.get("generator") or source.get("importer") or source.get("format") or ""
        if origin:
            table.add_row("source", str(origin))
    Console(soft_wrap=False).print(table)


@click.command("info")
@click.argument("dataset", type=click.Path(file_okay=False, dir_okay=True))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("--no-validate", is_flag=True, help="Skip the full consistency scan of the arrays (faster).")
def command(dataset: str, as_json: bool, no_validate: bool) -> None:
    """Show nodes, edges, in-degree skew, features, labels, splits and array sizes of DATASET."""
    opened = Dataset.open(dataset, validate=not no_validate)
    info = dataset_info(opened)
    if as_json:
        click.echo(json.dumps(info, default=json_default))
    else:
        _render_table(info)
