"""``graphtier baseline`` (issue 38): EdgeBank's metrics of a split by time, equal to the metric functions applied
to :func:`edgebank_split_scores`; one-line errors for datasets it cannot score."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset
from graphtier.dataset.edges.edgebank import edgebank_split_scores
from graphtier.train.loop.link_metrics import auc, average_precision, hits_at_k, mrr
from tests.dataset.importers.helpers import assert_user_error, run_cli


def prepare(tmp_path: Path, *extra: str) -> Path:
    rng = np.random.default_rng(4)
    src, dst, t = rng.integers(0, 25, 400), rng.integers(0, 25, 400), rng.integers(0, 60, 400)
    path = tmp_path / "e.txt"
    path.write_text("".join(f"{s} {d} {x}\n" for s, d, x in zip(src, dst, t)))
    out = tmp_path / "d"
    result = run_cli("prepare", "edgelist", str(path), str(out), "--time-column", "2", "--keep-duplicates",
                     "--edge-split", "0.6,0.2,0.2", "--split-by", "time", *extra)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return out


def test_negative_pairs_give_auc_and_ap(tmp_path: Path) -> None:
    root = prepare(tmp_path)
    result = run_cli("baseline", str(root), "--json")
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    positive, negative = edgebank_split_scores(Dataset.open(root), "test")
    assert 0 < positive.mean() < 1  # repeats of earlier edges score 1, new edges 0
    assert got["auc"] == auc(positive, negative) and got["ap"] == average_precision(positive, negative)
    assert got["hits@10"] == hits_at_k(positive, negative, 10) and got["positives"] == positive.shape[0]
    assert got["auc"] > 0.5  # negatives never are edges: EdgeBank beats chance exactly by the repeats
    text = run_cli("baseline", str(root), "--split", "valid").stdout
    assert text.startswith("edgebank on valid (") and "auc " in text and "repeat an earlier edge" in text


def test_per_positive_negatives_give_mrr(tmp_path: Path) -> None:
    root = prepare(tmp_path, "--eval-negatives", "5")
    got = json.loads(run_cli("baseline", str(root), "--json", "--hits-k", "3").stdout)
    positive, negative = edgebank_split_scores(Dataset.open(root), "test")
    assert negative.shape == (positive.shape[0], 5)
    assert got["mrr"] == mrr(positive, negative) and got["hits@3"] == hits_at_k(positive, negative, 3)
    assert got["auc"] == auc(positive, negative.reshape(-1))  # the metrics train reports: AUC over every negative


@pytest.mark.parametrize(
    ("setup", "args", "fragments"),
    [
        ("plain", [], ["EdgeBank expected edge times", "--time-column"]),
        ("random", [], ["EdgeBank expected an edge split by time", "found one by random"]),
        ("time", ["--hits-k", "0"], ["--hits-k expected an integer >= 1, found 0"]),
        ("time", ["--split", "train"], ["--split", "'train'"]),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, setup: str, args: list[str], fragments: list[str]) -> None:
    if setup == "time":
        root = prepare(tmp_path)
    else:
        (tmp_path / "e.txt").write_text("0 1 5\n1 2 6\n2 3 7\n3 4 8\n4 5 9\n5 0 3\n0 3 4\n2 5 1\n")
        timed = ["--time-column", "2"] if setup == "random" else []
        root = tmp_path / "d"
        split = ["--edge-split", "0.5,0.25,0.25"]
        assert run_cli("prepare", "edgelist", str(tmp_path / "e.txt"), str(root), *timed, *split).returncode == 0
    assert_user_error(run_cli("baseline", str(root), *args), *fragments)
