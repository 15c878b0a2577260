"""One default fanout list (graphtier.sampling.DEFAULT_FANOUTS) for every command and library function."""

from __future__ import annotations

import inspect

import click

from graphtier.sampling import DEFAULT_FANOUTS, format_fanouts


def _fanouts_default(command: click.Command) -> object:
    (option,) = [p for p in command.params if p.name == "fanouts"]
    return option.default


def test_every_command_defaults_to_the_same_fanouts() -> None:
    from graphtier.cli import analyze, bench, bench_gather, plan, reorder, score, train

    commands = {
        "train": train.command, "analyze": analyze.command, "plan": plan.command, "score": score.command,
        "reorder": reorder.command, "bench sample": bench.sample_command, "bench gather": bench_gather.command,
    }  # fmt: skip
    defaults = {name: _fanouts_default(command) for name, command in commands.items()}
    assert defaults == dict.fromkeys(commands, format_fanouts(DEFAULT_FANOUTS))


def test_every_library_function_defaults_to_the_same_fanouts() -> None:
    from graphtier.bench.gather_dataset import run_dataset_gather
    from graphtier.graphstore import GraphStore
    from graphtier.tiering.replay import Replay
    from graphtier.train import TrainConfig

    for function in (GraphStore.open, run_dataset_gather):
        assert tuple(inspect.signature(function).parameters["fanouts"].default) == DEFAULT_FANOUTS, function
    assert Replay().fanouts == DEFAULT_FANOUTS  # analyze_access, plan_capacity, compute_scores, ... take a Replay
    config = TrainConfig()
    assert config.sampling.fanouts == DEFAULT_FANOUTS and config.num_layers == len(DEFAULT_FANOUTS)
    assert format_fanouts((25, 10)) == "25,10"
