"""Where the pairs of a link task live: one id space for a homogeneous graph and for a typed graph's relation.

A link model scores ``(source, destination)`` pairs from one embedding table. On a homogeneous dataset the ids are
the node ids. On a typed dataset split on relation ``(SRC, REL, DST)`` (``prepare ... --split-relation``) the
pairs are LOCAL ids of SRC and DST, and the table holds the SRC rows then the DST rows: the relation's pair space
(:func:`~graphtier.dataset.edges.link_split.relation_pair_csc`). :class:`PairSpace` maps between the two, and carries the
graph and candidate range that top-K recommendations and the popularity baseline read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphtier.dataset import Dataset
from graphtier.dataset.edges.link_split import relation_pair_csc
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore


@dataclass(frozen=True)
class PairSpace:
    """Where a link model's pairs live: ids ``[0, num_src)`` for the sources and ``shift + j`` for destination ``j``.

    A homogeneous dataset: the node ids (``shift`` 0), its graph (``GraphStore.csc``), its split's ``dst_range``.
    A typed dataset split on relation ``(SRC, REL, DST)``: the relation's pair space
    (:func:`~graphtier.dataset.edges.link_split.relation_pair_csc`): the LOCAL ids of SRC, then those of DST after
    ``shift`` (``count(SRC)``, 0 when SRC == DST); the embedding table of :func:`graphtier.train.infer.predict.predict` is
    indexed the same way. ``names``: what the ids are called in errors (``node`` or the two types).
    """

    csc: tuple[np.ndarray, np.ndarray]
    dst_range: tuple[int, int]
    undirected: bool
    shift: int
    num_src: int
    num_dst: int
    names: tuple[str, str] = ("node", "node")

    def to_space(self, pairs: np.ndarray) -> np.ndarray:
        """int64 [P, 2] pairs of (local) ids -> pair-space ids."""
        return pairs + np.array([0, self.shift], np.int64) if self.shift else pairs

    def from_space(self, destinations: np.ndarray) -> np.ndarray:
        """Pair-space destination ids (-1: none) -> the caller's ids (typed: local ids of DST)."""
        return np.where(destinations >= 0, destinations - self.shift, -1) if self.shift else destinations


def pair_space(dataset: Dataset) -> PairSpace:
    """The :class:`PairSpace` of ``dataset``'s link task (typed: its split relation; the topology read once)."""
    link = dataset.link
    if dataset.is_hetero:
        if link is None or "relation" not in link.meta:
            raise OptionError(f"--task link: {dataset.path} has no edge split of a relation (--split-relation)")
        schema = dataset.schema
        rel = schema.relation(tuple(link.meta["relation"]))  # type: ignore[arg-type]
        indptr, indices, shift = relation_pair_csc(schema, dataset.indptr, dataset.indices, rel)
        num_src, num_dst = schema.node_type(rel.src).count, schema.node_type(rel.dst).count
        return PairSpace(
            (indptr, indices), (shift, shift + num_dst), False, shift, num_src, num_dst, (rel.src, rel.dst)
        )
    csc = GraphStore(dataset, None).csc  # the topology through the one door (host arrays, nothing placed)
    n = dataset.num_nodes
    lo, hi = (int(link.dst_range[0]), int(link.dst_range[1])) if link is not None else (0, n)
    return PairSpace(csc, (lo, hi), link.undirected if link is not None else not dataset.directed, 0, n, n)
