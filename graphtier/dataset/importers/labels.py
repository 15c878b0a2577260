"""Node labels in new-id order (:class:`Labels`) and their mapping from (original id, class) pairs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphtier.dataset.importers.edges import IdMap
from graphtier.errors import DatasetError


@dataclass
class Labels:
    """Node labels in new-id order: int64 [N] with -1 for unlabelled, and the class count."""

    values: np.ndarray
    num_classes: int
    class_names: list[str] | None = None


def labels_from_pairs(
    path: Path, ids: np.ndarray, classes: np.ndarray, idmap: IdMap
) -> Labels:
    """Labels of original ``ids`` (int [K]) with integer ``classes`` (int [K]; < 0 = unlabelled)."""
    new = idmap.lookup(ids)
    unknown = np.flatnonzero(new < 0)
    if unknown.size:
        raise DatasetError(
            f"{path}: expected labels for node ids of the graph, found {unknown.size} unknown id(s), "
            f"first {int(ids[unknown[0]])}"
        )
    values = np.full(idmap.num_nodes, -1, dtype=np.int64)
    classes = np.asarray(classes, dtype=np.int64)
    values[new] = np.where(classes >= 0, classes, -1)
    num_classes = int(values.max()) + 1 if values.size and values.max() >= 0 else 0
    return Labels(values, num_classes)
