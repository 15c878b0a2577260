"""How mini-batches are drawn: :class:`SamplerSpec` (sampler kind, fanouts, batch sizes), validated once."""

from __future__ import annotations

from dataclasses import dataclass, field

from graphtier._checks import check_choice, check_int
from graphtier._choices import TEMPORAL_STRATEGIES
from graphtier._fanouts import RelationFanouts
from graphtier.errors import OptionError
from graphtier.sampling.fanouts import DEFAULT_FANOUTS, Fanouts

SAMPLER_KINDS = ("neighbor", "shadow", "seed-only")
"""Every sampler the graph store builds: neighbour sampling (CPU or GPU), ShaDow subgraphs (CPU, needs the
model depth), or the seeds alone (no neighbours: features-only models such as the MLP)."""

SAMPLER_NAMES = tuple(kind for kind in SAMPLER_KINDS if kind != "seed-only")
"""The samplers a user picks (``--sampler``); ``seed-only`` is implied by the MLP."""


@dataclass(frozen=True)
class SamplerSpec:
    """Which sampler draws the training and evaluation batches, and how large they are.

    ``fanouts`` (seed hop first, :class:`Fanouts`; a string ``"25,10"`` or a sequence is parsed here)
    and ``eval_fanouts`` (None: ``fanouts``) are the neighbours per hop; with the neighbour sampler
    both have one entry per layer. ``fanouts_per_relation`` (typed datasets) overrides ``fanouts`` for some
    relations: a :class:`RelationFanouts`, parsed here from its text ``"writes=5,cites=10/5"`` or a mapping keyed
    by names or ``(src, name, dst)``; it is resolved against the dataset's relations by
    :func:`graphtier.sampling.relation_fanouts.parse_relation_fanouts` once the dataset is known. ``temporal``
    (:data:`~graphtier.sampling.TEMPORAL_STRATEGIES`, or None) samples a time-split link dataset at each
    pair's time: neighbours strictly earlier, drawn uniformly or the most recent.
    """

    sampler: str = "neighbor"
    fanouts: Fanouts = field(default_factory=lambda: Fanouts(DEFAULT_FANOUTS))
    batch_size: int = 1024
    eval_fanouts: Fanouts | None = None
    eval_batch_size: int = 4096
    fanouts_per_relation: RelationFanouts | None = None
    temporal: str | None = None

    def __post_init__(self) -> None:
        if self.fanouts_per_relation is not None:
            object.__setattr__(self, "fanouts_per_relation", RelationFanouts.parse(self.fanouts_per_relation))
        check_choice("sampler", self.sampler, SAMPLER_NAMES)
        object.__setattr__(self, "fanouts", Fanouts.parse(self.fanouts, "fanouts"))
        if self.eval_fanouts is not None:
            object.__setattr__(self, "eval_fanouts", Fanouts.parse(self.eval_fanouts, "eval_fanouts"))
        check_int("batch_size", self.batch_size)
        check_int("eval_batch_size", self.eval_batch_size)
        if self.temporal is not None:
            check_choice("temporal", self.temporal, TEMPORAL_STRATEGIES)
        if self.eval_fanouts is not None and self.sampler == "neighbor" and len(self.eval_fanouts) != len(self.fanouts):
            raise OptionError(
                f"{{eval_fanouts}} expected {len(self.fanouts)} entries like {{fanouts}}, found {len(self.eval_fanouts)}",
                options=("eval_fanouts", "fanouts"),
            )

    @property
    def evaluation_fanouts(self) -> Fanouts:
        """The fanouts of sampled evaluation: ``eval_fanouts``, or ``fanouts`` when not given."""
        return self.eval_fanouts if self.eval_fanouts is not None else self.fanouts
