"""A MAG-like typed power-law graph with learnable paper labels (``graphtier generate --hetero mag``).

Node types (in global-id order): ``paper`` (N, the target, features of ``feature_dim`` columns), ``author``
(N * AUTHORS_PER_PAPER), ``institution`` (N / PAPERS_PER_INSTITUTION) and ``field`` (N / PAPERS_PER_FIELD), at
least one of each; only papers have features (the others are featureless, as in ogbn-mag's authors,
institutions and fields). Relations, each drawn in its stored direction (``degrees`` per node of the type in
brackets, defaults :data:`DEFAULT_DEGREES`)::

    (paper, cites, paper)                 [per paper]     power law at both ends, self-citations dropped
    (author, writes, paper)               [per paper]
    (author, affiliated_with, institution) [per author]
    (paper, has_topic, field)             [per paper]

plus ``(dst, rev_<name>, src)`` for each with ``add_reverse`` (the default: without it no information reaches
papers from fields or institutions). Repeated edges are kept once.

The model is the degree-corrected stochastic block model of :mod:`graphtier.dataset.synthetic.generate`, extended to
several node sets: every node of every type belongs to one of ``num_classes`` communities (a paper's community is
its label) and has a truncated-Pareto degree weight (exponent ``degree_exponent``; a type's hub size defaults to
``HUB_FACTOR * sqrt(count * its expected degree)``). Each edge draws its destination proportionally to the
destination type's weights, and its source inside the destination's community with probability ``homophily``,
otherwise from another community (:func:`~graphtier.dataset.synthetic._synthetic_kernels.sample_bipartite_edges`). Paper
features are the label's centroid plus N(0, feature_noise^2) per dimension, so that the cited papers' features and
the communities of a paper's authors and fields predict its label far better than its own features do (20,000
papers, 30% train, defaults: a linear model reaches 0.22 test accuracy on a paper's own features, 0.81 with the
means of its cited/citing papers' and its fields'/authors' papers' features).

The output is a pure function of the seed and the options (counter-based randomness: it does not depend on
``chunk_edges`` or the thread count). The drawn edges are spilled chunk by chunk to a scratch file (8 bytes per
edge on disk), and each relation's CSC is built from there as the importers build theirs
(:func:`~graphtier.dataset.importers.assemble.typed_graph.write_typed_graph`): peak memory is about 4 bytes per stored edge
(8 beyond 2^31 nodes; the reverse relations count too) plus 70 bytes per node and one chunk; the paper features
are written chunk by chunk.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress, Stage
from graphtier.dataset import resources
from graphtier.dataset.format import Dataset, index_dtype
from graphtier.dataset.importers.assemble.typed_graph import (
    TypedEdges,
    TypedNodes,
    require_typed_csc_memory,
    spill_relation,
    write_typed_graph,
)
from graphtier.dataset.importers.split.holdout import link_options
from graphtier.dataset.importers.split.typed_holdout import TypedSplit, split_written_typed_graph
from graphtier.dataset.schema import Schema, reverse_name
from graphtier.dataset.synthetic import _synthetic_kernels as kernels
from graphtier.dataset.synthetic import generate as synthetic
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import OptionError

GENERATOR_NAME = "graphtier.dataset.synthetic_mag"  # recorded in provenance: the name when it was first written
GENERATOR_VERSION = 1
KIND = "mag"
TARGET = "paper"
AUTHORS_PER_PAPER = 1.0
PAPERS_PER_INSTITUTION = 50
PAPERS_PER_FIELD = 100
# (src, name, dst), the type whose count times the degree gives the drawn edges, default degree
RELATIONS: tuple[tuple[tuple[str, str, str], str, float], ...] = (
    (("paper", "cites", "paper"), "paper", 10.0),
    (("author", "writes", "paper"), "paper", 4.0),
    (("author", "affiliated_with", "institution"), "author", 1.0),
    (("paper", "has_topic", "field"), "paper", 4.0),
)
DEFAULT_DEGREES = {rel[1]: degree for rel, _, degree in RELATIONS}
# random streams past those of synthetic.py: type i's communities and weights come from seed stream 16 + i
_TYPE_STREAM_BASE = 16
_EDGE_STREAM_BASE = 32


def type_counts(papers: int) -> dict[str, int]:
    """Nodes per type for ``papers`` papers, in global-id order (every type at least one node)."""
    return {
        "paper": papers,
        "author": max(1, int(round(papers * AUTHORS_PER_PAPER))),
        "institution": max(1, papers // PAPERS_PER_INSTITUTION),
        "field": max(1, papers // PAPERS_PER_FIELD),
    }


def parse_degrees(text: str | Mapping[str, float] | None, option: str = "--relation-degrees") -> dict[str, float]:
    """Per-relation degrees: :data:`DEFAULT_DEGREES` updated by ``"cites=8,writes=3"`` (or a mapping).

    Raises :class:`OptionError` naming ``option`` on an unknown relation or a degree that is not a finite number
    >= 0.
    """
    degrees = dict(DEFAULT_DEGREES)
    if text is None:
        return degrees
    if isinstance(text, Mapping):
        items = list(text.items())
    else:
        items = []
        for entry in filter(None, (part.strip() for part in str(text).split(","))):
            name, sep, value = entry.partition("=")
            if not sep:
                raise OptionError(f"generate: option {option} expected NAME=DEGREE entries, found {entry!r}")
            items.append((name.strip(), value.strip()))
    for name, value in items:
        if name not in degrees:
            raise OptionError(
                f"generate: option {option} expected a relation among {', '.join(degrees)}, found {name!r}"
            )
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not (math.isfinite(number) and number >= 0) or isinstance(value, bool):
            raise OptionError(f"generate: option {option} expected {name}=a finite number >= 0, found {value!r}")
        degrees[name] = number
    return degrees


def _type_seed(seed: int, index: int) -> int:
    return kernels.stream_key(seed, _TYPE_STREAM_BASE + index) % 2**63


def _link_split(opts: dict[str, Any]) -> TypedSplit | None:
    """The edge split of ``opts`` (``edge_split``, ``split_relation``, ``eval_negatives``, ``seed``), or None; the
    relation is checked against the schema when the split is made."""
    fractions, k = link_options(opts.get("edge_split"), opts.get("eval_negatives") or 0)
    relation = opts.get("split_relation")
    if relation is not None and fractions is None:
        raise OptionError(
            "{split_relation}: expected {edge_split} as well (the fractions of the relation's edges), found none",
            options=("split_relation", "edge_split"),
        )
    if fractions is not None and relation is None:  # refused before anything is drawn
        names = ", ".join(name for (_, name, _), _, _ in RELATIONS)
        raise OptionError(
            f"{{edge_split}}: a typed graph needs {{split_relation}} (one of {names}), found none",
            options=("edge_split", "split_relation"),
        )
    return None if fractions is None else TypedSplit(fractions, relation, int(opts.get("seed", 0)), k)


def _check_options(opts: dict[str, Any]) -> None:
    for option in ("edge_split", "eval_negatives", "split_relation"):
        opts.pop(option, None)
    if opts.pop("undirected", True) is not True:
        raise OptionError("generate: option --directed applies to homogeneous graphs only (use --no-reverse)")
    synthetic.validate_options(dict(opts, avg_degree=0.0))  # the shared options; the degrees are parsed already


def generate_mag(
    output: str | os.PathLike[str],
    *,
    nodes: int,
    degrees: str | Mapping[str, float] | None = None,
    add_reverse: bool = True,
    num_classes: int = synthetic.DEFAULT_NUM_CLASSES,
    feature_dim: int = synthetic.DEFAULT_FEATURE_DIM,
    degree_exponent: float = synthetic.DEFAULT_DEGREE_EXPONENT,
    homophily: float = synthetic.DEFAULT_HOMOPHILY,
    feature_noise: float = synthetic.DEFAULT_FEATURE_NOISE,
    train_fraction: float = synthetic.DEFAULT_TRAIN_FRACTION,
    valid_fraction: float = synthetic.DEFAULT_VALID_FRACTION,
    test_fraction: float = synthetic.DEFAULT_TEST_FRACTION,
    feature_dtype: str = "float32",
    seed: int = 0,
    overwrite: bool = False,
    chunk_edges: int = synthetic.DEFAULT_CHUNK_EDGES,
    max_degree: float | None = None,
    progress: Progress = NO_PROGRESS,
    **homogeneous_only: Any,
) -> Dataset:
    """Generate the MAG-like typed dataset of the module docstring at ``output`` and open it.

    ``num_classes``, ``feature_dim``, ``degree_exponent``, ``homophily``, ``feature_noise``, the train, valid and
    test fractions, ``feature_dtype``, ``seed``, ``chunk_edges``, ``max_degree`` and ``progress`` are as
    :func:`graphtier.dataset.synthetic.generate.generate`'s (fractions of the papers; ``max_degree`` caps every type's
    expected degree).

    Args:
        output: dataset directory to create (atomically; an existing one needs ``overwrite``).
        nodes: the number of papers (the other types scale with it, :func:`type_counts`).
        degrees: per-relation degrees (:func:`parse_degrees`: ``"cites=8,writes=3"`` or a mapping).
        add_reverse: also store ``(dst, rev_<name>, src)`` for every relation (default True).
        homogeneous_only: ``edge_split`` with ``split_relation`` (``"writes"`` or ``"author,writes,paper"``) and
            ``eval_negatives``: link prediction on that relation
            (:mod:`~graphtier.dataset.importers.split.typed_holdout`; its reverse loses the held-out edges too);
            ``undirected`` (refused unless unset).

    Returns:
        The written :class:`Dataset`: ``schema`` of 4 types and 4 (8 with reverse) relations, float32/float16
        ``type_features["paper"]`` [N, feature_dim], int64 labels [N] and split ids local to papers.
    """
    relation_degrees = parse_degrees(degrees)
    link = _link_split(dict(homogeneous_only, seed=seed))
    opts: dict[str, Any] = dict(
        nodes=nodes, num_classes=num_classes, feature_dim=feature_dim, degree_exponent=degree_exponent,
        homophily=homophily, feature_noise=feature_noise, train_fraction=train_fraction,
        valid_fraction=valid_fraction, test_fraction=test_fraction, feature_dtype=feature_dtype, seed=seed,
        chunk_edges=chunk_edges, max_degree=max_degree, **homogeneous_only,
    )  # fmt: skip
    _check_options(opts)
    nodes, seed, chunk_edges = int(nodes), int(seed), int(chunk_edges)
    counts = type_counts(nodes)
    drawn = {rel[1]: int(round(counts[per] * relation_degrees[rel[1]])) for rel, per, _ in RELATIONS}
    _require_resources(output, counts, drawn, feature_dim, feature_dtype, add_reverse, chunk_edges)
    started = time.perf_counter()
    total_nodes, total_drawn = sum(counts.values()), sum(drawn.values())

    with DatasetWriter(output, overwrite=overwrite) as writer:
        with progress.stage("generate: communities and degree weights", total=total_nodes, unit="nodes") as bar:
            communities, tables = _node_tables(counts, drawn, num_classes, degree_exponent, max_degree, seed)
            bar.advance(total_nodes)
        with progress.stage(f"generate: draw edges of {len(RELATIONS)} relations", total_drawn, "edges") as bar:
            relations = []
            for index, (rel, _, _) in enumerate(RELATIONS):
                relations.append(
                    _draw_relation(
                        rel, drawn[rel[1]], tables, homophily, seed, index, chunk_edges, counts, bar, writer.tmp
                    )
                )
        del tables
        types = [TypedNodes(name, count) for name, count in counts.items()]
        schema = write_typed_graph(writer, types, relations, target=TARGET, add_reverse=add_reverse, progress=progress)
        del relations
        labels = communities[TARGET]
        if feature_dim > 0:
            name = schema.feature_file(TARGET)
            synthetic.write_features(
                writer, name, labels, num_classes, feature_dim, feature_noise, feature_dtype, seed, chunk_edges,
                progress,
            )  # fmt: skip
            schema = _with_features(schema, TARGET, feature_dim, feature_dtype)
        with progress.stage("generate: labels and splits", total=nodes, unit="nodes") as bar:
            writer.save("labels", labels)
            splits = synthetic.split_nodes(seed, nodes, (train_fraction, valid_fraction, test_fraction))
            for split, ids in zip(("train_idx", "valid_idx", "test_idx"), splits, strict=True):
                writer.save(split, ids)
            bar.advance(nodes)
        meta = {
            "name": Path(output).name,
            "num_nodes": schema.num_nodes,
            "num_edges": schema.num_edges,
            "directed": True,
            "feature_dim": 0,
            "feature_dtype": feature_dtype,
            "num_classes": num_classes,
            "hetero": schema.to_meta(),
            "source": {
                "generator": GENERATOR_NAME,
                "generator_version": GENERATOR_VERSION,
                "model": "MAG-like typed degree-corrected stochastic block model",
                "options": dict(opts, hetero=KIND, degrees=relation_degrees, add_reverse=bool(add_reverse)),
                "edges_drawn": drawn,
                "seconds": round(time.perf_counter() - started, 3),
            },
            "provenance": {
                "features": {"kind": "synthetic", "generated": True} if feature_dim > 0 else {"kind": "none"},
                "labels": {"kind": "synthetic", "generated": True},
            },
        }
        if link is not None:
            meta = split_written_typed_graph(writer, meta, link)
        dataset = writer.finish(meta, progress=progress)
        return dataset


Tables = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _node_tables(
    counts: dict[str, int],
    drawn: dict[str, int],
    num_classes: int,
    exponent: float,
    max_degree: float | None,
    seed: int,
) -> tuple[dict[str, np.ndarray], dict[str, Tables]]:
    """Communities (int64 [count]; the papers' are their labels) and sampling tables of every type."""
    endpoints = dict.fromkeys(counts, 0)
    for (src, name, dst), _, _ in RELATIONS:
        endpoints[src] += drawn[name]
        endpoints[dst] += drawn[name]
    communities: dict[str, np.ndarray] = {}
    tables: dict[str, Tables] = {}
    for index, (name, count) in enumerate(counts.items()):
        type_seed = seed if name == TARGET else _type_seed(seed, index)
        avg = endpoints[name] / count
        hub = max_degree if max_degree is not None else min(float(count), synthetic.HUB_FACTOR * math.sqrt(avg * count))
        cap = synthetic.weight_cap(exponent, hub / avg if avg > 0 else 1.0)
        communities[name] = synthetic.node_classes(type_seed, count, num_classes)
        weights = synthetic.degree_weights(type_seed, count, exponent, cap)
        tables[name] = synthetic.class_tables(communities[name], weights, num_classes)
    return communities, tables


def _draw_relation(
    rel: tuple[str, str, str],
    edges: int,
    tables: dict[str, Tables],
    homophily: float,
    seed: int,
    index: int,
    chunk_edges: int,
    counts: dict[str, int],
    bar: Stage,
    scratch: Path,
) -> TypedEdges:
    """Draw ``edges`` edges of relation ``rel`` in chunks of ``chunk_edges`` (local ids; self-loops of a
    relation within one type dropped), spilled to a scratch file in the folder ``scratch`` chunk by chunk
    (:func:`~graphtier.dataset.importers.assemble.typed_graph.spill_relation`), advancing ``bar`` by each chunk's edges."""
    src_type, name, dst_type = rel
    dtype = index_dtype(max(counts[src_type], counts[dst_type]))
    key = np.uint64(kernels.stream_key(seed, _EDGE_STREAM_BASE + index))

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        src = np.empty(min(edges, chunk_edges), dtype=dtype)
        dst = np.empty_like(src)
        for first in range(0, edges, chunk_edges):
            size = min(edges, first + chunk_edges) - first
            kernels.sample_bipartite_edges(
                key, np.int64(first), *tables[dst_type], *tables[src_type], float(homophily), src[:size], dst[:size]
            )
            bar.advance(size)
            if src_type == dst_type:
                keep = src[:size] != dst[:size]
                yield src[:size][keep], dst[:size][keep]
            else:
                yield src[:size], dst[:size]

    return spill_relation(rel, chunks(), scratch, f"generate --hetero {KIND}: {name}")


def _with_features(schema: Schema, name: str, dim: int, dtype: str) -> Schema:
    """``schema`` with type ``name``'s features declared as ``dim`` columns of ``dtype`` (written separately)."""
    return Schema.build(
        [
            (t.name, t.count, dim if t.name == name else t.feature_dim, dtype if t.name == name else t.feature_dtype)
            for t in schema.node_types
        ],
        [(r.type, r.num_edges) for r in schema.relations],
        schema.target,
    )


def _require_resources(
    output: str | os.PathLike[str],
    counts: dict[str, int],
    drawn: dict[str, int],
    feature_dim: int,
    dtype: str,
    add_reverse: bool,
    chunk_edges: int,
) -> None:
    """Refuse (one-line ResourceError) a graph whose build cannot fit in memory or whose features cannot fit on disk
    (memory as in the module docstring: the typed CSC of the drawn edges, the node tables, one chunk)."""
    relations = [(rel, drawn[rel[1]], f"generate --hetero {KIND}: {rel[1]}") for rel, _, _ in RELATIONS]
    relations += [((r[2], reverse_name(r[1]), r[0]), e, where) for r, e, where in relations] if add_reverse else []
    chunk = 16 * min(chunk_edges, max(drawn.values(), default=0))
    extra = 70 * sum(counts.values()) + chunk
    require_typed_csc_memory(counts, relations, f"{output}: generating", extra)
    feature_bytes = counts[TARGET] * feature_dim * np.dtype(dtype).itemsize
    resources.require_disk(Path(output).resolve().parent, feature_bytes, f"{output}: writing features_paper.npy")
