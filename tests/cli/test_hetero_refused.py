"""Options that do not apply to a heterogeneous dataset (a model of one node type) are refused with one line (exit
2), not a traceback. Every command takes a typed dataset."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import run
from tests.typed_data import write_tiny_typed


@pytest.fixture(scope="module")
def typed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hetero") / "typed"
    write_tiny_typed(path)
    return path


TYPED_MODEL_REFUSALS = [
    (["train", "{d}", "--epochs", "1"], "--model sage: a model of one node type and one relation"),
    (["train", "{d}", "--epochs", "1", "--model", "gat"], "--model gat: a model of one node type and one relation"),
]


@pytest.mark.parametrize(("argv", "what"), TYPED_MODEL_REFUSALS, ids=[c[0][-1] for c in TYPED_MODEL_REFUSALS])
def test_homogeneous_models_refuse_a_typed_dataset(
    typed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], what: str
) -> None:
    code, _, err = run([a.format(d=typed, o=tmp_path) for a in argv], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert what in lines[0] and "node types paper, author, field" in lines[0], lines[0]
