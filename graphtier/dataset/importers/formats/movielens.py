"""Import MovieLens-100k as a link-prediction dataset: ``graphtier prepare movielens SOURCE OUTPUT``.

``SOURCE`` is the ``ml-100k`` folder (or a folder holding it): ``u.user``, ``u.item``, ``u.occupation`` and the
fold's ``<fold>.base`` / ``<fold>.test`` rating files (``user item rating timestamp``, 1-based ids).

- Nodes: the users, then the items (user ``u`` -> node ``u - 1``, item ``i`` -> node ``num_users + i - 1``).
- Graph: undirected user-item edges, one per rating, whatever the rating (an implicit-feedback link task:
  a rating says the user watched the item).
- Edge-level targets and times: every pair of the split carries its rating (1-5) as its target
  (``link_{split}_label.npy`` float32 [P], ``meta.json`` ``link.label: {"column": "rating"}``;
  ``train --task link --link-target regression``), and every edge its rating's timestamp (``edge_time.npy``, unit
  ``s``; the fold's given split stays a random split).
- Features (float32): the user's age scaled to [0, 1], gender one-hot, occupation one-hot; the item's 19
  genre flags; a user/item indicator pair; zeros where a block does not apply. With ``id_features`` a one-hot
  block of the node id follows ([N, 45 + N]): the first layer then learns a row per user and per item (the
  embeddings of collaborative filtering; the neighbour aggregation sums the rows of the rated items), which
  side features alone cannot tell apart; without it a model barely beats recommending the most popular items.
- Edge split: ``<fold>.test`` is the test split; ``valid_fraction`` of ``<fold>.base`` (seeded) is the
  validation split and the rest the training split. Held-out ratings are not in the message-passing graph.
- ``rating_features``: every edge carries its rating as edge features (``edge_feat.npy`` float32 [E, 5], the
  one-hot of the levels 1-5, columns ``rating_1`` ... ``rating_5``; both directions of a rating the same row), the
  messages per rating level of GC-MC (``train --edge-features --model gine|gat``). Only the training ratings are
  in the graph, and the link sampler takes each batch's target edges out of its blocks, so no target is an input.
  Homogeneous, with the fold's split only (a time split keeps the held-out ratings in the graph).
- ``typed``: a typed dataset instead (:mod:`graphtier.dataset.schema`): node types ``user`` (the user features)
  and ``item`` (the genre flags), relations ``(user, rates, item)`` and its reverse ``(item, rev_rates, user)``,
  the split of ``rates`` in local ids (:mod:`~graphtier.dataset.importers.split.typed_holdout`); ``id_features`` appends
  each type's own one-hot id ([U, 24 + U] and [I, 19 + I]). Train it with ``--task link`` and a typed encoder
  (rgcn, rgat, hsage).
- Negatives: items (``dst_range`` is the item range) the user never rated in the full data (base and test),
  ``eval_negatives`` K per positive (the ranking protocol: MRR, Hits@K; ``--eval-negatives 100`` is the NCF
  protocol, He et al. 2017), or one negative user-item pair per positive with K = 0 (the default of every
  ``prepare`` format; AUC/AP).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.edges.edge_data import EdgeColumns, write_edge_columns
from graphtier.dataset.edges.edge_time import META_KEY as EDGE_TIME_META
from graphtier.dataset.edges.edge_time import carry_edge_time, finish_edge_time
from graphtier.dataset.edges.link_split import LINK_META_KEY, LINK_SPLITS, label_file, positives_file
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble import finish
from graphtier.dataset.importers.assemble.options import MOVIELENS_FIELDS, ImportOptions
from graphtier.dataset.importers.assemble.typed_files import TypedImport, finish_typed_import
from graphtier.dataset.importers.assemble.typed_graph import TypedNodes, spill_relation
from graphtier.dataset.importers.common import edges, textio
from graphtier.dataset.importers.split.link_files import GivenPairs, save_split_graph, split_from_pairs
from graphtier.dataset.importers.split.pair_files import row_location
from graphtier.dataset.importers.split.time_holdout import split_written_graph_by_time
from graphtier.dataset.importers.split.typed_holdout import TypedSplit
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError

NUM_GENRES = 19
RATING_LEVELS = 5
RATING_COLUMNS = [f"rating_{level}" for level in range(1, RATING_LEVELS + 1)]
"""The edge feature columns of ``rating_features``: the one-hot of the rating levels 1-5."""
RATES = ("user", "rates", "item")
"""The relation of a typed MovieLens dataset (``typed``), with its reverse ``(item, rev_rates, user)``."""


def rating_levels(base: np.ndarray, test: np.ndarray, base_path: Path, test_path: Path) -> np.ndarray:
    """float32 [len(base) + len(test), 5]: the one-hot rating of every rating line, the base fold's then the test
    fold's (``rating_features``)."""
    return np.concatenate([rating_one_hot(base[:, 2], base_path), rating_one_hot(test[:, 2], test_path)])


def find_folder(source: Path) -> Path:
    """The ``ml-100k`` folder: ``source`` itself or ``source/ml-100k``."""
    for candidate in (source, source / "ml-100k"):
        if (candidate / "u.user").is_file():
            return candidate
    raise DatasetError(f"{source}: expected the MovieLens-100k folder (with u.user, u.item, u1.base ...), not found")


def _pipe_rows(path: Path, columns: int) -> list[list[str]]:
    rows = []
    for number, line in textio.enumerate_data_lines(path):
        fields = line.split("|")
        if len(fields) < columns:
            raise DatasetError(f"{path}: line {number}: expected {columns} '|'-separated fields, found {len(fields)}")
        rows.append(fields)
    return rows


def _with_ids(features: np.ndarray, id_features: bool) -> np.ndarray:
    """``features`` float32 [n, d], with a one-hot block of the row's id appended when ``id_features``."""
    if not id_features:
        return features
    return np.concatenate([features, np.eye(features.shape[0], dtype=np.float32)], axis=1)


def user_features(folder: Path) -> np.ndarray:
    """float32 [U, 1 + 2 + O]: age scaled to [0, 1], gender one-hot (M, F), occupation one-hot."""
    occupations = [line for _, line in textio.enumerate_data_lines(textio.require_file(folder / "u.occupation"))]
    rows = _pipe_rows(textio.require_file(folder / "u.user"), 5)
    out = np.zeros((len(rows), 3 + len(occupations)), np.float32)
    ages = np.array([float(r[1]) for r in rows], np.float32)
    span = float(ages.max() - ages.min()) or 1.0
    out[:, 0] = (ages - ages.min()) / span
    for k, row in enumerate(rows):
        if int(row[0]) != k + 1:
            raise DatasetError(f"{folder / 'u.user'}: expected user ids 1, 2, ... in order, found {row[0]} at row {k}")
        out[k, 1 if row[2] == "M" else 2] = 1.0
        if row[3] not in occupations:
            raise DatasetError(f"{folder / 'u.user'}: user {row[0]}: occupation {row[3]!r} not in u.occupation")
        out[k, 3 + occupations.index(row[3])] = 1.0
    return out


def item_features(folder: Path) -> np.ndarray:
    """float32 [I, 19]: the genre flags of ``u.item``."""
    path = textio.require_file(folder / "u.item")
    rows = _pipe_rows(path, 5 + NUM_GENRES)
    out = np.zeros((len(rows), NUM_GENRES), np.float32)
    for k, row in enumerate(rows):
        if int(row[0]) != k + 1:
            raise DatasetError(f"{path}: expected item ids 1, 2, ... in order, found {row[0]} at row {k}")
        out[k] = [float(v) for v in row[-NUM_GENRES:]]
    return out


def read_ratings(path: Path, num_users: int, num_items: int) -> np.ndarray:
    """int64 [R, 4] ``(user node, item node, rating, timestamp)`` of the rating file ``path``."""
    raw = textio.read_int_rows(
        path, 4, allow_extra_columns=True, skip_header=False, expected="'user item rating timestamp'"
    )
    for column, (what, count) in enumerate((("user", num_users), ("item", num_items))):
        bad = np.flatnonzero((raw[:, column] < 1) | (raw[:, column] > count))
        if bad.size:
            raise DatasetError(
                f"{path}: {row_location(path, int(bad[0]))}: expected {what} ids in [1, {count}], "
                f"found {int(raw[bad[0], column])}"
            )
    return np.stack([raw[:, 0] - 1, raw[:, 1] - 1 + num_users, raw[:, 2], raw[:, 3]], axis=1)


def rating_one_hot(ratings: np.ndarray, path: Path) -> np.ndarray:
    """float32 [R, 5]: the one-hot of ``ratings`` (int64 [R], the levels 1-5 of the rating file ``path``);
    :class:`DatasetError` naming the file and line of the first rating outside 1-5."""
    bad = np.flatnonzero((ratings < 1) | (ratings > RATING_LEVELS))
    if bad.size:
        raise DatasetError(
            f"{path}: {row_location(path, int(bad[0]))}: expected a rating in 1..{RATING_LEVELS}, "
            f"found {int(ratings[bad[0]])}"
        )
    out = np.zeros((ratings.shape[0], RATING_LEVELS), np.float32)
    out[np.arange(ratings.shape[0]), ratings - 1] = 1.0
    return out


def write_rating_labels(writer: DatasetWriter, meta: dict[str, Any], ratings: np.ndarray) -> dict[str, Any]:
    """Write ``link_{split}_label.npy`` (float32 [P], the rating of each pair of ``link_{split}.npy`` that
    ``writer`` wrote) and return ``meta`` with ``link.label`` ``{"column": "rating"}``.

    ``ratings``: int64 [R, 3] ``(src, dst, rating)`` in the ids of the pair files (one rating per pair)."""
    span = int(ratings[:, 1].max()) + 1 if ratings.size else 1
    keys = ratings[:, 0] * span + ratings[:, 1]
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    for split in LINK_SPLITS:
        path = writer.path(positives_file(split))
        if not path.is_file():
            continue
        pairs = np.load(path, allow_pickle=False)
        wanted = pairs[:, 0] * span + pairs[:, 1]
        at = np.minimum(np.searchsorted(keys, wanted), max(keys.size - 1, 0))
        if pairs.shape[0] and not np.array_equal(keys[at], wanted):
            bad = int(np.flatnonzero(keys[at] != wanted)[0])
            raise DatasetError(f"{path.name}: pair {bad} {pairs[bad].tolist()} has no rating")
        writer.save(label_file(split), ratings[order[at], 2].astype(np.float32))
    return {**meta, LINK_META_KEY: {**meta[LINK_META_KEY], "label": {"column": "rating"}}}


def import_movielens(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    name: str | None = None,
    overwrite: bool = False,
    fold: str = "u1",
    valid_fraction: float = 0.05,
    id_features: bool = False,
    typed: bool = False,
    rating_features: bool = False,
    options: ImportOptions | None = None,
    progress: Progress = NO_PROGRESS,
    **option_values: Any,
) -> Dataset:
    """Import the MovieLens-100k folder ``source`` with the edge split of ``fold`` into ``output``.

    Args:
        fold: ``u1`` ... ``u5``, ``ua``, ``ub``: ``<fold>.base`` trains (less the validation part),
            ``<fold>.test`` tests.
        valid_fraction: fraction of the base ratings held out for validation, in [0, 1).
        id_features: append a one-hot block of the node id to the features (float32 [N, 45 + N]: 27 MB for
            MovieLens-100k), so that the model learns a row per user and per item.
        typed: write a typed user/item dataset (see the module).
        rating_features: store each edge's rating as edge features (float32 [E, 5] one-hot, see the module);
            homogeneous, with the fold's split.
        options, option_values: the shared :class:`ImportOptions` (:data:`MOVIELENS_FIELDS`):
            ``eval_negatives`` K negative items per validation/test rating (0: one negative user-item pair per
            rating; 100 gives the NCF protocol, Hits@10 among 101 candidates), ``seed`` of the validation draw
            and of the negatives; ``split_by="time"`` with ``edge_split`` fractions: the fold's ratings split by
            their times instead of the fold's split (every rating stays in the graph, pairs carry times; negatives
            pair a user with an item, as the fold's split does).
        progress: reports building the CSC and validating.

    Returns:
        The written :class:`Dataset` (``meta["link"]`` holds the split).
    """
    if not 0.0 <= valid_fraction < 1.0:
        raise OptionError.invalid("valid_fraction", "a fraction in [0, 1)", valid_fraction)
    options = ImportOptions.of(options, option_values)
    options.check_accepted(MOVIELENS_FIELDS, "movielens")
    if options.edge_split is not None and options.split_by != "time":
        raise OptionError("{edge_split}: movielens splits by {fold} (FOLD.base, FOLD.test), or by time with "
                          "{split_by=time}", options=("edge_split", "fold", "split_by"))  # fmt: skip
    if rating_features and options.split_by == "time":
        raise OptionError("{rating_features}: needs the fold's split, not {split_by=time} (which keeps the held-out "
                          "ratings, the targets, in the graph)", options=("rating_features", "split_by"))  # fmt: skip
    eval_negatives, seed = options.eval_negatives, options.seed
    folder = find_folder(Path(source))
    base_path, test_path = folder / f"{fold}.base", folder / f"{fold}.test"
    for path in (base_path, test_path):
        if not path.is_file():
            raise OptionError(f"{{fold}} {fold}: {path} not found", options=("fold",))
    users, items = user_features(folder), item_features(folder)
    num_users, num_items = users.shape[0], items.shape[0]
    n = num_users + num_items
    base = read_ratings(base_path, num_users, num_items)
    test = read_ratings(test_path, num_users, num_items)
    order = np.random.default_rng(seed).permutation(base.shape[0])
    num_valid = int(round(valid_fraction * base.shape[0]))
    valid, train = base[np.sort(order[:num_valid])], base[np.sort(order[num_valid:])]
    every = np.concatenate([base, test])
    given = GivenPairs(
        {"train": train[:, :2], "valid": valid[:, :2], "test": test[:, :2]},
        sources={"train": str(base_path), "valid": str(base_path), "test": str(test_path)},
    )

    provenance = {"method": "movielens", "fold": fold, "valid_fraction": valid_fraction}
    options_meta = {"fold": fold, "valid_fraction": valid_fraction, "id_features": id_features, "typed": typed}
    if rating_features:
        options_meta["rating_features"] = True
    inputs = [folder / "u.user", folder / "u.item", folder / "u.occupation", base_path, test_path]
    if typed:
        with DatasetWriter(output, overwrite=overwrite) as writer:
            local = np.array([0, num_users], np.int64)
            timed = [(every[:, 0], every[:, 1] - num_users, every[:, 3])]  # (user, item, time) in local ids
            rates = spill_relation(RATES, iter(timed), writer.tmp, str(base_path))
            if rating_features:  # in input order; the relation and its reverse carry them through the split
                rates.columns = EdgeColumns(features=rating_levels(base, test, base_path, test_path),
                                            feature_names=list(RATING_COLUMNS))  # fmt: skip
            data = TypedImport(
                types=[
                    TypedNodes("user", num_users, _with_ids(users, id_features)),
                    TypedNodes("item", num_items, _with_ids(items, id_features)),
                ],  # fmt: skip
                relations=[rates],
                target="user",
                inputs=inputs,
            )
            if options.split_by == "time":  # every rating stays in the graph; the pairs of rates split by time
                split = TypedSplit(options.edge_split, ",".join(RATES), seed, eval_negatives, split_by="time")
            else:
                pairs = GivenPairs({k: v - local for k, v in given.positives.items()}, sources=given.sources)
                split = TypedSplit(pairs, ",".join(RATES), seed, eval_negatives, provenance)
            rated = np.stack([every[:, 0], every[:, 1] - num_users, every[:, 2]], axis=1)
            return finish_typed_import(
                writer, data, name=name, importer="movielens", add_reverse=True, link=split,
                options={**options_meta, **options.to_meta(MOVIELENS_FIELDS)}, progress=progress,
                edge_time_unit="s", before_finish=lambda meta: write_rating_labels(writer, meta, rated),
            )  # fmt: skip
    with DatasetWriter(output, overwrite=overwrite) as writer:
        built = edges.build_csc(
            lambda: iter([(every[:, 0], every[:, 1], every[:, 3])]),
            n,
            undirected=True,
            progress=progress,
            num_input_edges=int(every.shape[0]),
            timed=True,
            rows=rating_features,
        )
        assert built.edge_time is not None
        side = users.shape[1] + items.shape[1] + 2
        features = np.zeros((n, side + (n if id_features else 0)), np.float32)
        if id_features:
            features[np.arange(n), side + np.arange(n)] = 1.0
        features[:num_users, : users.shape[1]] = users
        features[num_users:, users.shape[1] : users.shape[1] + NUM_GENRES] = items
        features[:num_users, side - 2] = 1.0
        features[num_users:, side - 1] = 1.0
        writer.save("features", features)
        meta = finish.dataset_meta(
            name=name or finish.default_name(output),
            num_nodes=n,
            num_edges=0,  # set by save_split_graph
            directed=False,
            feature_dim=features.shape[1],
            feature_dtype="float32",
            num_classes=0,
            importer="movielens",
            inputs=inputs,
            options={**options_meta, **options.to_meta(MOVIELENS_FIELDS)},
            edge_counts=built.counts,
        )
        meta["num_users"], meta["num_items"] = num_users, num_items
        meta[EDGE_TIME_META] = {"unit": "s"}
        writer.save("edge_time", built.edge_time)
        if rating_features:  # gathered into CSC order by each edge's input row; the split below carries them
            levels = rating_levels(base, test, base_path, test_path)
            columns = EdgeColumns(features=levels, feature_names=list(RATING_COLUMNS))
            meta.update(write_edge_columns(writer, [(columns, built.edge_row)], str(writer.output)))
        if options.split_by == "time":  # every rating stays in the graph; pairs held out by time, with their times
            writer.save("indptr", built.indptr)
            writer.save("indices", built.indices)
            meta["num_edges"] = int(built.indptr[-1])
            meta = split_written_graph_by_time(  # negatives: a user and an item, as the fold's split draws them
                writer, meta, options.edge_split, seed=seed, eval_negatives=eval_negatives,
                dst_range=(num_users, n), src_range=(0, num_users),
            )  # fmt: skip
        else:
            split = split_from_pairs(
                given, built.indptr, built.indices, undirected=True, eval_negatives=eval_negatives,
                dst_range=(num_users, n), src_range=(0, num_users), seed=seed, meta=provenance,
            )  # fmt: skip
            carry_edge_time(writer, built.indptr, built.indices, split.indptr, split.indices)  # held out: times too
            meta = save_split_graph(writer, meta, split)
        meta = write_rating_labels(writer, meta, every[:, :3])
        return writer.finish(finish_edge_time(writer, meta), progress=progress)
