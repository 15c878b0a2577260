"""Several processes on a typed dataset (gloo, CPU ranks): node classification gives the same parameters and
learnable tables as one process with the same global batch and seed; link prediction on a relation trains."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from graphtier import Dataset
from graphtier.dataset.importers.formats.manifest import import_manifest
from graphtier.train import TrainConfig, Trainer
from graphtier.train.loop.launch import launch
from tests.train.test_typed_link import write_recommendation_manifest
from tests.typed_data import write_tiny_typed

pytestmark = pytest.mark.slow


def _params(checkpoint_dir: Path) -> dict[str, torch.Tensor]:
    return torch.load(checkpoint_dir / "checkpoint.pt", weights_only=False)["model"]


def _single_and_multi(dataset: Dataset, tmp_path: Path, **common: object) -> tuple[dict, dict, dict]:
    single_dir, multi_dir = tmp_path / "single", tmp_path / "multi"
    Trainer(dataset, TrainConfig(checkpoint=str(single_dir), **common)).fit()
    report = launch(
        str(dataset.path),
        TrainConfig(checkpoint=str(multi_dir), devices=("cpu", "cpu"), balance="static", shares=(0.3, 0.7), **common),
    )
    assert report is not None
    return _params(single_dir), _params(multi_dir), report


@pytest.mark.parametrize("model", ["rgcn", "hsage"])
def test_two_ranks_train_a_typed_model_as_one_process(tmp_path: Path, model: str) -> None:
    """Featureless authors and fields: their learnable tables get every rank's row gradients."""
    dataset = write_tiny_typed(tmp_path / "ds", papers=60)
    whole = int(dataset.train_idx.shape[0])
    single, multi, report = _single_and_multi(
        dataset, tmp_path, model=model, fanouts=(-1, -1), batch_size=whole, epochs=2, hidden=16, dropout=0.0,
        lr=0.01, eval_every=1, eval_batch_size=1000, featureless="embedding",
    )  # fmt: skip
    seeds = [rank["seeds"] for rank in report["ranks"]]
    assert sum(seeds) == 2 * whole and min(seeds) < 0.45 * 2 * whole
    assert single.keys() == multi.keys() and any("tables" in name for name in single)
    for name in single:
        assert torch.max(torch.abs(single[name] - multi[name])) <= 1e-5, name


def test_two_ranks_train_typed_links(tmp_path: Path) -> None:
    """Link prediction: each rank draws its sub-batch's negatives and leaves out its own target edges (as on a
    homogeneous dataset), so the run is not the single-process one; it trains, and rank 0 reports the metrics."""
    manifest = write_recommendation_manifest(tmp_path / "src", users=60, items=40, per_user=5)
    dataset = import_manifest(manifest, tmp_path / "ds", add_reverse=True, edge_split="0.8,0.1,0.1",
                              split_relation="user,rates,item")  # fmt: skip
    report = launch(
        str(dataset.path),
        TrainConfig(
            task="link",
            model="rgcn",
            fanouts=(4, 4),
            batch_size=64,
            epochs=2,
            hidden=16,
            lr=0.01,
            devices=("cpu", "cpu"),
            cpu_threads=1,
            quiet=True,
        ),  # fmt: skip
    )
    assert report is not None and len(report["ranks"]) == 2
    final = report["final"]
    assert final["method"] == "full" and 0.0 <= final["test_auc"] <= 1.0 and final["test_popularity_auc"] is not None
    assert all(rank["seeds"] > 0 for rank in report["ranks"])
