"""Training on a typed dataset: typed batches through the producer, feed, trainer and evaluation; refusals."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier.dataset import Dataset
from graphtier.dataset.importers.formats.manifest import import_manifest
from graphtier.errors import OptionError
from graphtier.train import TrainConfig, Trainer, train
from graphtier.train.loop.feed import TypedDeviceBatch
from tests.cli.helpers import run
from tests.conftest import shared_data
from tests.typed_data import write_typed_labelled_graph

QUIET = {"quiet": True, "num_threads": 1, "prefetch": 1}


@pytest.fixture(scope="module")
def typed_dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return write_typed_labelled_graph(tmp_path_factory.mktemp("typed") / "typed")


@pytest.mark.parametrize("model", ["rgcn", "rgat", "hsage"])
def test_typed_models_learn_the_graph_signal(typed_dataset: Dataset, model: str) -> None:
    result = train(typed_dataset, model=model, fanouts=(5, 5), hidden=32, heads=2, epochs=8, lr=0.01,
                   batch_size=64, dropout=0.2, **QUIET)  # fmt: skip
    final = result.report["final"]
    assert final["test_acc"] > 0.7  # chance is 1/3; paper features alone are weak (noise 3)
    epoch = result.report["epochs"][-1]
    assert epoch["feature_bytes"] > 0 and epoch["valid_acc"] is not None


def test_mlp_reads_the_target_features_only(typed_dataset: Dataset) -> None:
    result = train(typed_dataset, model="mlp", fanouts=(5,), hidden=32, epochs=3, batch_size=64, **QUIET)
    assert result.report["final"]["test_acc"] is not None
    per_batch_rows = result.report["epochs"][0]["feature_bytes"] / (8 * 4)
    assert per_batch_rows == len(typed_dataset.train_idx)  # each seed's paper row once, no author rows


@pytest.mark.parametrize("mode", ["cpu-gather", "zero-copy", "tiered", "tiered+cache"])
def test_every_feature_mode_trains_a_typed_model(typed_dataset: Dataset, mode: str) -> None:
    budgets = {"tiered": {"gpu_budget": "30%"}, "tiered+cache": {"gpu_budget": "10%", "cache_budget": "1KB"}}
    result = train(typed_dataset, model="hsage", fanouts=(3, 3), hidden=16, epochs=1, batch_size=64,
                   features_on=mode, **budgets.get(mode, {}), **QUIET)  # fmt: skip
    epoch = result.report["epochs"][0]
    assert sum(epoch["feature_bytes_by_tier"].values()) == epoch["feature_bytes"]
    by_type = epoch["feature_bytes_by_tier_by_type"]
    assert set(by_type) == {"paper", "author"}  # subject is featureless
    for tier, total in epoch["feature_bytes_by_tier"].items():
        assert sum(tiers[tier] for tiers in by_type.values()) == total
    assert all(sum(tiers.values()) > 0 for tiers in by_type.values())
    if mode == "tiered":
        assert epoch["feature_bytes_by_tier"]["gpu"] > 0


def test_feature_bytes_per_batch_sum_over_the_types(typed_dataset: Dataset) -> None:
    config = TrainConfig(model="rgcn", fanouts=(4, 4), hidden=8, epochs=1, batch_size=50, **QUIET)
    trainer = Trainer(typed_dataset, config)
    seeds = np.asarray(typed_dataset.train_idx)[:50]
    item = next(iter(trainer.feed.producer([seeds], trainer.train_sample, 0)))
    n_id = item.batch.n_id
    assert item.feature_bytes == n_id["paper"].numel() * 8 * 4 + n_id["author"].numel() * 4 * 2
    batch = trainer.feed.to_device(item)
    assert isinstance(batch, TypedDeviceBatch) and set(batch.x) == {"paper", "author"}
    assert batch.x["author"].dtype == torch.float32  # float16 table, float32 model input
    out = batch.forward(trainer.model)
    assert out.shape[1] == typed_dataset.num_classes and out[batch.seed_index].shape[0] == 50
    trainer.store.close()


def test_fanouts_per_relation_reach_the_sampler(typed_dataset: Dataset) -> None:
    config = TrainConfig(model="rgcn", fanouts=(4, 4), fanouts_per_relation="writes=1", hidden=8, epochs=1, **QUIET)
    trainer = Trainer(typed_dataset, config)
    seeds = np.asarray(typed_dataset.train_idx)[:40]
    batch = trainer.train_sample(seeds, 0)
    writes = ("author", "writes", "paper")
    cites = ("paper", "cites", "paper")
    assert max(int(blk.relations[writes].rowptr.diff().max()) for blk in batch.blocks) == 1  # 3 authors a paper
    assert max(int(blk.relations[cites].rowptr.diff().max()) for blk in batch.blocks) > 1
    trainer.store.close()


def test_resume_with_other_fanouts_per_relation_is_refused(typed_dataset: Dataset, tmp_path: Path) -> None:
    """A typed checkpoint records per-relation fanouts: another --fanouts-per-relation is refused, an equal
    spelling (entries in another order, ``1`` for ``1/1``) resumes."""
    options = {"model": "rgcn", "fanouts": (4, 4), "hidden": 8, "checkpoint": str(tmp_path / "ckpt"), **QUIET}
    train(typed_dataset, TrainConfig(epochs=1, fanouts_per_relation="writes=1,cites=3/2", **options))
    with pytest.raises(OptionError) as info:
        Trainer(typed_dataset, TrainConfig(epochs=2, fanouts_per_relation="writes=2,cites=3/2", **options))
    message = str(info.value)
    assert "\n" not in message
    assert "'fanouts_per_relation'" in message and "'writes' fanouts 1/1 in the checkpoint but 2/2" in message
    with pytest.raises(OptionError, match="'cites' fanouts 3/2 in the checkpoint but 4/4"):
        Trainer(typed_dataset, TrainConfig(epochs=2, fanouts_per_relation="writes=1", **options))
    trainer = Trainer(typed_dataset, TrainConfig(epochs=2, fanouts_per_relation="cites=3/2,writes=1/1", **options))
    assert trainer.report.resumed_from["epoch"] == 1
    trainer.store.close()


def test_typed_model_on_a_homogeneous_dataset(tiny_dataset: Dataset) -> None:
    result = train(tiny_dataset, model="hsage", fanouts=(5, 5), hidden=16, epochs=2, batch_size=64, **QUIET)
    assert result.report["final"]["test_acc"] > 0.5


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"model": "sage"}, ["sage", "rgcn, rgat, hsage or mlp"]),
        ({"model": "rgcn", "task": "link"}, ["task", "link"]),
        ({"model": "rgcn", "sampler": "shadow"}, ["sampler", "shadow", "typed model", "induced subgraph per seed"]),
        ({"model": "rgcn", "fanouts_per_relation": "nope=3"}, ["fanouts_per_relation", "nope"]),
    ],
)
def test_typed_dataset_refusals_are_one_line(typed_dataset: Dataset, options: dict, words: list[str]) -> None:
    config = TrainConfig(fanouts=(3, 3), **options, **QUIET)
    with pytest.raises(OptionError) as info:
        config.validate(typed_dataset)
    message = str(info.value)
    assert "\n" not in message and all(word in message for word in words), message


def test_typed_options_with_a_homogeneous_model_are_refused(tiny_dataset: Dataset) -> None:
    with pytest.raises(OptionError, match="fanouts_per_relation"):
        TrainConfig(model="sage", fanouts=(3, 3), fanouts_per_relation="_E=2", **QUIET).validate(tiny_dataset)
    with pytest.raises(OptionError, match="num_bases"):
        TrainConfig(model="hsage", num_bases=2)


def test_cli_trains_a_typed_model(typed_dataset: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.json"
    code, out, err = run([
        "train", str(typed_dataset.path), "--model", "rgcn", "--fanouts", "4,4", "--fanouts-per-relation",
        "writes=3,cites=2/1", "--featureless", "onehot", "--num-bases", "2", "--hidden", "16", "--epochs", "1",
        "--num-threads", "1", "--report", str(report), "--quiet",
    ], capsys)  # fmt: skip
    assert code == 0, err
    config = json.loads(report.read_text())["config"]
    assert config["fanouts_per_relation"] == "writes=3,cites=2/1" and config["featureless"] == "onehot"
    assert config["num_bases"] == 2


def test_cli_refuses_a_homogeneous_model_in_one_line(
    typed_dataset: Dataset, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["train", str(typed_dataset.path), "--model", "gat", "--epochs", "1"], capsys)
    assert code == 2 and err.count("\n") == 1 and "--model" in err and "rgcn" in err


def test_typed_features_beyond_the_ram_budget_train_through_the_disk_tier(typed_dataset: Dataset) -> None:
    options = {"model": "rgcn", "fanouts": (3, 3), "hidden": 16, "epochs": 2, "batch_size": 64, "seed": 4, **QUIET}
    in_ram = train(typed_dataset, **options).report
    # 300 * 32 + 120 * 8 = 10 560 feature bytes, 3 000 bytes of RAM, none on the GPU: most rows on disk
    tiered = train(typed_dataset, features_on="tiered", gpu_budget="0%", ram_budget="3000B", **options).report
    assert [e["loss"] for e in tiered["epochs"]] == [e["loss"] for e in in_ram["epochs"]]
    for epoch in tiered["epochs"]:
        by_type = epoch["feature_bytes_by_tier_by_type"]
        assert by_type["paper"]["disk"] > 0 and by_type["author"]["disk"] > 0
        for tier, total in epoch["feature_bytes_by_tier"].items():
            assert sum(tiers[tier] for tiers in by_type.values()) == total
        assert sum(sum(tiers.values()) for tiers in by_type.values()) == epoch["feature_bytes"]


def test_heco_acm_rgcn_beats_the_paper_features_alone(tmp_path: Path) -> None:
    """The real ACM graph (../shared/data/heco-acm), 20 labelled papers per class, the issue's manifest (authors
    featureless): R-GCN over paper-author-paper / paper-subject-paper paths beats an MLP on paper features."""
    import sys

    root = shared_data("heco-acm")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from acm_accuracy import acm_manifest  # the benchmark's manifest: one definition of it

    manifest = tmp_path / "acm.json"
    manifest.write_text(json.dumps(acm_manifest(root, author_features=False)))
    acm = import_manifest(manifest, tmp_path / "acm", add_reverse=True)
    common = dict(epochs=30, eval_every=5, lr=0.01, weight_decay=0.0, hidden=64, dropout=0.5, batch_size=64,
                  featureless="onehot", norm="layer", quiet=True, num_threads=2, prefetch=1)  # fmt: skip
    rgcn = train(acm, model="rgcn", fanouts=(-1, -1), **common).report["final"]["test_acc"]
    mlp = train(acm, model="mlp", fanouts=(-1,), **common).report["final"]["test_acc"]
    assert rgcn > 0.8 and rgcn > mlp + 0.1, (rgcn, mlp)


def test_a_dense_relation_with_every_neighbour_gets_a_note(typed_dataset: Dataset, monkeypatch, capsys) -> None:
    import graphtier.train.options.typed_checks as typed_checks

    schema = typed_dataset.schema  # 'about': 300 papers into 6 subjects, 50 in-neighbours per subject
    notes = typed_checks.dense_relation_notes(TrainConfig(model="rgcn", fanouts=(-1, -1), **QUIET), schema)
    assert notes == []  # every other relation: at most 7.4 per node; 'about' 50 <= DENSE_RELATION_DEGREE
    monkeypatch.setattr(typed_checks, "DENSE_RELATION_DEGREE", 10)
    notes = typed_checks.dense_relation_notes(TrainConfig(model="rgcn", fanouts=(-1, 5), **QUIET), schema)
    assert notes == [
        "note: relation about has 50.0 in-neighbours per subject on average and fanout -1 takes them all at every "
        "hop (an epoch grows with their product); --fanouts-per-relation about=10/5 caps it (docs/guide/heterogeneous.md)"
    ]
    capped = TrainConfig(model="rgcn", fanouts=(-1, -1), fanouts_per_relation="about=10/5", **QUIET)
    assert typed_checks.dense_relation_notes(capped, schema) == []
    assert typed_checks.dense_relation_notes(TrainConfig(model="rgcn", fanouts=(5, 5), **QUIET), schema) == []
    train(typed_dataset, model="rgcn", fanouts=(-1, 3), hidden=8, epochs=1, batch_size=64, **{**QUIET, "quiet": False})
    assert "note: relation about has 50.0 in-neighbours per subject" in capsys.readouterr().out
