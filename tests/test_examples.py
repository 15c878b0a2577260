"""examples/: every script runs on a small generated graph and does what its docstring says.

Each script is imported (not started as a new Python, to save the imports) and its ``main`` is called with a
small size and a temporary folder; the checks are on what it returns: an accuracy above chance, a loss below
the untrained one, hot rows serving more reads than their share, two ranks that shared the work.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.readme_blocks import read_blocks, shell_commands
from tests.test_readme import command_problems

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
CHANCE = 1 / 16  # graphtier.generate's default class count


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _wait_policy_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripts call configure_threads() first, but here torch is loaded already: with OMP_WAIT_POLICY in the
    environment (what configure_threads would set) it does not warn that it is too late."""
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")


def run_example(name: str, tmp_path: Path, *args: str) -> Any:
    return load(name).main([*args, "--work", str(tmp_path / name)])


def test_every_example_is_documented_and_parses_its_usage() -> None:
    scripts = sorted(EXAMPLES.glob("*.py"))
    assert 5 <= len(scripts) <= 8, [script.name for script in scripts]
    page = (Path(__file__).resolve().parents[1] / "docs" / "examples.md").read_text()
    for script in scripts:
        doc = load(script.stem).__doc__ or ""
        usage = f"python examples/{script.name}"
        assert usage in doc, f"{script.name}: its docstring shows no '{usage} ...' line"
        assert f"examples/{script.name}" in page, f"{script.name} is not on docs/examples.md"
    for block in read_blocks(page, "docs/examples.md"):
        for command in shell_commands(block.text):
            assert not command_problems(block, command)


@pytest.mark.slow
def test_node_classification(tmp_path: Path) -> None:
    assert run_example("node_classification", tmp_path, "--nodes", "2000", "--epochs", "2") > 2 * CHANCE


@pytest.mark.slow
def test_custom_loop(tmp_path: Path) -> None:
    assert run_example("custom_loop", tmp_path, "--nodes", "2000", "--epochs", "2") < math.log(16)


@pytest.mark.slow
def test_pyg_loader(tmp_path: Path) -> None:
    assert run_example("pyg_loader", tmp_path, "--nodes", "2000", "--epochs", "2") > 2 * CHANCE


@pytest.mark.slow
def test_link_prediction(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    auc = run_example("link_prediction", tmp_path, "--nodes", "1500", "--epochs", "2")
    assert 0.5 < auc <= 1.0
    assert capsys.readouterr().out.count("recommended [") == 3


@pytest.mark.slow
def test_typed_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_example("typed_graph", tmp_path, "--nodes", "1500", "--epochs", "6") > 2 * CHANCE  # 2 steps an epoch
    assert "(author, writes, paper)" in capsys.readouterr().out


@pytest.mark.slow
def test_tiering_and_plan(tmp_path: Path) -> None:
    by_tier = run_example("tiering_and_plan", tmp_path, "--nodes", "4000")
    assert by_tier["gpu"] > 0 and by_tier["host"] > 0
    # 10% of the rows, hottest first, serve far more than 10% of the reads
    assert by_tier["gpu"] / (by_tier["gpu"] + by_tier["host"]) > 0.3


@pytest.mark.slow
def test_several_processes(tmp_path: Path) -> None:
    report = run_example("several_processes", tmp_path, "--nodes", "2000", "--epochs", "1")
    shares = report["balancer"]["final_shares"]
    assert len(shares) == 2 and math.isclose(sum(shares), 1.0) and min(shares) > 0
