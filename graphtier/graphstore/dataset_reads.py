"""The graph store's reads of labels, splits and the whole CSC (:class:`DatasetReads`, a base of the store)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from graphtier.dataset.edges.link_split import LinkPairs
from graphtier.dataset.format import SPLITS
from graphtier.errors import OptionError


class DatasetReads:
    """Labels, node and edge splits, and the host CSC of the store's ``dataset`` (set by :class:`GraphStore`)."""

    dataset: Any
    _labels: np.ndarray | None
    _indptr: np.ndarray
    _indices: np.ndarray

    @property
    def num_nodes(self) -> int:
        """Nodes of the graph."""
        return int(self.dataset.num_nodes)

    def labels(self, ids: np.ndarray | torch.Tensor) -> np.ndarray:
        """Class labels of ``ids`` (int [B]): int64 numpy [B]."""
        if self._labels is None:
            raise OptionError(f"{self.dataset.path}: the dataset has no labels.npy, so there are no labels to read")
        index = ids.cpu().numpy() if isinstance(ids, torch.Tensor) else np.asarray(ids)
        return np.asarray(self._labels[index], dtype=np.int64)

    def split(self, name: str) -> np.ndarray:
        """Node ids of split ``name`` (:data:`SPLITS`): int64 numpy, empty when the dataset has none."""
        ids = self.dataset.split(_split_name(name))
        return np.asarray(ids) if ids is not None else np.empty(0, np.int64)

    def link_split(self, name: str) -> LinkPairs:
        """The edge split's pairs of ``name`` (train, valid, test); empty positives when the dataset has none."""
        link = self.dataset.link
        return LinkPairs(np.empty((0, 2), np.int64)) if link is None else link.pairs(_split_name(name))

    @property
    def csc(self) -> tuple[np.ndarray, np.ndarray]:
        """(indptr int64 [N + 1], indices int [E]): the whole topology in host memory (RAM or memory map),
        for passes over every edge (layer-wise inference, workload estimates); not counted in :meth:`traffic`."""
        return self._indptr, self._indices


def _split_name(name: str) -> str:
    """``name`` if one of :data:`SPLITS`, else OptionError naming ``split``."""
    if name not in SPLITS:
        raise OptionError(f"split: expected one of {', '.join(SPLITS)}, found {name!r}")
    return name
