"""README.md's code blocks, so that the README cannot drift from the code.

- Every ``graphtier`` command of every shell block must resolve through the CLI's own click parser:
  a renamed command or option, a bad choice or a missing argument fails here. ``python SCRIPT.py ...``
  lines name a script that exists (and parses its arguments when it has ``build_parser``);
  ``pip install -e ".[extra]"`` names extras that pyproject.toml defines.
- The README is then executed as a user would, in order, in an empty directory: the shell blocks marked
  ``<!-- readme-test: run -->`` (the typical session on Cora) through the CLI, and every ``python``
  block in one namespace. The test provides only what the README tells the user to fetch or make with
  commands it does not run (Cora's Planetoid files, a small ``data/big-hot``).

Markers are described in tests/readme_blocks.py.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import sys
import tomllib
import warnings
from pathlib import Path

import click
import numpy as np
import pytest

from graphtier.cli import cli
from tests.cli.helpers import run
from tests.conftest import shared_data
from tests.readme_blocks import README, Block, graphtier_arguments, read_blocks, resolve, run_block, shell_commands

ROOT = README.parent
BLOCKS = read_blocks(README.read_text())


@functools.cache
def _load_parser(script: Path) -> argparse.ArgumentParser | None:
    """The script's ``build_parser()``, if it has one (the script is imported, not run)."""
    name = f"readme_{script.stem}"
    spec = importlib.util.spec_from_file_location(name, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    build = getattr(module, "build_parser", None)
    return build() if build is not None else None


def _extras(requirement: str) -> set[str]:
    """``.[a,b]`` -> {"a", "b"}; any other requirement -> empty."""
    if not requirement.startswith(".[") or not requirement.endswith("]"):
        return set()
    return {extra.strip() for extra in requirement[2:-1].split(",")}


def command_problems(block: Block, command: list[str]) -> list[str]:
    """What is wrong with one shell ``command`` of ``block`` (empty when it is valid or not ours to check)."""
    where = block.where()
    arguments = graphtier_arguments(command)
    if arguments is not None:
        try:
            resolve(cli, arguments)
        except click.UsageError as exc:
            return [f"{where}: graphtier {' '.join(arguments)}: {exc.format_message()}"]
        return []
    scripts = [token for token in command if token.endswith(".py") and not token.startswith("-")]
    if scripts and "python" in command[: command.index(scripts[0])]:
        script = ROOT / scripts[0]
        if not script.is_file():
            return [f"{where}: {scripts[0]} does not exist"]
        parser = _load_parser(script)
        if parser is not None:
            try:
                parser.parse_args(command[command.index(scripts[0]) + 1 :])
            except SystemExit:
                return [f"{where}: {' '.join(command)}: the script refuses these arguments"]
        return []
    if command[:2] == ["pip", "install"]:
        defined = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
        return [
            f"{where}: pip extra {extra!r} is not in pyproject.toml"
            for token in command
            for extra in sorted(_extras(token) - defined)
        ]
    return []


def test_the_readme_has_checked_and_executed_blocks() -> None:
    langs = {block.lang for block in BLOCKS}
    assert {"bash", "python"} <= langs
    assert any(block.action == "run" for block in BLOCKS), "no shell block is executed"
    for block in BLOCKS:
        if block.action == "run":
            assert block.lang == "bash", f"{block.where()}: 'run' marks shell blocks (python blocks always run)"
            for command in shell_commands(block.text):
                assert graphtier_arguments(command) is not None, (
                    f"{block.where()}: a run block holds graphtier commands only"
                )


def test_markers_are_strict() -> None:
    assert read_blocks("<!-- readme-test: run -->\n\n```bash\ngraphtier info d\n```\n")[0].action == "run"
    skipped = read_blocks("<!-- readme-test: skip (needs a GPU) -->\n```python\nx\n```\n")[0]
    assert (skipped.action, skipped.reason) == ("skip", "(needs a GPU)")
    for bad in (
        "<!-- readme-test: skip -->\n```python\nx\n```\n",  # no reason
        "<!-- readme-test: runn -->\n```bash\nx\n```\n",  # unknown action
        "<!-- readme-test run -->\n```bash\nx\n```\n",  # unreadable
        "<!-- readme-test: run -->\ntext\n```bash\nx\n```\n",  # not followed by the block
        "```bash\nx\n",
    ):  # never closed
        with pytest.raises(ValueError):
            read_blocks(bad)


def test_shell_commands_are_split_like_bash() -> None:
    script = 'pip install -e ".[test]" && python -m pytest   # tests\ngraphtier train d \\\n    --epochs 3  # x\n'
    assert shell_commands(script) == [
        ["pip", "install", "-e", ".[test]"],
        ["python", "-m", "pytest"],
        ["graphtier", "train", "d", "--epochs", "3"],
    ]
    assert graphtier_arguments(["torchrun", "--nnodes", "2", "-m", "graphtier", "train", "d"]) == ["train", "d"]


def test_the_checker_refuses_what_the_code_does_not_have() -> None:
    block = Block("bash", "", 1)
    assert command_problems(block, ["graphtier", "train", "d", "--epochs", "3"]) == []
    for wrong in (
        ["graphtier", "train", "d", "--epochz", "3"],
        ["graphtier", "trian", "d"],
        ["graphtier", "train", "d", "--model", "resnet"],
        ["graphtier", "bench", "sampel", "d"],
        ["graphtier", "prepare", "planetoid", "only-source"],
        ["python", "benchmarks/nope.py"],
        ["python", "benchmarks/gpu_checks.py", "--plan", "99"],
        ["pip", "install", "-e", ".[nope]"],
    ):
        assert command_problems(block, wrong), wrong


def test_every_shell_command_in_the_readme_exists() -> None:
    problems = [
        problem
        for block in BLOCKS
        if block.lang in ("bash", "sh") and block.action != "skip"
        for command in shell_commands(block.text)
        for problem in command_problems(block, command)
    ]
    assert not problems, "\n".join(problems)


def _provide_what_the_readme_fetches(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Cora's Planetoid files where `git clone kimiyoung/planetoid` puts them; a small data/big-hot (the
    guides make a 1M-node one with commands the tests only check)."""
    (workdir / "planetoid").mkdir()
    (workdir / "planetoid" / "data").symlink_to(shared_data("cora"), target_is_directory=True)
    for argv in (
        ["generate", "data/big", "--nodes", "3000", "--avg-degree", "10"],
        ["reorder", "data/big", "data/big-hot", "--fanouts", "15,10,5", "--batch-size", "256"],
    ):
        code, _, err = run(argv, capsys)
        assert code == 0, err


@pytest.mark.slow
def test_the_readme_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _provide_what_the_readme_fetches(tmp_path, capsys)
    namespace: dict[str, object] = {"__name__": "__readme__"}
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="The given NumPy array is not writable")
        for block in BLOCKS:
            if block.action == "skip":
                continue
            run_block(block, namespace, capsys)
    # the python block ran to its end, and the run blocks wrote what they say
    out = namespace["out"]
    assert out.classes.shape == (2708,) and out.embeddings.shape == (2708, 64)  # type: ignore[attr-defined]
    assert 0.0 < namespace["result"]["final"]["test_acc"] <= 1.0  # type: ignore[index]
    assert np.load(tmp_path / "runs" / "cora-preds.npy").shape == (2708,)
    assert np.load(tmp_path / "runs" / "recommended.npy").shape == (3, 10)
    assert np.load(tmp_path / "runs" / "mag-preds.npy").shape == (3000,)
