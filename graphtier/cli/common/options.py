"""Option types shared by several commands."""

from __future__ import annotations

import functools
from typing import Any

import click

from graphtier._choices import DEFAULT_NEGATIVE_SAMPLING, DEFAULT_NUM_NEGATIVES, NEGATIVE_SAMPLING, TASK_NAMES


class FanoutsType(click.ParamType):
    """``25,10`` -> ``(25, 10)``: positive integers or -1, first hop from the seeds first (PyG order)."""

    name = "fanouts"

    def __init__(self, option: str) -> None:
        self.option = option

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        from graphtier._fanouts import Fanouts  # not graphtier.sampling, which imports torch

        return Fanouts.parse(value, self.option)


def fanouts_option_type(option: str = "fanouts") -> FanoutsType:
    """A click type parsing a fanout list (:meth:`graphtier.sampling.Fanouts.parse`) for the option whose Python
    name is ``option`` (``eval_fanouts``; rendered as ``--eval-fanouts`` in its error messages)."""
    return FanoutsType(option)


class RelationFanoutsType(click.ParamType):
    """``writes=5,cites=10/5`` -> :class:`graphtier._fanouts.RelationFanouts`: the per-relation fanouts, parsed
    where they enter (the names meet the dataset's schema once a command opens it)."""

    name = "fanouts_per_relation"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from graphtier._fanouts import RelationFanouts  # not graphtier.sampling, which imports torch

        return RelationFanouts.parse(value, "fanouts_per_relation")


RELATION_FANOUTS = RelationFanoutsType()
"""Click type of every ``--fanouts-per-relation`` option."""


SEED = click.IntRange(0, 2**63 - 1)
"""Click type of every ``--seed`` option: an integer in [0, 2^63) (what numpy and the kernels accept)."""


def merge_alias(value: Any, alias_value: Any, name: str, alias: str, default: Any = None) -> Any:
    """The value of option ``name`` given either as itself or as its old, hidden spelling ``alias``.

    Raises OptionError when both are given with different values.
    """
    from graphtier.errors import OptionError

    if alias_value is None:
        return default if value is None else value
    if value is not None and value != alias_value:
        raise OptionError(
            f"{name} and its old spelling {alias} disagree ({value!r} and {alias_value!r}); give {name} only"
        )
    return alias_value


def relation_fanouts_option() -> Any:
    """``--fanouts-per-relation`` of the tiering commands (a typed dataset: ``writes=5,cites=10/5`` overrides
    ``--fanouts`` per relation; parsed against the dataset's schema by
    :func:`graphtier.sampling.relation_fanouts.parse_relation_fanouts`)."""
    return click.option(
        "--fanouts-per-relation",
        "fanouts_per_relation",
        type=RELATION_FANOUTS,
        default=None,
        help="Typed datasets: per-relation fanouts overriding --fanouts, e.g. writes=5,cites=10/5.",
    )


def fanouts_option(help: str) -> Any:
    """``--fanouts`` of a command that samples: a fanout list (default the training default), with ``help``."""
    from graphtier._fanouts import DEFAULT_FANOUTS, format_fanouts

    return click.option(
        "--fanouts", default=format_fanouts(DEFAULT_FANOUTS), show_default=True, type=fanouts_option_type(), help=help
    )


def trace_options(fanouts: str, batch_size: str, epochs: str, seed: str) -> list[Any]:
    """``--fanouts``, ``--fanouts-per-relation``, ``--batch-size``, ``--epochs`` and ``--seed`` of a command that
    replays the training sampler, as ``graphtier train`` takes them, with these helps."""
    return [
        fanouts_option(fanouts),
        relation_fanouts_option(),
        click.option("--batch-size", type=int, default=1024, show_default=True, help=batch_size),
        click.option("--epochs", type=int, default=1, show_default=True, help=epochs),
        click.option("--seed", type=SEED, default=0, show_default=True, help=seed),
    ]


def task_options() -> list[Any]:
    """``--task``, ``--num-negatives`` and ``--negative-sampling`` (the names and defaults of ``graphtier train``):
    the training seeds the scores and replays model."""
    return [
        click.option(
            "--task",
            type=click.Choice(TASK_NAMES),
            default=TASK_NAMES[0],
            show_default=True,
            help="Training task: node (seeds: train_idx.npy) or link (seeds: link_train.npy pairs, both endpoints "
            "plus negatives; --batch-size counts pairs).",
        ),
        click.option(
            "--num-negatives",
            type=click.IntRange(0),
            default=DEFAULT_NUM_NEGATIVES,
            show_default=True,
            help="--task link: negatives per training pair, as train draws them.",
        ),
        click.option(
            "--negative-sampling",
            type=click.Choice(NEGATIVE_SAMPLING),
            default=DEFAULT_NEGATIVE_SAMPLING,
            show_default=True,
            help="--task link: negative destinations uniform, or by in-degree^0.75.",
        ),
    ]


def decorated(func: Any, options: list[Any]) -> Any:
    """``func`` with the click ``options``, the first one listed first in ``--help``."""
    for option in reversed(options):
        func = option(func)
    return func


def replayed(func: Any, fanouts: str, batch_size: str, epochs: str, seed: str) -> Any:
    """``func`` with the options of the training sampler a tiering command replays (:func:`trace_options` with
    these helps, then :func:`task_options`), which it receives parsed once, as one ``replay`` argument: their
    :class:`graphtier.tiering.replay.Replay` (a bad value: one line naming its option)."""

    @functools.wraps(func)
    def command(
        *args: Any,
        fanouts: tuple[int, ...],
        fanouts_per_relation: str | None,
        batch_size: int,
        epochs: int,
        seed: int,
        task: str,
        num_negatives: int,
        negative_sampling: str,
        **kwargs: Any,
    ) -> Any:
        from graphtier.tiering.replay import Replay
        from graphtier.tiering.seeds import EpochSeeds

        seeds = EpochSeeds(task, num_negatives, negative_sampling)
        replay = Replay(fanouts, fanouts_per_relation, batch_size=batch_size, epochs=epochs, seed=seed, seeds=seeds)
        return func(*args, replay=replay, **kwargs)

    return decorated(command, [*trace_options(fanouts, batch_size, epochs, seed), *task_options()])


def replay_options(func: Any) -> Any:
    """The training sampler a tiering command replays (``analyze``, ``plan``): :func:`replayed`."""
    return replayed(func, "Training fanouts, seed hop first.", "Seeds per mini-batch.",
                    "Epochs of the sampling trace.", "Sampling seed (as train --seed).")  # fmt: skip


def score_options(func: Any) -> Any:
    """The options every hotness score takes (``score`` and ``reorder``): damping, tol, iterations, then the
    replay (:func:`replayed`: fanouts, batch size, presample epochs and seed, the task's seeds). Defaults are those
    of :mod:`graphtier.tiering.hotness`."""
    from graphtier.graph.scores import DEFAULT_DAMPING, DEFAULT_RPR_TOL

    options = [
        click.option("--damping", type=float, default=DEFAULT_DAMPING, show_default=True, help="rpr/wrpr damping."),
        click.option(
            "--tol",
            type=float,
            default=DEFAULT_RPR_TOL,
            show_default=True,
            help="rpr: stop when the L1 change is below this.",
        ),
        click.option(
            "--iterations",
            type=int,
            default=None,
            help="rpr: iteration cap (default 100); wrpr: iterations run (default 5).",
        ),
    ]
    replay = replayed(
        func,
        "fwr/fwr-sum/presample: training fanouts, seed hop first.",
        "fwr/presample: seeds per batch.",
        "presample: epochs sampled.",
        "presample: sampling seed.",
    )
    return decorated(replay, options)
