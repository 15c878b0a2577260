"""The user's own id of a dataset node: what the input files called it before the importer or a reorder renumbered it.

A dataset numbers its nodes ``0..N-1``. How a node id maps back to the input's id, in the order tried:

- ``node_ids.npy`` (int64 [N]) or ``node_ids.json`` (a list of N ids, strings for non-integer ids): written by an
  importer that renumbered the ids (``prepare edgelist`` with gaps, negative or text ids); ``graphtier reorder``
  permutes them with the nodes, so row i is always the input id of node i of this dataset.
- ``perm.npy`` (a reorder's new id -> id in the dataset it reordered, composed over repeated reorders): without
  ``node_ids``, the importer kept the input's ids, so ``perm[i]`` is the input id.
- MovieLens (``prepare movielens``: users, then items): the user id (1-based, as in ``u.data``) of a user node,
  the item id (1-based) of an item node; the same with ``--typed``.
- Otherwise the node id is the input's id.

A typed dataset's global id ``g`` of type ``t`` is the local id ``g - offset(t)`` (the ids of its files); its
``perm.npy`` is one global permutation (each type reordered within its range).
"""

from __future__ import annotations

import json

import numpy as np

from graphtier.dataset.format import Dataset
from graphtier.errors import DatasetError

NODE_IDS_JSON = "node_ids.json"


def json_node_ids(dataset: Dataset) -> np.ndarray | None:
    """The ids of ``node_ids.json`` as an array [N] (int64, or str when any id is text), or None without the file."""
    path = dataset.path / NODE_IDS_JSON
    if not path.is_file():
        return None
    try:
        ids = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as error:
        raise DatasetError(f"{path}: expected a JSON list of node ids ({error})") from None
    if not isinstance(ids, list) or len(ids) != dataset.num_nodes:
        found = f"a list of {len(ids)}" if isinstance(ids, list) else type(ids).__name__
        raise DatasetError(f"{path}: expected a JSON list of {dataset.num_nodes} node ids, found {found}")
    if all(isinstance(v, int) and not isinstance(v, bool) for v in ids):
        return np.array(ids, dtype=np.int64)
    if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in ids):
        raise DatasetError(f"{path}: expected node ids that are strings or integers")
    return np.array([str(v) for v in ids], dtype=str)


def original_ids(dataset: Dataset, nodes: np.ndarray) -> np.ndarray:
    """The input's id of each node of ``nodes`` (int64 [n] node ids of ``dataset``).

    Returns an array [n]: int64, or str when the input's ids were text (``node_ids.json``). The rules are in
    this module's docstring.
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    if "node_ids" in dataset.extra:
        return np.asarray(dataset.extra["node_ids"])[nodes]
    named = json_node_ids(dataset)
    if named is not None:
        return named[nodes]
    ids = np.asarray(dataset.extra["perm"], dtype=np.int64)[nodes] if "perm" in dataset.extra else nodes.copy()
    meta = dataset.meta
    movielens = (meta.get("source") or {}).get("importer") == "movielens"
    if dataset.is_hetero:  # local ids of each node's type (MovieLens: 1-based, as in its files)
        offsets = dataset.schema.offsets()
        ids = ids - offsets[np.searchsorted(offsets, ids, side="right") - 1]
        return ids + 1 if movielens else ids
    if movielens and "num_users" in meta:
        users = int(meta["num_users"])
        ids = np.where(ids < users, ids + 1, ids - users + 1)
    return ids
