"""Node features of an import: rows of a feature file copied in new-id order (with the NaN/Inf guard), or
deterministic synthetic features (pure noise unless a label signal is asked for; also used by the generator).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources
from graphtier.dataset.finite import NonFiniteGuard
from graphtier.dataset.importers.common import node_data
from graphtier.dataset.importers.common.edges import IdMap, gather_rows
from graphtier.dataset.importers.common.textio import require_file
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import OptionError

FEATURE_BLOCK_ROWS = 1 << 16
"""Rows per block of :func:`synthetic_features`; fixed so the output does not depend on memory."""


def synthetic_features(
    labels: np.ndarray | None,
    dim: int,
    seed: int,
    *,
    num_nodes: int | None = None,
    out: np.ndarray | None = None,
    signal: float = 0.0,
    progress: Progress = NO_PROGRESS,
) -> np.ndarray:
    """Deterministic random features; they carry label information only when ``signal > 0``.

    Row ``v`` is standard normal noise plus, when ``signal > 0`` and ``labels[v] >= 0``, ``signal``
    times the centroid of its class (centroids are standard normal vectors drawn from ``seed``).
    With the default ``signal`` 0 the rows are pure noise, identical whatever the labels: features
    that encode the labels make any model look perfect, so that is opt-in only. Rows are generated in
    blocks of :data:`FEATURE_BLOCK_ROWS` from a generator seeded by ``(seed, block)``, so the
    result depends only on the arguments, and a memory map can be filled block by block.

    Args:
        labels: int64 [N] with -1 for unlabelled, or None (then ``num_nodes`` is required).
        dim: D > 0.
        seed: random seed.
        num_nodes: N when ``labels`` is None.
        out: optional float32/float16 [N, D] array (e.g. a memory map) to fill.
        signal: scale of the class centroids added to labelled rows (0: no label information).
        progress: reports the stage ``prepare: synthetic features`` block by block (rows).

    Returns:
        float32 [N, D] (or ``out``), on the CPU.
    """
    if dim <= 0:
        raise OptionError(f"--synthetic-features: expected a positive dimension, found {dim}")
    if labels is None and num_nodes is None:
        raise OptionError("synthetic_features: pass labels or num_nodes")
    n = int(labels.shape[0]) if labels is not None else int(num_nodes)  # type: ignore[arg-type]
    if out is None:
        out = np.empty((n, dim), dtype=np.float32)
    elif out.shape != (n, dim):
        raise OptionError(f"synthetic_features: out has shape {out.shape}, expected {(n, dim)}")
    if not np.isfinite(signal) or signal < 0:
        raise OptionError(f"--synthetic-feature-signal: expected a finite number >= 0, found {signal}")
    centroids = None
    if signal > 0 and labels is not None and labels.shape[0] and int(np.max(labels)) >= 0:
        num_classes = int(np.max(labels)) + 1
        resources.require_memory(
            num_classes * dim * 4, f"--synthetic-feature-signal: class centroids ({num_classes:,} classes x {dim})"
        )
        centroids = np.random.default_rng([seed, node_data.CENTROIDS_STREAM]).standard_normal(
            (num_classes, dim), dtype=np.float32
        )
        centroids *= np.float32(signal)
    with progress.stage("prepare: synthetic features", total=n, unit="rows") as bar:
        for block, start in enumerate(range(0, n, FEATURE_BLOCK_ROWS)):
            stop = min(n, start + FEATURE_BLOCK_ROWS)
            rows = np.random.default_rng([seed, block]).standard_normal((stop - start, dim), dtype=np.float32)
            if centroids is not None:
                block_labels = np.asarray(labels[start:stop])  # type: ignore[index]
                labelled = block_labels >= 0
                rows[labelled] += centroids[block_labels[labelled]]
            out[start:stop] = rows
            bar.advance(stop - start)
    return out


# ---------------------------------------------------------------------------- labels and features


def note_replaced(writer: DatasetWriter, guard: NonFiniteGuard) -> None:
    """Record in ``meta.json`` (``source.non_finite_replaced``) how many feature values ``guard`` replaced."""
    if guard.replaced:
        writer.source_notes["non_finite_replaced"] = writer.source_notes.get("non_finite_replaced", 0) + guard.replaced


CODE_CHECK_MAX_COLUMNS = 64
"""Only feature matrices with at most this many columns are checked for category codes (attribute tables)."""

CODE_CHECK_ROWS = 1 << 16
"""Rows sampled (the first ones) by :func:`category_code_columns`, so the check takes bounded time."""


def category_code_columns(feats: Any) -> list[dict[str, int]]:
    """The columns of a feature matrix [rows, D] that look like integer category codes (years, ids), not values.

    The test, on the first :data:`CODE_CHECK_ROWS` rows of a matrix of at most
    :data:`CODE_CHECK_MAX_COLUMNS` columns (an attribute table rather than embeddings or a bag of
    words): every finite value of the column is an integer, it has more than two distinct values
    (0/1 indicators are fine) and its largest magnitude is at least 10. A model reads such a
    column as a magnitude (2009 > 2008), which is wrong for codes. Returns one
    ``{"column", "distinct", "max"}`` per such column (0-based), empty when none.
    """
    if feats.ndim != 2 or feats.shape[1] > CODE_CHECK_MAX_COLUMNS or feats.shape[0] == 0:
        return []
    block = np.asarray(feats[:CODE_CHECK_ROWS], dtype=np.float64)
    found = []
    for column in range(block.shape[1]):
        values = block[:, column]
        values = values[np.isfinite(values)]
        if values.size == 0 or np.any(values != np.round(values)):
            continue
        distinct = np.unique(values)
        largest = float(np.max(np.abs(values)))
        if distinct.size > 2 and largest >= 10:
            found.append({"column": column, "distinct": int(distinct.size), "max": int(largest)})
    return found


def write_feature_file(
    path: str | os.PathLike[str] | np.ndarray,
    idmap: IdMap,
    writer: DatasetWriter,
    source: str | os.PathLike[str] | None = None,
    non_finite: str = "error",
    progress: Progress = NO_PROGRESS,
) -> tuple[int, str]:
    """Copy the rows of the feature matrix ``path`` into ``features.npy`` of ``writer``.

    ``path`` is a ``.npy`` or text matrix file (see :mod:`~graphtier.dataset.importers.common.node_data`)
    or an already read [rows, D] array (``source``: its file, for messages). Row ``k`` belongs to original node id ``k``; with remapped
    ids the rows of the nodes in the graph are gathered in new-id order. float16/float32 are
    kept, other numeric dtypes become float32. NaN/±Inf values are refused or, with ``non_finite="replace"``,
    replaced by 0 (see :class:`~graphtier.dataset.finite.NonFiniteGuard`). Returns ``(feature_dim, feature_dtype)``.
    ``progress`` reports the stage ``prepare: copy features`` block by block (rows).
    """

    if not isinstance(path, (str, os.PathLike)):
        feats = path
        p = Path(source) if source is not None else Path("--features")
    else:
        p = require_file(path, "--features file")
        feats = node_data.read_feature_matrix(p, writer.tmp / "features.scratch")
    codes = category_code_columns(feats)
    if codes:
        writer.source_notes["category_code_columns"] = codes
    guard = NonFiniteGuard(p, non_finite)
    out_dtype = feats.dtype if feats.dtype in (np.float16, np.float32) else np.dtype(np.float32)
    rows = gather_rows(p, feats.shape[0], idmap, "--features")
    dim = int(feats.shape[1])
    out = writer.open_memmap("features", (idmap.num_nodes, dim), out_dtype)
    step = max(1, (64 << 20) // max(1, dim * out_dtype.itemsize))
    with progress.stage("prepare: copy features", total=idmap.num_nodes, unit="rows") as bar:
        for start in range(0, idmap.num_nodes, step):
            stop = min(idmap.num_nodes, start + step)
            block = feats[start:stop] if rows is None else feats[rows[start:stop]]
            out[start:stop] = guard.apply(np.asarray(block).astype(out_dtype, copy=False), start)
            bar.advance(stop - start)
    out.flush()
    del out, feats
    (writer.tmp / "features.scratch").unlink(missing_ok=True)
    note_replaced(writer, guard)
    return dim, str(out_dtype)
