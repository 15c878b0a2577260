"""TrainConfig: every option out of range is one OptionError naming it, raised before any work (issue 21)."""

from __future__ import annotations

from typing import Any

import pytest

from graphtier import Dataset, OptionError
from graphtier.sampling import Fanouts
from graphtier.train.options.config import MAX_FANOUT, TrainConfig, parse_fanouts
from tests.dataset.importers.helpers import assert_user_error, run_cli


def test_parse_fanouts_bounds_every_entry() -> None:
    assert parse_fanouts(f"{MAX_FANOUT},-1") == (MAX_FANOUT, -1)
    for bad in (f"{MAX_FANOUT + 1}", "4611686018427387904,5", "99999999999999999999", "5,-3"):
        with pytest.raises(OptionError, match=r"^fanouts= expected integers in 1\.\.2147483647 or -1"):
            parse_fanouts(bad)
    with pytest.raises(OptionError, match="^eval_fanouts="):
        parse_fanouts("3,0", "eval_fanouts")
    with pytest.raises(OptionError):
        Fanouts.parse([True])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"fanouts": (2**40, 5)}, "fanouts= expected integers in 1..2147483647"),
        ({"fanouts": ()}, "fanouts= expected at least one"),
        ({"eval_fanouts": (5, 2**31)}, "eval_fanouts= expected integers in 1..2147483647"),
        ({"fanouts": (5, 5, 5), "layers": 2}, "layers=2 must equal the number of fanouts (3)"),
        ({"lr": float("inf")}, "lr= expected a finite number > 0, found inf"),
        ({"lr": float("nan")}, "lr= expected a finite number > 0, found nan"),
        ({"lr": 0.0}, "lr= expected a finite number > 0, found 0.0"),
        ({"lr": -0.1}, "lr= expected a finite number > 0"),
        ({"weight_decay": float("nan")}, "weight_decay= expected a finite number >= 0, found nan"),
        ({"weight_decay": -1.0}, "weight_decay= expected a finite number >= 0, found -1.0"),
        ({"weight_decay": float("inf")}, "weight_decay= expected a finite number >= 0, found inf"),
        ({"dropout": 1.0}, "dropout= expected a value in [0, 1)"),
        ({"dropout": float("nan")}, "dropout= expected a value in [0, 1)"),
        ({"dropout": -0.1}, "dropout= expected a value in [0, 1)"),
        ({"batch_size": 0}, "batch_size= expected a positive integer"),
        ({"epochs": 0}, "epochs= expected a positive integer"),
        ({"hidden": 0}, "hidden= expected a positive integer"),
        ({"prefetch": -1}, "prefetch= expected a non-negative integer"),
    ],
)
def test_validate_refuses(tiny_dataset: Dataset, options: dict[str, Any], message: str) -> None:
    """A Python caller's error names the argument it used (``lr=``), not the CLI flag."""
    with pytest.raises(OptionError) as info:
        TrainConfig(**options).validate(tiny_dataset)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_validate_accepts_the_largest_fanout_and_no_weight_decay(tiny_dataset: Dataset) -> None:
    TrainConfig(fanouts=(MAX_FANOUT, -1), weight_decay=0.0, lr=1e-9, dropout=0.0).validate(tiny_dataset)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--fanouts", "2147483648,5"], "--fanouts expected integers in 1..2147483647 or -1"),
        (["--fanouts", "99999999999999999999,5"], "--fanouts expected integers in 1..2147483647 or -1"),
        (["--eval-fanouts", "5,4611686018427387904"], "--eval-fanouts expected integers in 1..2147483647"),
        (["--weight-decay", "nan"], "--weight-decay expected a finite number >= 0, found nan"),
        (["--weight-decay", "-1"], "--weight-decay expected a finite number >= 0, found -1"),
        (["--lr", "inf"], "--lr expected a finite number > 0, found inf"),
        (["--lr", "nan"], "--lr expected a finite number > 0, found nan"),
    ],
)
def test_train_cli_refuses_before_training(tiny_dataset: Dataset, args: list[str], fragment: str) -> None:
    result = run_cli("train", str(tiny_dataset.path), "--epochs", "1", "--hidden", "8", "--quiet", *args)
    assert_user_error(result, fragment)
    assert "final" not in result.stdout


def test_score_cli_bounds_the_fanouts(tiny_dataset: Dataset) -> None:
    result = run_cli("score", str(tiny_dataset.path), "-s", "fwr", "--fanouts", "4611686018427387904,5")
    assert_user_error(result, "--fanouts expected integers in 1..2147483647 or -1")


def test_gat_refused_when_its_attention_tensors_cannot_fit(
    tiny_dataset: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphtier.dataset import resources
    from graphtier.errors import ResourceError
    from graphtier.train.options.gat_memory import gat_training_bytes

    needed = gat_training_bytes(1024, (-1, -1), tiny_dataset.in_degrees(), 256, 4, tiny_dataset.num_classes)
    monkeypatch.setattr(resources, "available_memory", lambda: needed - 1)
    config = TrainConfig(model="gat", fanouts=(-1, -1))
    # a Python caller reads its arguments, the CLI user (below) the flags
    with pytest.raises(
        ResourceError, match=rf"^model='gat' with .*fanouts='-1,-1' .*needs about .*\({needed:,} bytes\)"
    ) as info:
        config.validate(tiny_dataset)
    assert "--" not in str(info.value)
    TrainConfig(model="sage", fanouts=(-1, -1)).validate(tiny_dataset)  # only GAT keeps per-edge tensors
    result = run_cli("train", str(tiny_dataset.path), "--model", "gat", "--fanouts", "-1,-1", "--epochs", "1")
    assert_user_error(
        result, "--model gat with --batch-size 1024 --fanouts -1,-1 --hidden 256 --heads 4", "of memory, only"
    )
    assert "final" not in result.stdout
    monkeypatch.setattr(resources, "available_memory", lambda: needed)
    config.validate(tiny_dataset)


@pytest.mark.parametrize("option", ["--gpu-budget", "--cache-budget", "--ram-budget"])
def test_train_cli_refuses_a_budget_without_a_unit(tiny_dataset: Dataset, option: str) -> None:
    result = run_cli(
        "train", str(tiny_dataset.path), "--epochs", "1", "--quiet", "--features-on", "tiered+cache", option, "1"
    )
    assert_user_error(result, f"{option}: a number without a unit is ambiguous", '"1GB"')
    assert "final" not in result.stdout


def test_validate_hints_name_the_import_argument(tiny_dataset: Dataset) -> None:
    """A dataset without a train split: ``split=`` for a Python caller, ``--split`` on the CLI."""
    (tiny_dataset.path / "train_idx.npy").unlink()
    with pytest.raises(OptionError, match=r"no train split \(train_idx.npy\); re-import it with split=$") as info:
        TrainConfig().validate(Dataset.open(tiny_dataset.path))
    assert "--" not in str(info.value)
    assert info.value.render(cli=True).endswith("re-import it with --split")
    result = run_cli("train", str(tiny_dataset.path), "--epochs", "1", "--quiet")
    assert_user_error(result, "re-import it with --split")
