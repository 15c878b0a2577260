"""Use a saved link model: exact embeddings of all nodes, scores of given pairs, and top-K recommendations.

Embeddings come from exact layer-wise inference of the encoder (:func:`graphtier.train.infer.predict.predict`, which
returns the output of the last layer, the embedding, as ``logits``). Recommendations are each query node's K
best-scoring destinations among the split's ``dst_range``, excluding the node itself and its existing
neighbours (out-edges of the dataset's graph, the message-passing graph), in bounded memory: candidates are
scored a chunk at a time and a running top-K is kept per query node.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import Dataset
from graphtier.dataset.original_ids import original_ids
from graphtier.dataset.outputs import atomic_write
from graphtier.dataset.resources import require_memory
from graphtier.errors import OptionError
from graphtier.train.infer.pair_space import PairSpace, pair_space
from graphtier.train.nn.link_model import LinkModel, score_pairs
from graphtier.train.persist.saved import SavedModel

SCORE_BUDGET = 1 << 24
"""Scores (query x candidate; x hidden for the ``mlp`` decoder) computed at once by :func:`top_k`."""


def link_model_of(saved: SavedModel, option: str = "--task link") -> LinkModel:
    """The saved model as a :class:`LinkModel`; OptionError when it was trained for another task."""
    if not isinstance(saved.model, LinkModel):
        raise OptionError(f"{option}: --model {saved.path} was trained with --task {saved.task}, expected --task link")
    return saved.model


def read_node_pairs(
    path: str | os.PathLike[str], num_nodes: int, option: str = "--pairs", *, space: PairSpace | None = None
) -> np.ndarray:
    """int64 [P, 2] node pairs from a text file (``src dst`` per line, ``#`` comments) or a ``.npy`` [P, 2]
    integer array; OptionError (one line) for a bad file or an id outside ``[0, num_nodes)`` (with a typed
    ``space``: a source outside ``[0, num_src)`` or a destination outside ``[0, num_dst)``, local ids)."""
    pairs = _read_ids(Path(path), num_nodes if space is None or not space.shift else 1 << 62, option, columns=2)
    if space is not None and space.names != ("node", "node"):
        for column, (count, name) in enumerate(zip((space.num_src, space.num_dst), space.names)):
            low, high = int(pairs[:, column].min()), int(pairs[:, column].max())
            if low < 0 or high >= count:
                raise OptionError(
                    f"{option} {path}: column {column + 1}: expected local ids of {name} in [0, {count}), found "
                    f"values in [{low}, {high}]"
                )
    return pairs


def read_node_ids(path: str | os.PathLike[str], num_nodes: int, option: str = "--for-nodes") -> np.ndarray:
    """int64 [n] node ids from a text file (one per line), a ``.npy`` [n] integer array, or, when no such file
    exists and the text has a comma or is one integer, the ids themselves as comma-separated text (``"0,1,2"``, any
    length); checked like pairs: OptionError (one line) for a part that is not an integer, an id outside
    ``[0, num_nodes)``, a missing or empty file."""
    text = str(path)
    if os.path.isfile(text) or ("," not in text and not re.fullmatch(r"\s*[+-]?\d+\s*", text)):
        return _read_ids(Path(path), num_nodes, option, columns=1)
    parts = [part.strip() for part in text.split(",")]
    bad = next((part for part in parts if not re.fullmatch(r"[+-]?\d+", part)), None)
    if bad is not None:
        raise OptionError(
            f"{option} {_shown(text)}: expected node ids as integers separated by commas (like 0,1,2) or a file "
            f"of ids, found {bad!r} (and no file of that name)"
        )
    values = [int(part) for part in parts]
    low, high = min(values), max(values)
    if low < 0 or high >= num_nodes:
        raise OptionError(
            f"{option} {_shown(text)}: expected node ids in [0, {num_nodes}), found {low if low < 0 else high}"
        )
    return np.array(values, dtype=np.int64)


def _shown(text: str, limit: int = 60) -> str:
    """``text`` as an error line shows it: cut to ``limit`` characters (an inline id list may be long)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def _read_ids(path: Path, num_nodes: int, option: str, columns: int) -> np.ndarray:
    shape = "[P, 2]" if columns == 2 else "[n]"
    what = "node pairs" if columns == 2 else "node ids"
    if not path.is_file():
        raise OptionError(f"{option} {path}: file not found")
    if path.suffix == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as error:
            raise OptionError(f"{option} {path}: not a readable .npy file ({error})") from None
        if not np.issubdtype(array.dtype, np.integer):
            raise OptionError(f"{option} {path}: expected integer node ids, found dtype {array.dtype}")
    else:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "input contained no data": refused below
                array = np.loadtxt(path, dtype=np.int64, comments="#", ndmin=2)
        except (ValueError, OverflowError) as error:
            raise OptionError(f"{option} {path}: expected integer node ids, {columns} per line ({error})") from None
        if columns == 1 and array.ndim == 2 and array.shape[1] == 1:
            array = array[:, 0]
        elif array.size == 0:
            array = array.reshape((0, columns) if columns == 2 else 0)
    wanted = array.ndim == 2 and array.shape[1] == 2 if columns == 2 else array.ndim == 1
    if not wanted:
        raise OptionError(f"{option} {path}: expected shape {shape}, found {list(array.shape)}")
    if array.size == 0:
        empty = "an empty array" if path.suffix == ".npy" else "an empty file"
        raise OptionError(f"{option} {path}: expected at least one of the {what}, found none ({empty})")
    low, high = int(array.min()), int(array.max())  # before any cast: a uint64 2^64-1 is not -1
    if low < 0 or high >= num_nodes:
        raise OptionError(f"{option} {path}: expected node ids in [0, {num_nodes}), found values in [{low}, {high}]")
    return array.astype(np.int64, copy=False)


def pair_scores(
    model: LinkModel, embeddings: np.ndarray, pairs: np.ndarray, space: PairSpace | None = None,
    link_target: str | None = None,
) -> np.ndarray:  # fmt: skip
    """float32 [P] logits of ``pairs`` (int64 [P, 2]) from all nodes' ``embeddings`` float32 [N, H] (the table of
    :func:`graphtier.train.infer.predict.predict`). A typed link model's pairs are local ids of its relation's types:
    pass ``space`` (:func:`~graphtier.train.infer.pair_space.pair_space` of the dataset) to map them into its table.
    A model of edge-level targets (``link_target``, its ``--link-target``): the predicted values (``regression``)
    or the probabilities that the label exceeds the threshold (``binary``: the sigmoid of the logits)."""
    if space is not None:
        pairs = space.to_space(pairs)
    scores = score_pairs(model, torch.from_numpy(embeddings), torch.from_numpy(pairs))
    return (torch.sigmoid(scores) if link_target == "binary" else scores).numpy()


def _out_neighbours(csc: tuple[np.ndarray, np.ndarray], nodes: np.ndarray, undirected: bool) -> list[np.ndarray]:
    """Each node's existing destinations in the graph ``csc`` (``GraphStore.csc``; in-neighbours when undirected)."""
    indptr, indices = csc
    if undirected:
        return [np.asarray(indices[indptr[u] : indptr[u + 1]], dtype=np.int64) for u in nodes]
    # directed: the edges u -> v are the CSC entries equal to u; one pass over the indices per query chunk
    found: list[list[np.ndarray]] = [[] for _ in nodes]
    where = {int(u): i for i, u in enumerate(nodes)}
    step = 1 << 22
    for start in range(0, int(indptr[-1]), step):
        chunk = np.asarray(indices[start : start + step])
        hits = np.flatnonzero(np.isin(chunk, nodes))
        destinations = np.searchsorted(indptr, start + hits, side="right") - 1
        for source, destination in zip(chunk[hits], destinations):
            found[where[int(source)]].append(np.array([destination], np.int64))
    return [np.concatenate(parts) if parts else np.empty(0, np.int64) for parts in found]


def candidate_range(dataset: Dataset, dst_range: tuple[int, int] | None = None) -> tuple[int, int]:
    """``[lo, hi)`` of the destinations :func:`top_k` recommends: ``dst_range``, else the edge split's, else all
    (typed: local ids of the split relation's destination type)."""
    if dst_range is not None:
        return int(dst_range[0]), int(dst_range[1])
    link = dataset.link
    return (int(link.dst_range[0]), int(link.dst_range[1])) if link is not None else (0, dataset.num_nodes)


def check_top_k(k: int, num_queries: int, lo: int, hi: int) -> None:
    """Raise :class:`OptionError` (naming ``top_k``) unless ``1 <= k <= hi - lo`` (the candidate destinations),
    and :class:`~graphtier.errors.ResourceError` when the int64 ids and float32 scores [num_queries, k] of the
    result do not fit in the available memory; checked before any embedding is computed."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise OptionError.invalid("top_k", "a positive integer", k)
    if k > hi - lo:
        raise OptionError.invalid("top_k", f"at most {hi - lo:,} (the candidate destinations, ids [{lo}, {hi}))", k)
    require_memory(
        num_queries * int(k) * 12, f"{{top_k={k}}} for {num_queries:,} nodes (ids and scores)", options=("top_k",)
    )


@torch.no_grad()
def top_k(
    model: LinkModel,
    embeddings: np.ndarray,
    dataset: Dataset,
    nodes: np.ndarray,
    k: int,
    *,
    dst_range: tuple[int, int] | None = None,
    undirected: bool | None = None,
    progress: Progress = NO_PROGRESS,
) -> tuple[np.ndarray, np.ndarray]:
    """Each query node's ``k`` best-scoring destinations that are neither itself nor an existing neighbour.

    ``embeddings`` float32 [N, H]; ``nodes`` int64 [n]; ``dst_range`` ``[lo, hi)`` of the candidates (default:
    the edge split's, else all nodes). Returns int64 [n, k] ids, best first, and float32 [n, k] their logits;
    -1 and -inf fill the places of a node with fewer than ``k`` candidates. Memory: about
    :data:`SCORE_BUDGET` scores at a time plus the output. ``progress`` reports the stage ``predict: top-k``
    a chunk of query nodes at a time.
    """
    ranked = _rank(dataset, nodes, k, dst_range, undirected, progress, model=model, embeddings=embeddings)
    return ranked.ids, ranked.scores  # type: ignore[return-value]


@torch.no_grad()
def top_k_with_popular(
    model: LinkModel,
    embeddings: np.ndarray,
    dataset: Dataset,
    nodes: np.ndarray,
    k: int,
    *,
    dst_range: tuple[int, int] | None = None,
    undirected: bool | None = None,
    progress: Progress = NO_PROGRESS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`top_k` and :func:`popular_top_k` of the same query nodes in one pass (the graph opened and each
    node's neighbours found once): int64 [n, k] ids, float32 [n, k] logits, int64 [n, k] popular ids and
    int64 [n, k] their in-degrees."""
    ranked = _rank(dataset, nodes, k, dst_range, undirected, progress, model=model, embeddings=embeddings, popular=True)
    return ranked.ids, ranked.scores, ranked.popular_ids, ranked.popular_degrees  # type: ignore[return-value]


def popular_top_k(
    dataset: Dataset,
    nodes: np.ndarray,
    k: int,
    *,
    dst_range: tuple[int, int] | None = None,
    undirected: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The popularity baseline of :func:`top_k`: each query node's ``k`` candidates of highest in-degree.

    The same candidates as :func:`top_k` (``dst_range``, not the node itself nor an existing neighbour); the score
    is the candidate's in-degree in the dataset's graph (the message-passing graph: held-out edges excluded), the
    popularity baseline of ``train --task link``; ties go to the lower id. ``nodes`` int64 [n]. Returns int64
    [n, k] ids, most popular first, and int64 [n, k] their in-degrees; -1 fills the places of a node with fewer
    than ``k`` candidates. Memory: O(n x k + hi - lo) and the excluded sets of 1,024 query nodes at a time.
    """
    ranked = _rank(dataset, nodes, k, dst_range, undirected, NO_PROGRESS, popular=True)
    return ranked.popular_ids, ranked.popular_degrees  # type: ignore[return-value]


@dataclass
class _Ranked:
    ids: np.ndarray | None = None  # int64 [n, k] best-scoring destinations
    scores: np.ndarray | None = None  # float32 [n, k] their logits
    popular_ids: np.ndarray | None = None  # int64 [n, k] most popular candidates
    popular_degrees: np.ndarray | None = None  # int64 [n, k] their in-degrees


def _rank(
    dataset: Dataset,
    nodes: np.ndarray,
    k: int,
    dst_range: tuple[int, int] | None,
    undirected: bool | None,
    progress: Progress,
    *,
    model: LinkModel | None = None,
    embeddings: np.ndarray | None = None,
    popular: bool = False,
) -> _Ranked:
    """The one loop of :func:`top_k`, :func:`popular_top_k` and :func:`top_k_with_popular`: query nodes a chunk
    at a time, each chunk's existing neighbours found once and used by the model's ranking (``model``) and the
    popularity ranking (``popular``)."""
    space = pair_space(dataset)
    lo, hi = space.dst_range if dst_range is None else (space.shift + dst_range[0], space.shift + dst_range[1])
    num_queries = int(nodes.shape[0])
    check_top_k(k, num_queries, lo, hi)
    undirected = space.undirected if undirected is None else undirected
    csc = space.csc
    ranked = _Ranked()
    queries = 1024
    if model is not None:
        assert embeddings is not None
        model.eval()
        table = torch.from_numpy(embeddings)
        hidden = int(table.shape[1]) if table.ndim == 2 else 1
        per_pair = hidden if model.decoder == "mlp" else 1
        queries = max(1, min(1024, SCORE_BUDGET // max(1, (hi - lo) * per_pair)))
        candidates = max(1, SCORE_BUDGET // (queries * per_pair))
        ranked.ids = np.full((num_queries, k), -1, np.int64)
        ranked.scores = np.full((num_queries, k), -np.inf, np.float32)
    if popular:
        degree = np.diff(np.asarray(csc[0][lo : hi + 1], dtype=np.int64))
        ranked.popular_ids = np.full((num_queries, k), -1, np.int64)
        ranked.popular_degrees = np.full((num_queries, k), -1, np.int64)
    with progress.stage(f"predict: top-{k}", total=num_queries, unit="nodes") as bar:
        for q0 in range(0, num_queries, queries):
            chunk = nodes[q0 : q0 + queries]
            rows = slice(q0, q0 + chunk.shape[0])
            excluded = _out_neighbours(csc, chunk, undirected)
            if model is not None:
                ranked.ids[rows], ranked.scores[rows] = _best_scoring(  # type: ignore[index]
                    model, table, chunk, excluded, k, lo, hi, candidates
                )
            if popular:
                ranked.popular_ids[rows], ranked.popular_degrees[rows] = _most_popular(  # type: ignore[index]
                    degree, lo, chunk, excluded, k
                )
            bar.advance(int(chunk.shape[0]))
    for name in ("ids", "popular_ids"):
        if getattr(ranked, name) is not None:
            setattr(ranked, name, space.from_space(getattr(ranked, name)))
    return ranked


def _best_scoring(
    model: LinkModel,
    table: torch.Tensor,
    chunk: np.ndarray,
    excluded: list[np.ndarray],
    k: int,
    lo: int,
    hi: int,
    candidates: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The running top-``k`` of the query nodes ``chunk`` over the candidates ``[lo, hi)``, ``candidates`` at a
    time, each node's ``excluded`` destinations and itself left out: int64 [c, k] ids and float32 [c, k] logits."""
    h_query = table[chunk].float()
    best_score = torch.full((chunk.shape[0], k), -torch.inf)
    best_id = torch.full((chunk.shape[0], k), -1, dtype=torch.int64)
    for c0 in range(lo, hi, candidates):
        c1 = min(hi, c0 + candidates)
        h_cand = table[c0:c1].float()
        if model.decoder == "dot":
            block = h_query @ h_cand.t()
        else:
            block = model.score(h_query[:, None, :], h_cand[None, :, :])
        for row, (node, neighbours) in enumerate(zip(chunk, excluded)):
            drop = np.append(neighbours, node)
            drop = drop[(drop >= c0) & (drop < c1)] - c0
            block[row, torch.from_numpy(drop)] = -torch.inf
        merged_score = torch.cat([best_score, block], dim=1)
        merged_id = torch.cat([best_id, torch.arange(c0, c1).expand(chunk.shape[0], -1)], dim=1)
        best_score, order = torch.topk(merged_score, k, dim=1)
        best_id = torch.gather(merged_id, 1, order)
    best_id[torch.isinf(best_score)] = -1
    return best_id.numpy(), best_score.numpy()


def _most_popular(
    degree: np.ndarray, lo: int, chunk: np.ndarray, excluded: list[np.ndarray], k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` candidates of highest in-degree (``degree`` int64 [hi - lo] of the candidates ``[lo, hi)``; ties
    to the lower id) of each query node of ``chunk``, its ``excluded`` destinations and itself left out: int64
    [c, k] ids and int64 [c, k] degrees, -1 where a node has fewer than ``k`` candidates."""
    span = degree.shape[0]
    need = min(span, k + 1 + max((len(e) for e in excluded), default=0))
    if 0 < need < span:  # every candidate at least as popular as the need-th: ties at that degree all kept
        threshold = np.partition(degree, span - need)[span - need]
        top = np.flatnonzero(degree >= threshold)
    else:
        top = np.arange(span)
    order = top[np.lexsort((top, -degree[top]))] + lo  # by degree descending, then id ascending
    ids = np.full((chunk.shape[0], k), -1, np.int64)
    degrees = np.full((chunk.shape[0], k), -1, np.int64)
    for row, (node, neighbours) in enumerate(zip(chunk, excluded)):
        kept = order[~np.isin(order, np.append(neighbours, node))][:k]
        ids[row, : kept.size] = kept
        degrees[row, : kept.size] = degree[kept - lo]
    return ids, degrees


RECOMMENDATION_COLUMNS = ("node", "node_id", "rank", "id", "score", "popular_id", "popular_degree")
"""The columns of :func:`write_recommendations`' CSV."""


def write_recommendations(
    path: str | os.PathLike[str],
    dataset: Dataset,
    nodes: np.ndarray,
    ids: np.ndarray,
    scores: np.ndarray,
    popular: np.ndarray,
    popular_degrees: np.ndarray,
    write_file: Callable[[Path, Callable[[Path], None]], Path] | None = None,
) -> Path:
    """Write top-K recommendations in the user's ids as CSV, the popularity top-K beside them (atomically).

    One line per query node and rank (:data:`RECOMMENDATION_COLUMNS`): ``node`` the query's dataset id (as given),
    ``node_id`` its id in the input (:func:`graphtier.dataset.original_ids.original_ids`), ``rank`` 1..K, ``id``
    the recommended node's input id and ``score`` its logit, ``popular_id`` and ``popular_degree`` the rank-th
    most popular candidate (:func:`popular_top_k`, or both from :func:`top_k_with_popular`). Empty fields where a node has fewer than K candidates.
    ``nodes`` int64 [n]; ``ids``, ``popular``, ``popular_degrees`` int64 [n, K]; ``scores`` float32 [n, K].
    ``write_file(path, write)`` writes the file (default :func:`~graphtier.dataset.outputs.atomic_write`; a
    command with several outputs passes :meth:`~graphtier.dataset.outputs.OutputSet.stage`).
    """
    import csv

    src_offset = dst_offset = 0
    if dataset.is_hetero and dataset.link is not None:  # local ids of the split relation's types -> global ids
        src, _, dst = dataset.link.meta["relation"]
        src_offset, dst_offset = dataset.schema.node_type(src).offset, dataset.schema.node_type(dst).offset

    def names(array: np.ndarray, offset: int) -> np.ndarray:
        flat = array.reshape(-1)
        out = np.full(flat.shape, "", dtype=object)
        known = flat >= 0
        out[known] = original_ids(dataset, flat[known] + offset).astype(str)
        return out.reshape(array.shape)

    query_names = names(nodes, src_offset)
    id_names, popular_names = names(ids, dst_offset), names(popular, dst_offset)

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as handle:
            out = csv.writer(handle)
            out.writerow(RECOMMENDATION_COLUMNS)
            for row in range(nodes.shape[0]):
                for rank in range(ids.shape[1]):
                    out.writerow((
                        int(nodes[row]), query_names[row], rank + 1,
                        id_names[row, rank], f"{scores[row, rank]:.6g}" if ids[row, rank] >= 0 else "",
                        popular_names[row, rank], int(popular_degrees[row, rank]) if popular[row, rank] >= 0 else "",
                    ))  # fmt: skip

    return (write_file or atomic_write)(Path(path), write)
