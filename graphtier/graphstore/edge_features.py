"""Edge features gathered per mini-batch, placed in tiers by the same machinery as node features.

A dataset's ``edge_feat.npy`` (float16/float32 [E, d], one row per edge in CSC order: row ``p`` belongs to the edge
``indices[p] -> v``, as ``edge_time.npy``; docs/dataset-format.md) is opened as one more
:class:`~graphtier.memory.FeatureSource` by :func:`graphtier.memory.make_feature_store`, with the run's
``features_on`` mode and budgets: ``ram_budget`` (and ``gpu_budget`` on CUDA) apply to the edge table on its own
(a fraction is of its rows, bytes are its own). The tiers are row ranges of the table, so its hot rows are a
prefix of the CSC order: the in-edges of the first destination nodes, which are the most read ones after
``graphtier reorder`` (a node's in-edges are read when it is a destination of a hop, so the edge order follows the
node order). The samplers record each block's ``edge_id`` (its CSC positions) when the store has edge features,
and :meth:`EdgeFeatures.gather` reads ``edge_feat[edge_id]``; :meth:`GraphStore.traffic` reports the edge table's
bytes per tier apart (``"edge_features"``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from graphtier.dataset import Dataset
from graphtier.dataset.edges.edge_data import EDGE_FEAT
from graphtier.dataset.edges.edge_rows import edge_row_map
from graphtier.errors import DatasetError, OptionError
from graphtier.memory import FeatureSource, PlacementSpec, TierTraffic, batch_rows_bound

EDGE_FEATURE_DTYPES = (np.float16, np.float32)
"""Edge feature dtypes the tiered stores gather (float64 tables are refused with one line)."""


def edge_feature_table(dataset: Dataset) -> np.ndarray | None:
    """``edge_feat.npy`` of ``dataset`` (float [E, d], a memory map), or None when it has none.

    ``Dataset.edge_features`` when the dataset layer exposes it, else the file listed among ``Dataset.extra``."""
    table = getattr(dataset, "edge_features", None)
    return table if table is not None else dataset.extra.get(EDGE_FEAT)


def require_edge_features(dataset: Dataset, option: str = "edge_features") -> np.ndarray:
    """The edge feature table of ``dataset``; one-line :class:`OptionError` naming ``option`` when it has none or
    one the stores cannot gather (float64), :class:`DatasetError` when its shape is not [E, d]."""
    table = edge_feature_table(dataset)
    if table is None:
        raise OptionError(
            f"{{{option}}}: {dataset.path} has no {EDGE_FEAT}.npy (edge features); generate one with "
            "--edge-feature-dim or import edge feature columns",
            options=(option,),
        )
    if table.ndim != 2 or table.shape[0] != dataset.num_edges:
        raise DatasetError(
            f"{dataset.path / (EDGE_FEAT + '.npy')}: expected shape [{dataset.num_edges}, d] (one row per edge), "
            f"found {tuple(table.shape)}"
        )
    if table.dtype not in EDGE_FEATURE_DTYPES:
        raise OptionError(
            f"{{{option}}}: {dataset.path / (EDGE_FEAT + '.npy')} is {table.dtype}, expected float16 or float32 "
            "(the feature tiers gather those)",
            options=(option,),
        )
    return table


class MappedRows(FeatureSource):
    """The edge table of a dataset with ``edge_row.npy`` (:mod:`graphtier.dataset.edges.edge_rows`): ``gather(edge_id)``
    reads ``inner``'s rows ``row_map[edge_id]``, so callers keep passing CSC positions. ``row_map``: int [E] (the
    dataset's map), held in RAM once (4 bytes per edge below 2^31 edges) and copied to a device the first time
    positions arrive there (GPU sampling). Traffic, tiers and closing are ``inner``'s."""

    def __init__(self, inner: FeatureSource, row_map: np.ndarray) -> None:
        super().__init__(inner.num_rows, inner.dim, inner.dtype, inner.output_device)
        self.inner = inner
        self._maps = {torch.device("cpu"): torch.from_numpy(np.array(row_map))}

    def _gather(self, ids: torch.Tensor | np.ndarray) -> torch.Tensor:
        positions = torch.as_tensor(ids)
        if positions.dim() != 1 or positions.is_floating_point():
            raise IndexError(f"edge ids: expected 1-d integers, found {positions.dtype} {tuple(positions.shape)}")
        if positions.numel() and (int(positions.min()) < 0 or int(positions.max()) >= self.num_rows):
            raise IndexError(f"edge ids: expected CSC positions in [0, {self.num_rows})")
        row_map = self._maps.get(positions.device)
        if row_map is None:
            row_map = self._maps[positions.device] = self._maps[torch.device("cpu")].to(positions.device)
        return self.inner.gather(row_map[positions.long()].long())

    def traffic(self) -> TierTraffic:
        return self.inner.traffic()

    @property
    def device_rows(self) -> int:
        return 0  # the device rows are table rows, not positions

    def describe(self) -> str:
        return f"{self.inner.describe()}, rows in read order (edge_row.npy)"

    def _close(self) -> None:
        self._maps.clear()
        self.inner.close()


def mapped_rows(dataset: Dataset, source: FeatureSource) -> FeatureSource:
    """``source`` (the dataset's edge table) read by CSC position: wrapped in :class:`MappedRows` when the dataset
    has ``edge_row.npy``, else itself."""
    row_map = edge_row_map(dataset)
    return source if row_map is None else MappedRows(source, row_map)


def batch_edges_bound(batch_size: int, fanouts: Sequence[int], num_nodes: int, num_edges: int) -> int | None:
    """Upper bound of the edges of one block of a neighbour-sampled batch (sizes the staging buffers), or None
    when a hop takes whole lists (fanout -1): hop ``h`` draws at most ``fanouts[h]`` edges per row known before it."""
    if any(f < 0 for f in fanouts):
        return None
    bound = max((batch_rows_bound(batch_size, list(fanouts[:h]), num_nodes) * f for h, f in enumerate(fanouts)),
                default=0)  # fmt: skip
    return max(1, min(num_edges, bound))


def open_edge_features(
    dataset: Dataset,
    placement: PlacementSpec,
    *,
    device: torch.device,
    batch_size: int,
    fanouts: Sequence[int],
    ring_size: int,
    log: Callable[[str], None] = print,
) -> FeatureSource:
    """The edge feature table of ``dataset`` (:func:`require_edge_features`) as a feature source of the placement's
    ``features_on`` mode and budgets (:func:`make_feature_store`), its log lines prefixed ``edge features:``.
    ``gather(edge_id)`` (int64 [E_b] CSC positions) gives float16/float32 [E_b, d] on the source's output device
    (through ``edge_row.npy`` when the dataset has one: :func:`mapped_rows`)."""
    table = require_edge_features(dataset)
    return mapped_rows(dataset, placement.feature_store(
        table, device=device, ring_size=ring_size,
        max_batch_rows=batch_edges_bound(batch_size, fanouts, dataset.num_nodes, dataset.num_edges),
        log=lambda line: log(f"edge features: {line}"),
    ))  # fmt: skip
