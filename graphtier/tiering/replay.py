"""One replay of the training sampler for every tool that measures reads (``score --score presample``, ``analyze``,
``plan``, the cache-policy trace): the neighbour sampler of a homogeneous dataset, the typed sampler of a typed
one, or either link sampler from link seeds, over the same batches as ``graphtier train``.

:class:`Replay` is what is replayed (the options ``graphtier train`` samples with), validated once;
:func:`replay_reads` runs it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from graphtier._checks import check_int
from graphtier._fanouts import DEFAULT_FANOUTS, Fanouts, RelationFanouts
from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.format import Dataset
from graphtier.dataset.schema import RelationType
from graphtier.errors import OptionError
from graphtier.sampling.relation_fanouts import parse_relation_fanouts
from graphtier.tiering.reads import SampledReads, count_sampled_reads
from graphtier.tiering.seeds import NODE_SEEDS, EpochSeeds, training_seeds
from graphtier.tiering.typed_reads import count_typed_reads


@dataclass(frozen=True)
class Replay:
    """The training sampler a tiering tool replays: the options of ``graphtier train`` that decide which feature
    rows and neighbour lists an epoch reads. Validated once, here (a one-line OptionError naming the field).

    Attributes:
        fanouts: neighbours per hop, seed hop first (:class:`~graphtier.sampling.Fanouts`; ``"25,10"`` or a
            sequence of ints is parsed here). Default :data:`~graphtier.sampling.neighbor.sampler.DEFAULT_FANOUTS`.
        relation_fanouts: a typed dataset's per-relation overrides of ``fanouts`` (``--fanouts-per-relation``):
            a :class:`~graphtier._fanouts.RelationFanouts`, parsed here from ``"writes=5,cites=10/5"`` or a mapping;
            None (or empty) for none. The names meet the dataset's schema in :meth:`relation_fanouts_of`.
        batch_size: seeds per mini-batch (training nodes, or pairs for ``task="link"``), a positive integer.
        epochs: epochs replayed, a positive integer (the ``presample`` score's epochs in ``compute_scores``).
        seed: the sampling seed (as ``graphtier train --seed``), an integer >= 0; it also seeds each epoch's shuffle.
        seeds: what an epoch's batches hold (:class:`~graphtier.tiering.seeds.EpochSeeds`): the training nodes
            (default), or the training pairs with their negatives.
    """

    fanouts: Fanouts = Fanouts(DEFAULT_FANOUTS)
    relation_fanouts: RelationFanouts | None = None
    batch_size: int = 1024
    epochs: int = 1
    seed: int = 0
    seeds: EpochSeeds = NODE_SEEDS

    def __post_init__(self) -> None:
        object.__setattr__(self, "fanouts", Fanouts.parse(self.fanouts, "fanouts"))
        if self.relation_fanouts is not None:
            parsed = RelationFanouts.parse(self.relation_fanouts, "relation_fanouts")
            object.__setattr__(self, "relation_fanouts", parsed if parsed.entries else None)
        object.__setattr__(self, "batch_size", check_int("batch_size", self.batch_size))
        object.__setattr__(self, "epochs", check_int("epochs", self.epochs))
        object.__setattr__(self, "seed", check_int("seed", self.seed, minimum=0))
        if not isinstance(self.seeds, EpochSeeds):
            raise OptionError.invalid("seeds", "an EpochSeeds", self.seeds)

    def describe(self, *, sampled: bool = True) -> dict[str, Any]:
        """The JSON-able options (recorded in the score, analysis, plan and cache configs): ``fanouts``,
        ``batch_size``, with ``sampled`` ``epochs`` and ``seed`` (an expectation such as ``fwr`` draws nothing),
        then the seeds' (:meth:`EpochSeeds.describe`)."""
        sampling = {"epochs": self.epochs, "seed": self.seed} if sampled else {}
        return {"fanouts": list(self.fanouts), "batch_size": self.batch_size, **sampling, **self.seeds.describe()}

    def summary(self) -> str:
        """``"fanouts 25,10, batch 1024"`` (and the seeds' :meth:`EpochSeeds.batch_note`): the CLI's summary lines."""
        return f"fanouts {self.fanouts}, batch {self.batch_size}{self.seeds.batch_note()}"

    def check_relations(self, dataset: Dataset) -> None:
        """One-line OptionError when per-relation fanouts are given for a homogeneous ``dataset`` (one relation)."""
        if self.relation_fanouts and not dataset.is_hetero:
            raise OptionError(
                f"{{fanouts_per_relation}}: {dataset.path} has one relation; use {{fanouts}} alone",
                options=("fanouts_per_relation", "fanouts"),
            )

    def relation_fanouts_of(self, dataset: Dataset) -> dict[RelationType, Fanouts]:
        """The fanouts of every relation of the typed ``dataset``: ``fanouts`` with the overrides
        ``relation_fanouts`` resolved against its schema (:func:`graphtier.sampling.relation_fanouts.
        parse_relation_fanouts`: a one-line OptionError for an unknown relation or a wrong number of hops)."""
        return parse_relation_fanouts(self.relation_fanouts, dataset.schema, list(self.fanouts))


DEFAULT_REPLAY = Replay()
"""The default replay: one epoch of batches of 1024 training nodes, the default fanouts, seed 0."""


def replay_reads(
    dataset: Dataset,
    replay: Replay = DEFAULT_REPLAY,
    *,
    train: np.ndarray | None = None,
    first_epoch: int = 0,
    topology: bool = True,
    on_reads: Callable[[np.ndarray], None] | None = None,
    progress: Progress = NO_PROGRESS,
) -> SampledReads:
    """The reads of ``replay.epochs`` epochs of the training sampler on ``dataset`` (:class:`SampledReads`, counts
    per global node and per CSC row): from ``replay.seeds``' epoch (``train`` int64 [T] seed ids, default
    :func:`~graphtier.tiering.seeds.training_seeds`; link seeds replay the link sampler), ``replay.fanouts`` (a
    typed dataset's overridden per relation by ``replay.relation_fanouts``), batches of ``replay.batch_size``,
    random stream ``replay.seed``, epochs numbered from ``first_epoch``. ``topology`` False skips the list reads of
    a homogeneous replay; ``on_reads`` gets each batch's feature rows in order
    (:func:`graphtier.tiering.reads.count_sampled_reads`)."""
    seeds, fanouts = replay.seeds, list(replay.fanouts)
    if train is None:
        train = training_seeds(dataset, seeds)
    sample = seeds.sampler(dataset, fanouts, replay.seed, replay.relation_fanouts) if seeds.is_link else None
    options = dict(
        batch_size=replay.batch_size, epochs=replay.epochs, seed=replay.seed, first_epoch=first_epoch,
        progress=progress, on_reads=on_reads, sample=sample,
    )  # fmt: skip
    if dataset.is_hetero:
        return count_typed_reads(
            dataset.indptr, dataset.indices, dataset.schema, train, fanouts=replay.relation_fanouts_of(dataset),
            **options,
        )  # fmt: skip
    return count_sampled_reads(
        dataset.indptr, dataset.indices, train, fanouts=fanouts, topology=topology, **options
    )  # fmt: skip
