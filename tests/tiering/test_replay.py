"""``Replay``: the training sampler a tiering tool replays, validated once (a one-line OptionError naming the
field, rendered as its flag on the CLI), described with the config keys the tools record, and parsed once by the
tiering commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphtier import Dataset
from graphtier.errors import OptionError
from graphtier.sampling import DEFAULT_FANOUTS
from graphtier.tiering.replay import Replay
from graphtier.tiering.seeds import EpochSeeds
from tests.cli.helpers import run


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": 0}, "batch_size= expected a positive integer, found 0"),
        ({"batch_size": True}, "batch_size= expected a positive integer, found True"),
        ({"epochs": 0}, "epochs= expected a positive integer, found 0"),
        ({"epochs": 1.5}, "epochs= expected a positive integer, found 1.5"),
        ({"seed": -1}, "seed= expected a non-negative integer, found -1"),
        ({"fanouts": [5, -3]}, "fanouts= expected integers in 1..2147483647 or -1 (all neighbours), found -3"),
        ({"fanouts": []}, "fanouts= expected at least one fanout, found an empty list"),
        ({"relation_fanouts": "writes"}, "relation_fanouts= expected entries NAME=F or NAME=F1/F2"),
        ({"seeds": "link"}, "seeds= expected an EpochSeeds, found 'link'"),
    ],
)
def test_a_bad_value_is_refused_in_one_line_naming_it(options: dict[str, Any], message: str) -> None:
    with pytest.raises(OptionError) as info:
        Replay(**options)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    (name,) = options
    assert info.value.options == (name,)
    assert info.value.render(cli=True).startswith("--" + name.replace("_", "-") + " expected")


def test_values_are_parsed_once_and_described_with_the_recorded_keys() -> None:
    default = Replay()
    assert default.fanouts == DEFAULT_FANOUTS and default.relation_fanouts is None and default.seeds.task == "node"
    assert default.describe() == {"fanouts": [25, 10], "batch_size": 1024, "epochs": 1, "seed": 0, "task": "node"}
    assert default.describe(sampled=False) == {"fanouts": [25, 10], "batch_size": 1024, "task": "node"}
    replay = Replay("5,5", {"writes": [2, 1]}, batch_size=16, epochs=2, seed=3, seeds=EpochSeeds("link"))
    assert replay.fanouts == (5, 5) and replay.relation_fanouts == "writes=2/1"
    assert replay == Replay([5, 5], "writes=2/1", 16, 2, 3, EpochSeeds("link"))  # one value, however it was spelled
    assert list(replay.describe()) == ["fanouts", "batch_size", "epochs", "seed", "task", "num_negatives",
                                       "negative_sampling"]  # fmt: skip
    assert Replay(relation_fanouts="").relation_fanouts is None  # no override given
    assert replay.summary() == "fanouts 5,5, batch 16 pairs, 1 uniform negative(s) per pair"


def test_per_relation_fanouts_meet_the_dataset_once(tiny_dataset: Dataset) -> None:
    with pytest.raises(OptionError, match=r"^fanouts_per_relation=: .* has one relation; use fanouts= alone$"):
        Replay(relation_fanouts="writes=5").check_relations(tiny_dataset)
    Replay().check_relations(tiny_dataset)


def test_the_commands_parse_the_replay_once(
    tiny_dataset: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(tiny_dataset.path)
    for argv, flag in (
        (["score", path, "--epochs", "0"], "--epochs"),
        (["analyze", path, "--batch-size", "0"], "--batch-size"),
        (["plan", path, "--gpu-memory", "1GiB", "--host-memory", "1GiB", "--fanouts", "5,0"], "--fanouts"),
        (["reorder", path, str(tmp_path / "r"), "--fanouts-per-relation", "writes=5"], "--fanouts-per-relation"),
    ):
        code, _, err = run(argv, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1 and flag in err, (argv, err)
