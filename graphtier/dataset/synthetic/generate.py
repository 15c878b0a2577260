"""Synthetic power-law graphs with learnable labels: a degree-corrected stochastic block model.

Model (``graphtier generate``):

- every node gets a class, uniform over ``num_classes``, and a degree weight drawn from a Pareto
  law with exponent ``degree_exponent`` (density ~ w^-gamma), truncated so that no node's expected
  degree exceeds ``max_degree`` (default ``4 * sqrt(avg_degree * nodes)``, four times the structural
  cutoff; real graphs sit at 1.5x (ogbn-products) to 10x (cnr-2000 in-degrees) of theirs);
- every edge draws its destination proportionally to the weights, and its source proportionally to
  the weights inside the destination's class with probability ``homophily``, otherwise from another
  class (chosen proportionally to the class weight masses);
- features are the class centroid (a random unit vector) plus N(0, feature_noise^2) per dimension.

Graphs are symmetric by default (``undirected=True``): each drawn pair is stored in both directions,
so the in-neighbour lists that GraphSAGE-style samplers read see every neighbour. Duplicate edges
and self-loops are dropped, so the stored graph has slightly fewer than ``nodes * avg_degree`` edges.
Node ids are in random order with respect to class and degree (``node_order = "original"``).

The output is a pure function of the seed and the options: randomness is counter based (see
:mod:`graphtier.dataset.synthetic._synthetic_kernels`), so it does not depend on ``chunk_edges`` or the number of
threads. Peak memory (N < 2^31): 4 bytes per stored edge direction (int32 ``indices``) + about 70 bytes
per node, + 8 bytes per drawn pair (int32 src + dst) when the pairs take at most a quarter of the
available memory (:func:`keep_drawn_pairs`); larger graphs draw their pairs twice, chunk by chunk (once
to count the neighbour lists' lengths, once to fill them: the same pairs, about 30% more time) instead
of holding them. 10M nodes / 200M edges need about 2.5 GB; 40M nodes / 1B directed edges about 6.8 GB.
Features are written to disk chunk by chunk and never held whole in RAM.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numba
import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources
from graphtier.dataset.format import Dataset, index_dtype
from graphtier.dataset.importers.split.holdout import link_options, split_written_graph
from graphtier.dataset.synthetic import _synthetic_csc_kernels as csc_kernels
from graphtier.dataset.synthetic import _synthetic_kernels as kernels
from graphtier.dataset.synthetic.synthetic_draws import (  # noqa: F401 - the model's draws, read by tests and benchmarks too
    STREAM_EDGES,
    STREAM_FEATURES,
    class_centroids,
    degree_weights,
    edge_feature_rows,
    node_classes,
    split_nodes,
    truncated_pareto_mean,
    weight_cap,
)
from graphtier.dataset.synthetic.synthetic_options import (
    DEFAULT_CHUNK_EDGES,
    DEFAULT_DEGREE_EXPONENT,
    DEFAULT_FEATURE_DIM,
    DEFAULT_FEATURE_NOISE,
    DEFAULT_HOMOPHILY,
    DEFAULT_NUM_CLASSES,
    DEFAULT_TEST_FRACTION,
    DEFAULT_TRAIN_FRACTION,
    DEFAULT_VALID_FRACTION,
    validate_options,
)
from graphtier.dataset.writer import DatasetWriter

GENERATOR_NAME = "graphtier.dataset.synthetic"  # recorded in provenance: the name when it was first written
GENERATOR_VERSION = 1

KEEP_PAIRS_MEMORY_FRACTION = 0.25
"""The drawn pairs are kept in memory (not drawn twice) when they take at most this share of the available memory."""
# Default hub size: expected max degree = HUB_FACTOR * sqrt(nodes * avg_degree), i.e. a few times the
# structural cutoff (real graphs: soc-Slashdot0902 3.7x, cnr-2000 in-degree 10x, ogbn-products 1.5x).
HUB_FACTOR = 4.0


# ---------------------------------------------------------------------------------------------- generate
def _require_resources(
    output: str | os.PathLike[str],
    nodes: int,
    avg_degree: float,
    undirected: bool,
    feature_dim: int,
    feature_dtype: str,
    edge_feature_dim: int = 0,
) -> None:
    """Refuse (one-line ResourceError) a graph whose build cannot fit in memory or whose features cannot fit on disk.

    Memory as in the module docstring: 1 id per stored edge direction + ~70 bytes/node, + 2 ids per drawn pair when
    the pairs are kept (:func:`keep_drawn_pairs`).
    """
    id_bytes = 4 if nodes < 2**31 else 8
    directions = nodes * avg_degree
    pairs = drawn_pairs(nodes, avg_degree, undirected)
    kept = 2 * id_bytes * pairs if keep_drawn_pairs(pairs, id_bytes) else 0
    needed = int(kept + id_bytes * directions + 70 * nodes)
    resources.require_memory(needed, f"{output}: generating {nodes:,} nodes with average degree {avg_degree:g}")
    feature_bytes = (nodes * feature_dim + int(directions) * edge_feature_dim) * np.dtype(feature_dtype).itemsize
    resources.require_disk(Path(output).resolve().parent, feature_bytes, f"{output}: writing features.npy")


def generate(
    output: str | os.PathLike[str],
    *,
    nodes: int,
    avg_degree: float,
    num_classes: int = DEFAULT_NUM_CLASSES,
    feature_dim: int = DEFAULT_FEATURE_DIM,
    degree_exponent: float = DEFAULT_DEGREE_EXPONENT,
    homophily: float = DEFAULT_HOMOPHILY,
    feature_noise: float = DEFAULT_FEATURE_NOISE,
    train_fraction: float = DEFAULT_TRAIN_FRACTION,
    valid_fraction: float = DEFAULT_VALID_FRACTION,
    test_fraction: float = DEFAULT_TEST_FRACTION,
    feature_dtype: str = "float32",
    undirected: bool = True,
    seed: int = 0,
    overwrite: bool = False,
    chunk_edges: int = DEFAULT_CHUNK_EDGES,
    max_degree: float | None = None,
    progress: Progress = NO_PROGRESS,
    edge_split: str | tuple[float, float, float] | None = None,
    eval_negatives: int = 0,
    edge_feature_dim: int = 0,
) -> Dataset:
    """Generate a degree-corrected SBM dataset at ``output`` (see the module docstring) and open it.

    Args:
        output: dataset directory to create (atomically; an existing one needs ``overwrite``).
        nodes: N. avg_degree: expected stored in-degree before duplicates/self-loops are dropped
            (``nodes * avg_degree`` directed edges are drawn; undirected graphs draw half as many pairs).
        num_classes: C. feature_dim: D (0 writes no features). feature_dtype: float32 or float16.
        degree_exponent: gamma of the degree weights (> 1; real graphs 2..3).
        homophily: probability that an edge stays inside its destination's class.
        feature_noise: per-dimension std of the Gaussian noise around unit-norm class centroids.
        train_fraction: split size as a fraction of N, as are ``valid_fraction`` and ``test_fraction``.
        undirected: store each pair both ways (default) or keep drawn edges directed.
        seed: the output is a pure function of the seed and the options.
        chunk_edges: edges drawn per kernel call and feature values per written block (the feature
            buffer is ``4 * chunk_edges`` bytes); the output does not depend on it.
        max_degree: the largest expected degree (hub size, before duplicates are dropped); default
            ``min(nodes - 1, 4 * sqrt(nodes * avg_degree))``.
        progress: reports each stage (``generate: draw edges``, ``generate: write features``, ...).
        edge_split: the link-prediction edge split (``"0.85,0.05,0.1"``) and ``eval_negatives`` its negatives, as
            ``graphtier prepare --edge-split`` (:func:`~graphtier.dataset.importers.split.holdout.split_written_graph`).
        edge_feature_dim: d_e > 0 writes ``edge_feat.npy`` ([E, d_e] in ``feature_dtype``, one row per stored edge in
            CSC order after the edge split; uniform in [-1, 1), a pure function of the seed and the edge's position)
            and its ``meta.json`` entry ``edge_features``.

    Returns:
        The written :class:`Dataset`: int64 indptr [N + 1], int32 indices [E], features [N, D],
        int64 labels [N] (every node labelled), int64 split ids.
    """
    opts: dict[str, Any] = dict(
        nodes=nodes,
        avg_degree=avg_degree,
        num_classes=num_classes,
        feature_dim=feature_dim,
        degree_exponent=degree_exponent,
        homophily=homophily,
        feature_noise=feature_noise,
        train_fraction=train_fraction,
        valid_fraction=valid_fraction,
        test_fraction=test_fraction,
        feature_dtype=feature_dtype,
        undirected=bool(undirected),
        seed=seed,
        chunk_edges=chunk_edges,
        max_degree=max_degree,
        edge_feature_dim=edge_feature_dim,
    )
    opts["edge_split"], opts["eval_negatives"] = link_options(edge_split, eval_negatives)
    validate_options(opts)
    nodes, seed, chunk_edges = int(nodes), int(seed), int(chunk_edges)
    avg_degree = float(avg_degree)
    _require_resources(output, nodes, avg_degree, bool(undirected), feature_dim, feature_dtype, edge_feature_dim)
    started = time.perf_counter()

    with DatasetWriter(output, overwrite=overwrite) as writer:
        with progress.stage("generate: classes and degree weights", total=nodes, unit="nodes") as bar:
            labels = node_classes(seed, nodes, num_classes)
            if max_degree is None:
                max_degree = min(nodes - 1.0, HUB_FACTOR * math.sqrt(avg_degree * nodes))
            cap = weight_cap(degree_exponent, max_degree / avg_degree if avg_degree > 0 else 1.0)
            weights = degree_weights(seed, nodes, degree_exponent, cap)
            bar.advance(nodes)

        indptr, indices, pairs = _build_graph(
            labels, weights, num_classes, avg_degree, homophily, bool(undirected), seed, chunk_edges, progress
        )
        del weights
        num_edges = int(indptr[-1])
        with progress.stage("generate: write edges", total=num_edges, unit="edges") as bar:
            writer.save("indptr", indptr)
            writer.save("indices", indices[:num_edges])
            del indices
            bar.advance(num_edges)

        with progress.stage("generate: labels and splits", total=nodes, unit="nodes") as bar:
            writer.save("labels", labels)
            train, valid, test = split_nodes(seed, nodes, (train_fraction, valid_fraction, test_fraction))
            for name, ids in (("train_idx", train), ("valid_idx", valid), ("test_idx", test)):
                writer.save(name, ids)
            bar.advance(nodes)

        if feature_dim > 0:
            write_features(
                writer, "features", labels, num_classes, feature_dim, feature_noise, feature_dtype, seed, chunk_edges,
                progress,
            )  # fmt: skip

        meta = {
            "name": Path(output).name,
            "num_nodes": nodes,
            "num_edges": num_edges,
            "directed": not undirected,
            "feature_dim": feature_dim,
            "feature_dtype": feature_dtype,
            "num_classes": num_classes,
            "source": {
                "generator": GENERATOR_NAME,
                "generator_version": GENERATOR_VERSION,
                "model": "degree-corrected stochastic block model",
                "options": opts,
                "pairs_drawn": pairs,
                "weight_cap": cap,
                "max_expected_degree": float(max_degree),
                "seconds": round(time.perf_counter() - started, 3),
            },
            "provenance": {
                "features": {"kind": "synthetic", "generated": True} if feature_dim > 0 else {"kind": "none"},
                "labels": {"kind": "synthetic", "generated": True} if num_classes > 0 else {"kind": "none"},
            },
        }
        meta = split_written_graph(writer, meta, opts["edge_split"], seed=seed, eval_negatives=opts["eval_negatives"])
        if edge_feature_dim > 0:  # after the split: one row per edge of the message-passing graph
            meta["edge_features"] = write_edge_features(
                writer, int(meta["num_edges"]), edge_feature_dim, feature_dtype, seed, chunk_edges, progress
            )
        dataset = writer.finish(meta, progress=progress)
        return dataset


def class_tables(
    labels: np.ndarray, weights: np.ndarray, num_classes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The sampling tables of one node set for :func:`~graphtier.dataset.synthetic._synthetic_kernels.sample_bipartite_edges`.

    ``labels`` int64 [N] classes, ``weights`` float64 [N] degree weights. Returns ``(class_cum, class_mass,
    offsets, slots)``: float64 [C] inclusive cumulative class weight masses and the masses, int64 [C + 1] class
    boundaries of the members sorted by class, and the packed alias slots [N] (node ids int32 when N < 2^31).
    """
    members = np.argsort(labels.astype(np.int16), kind="stable").astype(index_dtype(labels.shape[0]))
    offsets = np.zeros(num_classes + 1, dtype=np.int64)
    np.cumsum(np.bincount(labels, minlength=num_classes), out=offsets[1:])
    accept, alias = kernels.build_alias_tables(weights[members], offsets)
    slots = kernels.pack_alias_slots(accept, alias, members)
    class_mass = np.bincount(labels, weights=weights, minlength=num_classes).astype(np.float64)
    return np.cumsum(class_mass), class_mass, offsets, slots


def _build_graph(
    labels: np.ndarray,
    weights: np.ndarray,
    num_classes: int,
    avg_degree: float,
    homophily: float,
    undirected: bool,
    seed: int,
    chunk_edges: int,
    progress: Progress,
    keep_pairs: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Draw the edges and build deduplicated CSC from them.

    With ``keep_pairs`` (default: :func:`keep_drawn_pairs`) the drawn pairs are kept in memory (int32 src + dst,
    8 bytes each) between counting the endpoints and scattering them; without, only one chunk of pairs is held
    and the pairs are drawn twice (the output is the same). Returns int64 indptr [N + 1], indices [>= E] (the
    first ``indptr[-1]`` entries are the graph) and the number of drawn pairs.
    """
    nodes = labels.shape[0]
    node_dtype = index_dtype(nodes)
    with progress.stage("generate: alias tables", total=nodes, unit="nodes") as bar:
        tables = class_tables(labels, weights, num_classes)
        bar.advance(nodes)

    pairs = drawn_pairs(nodes, avg_degree, undirected)
    key = np.uint64(kernels.stream_key(seed, STREAM_EDGES))
    keep = keep_drawn_pairs(pairs, node_dtype.itemsize) if keep_pairs is None else keep_pairs
    src = np.empty(pairs if keep else min(pairs, chunk_edges), dtype=node_dtype)
    dst = np.empty_like(src)
    parts = np.int64(numba.get_num_threads())
    counts = np.zeros(nodes, dtype=np.int64)
    drawn = f"generate: draw {'pairs' if undirected else 'edges'}" + ("" if keep else " (counted, not kept)")
    with progress.stage(drawn, total=pairs, unit="edges") as bar:
        for first, stop, chunk_src, chunk_dst in _draw_chunks(key, pairs, chunk_edges, tables, homophily, src, dst):
            csc_kernels.count_endpoints(chunk_src, chunk_dst, counts, undirected, parts)
            bar.advance(stop - first)

    with progress.stage("generate: group edges by destination", total=pairs, unit="edges") as bar:
        indptr = np.zeros(nodes + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        del counts
        indices = np.empty(int(indptr[-1]), dtype=node_dtype)
        cursor = indptr[:-1].copy()
        if keep:  # the pairs are all in memory: scatter them at once
            csc_kernels.scatter_endpoints(src, dst, cursor, indices, undirected, parts)
            bar.advance(pairs)
        else:  # draw the same pairs again (counter-based randomness), chunk by chunk, in the same order
            for first, stop, chunk_src, chunk_dst in _draw_chunks(key, pairs, chunk_edges, tables, homophily, src, dst):
                csc_kernels.scatter_endpoints(chunk_src, chunk_dst, cursor, indices, undirected, parts)
                bar.advance(stop - first)
        del cursor, src, dst, tables

    with progress.stage("generate: sort lists, drop duplicates and self-loops", total=nodes, unit="nodes") as bar:
        csc_kernels.sort_and_count_unique(indptr, indices)
        csc_kernels.compact_lists(indptr, indices)
        bar.advance(nodes)
    return indptr, indices, pairs


def drawn_pairs(nodes: int, avg_degree: float, undirected: bool) -> int:
    """The number of pairs the generator draws: ``nodes * avg_degree`` edge directions (half as many pairs when
    each is stored both ways)."""
    return int(round(nodes * avg_degree / 2)) if undirected else int(round(nodes * avg_degree))


def keep_drawn_pairs(pairs: int, id_bytes: int) -> bool:
    """Whether the drawn pairs (``2 * id_bytes`` each) are kept in memory between the two passes over them: when
    they take at most :data:`KEEP_PAIRS_MEMORY_FRACTION` of the available memory, else they are drawn twice."""
    return 2 * id_bytes * pairs <= KEEP_PAIRS_MEMORY_FRACTION * resources.available_memory()


def _draw_chunks(
    key: np.uint64,
    pairs: int,
    chunk_edges: int,
    tables: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    homophily: float,
    src: np.ndarray,
    dst: np.ndarray,
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """Draw pairs ``[first, stop)`` chunk by chunk and yield ``(first, stop, src chunk, dst chunk)``: into
    ``src[first:stop]`` / ``dst[first:stop]`` when those hold all pairs, else into their first ``stop - first``
    entries (a buffer reused by every chunk)."""
    class_cum, class_mass, offsets, slots = tables
    for first in range(0, pairs, chunk_edges):
        stop = min(pairs, first + chunk_edges)
        window = slice(first, stop) if src.shape[0] == pairs else slice(0, stop - first)
        kernels.sample_edges(
            key, np.int64(first), class_cum, class_mass, offsets, slots, float(homophily), src[window], dst[window]
        )
        yield first, stop, src[window], dst[window]


def write_features(
    writer: DatasetWriter,
    name: str,
    labels: np.ndarray,
    num_classes: int,
    feature_dim: int,
    feature_noise: float,
    feature_dtype: str,
    seed: int,
    chunk_edges: int,
    progress: Progress = NO_PROGRESS,
) -> None:
    """Write ``<name>.npy`` [N, D]: class centroid of ``labels`` + noise, chunk by chunk through a file handle
    (bounded RSS; ``chunk_edges`` feature values per block), reported as the stage ``generate: write features``."""
    nodes = labels.shape[0]
    centroids = class_centroids(seed, num_classes, feature_dim)
    key = np.uint64(kernels.stream_key(seed, STREAM_FEATURES))
    header = writer.open_memmap(name, (nodes, feature_dim), feature_dtype)
    offset = header.offset
    del header
    rows_per_chunk = max(1, min(nodes, chunk_edges // feature_dim))
    # double buffering: numba fills one block (GIL released) while a thread writes the other
    blocks = [np.empty((rows_per_chunk, feature_dim), dtype=np.float32) for _ in range(2)]
    stage = progress.stage(f"generate: write {name}", total=nodes, unit="rows")
    with open(writer.path(name), "r+b") as handle, ThreadPoolExecutor(max_workers=1) as pool, stage as bar:
        handle.seek(offset)
        pending: Future[int] | None = None
        for number, start in enumerate(range(0, nodes, rows_per_chunk)):
            stop = min(nodes, start + rows_per_chunk)
            rows = blocks[number % 2][: stop - start]
            kernels.fill_features(key, np.int64(start), labels[start:stop], centroids, float(feature_noise), rows)
            if pending is not None:
                pending.result()  # the other block is free again; also re-raises write errors
            out = rows if feature_dtype == "float32" else rows.astype(feature_dtype)
            pending = pool.submit(handle.write, out.data)
            bar.advance(stop - start)
        if pending is not None:
            pending.result()


def write_edge_features(
    writer: DatasetWriter,
    num_edges: int,
    dim: int,
    dtype: str,
    seed: int,
    chunk_edges: int,
    progress: Progress = NO_PROGRESS,
) -> dict[str, Any]:
    """Write ``edge_feat.npy`` [num_edges, dim] (``dtype``) of :func:`edge_feature_rows`, ``chunk_edges`` values a
    block through a memory map (bounded RSS); returns its ``meta.json`` entry ``{"dim", "dtype", "columns"}``."""
    out = writer.open_memmap("edge_feat", (num_edges, dim), dtype)
    rows_per_chunk = max(1, chunk_edges // dim)
    with progress.stage("generate: write edge_feat", total=num_edges, unit="rows") as bar:
        for start in range(0, num_edges, rows_per_chunk):
            stop = min(num_edges, start + rows_per_chunk)
            out[start:stop] = edge_feature_rows(seed, start, stop - start, dim)
            bar.advance(stop - start)
    out.flush()
    del out
    return {"dim": int(dim), "dtype": str(dtype), "columns": [f"edge_feat_{i}" for i in range(dim)]}
