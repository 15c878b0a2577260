"""``graphtier train`` and ``graphtier demo`` from the command line: results, reports, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from graphtier import Dataset
from tests.cli.helpers import defaults_as_received
from tests.conftest import run_cli_in_one_process, write_labelled_graph
from tests.dataset.importers.helpers import CliResult


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphtier", *args], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def test_train_prints_epochs_and_writes_report(tiny_dataset: Dataset, tmp_path: Path) -> None:
    report = tmp_path / "run.json"
    result = _run(
        "train", str(tiny_dataset.path), "--fanouts", "5,5", "--batch-size", "50", "--hidden", "16", "--epochs", "2",
        "--report", str(report), "--features-on", "tiered", "--gpu-budget", "20%",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "epoch 2/2" in result.stdout and "test_acc" in result.stdout
    data = json.loads(report.read_text())
    final = data["final"]
    assert result.stdout.strip().splitlines()[-2] == (  # then "report written to ..."
        f"final (best epoch {final['epoch']}): valid_acc {final['valid_acc']:.4f}  test_acc {final['test_acc']:.4f}  "
        f"macro-F1 {final['test_macro_f1']:.4f}  micro-F1 {final['test_micro_f1']:.4f} "
        "(sampled inference, fanouts 5,5; exact: --full-inference)  "
        f"majority-class test_acc {final['test_majority_acc']:.4f}  macro-F1 {final['test_majority_macro_f1']:.4f}  "
        f"micro-F1 {final['test_majority_micro_f1']:.4f} (class {final['majority_class']}, "
        "the train split's most common)"
    )
    assert data["config"]["features_on"] == "tiered"
    assert data["epochs"][1]["feature_bytes_by_tier"]["gpu"] > 0


BAD_OPTIONS: list[tuple[list[str], str]] = [
    (["--fanouts", "10,x"], "--fanouts"),
    (["--model", "transformer"], "--model"),
    (["--device", "cuda"], "CUDA"),
    (["--features-on", "ssd"], "--features-on"),
    (["--devices", "cpu,tpu"], "--devices"),
    (["--balance", "maybe", "--devices", "cpu,cpu"], "--balance"),
    (["--devices", "cpu,cpu", "--shares", "0.3,0.3"], "summing to 1"),
    (["--sample-on", "gpu"], "--sample-on gpu: needs a CUDA device"),
    (["--topology-budget", "10%"], "--topology-budget: applies to --sample-on gpu only"),
    (["--model", "gcn", "--gcn-degrees", "sampled"], "--gcn-degrees"),
]


@pytest.fixture(scope="module")
def bad_option_runs(tmp_path_factory: pytest.TempPathFactory) -> list[CliResult]:
    """``graphtier train TINY ARGS`` for every case of BAD_OPTIONS."""
    dataset = write_labelled_graph(tmp_path_factory.mktemp("bad_options") / "tiny").path
    return run_cli_in_one_process([["train", str(dataset), *args] for args, _ in BAD_OPTIONS])


@pytest.mark.parametrize("case", range(len(BAD_OPTIONS)), ids=[" ".join(args) for args, _ in BAD_OPTIONS])
def test_bad_options_are_one_line_errors(bad_option_runs: list[CliResult], case: int) -> None:
    import torch

    args, fragment = BAD_OPTIONS[case]
    if ("cuda" in args or "gpu" in args) and torch.cuda.is_available():
        pytest.skip("CUDA present")
    result = bad_option_runs[case]
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("graphtier: error:") and fragment in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_missing_dataset_is_one_line(tmp_path: Path) -> None:
    result = _run("train", str(tmp_path / "nope"))
    assert result.returncode == 2 and "nope" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_two_cpu_ranks_from_the_cli(tiny_dataset: Dataset, tmp_path: Path) -> None:
    report = tmp_path / "multi.json"
    result = _run(
        "train", str(tiny_dataset.path), "--devices", "cpu,cpu", "--fanouts", "5,5", "--batch-size", "50",
        "--hidden", "16", "--epochs", "2", "--rebalance-every", "2", "--report", str(report),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "2 trainer processes" in result.stdout
    data = json.loads(report.read_text())
    final_shares = data["balancer"]["final_shares"]
    assert f"shares cpu {final_shares[0]:.3f}, cpu {final_shares[1]:.3f}" in result.stdout
    assert sum(final_shares) == pytest.approx(1.0)
    for epoch in data["epochs"]:  # every rank's reads: more than any one rank's share of them
        assert epoch["feature_bytes"] == sum(epoch["feature_bytes_by_tier"].values())
        assert epoch["feature_bytes"] > 0
    assert [r["device"] for r in data["ranks"]] == ["cpu", "cpu"]
    assert sum(r["seeds"] for r in data["ranks"]) == 2 * len(tiny_dataset.train_idx)
    assert len(data["balancer"]["ratio_history"]) >= 2


@pytest.mark.slow
def test_demo_runs_end_to_end(tmp_path: Path) -> None:
    result = _run("demo", "--workdir", str(tmp_path / "demo"), "--epochs", "2")
    assert result.returncode == 0, result.stderr
    assert "GraphSAGE" in result.stdout and "features-only MLP" in result.stdout
    assert (tmp_path / "demo" / "sage.json").is_file()


def test_fixed_choices_match_the_library_and_show_in_help() -> None:
    from graphtier.cli import train as train_cli
    from graphtier.memory import FEATURE_MODES
    from graphtier.train.dist.balancer import BALANCE_MODES
    from graphtier.train.nn.models import MODEL_NAMES, NORM_NAMES
    from graphtier.train.options.config import GCN_DEGREES_OPTIONS, SAMPLER_NAMES

    assert train_cli.MODEL_CHOICES == MODEL_NAMES and train_cli.SAMPLER_CHOICES == SAMPLER_NAMES
    assert train_cli.NORM_CHOICES == NORM_NAMES and train_cli.FEATURES_ON_CHOICES == FEATURE_MODES
    assert train_cli.BALANCE_CHOICES == BALANCE_MODES and train_cli.GCN_DEGREES_CHOICES == GCN_DEGREES_OPTIONS
    from graphtier.train.options.spec import DECODER_NAMES, NEGATIVE_SAMPLING_NAMES, TASK_NAMES

    assert train_cli.TASK_CHOICES == TASK_NAMES and train_cli.DECODER_CHOICES == DECODER_NAMES
    assert train_cli.NEGATIVE_SAMPLING_CHOICES == NEGATIVE_SAMPLING_NAMES
    from graphtier.train.options.spec import FEATURELESS_MODES

    assert train_cli.FEATURELESS_CHOICES == FEATURELESS_MODES
    from graphtier.sampling import DEFAULT_FANOUTS, format_fanouts

    assert train_cli.FANOUTS_DEFAULT == format_fanouts(DEFAULT_FANOUTS)
    result = _run("train", "--help")
    assert result.returncode == 0
    assert "[sage|gcn|gat|gine|mlp|rgcn|rgat|hsage]" in result.stdout and "tiered+cache]" in result.stdout
    assert "[auto|full|block]" in result.stdout


def test_every_train_option_is_a_field_of_one_spec_with_the_same_default() -> None:
    """How to add a train option: a field on the spec that owns it (graphtier/train/options/spec.py,
    graphtier/sampling/spec.py or graphtier/memory/features/spec.py, checked in its __post_init__), a click option of the
    same name in graphtier/cli/train.py, and a test. ``TrainConfig(**options)`` routes each option to its spec,
    and the report, the checkpoint and the saved model record it (``to_dict``): nothing else changes."""
    from dataclasses import fields

    from graphtier.cli import train as train_cli
    from graphtier.sampling import Fanouts
    from graphtier.train.options.config import OPTION_OWNER, SPECS, TrainConfig

    options = {param.name: param for param in train_cli.command.params if param.name != "dataset"}
    python_only = {"workload_samples", "edge_dim"}  # a tuning knob of the balancer, not a flag; set by the run
    assert set(options) == set(OPTION_OWNER) - python_only
    defaults = TrainConfig().to_dict() | {"gcn_degrees": "auto"}
    received = defaults_as_received(train_cli.command, ["dataset"])
    for name in options:
        default = Fanouts.parse(received[name]) if name == "fanouts" else received[name]
        expected = tuple(defaults[name]) if isinstance(defaults[name], list) else defaults[name]
        assert default == expected, name
    assert sum(len(fields(spec)) for spec in SPECS.values()) == len(OPTION_OWNER)  # no name in two specs


def test_gcn_degrees_is_recorded_in_the_report_and_the_saved_model(tiny_dataset: Dataset, tmp_path: Path) -> None:
    report, model = tmp_path / "run.json", tmp_path / "gcn.pt"
    result = _run(
        "train", str(tiny_dataset.path), "--model", "gcn", "--gcn-degrees", "block", "--fanouts", "5,5",
        "--batch-size", "50", "--hidden", "16", "--epochs", "1", "--report", str(report), "--save-model", str(model),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(report.read_text())["config"]["gcn_degrees"] == "block"
    from graphtier.train import load_model

    assert load_model(model).gcn_degrees == "block"
