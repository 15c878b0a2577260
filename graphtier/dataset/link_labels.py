"""The edge-level targets of an edge split: ``link_{split}_label.npy`` (float32 [P], row-aligned with
``link_{split}.npy``) and ``meta.json`` ``link.label`` (``{"column": name}``; docs/guide/link-prediction.md, "Edge-level
targets"), read by ``train --task link --link-target``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset.link_split import LINK_META_KEY, label_file, positives_file
from graphtier.errors import DatasetError


def pair_labels(root: Path, meta: dict[str, Any], split: str) -> np.ndarray | None:
    """float32 [P] memory map: the targets of ``split``'s pairs (``root``: the dataset; ``meta``: its meta.json), None
    without ``link.label``; :class:`DatasetError` unless float32 with a row per ``link_{split}.npy`` row."""
    path, pairs_path = root / f"{label_file(split)}.npy", root / f"{positives_file(split)}.npy"
    labelled = isinstance((meta.get(LINK_META_KEY) or {}).get("label"), dict)
    if not labelled or not pairs_path.is_file():
        return np.empty(0, np.float32) if labelled else None
    if not path.is_file():
        raise DatasetError(f"{path}: file missing (meta.json 'link.label' names edge-level targets)")
    labels, count = np.load(path, mmap_mode="r"), int(np.load(pairs_path, mmap_mode="r").shape[0])
    if labels.dtype != np.float32 or labels.shape != (count,):
        raise DatasetError(f"{path}: expected float32 [{count}], found {labels.dtype} {list(labels.shape)}")
    return labels
