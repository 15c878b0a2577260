"""The seeds of a training epoch, for the tiering tools: training nodes (``--task node``) or training pairs
(``--task link``: both endpoints of each pair plus ``--num-negatives`` negative destinations drawn as training
draws them, ``--negative-sampling``).

:class:`EpochSeeds` gives the scores their per-node seed weights (:mod:`graphtier.graph.seed_weights`) and the
replays (:mod:`graphtier.tiering.reads`) the sampler training runs: the neighbour sampler over the training
nodes, or the link sampler (:meth:`graphtier.graphstore.GraphStore.link_sampler`) over the rows of
``link_train.npy``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from graphtier._choices import DEFAULT_NEGATIVE_SAMPLING, DEFAULT_NUM_NEGATIVES, NEGATIVE_SAMPLING, TASK_NAMES
from graphtier.dataset.format import Dataset
from graphtier.errors import DatasetError, OptionError
from graphtier.graph.seed_weights import SeedWeights, link_seed_weights, node_seed_weights
from graphtier.graphstore.store import GraphStore
from graphtier.sampling.batch import MiniBatch
from graphtier.sampling.link.pairs import NegativeDestinations
from graphtier.sampling.neighbor.sampler import NeighborSampler

SampleFn = Callable[[np.ndarray, int], MiniBatch]


def negative_chances(how: str, dst_range: tuple[int, int], in_degrees: np.ndarray, num_nodes: int) -> np.ndarray:
    """float64 [N]: the chance one negative destination draw lands on each node.

    ``how``: ``uniform`` (``1 / (hi - lo)`` on ``dst_range`` ``[lo, hi)``) or ``degree`` (in-degree^0.75 over
    ``dst_range``, normalised; uniform when the range has no edges), as
    :class:`graphtier.sampling.link.pairs.NegativeDestinations` draws them. ``in_degrees`` int [N].
    """
    return NegativeDestinations(how, dst_range, in_degrees).probabilities(num_nodes)


@dataclass(frozen=True)
class EpochSeeds:
    """What a training epoch's seeds are (``task``, and for ``link`` the negatives per positive and how they are
    drawn). The same names and defaults as ``graphtier train``'s options."""

    task: str = "node"
    num_negatives: int = DEFAULT_NUM_NEGATIVES
    negative_sampling: str = DEFAULT_NEGATIVE_SAMPLING

    def __post_init__(self) -> None:
        if self.task not in TASK_NAMES:
            raise OptionError.invalid("task", f"one of {', '.join(TASK_NAMES)}", self.task)
        negatives = self.num_negatives
        if isinstance(negatives, bool) or not isinstance(negatives, (int, np.integer)) or negatives < 0:
            raise OptionError.invalid("num_negatives", "an integer >= 0", negatives)
        if self.negative_sampling not in NEGATIVE_SAMPLING:
            raise OptionError.invalid(
                "negative_sampling", f"one of {', '.join(NEGATIVE_SAMPLING)}", self.negative_sampling
            )

    @property
    def is_link(self) -> bool:
        return self.task == "link"

    def describe(self) -> dict[str, Any]:
        """The JSON-able options (recorded in the analysis and plan configs)."""
        if not self.is_link:
            return {"task": self.task}
        return {"task": self.task, "num_negatives": self.num_negatives, "negative_sampling": self.negative_sampling}

    def batch_note(self) -> str:
        """What a batch holds beyond its size, for the CLI's summary lines: ``" pairs, 1 uniform negative(s) per
        pair"`` for link seeds, ``""`` for nodes."""
        if not self.is_link:
            return ""
        return f" pairs, {self.num_negatives} {self.negative_sampling} negative(s) per pair"

    def train_pairs(self, dataset: Dataset) -> np.ndarray:
        """int64 [P, 2] the training pairs of ``dataset``'s edge split (``--task link``)."""
        link = dataset.link
        if link is None:
            raise DatasetError(
                f"{dataset.path / 'meta.json'}: {{task=link}} needs an edge split (link_train.npy; prepare with "
                "--edge-split), found none",
                options=("task",),
            )
        pairs = np.asarray(link.pairs("train").positives, dtype=np.int64)
        if pairs.shape[0] == 0:
            raise DatasetError(f"{dataset.path / 'link_train.npy'}: expected training pairs, found none")
        return pairs

    def seed_ids(self, dataset: Dataset, method: str = "") -> np.ndarray:
        """int64 [T]: what an epoch shuffles into batches: the training node ids, or the training pair ids
        (rows of ``link_train.npy``). ``method``: the score or tool asking (named in the error)."""
        if self.is_link:
            return np.arange(self.train_pairs(dataset).shape[0], dtype=np.int64)
        train = dataset.train_idx
        needs = f"score {method!r} needs" if method else "expected"
        if train is None:
            raise DatasetError(
                f"{dataset.path / 'train_idx.npy'}: file missing; {needs} a training split (import with {{split}})",
                options=("split",),
            )
        train = np.asarray(train, dtype=np.int64)
        if train.size == 0:
            raise DatasetError(f"{dataset.path / 'train_idx.npy'}: expected training nodes, found an empty split")
        return train

    def weights(self, dataset: Dataset, batch_size: int, method: str = "") -> SeedWeights:
        """Per-node seed weights of an epoch of batches of ``batch_size`` seeds (training nodes or pairs; a typed
        dataset's pairs of its split relation, over global node ids)."""
        if not self.is_link:
            return node_seed_weights(dataset.num_nodes, self.seed_ids(dataset, method), batch_size)
        pairs = self.train_pairs(dataset)
        if dataset.is_hetero:
            return self._typed_link_weights(dataset, pairs, batch_size)
        chances = None
        if self.num_negatives:
            assert dataset.link is not None
            degrees = np.diff(np.asarray(dataset.indptr))
            chances = negative_chances(self.negative_sampling, dataset.link.dst_range, degrees, dataset.num_nodes)
        return link_seed_weights(
            dataset.num_nodes, pairs, batch_size, num_negatives=self.num_negatives, negative_chance=chances
        )

    def _typed_link_weights(self, dataset: Dataset, pairs: np.ndarray, batch_size: int) -> SeedWeights:
        """:meth:`weights` of a typed dataset: the pairs' local ids moved to global ids, the negatives over the
        destination type (uniform, or by in-degree in the relation), as the typed link sampler draws them."""
        assert dataset.link is not None
        schema = dataset.schema
        rel = schema.relation(tuple(dataset.link.meta["relation"]))  # type: ignore[arg-type]
        src, dst = schema.node_type(rel.src), schema.node_type(rel.dst)
        chances = None
        if self.num_negatives:
            rows = np.asarray(dataset.indptr[rel.row_offset : rel.row_offset + dst.count + 1], dtype=np.int64)
            local = NegativeDestinations(self.negative_sampling, (0, dst.count), np.diff(rows))
            chances = np.zeros(dataset.num_nodes, dtype=np.float64)
            chances[dst.offset : dst.offset + dst.count] = local.probabilities(dst.count)
        return link_seed_weights(
            dataset.num_nodes, pairs + np.array([src.offset, dst.offset], dtype=np.int64), batch_size,
            num_negatives=self.num_negatives, negative_chance=chances,
        )  # fmt: skip

    def sampler(self, dataset: Dataset, fanouts: list[int], seed: int, relation_fanouts: Any = None) -> SampleFn:
        """``sample(seed_ids, batch_id) -> MiniBatch``: the sampler training runs with sampling seed ``seed`` (the
        neighbour sampler, or the link sampler with negatives and target-edge exclusion; on a typed dataset the
        typed link sampler of its split relation, with ``relation_fanouts``) on the CPU."""
        if not self.is_link:
            return NeighborSampler(np.asarray(dataset.indptr), np.asarray(dataset.indices), fanouts, seed=seed).sample
        return GraphStore(dataset, None, seed=seed).link_sampler(
            fanouts, self.train_pairs(dataset), relation_fanouts=relation_fanouts, num_negatives=self.num_negatives,
            negative_sampling=self.negative_sampling, seed=seed,
        )  # fmt: skip


NODE_SEEDS = EpochSeeds()
"""The default: node classification over ``train_idx.npy``."""


def training_seeds(dataset: Dataset, seeds: EpochSeeds) -> np.ndarray:
    """int64 [T] seed ids of a replayed epoch (training nodes or pair ids); one line naming the file when the
    split is missing or empty."""
    if seeds.is_link:
        return seeds.seed_ids(dataset)
    train = dataset.train_idx
    if train is None or np.asarray(train).size == 0:
        raise DatasetError(
            f"{dataset.path / 'train_idx.npy'}: expected a non-empty training split (import with {{split}})",
            options=("split",),
        )
    return np.asarray(train, dtype=np.int64)
