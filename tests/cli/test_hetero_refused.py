"""Commands that do not handle a heterogeneous dataset yet refuse one with one line (exit 2), not a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphtier.errors import DatasetError
from tests.cli.helpers import run
from tests.conftest import write_labelled_graph
from tests.typed_data import write_tiny_typed


@pytest.fixture(scope="module")
def typed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hetero") / "typed"
    write_tiny_typed(path)
    return path


COMMANDS = [
    (["bench", "gather", "{d}"], "`graphtier bench gather`"),
]
TYPED_MODEL_REFUSALS = [
    (["train", "{d}", "--epochs", "1"], "--model sage: a model of one node type and one relation"),
    (["train", "{d}", "--epochs", "1", "--model", "gat"], "--model gat: a model of one node type and one relation"),
]


@pytest.mark.parametrize(("argv", "what"), COMMANDS, ids=[" ".join(c[0][:2]) for c in COMMANDS])
def test_refused_with_one_line(
    typed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], what: str
) -> None:
    args = [a.format(d=typed, o=tmp_path) for a in argv]
    code, out, err = run(args, capsys)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert "is heterogeneous (3 node types, 6 relations)" in lines[0] and what in lines[0], lines[0]
    assert str(typed) in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize(("argv", "what"), TYPED_MODEL_REFUSALS, ids=[c[0][-1] for c in TYPED_MODEL_REFUSALS])
def test_homogeneous_models_refuse_a_typed_dataset(
    typed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], what: str
) -> None:
    code, _, err = run([a.format(d=typed, o=tmp_path) for a in argv], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert what in lines[0] and "node types paper, author, field" in lines[0], lines[0]


def test_require_homogeneous_passes_a_homogeneous_dataset(tmp_path: Path) -> None:
    write_labelled_graph(tmp_path / "plain", num_nodes=30).require_homogeneous("`x`")
    with pytest.raises(DatasetError, match="`x` supports homogeneous datasets only"):
        write_tiny_typed(tmp_path / "typed").require_homogeneous("`x`")
