"""``prepare`` without ``--split`` says at once that ``train`` will need a split (issue 23, item 8)."""

from __future__ import annotations

from pathlib import Path

from tests.dataset.importers.helpers import run_cli

_NOTE = "note: no train/valid/test split was made"


def _edges(root: Path) -> Path:
    edges = root / "edges.txt"
    edges.write_text("".join(f"{i} {(i + 1) % 20}\n" for i in range(20)))
    labels = root / "labels.txt"
    labels.write_text("".join(f"{i % 2}\n" for i in range(20)))
    return edges


def test_prepare_without_split_prints_how_to_add_one(tmp_path: Path) -> None:
    edges = _edges(tmp_path)
    result = run_cli(
        "prepare",
        "edgelist",
        str(edges),
        str(tmp_path / "ds"),
        "--labels",
        str(tmp_path / "labels.txt"),
        "--synthetic-features",
        "4",
    )
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stdout.splitlines() if line.startswith(_NOTE)]
    assert len(notes) == 1 and "--split 0.8,0.1,0.1" in notes[0], result.stdout
    assert "graphtier train" in notes[0]


def test_prepare_with_split_prints_no_split_note(tmp_path: Path) -> None:
    edges = _edges(tmp_path)
    result = run_cli(
        "prepare",
        "edgelist",
        str(edges),
        str(tmp_path / "ds"),
        "--labels",
        str(tmp_path / "labels.txt"),
        "--synthetic-features",
        "4",
        "--split",
        "0.6,0.2,0.2",
    )
    assert result.returncode == 0, result.stderr
    assert _NOTE not in result.stdout
