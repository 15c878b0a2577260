"""OGB's per-edge files of a homogeneous dataset: times and features in the edge order of ``raw/edge.csv.gz``.

    raw/edge_year.csv.gz     E lines, one integer year each (ogbl-collab): ``edge_time.npy`` (unit ``year``)
    raw/edge_weight.csv.gz   E lines, one number each (ogbl-collab: the collaborations of the pair that year)
    raw/edge-feat.csv.gz     E lines of D floats (ogbn-proteins)

Both feature files may be given; the weight is then the last feature column. The features are parsed into a
scratch table in input order and the CSC build carries each edge's input row
(:func:`graphtier.dataset.edges.edge_data.write_edge_columns`), as ``prepare edgelist --edge-feature-columns`` does; a
reverse edge of ``--undirected`` takes its edge's row and time, a merged repeat its earliest copy's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphtier.dataset.edges.edge_data import EdgeColumns
from graphtier.dataset.importers.common import textio
from graphtier.dataset.importers.common.edge_columns import read_edge_columns
from graphtier.dataset.importers.formats.ogb_files import find_raw, read_int_list
from graphtier.errors import DatasetError

EDGE_FILES = ("edge_year", "edge_weight", "edge-feat")
"""The per-edge files of ``raw/`` this module reads (each ``.csv.gz`` or ``.csv``)."""
COPY_ROWS = 1 << 20
"""Rows copied at a time when the two feature files are joined."""


@dataclass(frozen=True)
class OgbEdgeFiles:
    """The per-edge files found in an OGB ``raw/`` folder (None: absent)."""

    year: Path | None
    weight: Path | None
    feat: Path | None

    @classmethod
    def find(cls, raw: Path) -> OgbEdgeFiles:
        """The files of :data:`EDGE_FILES` present in ``raw``."""
        year, weight, feat = (find_raw(raw, stem, required=False) for stem in EDGE_FILES)
        return cls(year, weight, feat)

    @property
    def paths(self) -> list[Path]:
        """The files present."""
        return [p for p in (self.year, self.weight, self.feat) if p is not None]

    @property
    def has_features(self) -> bool:
        """Whether an edge feature file is present."""
        return self.weight is not None or self.feat is not None


def read_edge_years(path: Path) -> np.ndarray:
    """int64 [E]: ``edge_year``, one integer year per edge line (checked against the edge count by
    :func:`timed_edge_rows`)."""
    return read_int_list(path, "one integer year per line")


def timed_edge_rows(blocks: Iterable[np.ndarray], years: np.ndarray, year_path: Path) -> Iterator[np.ndarray]:
    """The int64 [R, 2] edge blocks of ``edge.csv`` with each edge's year as a third column ([R, 3]);
    :class:`DatasetError` when ``years`` has not one entry per edge."""
    at = 0
    for block in blocks:
        rows = int(block.shape[0])
        if at + rows > years.shape[0]:
            raise DatasetError(f"{year_path}: expected one year per edge line, found {years.shape[0]} for more edges")
        yield np.column_stack([block[:, :2], years[at : at + rows]])
        at += rows
    if at != years.shape[0]:
        raise DatasetError(f"{year_path}: expected {at} years (one per edge line), found {years.shape[0]}")


def read_ogb_edge_features(
    files: OgbEdgeFiles, num_edges: int, scratch: Path, non_finite: str, writer: object
) -> EdgeColumns | None:
    """The edge features of ``files`` in input order (float32 [E, d] memory maps in ``scratch``-named files): the
    columns of ``edge-feat`` then ``edge_weight``; None without either file. One-line :class:`DatasetError` for a
    file without one row per edge or with a bad value (NaN/Inf refused, or replaced with ``non_finite`` replace)."""
    parts: list[tuple[EdgeColumns, list[str]]] = []
    for path, stem in ((files.feat, "edge-feat"), (files.weight, "edge_weight")):
        if path is None:
            continue
        first = textio.first_data_lines(path, 1)
        dim = textio.count_columns(first[0]) if first else 1
        columns = read_edge_columns(
            path, list(range(dim)), None, skip_header=False, scratch=scratch.with_name(f"{stem}_{scratch.name}"),
            num_edges=num_edges, non_finite=non_finite, writer=writer,
        )  # fmt: skip
        names = ["edge_weight"] if stem == "edge_weight" else [f"edge_feat {i}" for i in range(dim)]
        parts.append((columns, names))
    if not parts:
        return None
    if len(parts) == 1:
        columns, names = parts[0]
        columns.feature_names = names
        return columns
    dims = [int(c.features.shape[1]) for c, _ in parts if c.features is not None]
    joined_path = scratch.with_name(f"joined_{scratch.name}")
    joined = np.memmap(joined_path, np.float32, "w+", shape=(num_edges, sum(dims))) if num_edges else None
    at = 0
    for (columns, _), dim in zip(parts, dims):
        assert columns.features is not None
        for lo in range(0, num_edges, COPY_ROWS):
            assert joined is not None
            joined[lo : lo + COPY_ROWS, at : at + dim] = columns.features[lo : lo + COPY_ROWS]
        at += dim
        columns.remove()
    table = joined if joined is not None else np.empty((0, sum(dims)), np.float32)
    return EdgeColumns(table, None, [n for _, names in parts for n in names], None, [joined_path])
