"""CLI tests for ``--task link`` on `graphtier analyze`, `score`, `plan` and `reorder`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.format import Dataset
from graphtier.tiering.hotness import compute_scores
from graphtier.tiering.replay import Replay
from graphtier.tiering.seeds import EpochSeeds
from tests.cli.helpers import run
from tests.tiering.test_access import power_law_dataset
from tests.tiering.test_link_seeds import power_law_link_dataset


@pytest.fixture()
def link_data(tmp_path: Path) -> Dataset:
    return power_law_link_dataset(tmp_path / "g", num_nodes=1500, features=True)


def test_analyze_task_link(link_data: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "a.json"
    argv = ["analyze", str(link_data.path), "--task", "link", "--fanouts", "5,5", "--batch-size", "32"]
    argv += ["--num-negatives", "2", "--negative-sampling", "degree", "-s", "degree,fwr", "--json", str(out_json)]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "batch 32 pairs, 2 degree negative(s) per pair" in out
    document = json.loads(out_json.read_text())
    assert document["config"]["task"] == "link" and document["config"]["num_negatives"] == 2
    assert document["config"]["negative_sampling"] == "degree"
    assert document["curves"]["fwr"]["10"] <= document["curves"]["ideal"]["10"]


def test_score_task_link_writes_the_link_fwr(
    link_data: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "fwr.npy"
    argv = ["score", str(link_data.path), "-s", "fwr", "--task", "link", "--fanouts", "5,5", "--batch-size", "32"]
    code, _, err = run([*argv, "-o", str(output)], capsys)
    assert code == 0, err
    expected = compute_scores(link_data, "fwr", replay=Replay(fanouts=[5, 5], batch_size=32, seeds=EpochSeeds("link")))
    np.testing.assert_array_equal(np.load(output), expected.scores)
    node = compute_scores(link_data, "degree").scores
    assert not np.array_equal(np.load(output), node)


def test_plan_task_link(link_data: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "plan.json"
    argv = ["plan", str(link_data.path), "--task", "link", "--gpu-memory", "4GiB", "--host-memory", "8GiB"]
    code, out, err = run([*argv, "--fanouts", "5,5", "--batch-size", "32", "--json", str(out_json)], capsys)
    assert code == 0, err
    assert "batch 32 pairs, 1 uniform negative(s) per pair" in out
    document = json.loads(out_json.read_text())
    assert document["config"]["task"] == "link" and document["reads_per_epoch"] > 0


@pytest.mark.parametrize("command", ["analyze", "score", "plan", "reorder"])
def test_task_link_without_an_edge_split_is_one_line(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain = power_law_dataset(tmp_path / "plain", num_nodes=200)
    if command == "plan":  # plan needs features before it needs the seeds
        np.save(plain.path / "features.npy", np.ones((200, 4), dtype=np.float32))
        meta = json.loads((plain.path / "meta.json").read_text())
        (plain.path / "meta.json").write_text(json.dumps({**meta, "feature_dim": 4, "feature_dtype": "float32"}))
    argv = [command, str(plain.path), "--task", "link"]
    if command == "score":
        argv += ["-s", "fwr"]
    if command == "reorder":
        argv.insert(2, str(tmp_path / "out"))
    if command == "plan":
        argv += ["--gpu-memory", "4GiB", "--host-memory", "8GiB"]
    code, out, err = run(argv, capsys)
    assert code == 2
    assert err == (
        f"graphtier: error: {plain.path / 'meta.json'}: --task link needs an edge split (link_train.npy; "
        "prepare with --edge-split), found none\n"
    )
    assert not (tmp_path / "out").exists()


def test_bad_task_options(link_data: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    for extra in (["--task", "edge"], ["--num-negatives", "-1"], ["--negative-sampling", "popular"]):
        code, _, err = run(["analyze", str(link_data.path), *extra], capsys)
        assert code == 2 and extra[0] in err
