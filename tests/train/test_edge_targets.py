"""--task link --link-target regression|binary: edge-level targets (MovieLens ratings), metrics, predict, refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier import Dataset, OptionError
from graphtier.dataset.edges.edge_data import link_labels
from graphtier.dataset.importers.formats.movielens import import_movielens
from graphtier.train import TrainConfig, Trainer, train
from graphtier.train.infer.link_predict import pair_scores
from graphtier.train.infer.pair_space import pair_space
from graphtier.train.infer.predict import predict
from graphtier.train.loop.edge_target import binary_metrics, regression_metrics
from graphtier.train.loop.link_metrics import auc, average_precision
from graphtier.train.loop.report import final_summary
from graphtier.train.loop.task import LinkTask
from graphtier.train.persist.saved import load_model
from tests.cli.helpers import run
from tests.conftest import write_labelled_graph, write_link_dataset
from tests.dataset.importers.movielens_files import write_movielens

SMALL = dict(task="link", batch_size=128, hidden=16, fanouts=(5, 5), eval_batch_size=256, lr=0.01, quiet=True)


@pytest.fixture(scope="module")
def ratings(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder, _ = write_movielens(tmp_path_factory.mktemp("ml") / "ml-100k")
    return folder


@pytest.fixture(scope="module")
def rated(ratings: Path, tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    """Homogeneous, with the one-hot node ids (a row per user and item to learn)."""
    return import_movielens(ratings, tmp_path_factory.mktemp("rated") / "ds", valid_fraction=0.1, id_features=True)


@pytest.fixture(scope="module")
def typed_rated(ratings: Path, tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return import_movielens(
        ratings, tmp_path_factory.mktemp("typed") / "ds", valid_fraction=0.1, id_features=True, typed=True
    )


def test_regression_metrics_are_numpys() -> None:
    rng = np.random.default_rng(1)
    predicted, labels = rng.normal(3, 1, 500).astype(np.float32), rng.integers(1, 6, 500).astype(np.float32)
    found = regression_metrics("test", predicted, labels)
    error = predicted.astype(np.float64) - labels
    assert found["test_rmse"] == pytest.approx(float(np.sqrt(np.mean(error**2))), rel=1e-12)
    assert found["test_mae"] == pytest.approx(float(np.mean(np.abs(error))), rel=1e-12)
    assert regression_metrics("valid", np.empty(0), np.empty(0)) == {"valid_rmse": None, "valid_mae": None}


def test_binary_metrics_are_the_link_metrics_of_the_two_classes() -> None:
    rng = np.random.default_rng(2)
    scores, targets = rng.normal(size=400), (rng.random(400) > 0.3).astype(np.float32)
    found = binary_metrics("valid", scores, targets)
    assert found["valid_auc"] == auc(scores[targets == 1], scores[targets == 0])
    assert found["valid_ap"] == average_precision(scores[targets == 1], scores[targets == 0])
    # by hand: the share of (positive, negative) pairs ordered right
    pos, neg = scores[targets == 1], scores[targets == 0]
    assert found["valid_auc"] == pytest.approx(float((pos[:, None] > neg[None, :]).mean()))


def _rmse_by_hand(model: Path, dataset: Dataset, split: str) -> float:
    """The RMSE of the saved model's exact predictions of ``split``'s pairs (``predict``), computed with numpy."""
    saved = load_model(model)
    table = predict(saved, dataset).logits
    link = dataset.link
    assert link is not None
    pairs = np.asarray(link.pairs(split).positives, dtype=np.int64)
    space = pair_space(dataset) if dataset.is_hetero else None
    predicted = pair_scores(saved.model, table, pairs, space, "regression").astype(np.float64)  # type: ignore[arg-type]
    labels = np.asarray(link_labels(dataset, split), dtype=np.float64)
    return float(np.sqrt(np.mean((predicted - labels) ** 2)))


@pytest.mark.parametrize(
    ("typed", "model", "epochs", "lr"), [(False, "mlp", 10, 0.01), (False, "sage", 2, 0.01), (True, "hsage", 12, 0.03)]
)
def test_regression_reports_rmse_of_its_predictions(
    rated: Dataset, typed_rated: Dataset, typed: bool, model: str, epochs: int, lr: float, tmp_path: Path
) -> None:
    dataset = typed_rated if typed else rated
    saved = tmp_path / "model.pt"
    config = TrainConfig(epochs=epochs, link_target="regression", model=model, save_model=saved,
                         **{**SMALL, "batch_size": 64, "dropout": 0.0, "lr": lr})  # fmt: skip
    trainer = Trainer(dataset, config)
    assert isinstance(trainer.task, LinkTask) and trainer.task.train_negatives == 0
    assert trainer.task.targets_per_seed() == 1
    report = trainer.fit()
    final, epochs = report["final"], report["epochs"]
    assert {"valid_rmse", "valid_mae"} <= set(epochs[-1]) and "valid_auc" not in epochs[-1]
    assert final["method"] == "full" and final["best_epoch_by"] == "sampled valid_rmse"
    # the best epoch is the one of the lowest validation RMSE
    assert final["epoch"] == 1 + int(np.argmin([e["valid_rmse"] for e in epochs]))
    labels = np.asarray(link_labels(dataset, "train"), dtype=np.float64)
    test = np.asarray(link_labels(dataset, "test"), dtype=np.float64)
    assert final["test_mean_rmse"] == pytest.approx(float(np.sqrt(np.mean((test - labels.mean()) ** 2))))
    assert final["test_rmse"] == pytest.approx(_rmse_by_hand(saved, dataset, "test"), rel=1e-5)
    if model != "sage":  # the id rows learn the tastes (2 epochs of sage: the metric path only)
        assert final["test_rmse"] < 0.9 * final["test_mean_rmse"]
    line = final_summary(final, report["config"])
    assert "test rmse" in line and "train-mean test rmse" in line


def test_without_a_validation_split_the_last_epoch_is_picked_by_the_training_loss(
    ratings: Path, tmp_path: Path
) -> None:
    """GC-MC's protocol: the whole base fold trains (``valid_fraction=0``), the epochs chosen beforehand."""
    dataset = import_movielens(ratings, tmp_path / "ds", valid_fraction=0.0, id_features=True)
    assert np.load(dataset.path / "link_valid.npy").shape[0] == 0
    report = train(dataset, epochs=3, link_target="regression", **{**SMALL, "model": "mlp", "dropout": 0.0})
    final, epochs = report["final"], report["epochs"]
    assert all(e["valid_rmse"] is None for e in epochs)
    losses = [e["loss"] for e in epochs]
    assert final["best_epoch_by"] == "training loss" and final["epoch"] == 1 + int(np.argmin(losses))
    assert final["test_rmse"] < final["test_mean_rmse"]
    assert "by training loss" in final_summary(final, report["config"])


def test_binary_target_is_the_label_above_the_threshold(rated: Dataset) -> None:
    options = {**SMALL, "batch_size": 64, "dropout": 0.0, "model": "mlp"}
    report = train(rated, epochs=10, link_target="binary", link_threshold=3.5, **options)
    final = report["final"]
    test = np.asarray(link_labels(rated, "test"))
    assert final["test_majority_auc"] == 0.5
    assert final["test_majority_ap"] == pytest.approx(float((test > 3.5).mean()))
    assert final["test_auc"] > 0.75 and final["best_epoch_by"] == "sampled valid_auc"
    assert "majority test auc 0.5000" in final_summary(final, report["config"])


def test_predict_writes_values_or_probabilities_and_the_model_records_the_target(
    rated: Dataset, typed_rated: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, dataset, target, extra in (
        ("reg", rated, "regression", []),
        ("bin", rated, "binary", ["--link-threshold", "3.5"]),
        ("typed", typed_rated, "regression", ["--model", "rgcn"]),
    ):
        model = tmp_path / f"{name}.pt"
        argv = ["train", str(dataset.path), "--task", "link", "--link-target", target, "--epochs", "1",
                "--fanouts", "5,5", "--hidden", "16", "--quiet", "--save-model", str(model), *extra]  # fmt: skip
        assert run(argv, capsys)[0] == 0
        saved = load_model(model)
        assert saved.config["link_target"] == target
        link = dataset.link
        assert link is not None
        pairs = np.asarray(link.pairs("test").positives)[:50]
        np.savetxt(tmp_path / "pairs.txt", pairs, fmt="%d")
        out = tmp_path / f"{name}.npy"
        code, stdout, _ = run(["predict", str(dataset.path), "--model", str(model), "--pairs",
                               str(tmp_path / "pairs.txt"), "--output", str(out)], capsys)  # fmt: skip
        assert code == 0
        written = np.load(out)
        table = predict(saved, dataset).logits
        space = pair_space(dataset) if dataset.is_hetero else None
        logits = pair_scores(saved.model, table, pairs.astype(np.int64), space)  # type: ignore[arg-type]
        if target == "binary":
            assert "probabilities" in stdout and ((written > 0) & (written < 1)).all()
            np.testing.assert_allclose(written, torch.sigmoid(torch.from_numpy(logits)).numpy(), rtol=1e-6)
        else:
            assert "predicted values" in stdout
            np.testing.assert_allclose(written, logits, rtol=1e-6)
            assert 1.0 < float(written.mean()) < 5.0  # ratings, started from the training mean


def test_refusals_are_one_line(rated: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = write_link_dataset(tmp_path / "plain", write_labelled_graph(tmp_path / "graph"))
    code, _, err = run(["train", str(plain.path), "--task", "link", "--link-target", "regression"], capsys)
    errors = [line for line in err.splitlines() if line.startswith("graphtier: error:")]  # (a compile notice above)
    assert code == 2 and len(errors) == 1 and "Traceback" not in err
    assert errors[0].startswith(f"graphtier: error: {plain.path}: --link-target regression needs edge-level targets")
    code, _, err = run(["train", str(rated.path), "--link-target", "binary"], capsys)
    assert code == 2
    assert err.strip() == "graphtier: error: --link-target binary: applies to --task link only, found --task node"
    code, _, err = run(["train", str(rated.path), "--task", "link", "--link-threshold", "3"], capsys)
    assert code == 2
    assert err.strip() == "graphtier: error: --link-threshold 3: applies to --link-target binary only, found none"
    with pytest.raises(OptionError, match=r"link_target='regression'.*needs edge-level targets"):
        train(plain, epochs=1, link_target="regression", **SMALL)
    with pytest.raises(OptionError, match=r"link_target= expected one of regression, binary, found 'rating'"):
        TrainConfig(task="link", link_target="rating")


def test_binary_target_on_a_time_split_samples_each_pair_at_its_time(tmp_path: Path) -> None:
    """A timed edge list split by time, its pairs labelled here by hand (the label files of the edge split): the
    temporal sampler trains on the labelled pairs; the majority baseline replaces EdgeBank (which scores existence)."""
    import json

    from graphtier.dataset.importers.formats.edgelist import import_edgelist
    from tests.train.test_temporal_link import timed_edges

    data = import_edgelist(
        timed_edges(tmp_path / "edges.txt"), tmp_path / "ds", time_column=2, edge_split=(0.7, 0.15, 0.15),
        split_by="time", synthetic_features=16, seed=0,
    )  # fmt: skip
    link = data.link
    assert link is not None
    for split in ("train", "valid", "test"):
        pairs = np.asarray(link.pairs(split).positives)
        np.save(data.path / f"link_{split}_label.npy", np.where(pairs[:, 0] % 2 == 0, 2.0, -1.0).astype(np.float32))
    meta = json.loads((data.path / "meta.json").read_text())
    meta["link"]["label"] = {"column": "sign"}
    (data.path / "meta.json").write_text(json.dumps(meta))
    labelled = Dataset.open(data.path)
    report = train(labelled, epochs=2, link_target="binary", temporal="recent", **SMALL)
    final = report["final"]
    assert final["method"] == "temporal" and final["test_auc"] is not None
    test = np.asarray(link_labels(labelled, "test"))
    assert final["test_majority_ap"] == pytest.approx(float((test > 0).mean()))
    assert not any(key.startswith("test_edgebank") for key in final)
