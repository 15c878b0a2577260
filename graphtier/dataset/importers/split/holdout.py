"""The random edge split of ``--edge-split TRAIN,VALID,TEST``, applied at the end of every importer and of the
generator: a seeded split of the edges, the held-out ones removed from the message-passing graph, evaluation
negatives that are never edges of the full graph, all written into the dataset (docs/dataset-format.md,
"Edge split").

An undirected graph is a symmetric one (every edge stored with its reverse; ``meta.json`` ``symmetric``): its
edges are split as unordered pairs ``u < v``, each listed once, and a held-out edge leaves the graph in both
directions. Self-loops are never held out nor training pairs (they stay in the message-passing graph).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graphtier.dataset.csc import reciprocity
from graphtier.dataset.edges.edge_data import write_link_labels
from graphtier.dataset.edges.edge_split import draw_eval_negatives, graph_pairs, remove_pairs
from graphtier.dataset.edges.edge_time import carry_edge_time
from graphtier.dataset.edges.link_split import EVAL_SPLITS, LINK_META_KEY, LINK_SPLITS, LinkPairs, LinkSplit
from graphtier.dataset.importers.split.splits import check_fractions, parse_fractions, random_split
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import OptionError

Fractions = tuple[float, float, float]


def parse_edge_split(value: str | Fractions | list[float] | None) -> Fractions | None:
    """``"0.85,0.05,0.1"`` (or three numbers) -> the train/valid/test fractions of the edges, which must sum to 1
    with a training share > 0 (valid or test may be 0: ``1,0,0`` trains on every edge); None stays None. :class:`OptionError` names ``edge_split``."""
    if value is None:
        return None
    if isinstance(value, str):
        fractions = parse_fractions(value, "edge_split", exact=True)
    else:
        fractions = tuple(float(f) for f in value)
        check_fractions(fractions, "edge_split", exact=True)
    if not fractions[0] > 0:
        raise OptionError(
            f"{{edge_split}}: expected a training share > 0 (the pairs a link model learns from), "
            f"found {tuple(fractions)}",
            options=("edge_split",),
        )
    return fractions  # type: ignore[return-value]


def check_eval_negatives(value: Any) -> int:
    """``eval_negatives`` K as an int >= 0 (:class:`OptionError` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise OptionError.invalid("eval_negatives", "an integer >= 0 (0: negative pairs; K: K per positive)", value)
    return int(value)


def link_options(edge_split: str | Fractions | list[float] | None, eval_negatives: Any) -> tuple[Fractions | None, int]:
    """``(fractions, K)`` of the ``edge_split`` and ``eval_negatives`` options, checked (:func:`parse_edge_split`,
    :func:`check_eval_negatives`; negatives need an edge split)."""
    fractions, k = parse_edge_split(edge_split), check_eval_negatives(eval_negatives)
    if k and fractions is None:
        raise OptionError(
            "{eval_negatives}: expected an edge split ({edge_split}) to draw negatives for, found none",
            options=("eval_negatives", "edge_split"),
        )
    return fractions, k


def derived_seed(seed: int, stream: int) -> int:
    """A seed of its own for random stream ``stream`` of a split seeded by ``seed`` (the valid and test negatives)."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(1, np.uint64)[0] >> np.uint64(1))


def check_split_counts(counts: list[int], fractions: Fractions, total: int, undirected: bool, what: str = "") -> None:
    """:class:`OptionError` naming ``edge_split`` when a split of nonzero fraction got none of the ``total``
    candidate edges (``counts``: train, valid, test)."""
    for name, count, fraction in zip(LINK_SPLITS, counts, fractions):
        if fraction > 0 and count == 0:
            kind = "undirected edges (u < v)" if undirected else "edges"
            raise OptionError(
                f"{{edge_split}}: expected at least one {name} edge{what} for the fraction {fraction:g}, found none: "
                f"the graph has {total} {kind} to split (self-loops are never held out)",
                options=("edge_split",),
            )


@dataclass(frozen=True)
class HeldOut:
    """What :func:`hold_out_edges` made: the message-passing graph (``indptr`` int64 [N + 1], ``indices``
    [E']), the :class:`LinkSplit` and how many stored edges left the graph (``removed``)."""

    indptr: np.ndarray
    indices: np.ndarray
    split: LinkSplit
    removed: int


def split_pairs(
    indptr: np.ndarray,
    indices: np.ndarray,
    fractions: Fractions,
    *,
    seed: int,
    eval_negatives: int,
    undirected: bool,
    dst_range: tuple[int, int],
    src_range: tuple[int, int] | None = None,
    what: str = "",
) -> tuple[dict[str, LinkPairs], np.ndarray]:
    """The candidate edges of the CSC graph ``(indptr, indices)`` (each unordered pair ``u < v`` once when
    ``undirected``, every directed edge otherwise; repeats once; no self-loops) split by ``fractions`` with
    :func:`random_split` (seeded), with the evaluation negatives of :func:`draw_eval_negatives` (``k =
    eval_negatives``; destinations in ``dst_range``, sources of negative pairs in ``src_range``). Returns the
    :class:`LinkPairs` per split (graph ids) and int64 [H, 2] the held-out (valid and test) edges. ``what`` names
    the edges in the error (``" of (user, rates, item)"``).

    Raises:
        OptionError: a split with a nonzero fraction gets no edge; too few non-edges for the negatives.
    """
    candidates = graph_pairs(indptr, indices, undirected=undirected)
    parts = random_split(candidates.shape[0], fractions, seed)
    check_split_counts([ids.shape[0] for ids in parts], fractions, candidates.shape[0], undirected, what)
    splits = {"train": LinkPairs(candidates[parts[0]])}
    for stream, (name, ids) in enumerate(zip(EVAL_SPLITS, parts[1:]), start=1):
        positives = candidates[ids]
        negatives = draw_eval_negatives(
            indptr, indices, positives, k=eval_negatives, dst_range=dst_range, src_range=src_range,
            seed=derived_seed(seed, stream), undirected=undirected,
        )  # fmt: skip
        splits[name] = LinkPairs(positives, negatives, per_positive=eval_negatives > 0)
    return splits, np.concatenate([candidates[parts[1]], candidates[parts[2]]])


def hold_out_edges(
    indptr: np.ndarray,
    indices: np.ndarray,
    fractions: Fractions,
    *,
    seed: int,
    eval_negatives: int = 0,
    undirected: bool | None = None,
) -> HeldOut:
    """A random edge split of the CSC graph ``(indptr, indices)`` (ascending lists).

    The candidate edges (each unordered pair ``u < v`` once when ``undirected``, every directed edge otherwise;
    repeats once; no self-loops) are split by ``fractions`` with :func:`random_split` (seeded). The valid and
    test edges are removed from the graph (both directions when ``undirected``); the train pairs are the rest.
    Negatives (:func:`draw_eval_negatives`, ``k = eval_negatives``, over all N nodes) are never edges of the
    full graph.

    Args:
        undirected: None: whether the graph is symmetric (computed).

    Raises:
        OptionError: a split with a nonzero fraction gets no edge; too few non-edges for the negatives.
    """
    indptr = np.asarray(indptr, np.int64)
    n = indptr.shape[0] - 1
    k = check_eval_negatives(eval_negatives)
    if undirected is None:
        undirected = reciprocity(indptr, indices)[2]
    splits, held = split_pairs(
        indptr, indices, fractions, seed=seed, eval_negatives=k, undirected=undirected, dst_range=(0, n)
    )
    new_indptr, new_indices, removed = remove_pairs(indptr, indices, held, undirected=undirected)
    meta = {
        "method": "random",
        "fractions": [float(f) for f in fractions],
        "seed": int(seed),
        "eval_negatives": k,
        "dst_range": [0, n],
        "undirected": bool(undirected),
        "held_out_edges": removed,
    }
    return HeldOut(new_indptr, new_indices, LinkSplit(meta, splits), removed)


def split_written_graph(
    writer: DatasetWriter, meta: dict[str, Any], fractions: Fractions | None, *, seed: int, eval_negatives: int = 0
) -> dict[str, Any]:
    """Apply ``--edge-split`` to the dataset ``writer`` is writing, before ``writer.finish``: the graph it wrote
    (``indptr.npy``, ``indices.npy``) becomes the message-passing graph, the pair files are written, and the
    returned copy of ``meta`` has the new ``num_edges`` and ``"link"``. ``fractions`` None returns ``meta``.

    The graph is undirected when ``meta["symmetric"]`` says so (else computed); the arrays are read into memory.
    The edges that stay keep their times and per-edge rows (``edge_time.npy``, ``edge_feat.npy``, ``edge_label.npy``;
    :func:`~graphtier.dataset.edges.edge_time.carry_edge_time`); with ``edge_label.npy`` every split's pairs get their
    edges' labels (``link_{split}_label.npy``; :func:`~graphtier.dataset.edges.edge_data.write_link_labels`).
    """
    if fractions is None:
        return meta
    indptr = np.load(writer.path("indptr"), allow_pickle=False)
    indices = np.load(writer.path("indices"), allow_pickle=False)
    symmetric = meta.get("symmetric")
    undirected = bool(symmetric) if isinstance(symmetric, bool) else None
    held = hold_out_edges(indptr, indices, fractions, seed=seed, eval_negatives=eval_negatives, undirected=undirected)
    link = write_link_labels(writer, held.split.save(writer), indptr, indices, meta)  # labels of the full graph
    carry_edge_time(writer, indptr, indices, held.indptr, held.indices)
    del indptr, indices
    writer.save("indptr", held.indptr)
    writer.save("indices", held.indices)
    updated = dict(meta)
    updated["num_edges"] = int(held.indptr[-1])
    updated[LINK_META_KEY] = link
    return updated
