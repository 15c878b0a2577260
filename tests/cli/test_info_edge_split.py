"""`graphtier info` shows a dataset's edge split (table and --json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphtier.dataset.synthetic.generate import generate
from tests.cli.helpers import run


def test_info_shows_the_edge_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = generate(
        tmp_path / "g", nodes=400, avg_degree=6, feature_dim=0, edge_split="0.8,0.1,0.1", eval_negatives=5
    )
    code, out, err = run(["info", str(dataset.path), "--json"], capsys)
    assert code == 0, err
    link = json.loads(out)["edge_split"]
    counts = dataset.meta["link"]
    assert (link["train"], link["valid"], link["test"]) == (counts["train"], counts["valid"], counts["test"])
    assert link["negatives"] == "per_positive" and link["eval_negatives"] == 5 and link["undirected"] is True
    assert link["valid_negatives"] == counts["valid"] and link["fractions"] == [0.8, 0.1, 0.1]
    assert json.loads(out)["arrays"]["link_test_neg"]["shape"] == [counts["test"], 5]
    code, out, err = run(["info", str(dataset.path)], capsys)
    assert code == 0, err
    assert "edge split" in out and f"train {counts['train']:,}" in out and "5 negative destinations per" in out


def test_info_without_an_edge_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = generate(tmp_path / "g", nodes=200, avg_degree=4, feature_dim=0)
    code, out, err = run(["info", str(dataset.path), "--json"], capsys)
    assert code == 0 and json.loads(out)["edge_split"] is None
