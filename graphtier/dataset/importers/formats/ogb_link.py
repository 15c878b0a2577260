"""OGB's link-property split: ``split/<scheme>/{train,valid,test}.pt`` of an ogbl dataset folder.

Each file is a dict of tensors, read with ``torch.load(weights_only=True)`` (nothing in it runs) after a CRC
check (:mod:`graphtier.dataset.torch_file`), then validated (keys, dtypes, shapes, id ranges). Two layouts:

- pairs (ogbl-collab, -ddi, -ppa): ``{"edge": [P, 2]}`` (train may add ``weight``, ``year``); valid and test
  add ``"edge_neg": [Q, 2]`` negative pairs;
- source/target (ogbl-citation2): ``{"source_node": [P], "target_node": [P]}``; valid and test add
  ``"target_node_neg": [P, K]``, K negative destinations per positive (the ranking protocol).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from graphtier.dataset.importers.split.link_files import GivenPairs, split_written_graph_with
from graphtier.dataset.torch_file import load_torch_file
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError

LINK_PARTS = ("train", "valid", "test")


def is_link_scheme(scheme_dir: Path) -> bool:
    """Whether ``scheme_dir`` holds OGB link split files (``train.pt`` ...) rather than node id lists."""
    return any((scheme_dir / f"{part}.pt").is_file() for part in LINK_PARTS)


def read_ogb_link_split(scheme_dir: Path, num_nodes: int, eval_negatives: int = 0) -> tuple[GivenPairs, int]:
    """The pairs of ``scheme_dir/{train,valid,test}.pt`` and the K of their negatives (0: negative pairs).

    ``eval_negatives``: the ``--eval-negatives`` given (0: not given); it must match the K of
    ``target_node_neg`` when the files have one. :class:`DatasetError` names the file and the key.
    """
    given = GivenPairs({})
    k = eval_negatives
    layouts: set[str] = set()
    for part in LINK_PARTS:
        path = scheme_dir / f"{part}.pt"
        if not path.is_file():
            raise DatasetError(f"{path}: file not found (OGB link split: train.pt, valid.pt, test.pt)")
        tensors = _load_dict_of_tensors(path)
        given.sources[part] = f"{path} ['edge']"
        layouts.add("edge" if "edge" in tensors else "source_node")
        if "edge" in tensors:
            given.positives[part] = _ids(path, "edge", tensors["edge"], num_nodes, (None, 2))
            negatives = tensors.get("edge_neg")
            if negatives is not None and part != "train":
                given.negatives[part] = _ids(path, "edge_neg", negatives, num_nodes, (None, 2))
                if eval_negatives:
                    raise OptionError(
                        f"{{eval_negatives}}: {path} gives negative pairs ('edge_neg'), expected no --eval-negatives "
                        f"{eval_negatives}",
                        options=("eval_negatives",),
                    )
                given.sources[f"{part}_neg"] = f"{path} ['edge_neg']"
        elif "source_node" in tensors and "target_node" in tensors:
            given.sources[part] = f"{path} ['source_node'/'target_node']"
            src = _ids(path, "source_node", tensors["source_node"], num_nodes, (None,))
            dst = _ids(path, "target_node", tensors["target_node"], num_nodes, (src.shape[0],))
            given.positives[part] = np.stack([src, dst], axis=1)
            negatives = tensors.get("target_node_neg")
            if negatives is not None and part != "train":
                found_k = int(negatives.shape[1]) if negatives.ndim == 2 else -1
                given.negatives[part] = _ids(path, "target_node_neg", negatives, num_nodes, (src.shape[0], found_k))
                if k and k != found_k:
                    raise DatasetError(
                        f"{path}: 'target_node_neg' expected {k} negatives per positive "
                        f"({'--eval-negatives' if eval_negatives else 'as the other split'}), found {found_k}"
                    )
                k = found_k
                given.sources[f"{part}_neg"] = f"{path} ['target_node_neg']"
        else:
            raise DatasetError(
                f"{path}: expected the keys 'edge' or 'source_node' and 'target_node' (OGB link split), found "
                f"{', '.join(repr(key) for key in sorted(tensors)) or 'none'}"
            )
    if len(layouts) > 1:
        raise DatasetError(
            f"{scheme_dir}: expected one layout ('edge' or 'source_node'/'target_node') in all three files"
        )
    return given, k


def _load_dict_of_tensors(path: Path) -> dict[str, Any]:
    obj = load_torch_file(path, str(path), "dict of tensors (OGB link split)", DatasetError)
    import torch

    if not isinstance(obj, dict) or not all(isinstance(key, str) for key in obj):
        raise DatasetError(f"{path}: expected a dict of tensors (OGB link split), found {type(obj).__name__}")
    for key, value in obj.items():
        if not isinstance(value, torch.Tensor):
            raise DatasetError(f"{path}: key {key!r} expected a tensor, found {type(value).__name__}")
    return obj


def _ids(path: Path, key: str, tensor: Any, num_nodes: int, shape: tuple[int | None, ...]) -> np.ndarray:
    """int64 numpy copy of the node-id tensor ``key``: an integer dtype, ``shape`` (None: any) and ids in range."""
    array = tensor.detach().cpu().numpy()
    if array.dtype.kind not in "iu":
        raise DatasetError(f"{path}: key {key!r} expected integer node ids, found dtype {tensor.dtype}")
    if array.ndim != len(shape) or any(want is not None and want != got for want, got in zip(shape, array.shape)):
        want = "[" + ", ".join("P" if s is None else str(s) for s in shape) + "]"
        raise DatasetError(f"{path}: key {key!r} expected shape {want}, found {list(array.shape)}")
    array = array.astype(np.int64)
    bad = np.flatnonzero((array.reshape(-1) < 0) | (array.reshape(-1) >= num_nodes))
    if bad.size:
        row = int(bad[0]) // max(int(np.prod(array.shape[1:])), 1)
        raise DatasetError(
            f"{path}: key {key!r} row {row}: expected node ids in [0, {num_nodes}), found {int(array.reshape(-1)[bad[0]])}"
        )
    return array


def split_written_graph_from_ogb(
    writer: DatasetWriter, meta: dict[str, Any], scheme_dir: Path, eval_negatives: int, seed: int
) -> dict[str, Any]:
    """Apply the OGB link split ``scheme_dir`` to the graph ``writer`` wrote (as
    :func:`~graphtier.dataset.importers.split.link_files.split_written_graph_from_files` does for pair files): the
    valid/test positives leave the graph (both directions on a symmetric graph), missing negatives are drawn
    (``eval_negatives`` K per positive); returns ``meta`` with ``num_edges`` and ``"link"``."""
    return split_written_graph_with(
        writer,
        meta,
        lambda num_nodes: read_ogb_link_split(scheme_dir, num_nodes, eval_negatives),
        seed=seed,
        provenance={"method": "ogb", "scheme": scheme_dir.name},
    )
