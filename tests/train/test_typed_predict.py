"""Exact inference of typed models: ``train --full-inference``, saved typed models and ``graphtier predict``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier.dataset import Dataset
from graphtier.dataset.scratch import scratch_array
from graphtier.errors import OptionError
from graphtier.train import train
from graphtier.train.infer import layerwise
from graphtier.train.infer.predict import predict
from graphtier.train.infer.typed_inference import typed_layerwise_outputs
from graphtier.train.persist.saved import load_model
from tests.cli.helpers import run
from tests.typed_data import write_typed_labelled_graph

QUIET = {"quiet": True, "num_threads": 1, "prefetch": 1}


@pytest.fixture(scope="module")
def typed_dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return write_typed_labelled_graph(tmp_path_factory.mktemp("typed") / "typed")


@pytest.fixture(scope="module")
def saved_rgcn(typed_dataset: Dataset, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("model") / "rgcn.pt"
    result = train(typed_dataset, model="rgcn", fanouts=(3, 3), hidden=16, epochs=2, batch_size=64, num_bases=2,
                   featureless="onehot", full_inference=True, save_model=str(path), **QUIET)  # fmt: skip
    return path, result.report


def exact_logits(model: torch.nn.Module, dataset: Dataset) -> torch.Tensor:
    def gather(node_type: str, ids: torch.Tensor) -> torch.Tensor:
        return torch.from_numpy(np.asarray(dataset.type_features[node_type])[ids.numpy()])

    return typed_layerwise_outputs(model, gather, np.asarray(dataset.indptr), np.asarray(dataset.indices),
                                   dataset.schema, chunk_size=50)[0]  # fmt: skip


def test_full_inference_of_a_typed_run_is_exact(typed_dataset: Dataset, saved_rgcn: tuple[Path, dict]) -> None:
    path, report = saved_rgcn
    final = report["final"]
    assert final["method"] == "full"
    predicted = exact_logits(load_model(path).model, typed_dataset).argmax(dim=1).numpy()
    labels = np.asarray(typed_dataset.labels)
    for split in ("valid", "test"):
        ids = np.asarray(typed_dataset.split(split))
        assert final[f"{split}_acc"] == pytest.approx(float((predicted[ids] == labels[ids]).mean()))


@pytest.mark.parametrize("model", ["rgcn", "rgat", "hsage", "mlp"])
def test_saved_typed_models_predict_every_target_node(typed_dataset: Dataset, tmp_path: Path, model: str) -> None:
    path = tmp_path / "m.pt"
    result = train(typed_dataset, model=model, fanouts=(3, 3), hidden=8, heads=2, epochs=1, batch_size=64,
                   save_model=str(path), **QUIET)  # fmt: skip
    saved = load_model(path)
    assert saved.schema == typed_dataset.schema
    predictions = predict(saved, typed_dataset, chunk_size=70, embeddings=True)
    papers = typed_dataset.schema.target_type.count
    assert predictions.logits.shape == (papers, typed_dataset.num_classes)
    assert predictions.embeddings is not None and predictions.embeddings.shape[0] == papers
    expected = exact_logits(result.model.cpu(), typed_dataset).numpy()
    np.testing.assert_allclose(predictions.logits, expected, rtol=1e-5, atol=1e-5)


def test_predict_cli_writes_the_target_types_predictions(
    typed_dataset: Dataset, saved_rgcn: tuple[Path, dict], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, report = saved_rgcn
    classes, probabilities = tmp_path / "classes.npy", tmp_path / "probabilities.npy"
    code, out, err = run(["predict", str(typed_dataset.path), "--model", str(path), "--output", str(classes)], capsys)
    assert code == 0, err
    assert "predicted 300 paper nodes with rgcn" in out
    assert f"test_acc {report['final']['test_acc']:.4f}" in out  # the run's exact inference, the same numbers
    written = np.load(classes)
    assert written.dtype == np.int64 and written.shape == (300,)
    code, _, err = run(["predict", str(typed_dataset.path), "--model", str(path), "--output", str(probabilities),
                        "--probabilities", "--quiet"], capsys)  # fmt: skip
    assert code == 0, err
    table = np.load(probabilities)
    assert table.dtype == np.float32 and table.shape == (300, 3)
    assert np.array_equal(table.argmax(axis=1), written)


def test_predict_cli_chunks_a_typed_model_through_scratch_files(
    typed_dataset: Dataset,
    saved_rgcn: tuple[Path, dict],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    path, _ = saved_rgcn
    maps: list[str] = []

    def recording_scratch(directory, shape, dtype, what):  # noqa: ANN001, ANN202
        maps.append(what)
        return scratch_array(directory, shape, dtype, what)

    monkeypatch.setattr(layerwise, "scratch_array", recording_scratch)
    probabilities, embeddings = tmp_path / "p.npy", tmp_path / "e.npy"
    code, _, err = run(["predict", str(typed_dataset.path), "--model", str(path), "--output", str(probabilities),
                        "--probabilities", "--embeddings", str(embeddings), "--chunk-size", "7", "--quiet"],
                       capsys)  # fmt: skip
    assert code == 0, err
    assert any("outputs" in what for what in maps)  # every layer's tables went to scratch files next to --output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.npy", "p.npy"]  # and are gone
    expected = torch.softmax(exact_logits(load_model(path).model, typed_dataset), dim=1).numpy()
    np.testing.assert_allclose(np.load(probabilities), expected, rtol=1e-5, atol=1e-6)
    assert np.load(embeddings).shape[0] == typed_dataset.schema.target_type.count


def test_learnable_tables_are_loaded_into_scratch_files_not_ram(typed_dataset: Dataset, tmp_path: Path) -> None:
    from graphtier.train.nn.tiered_embedding import tiered_embeddings

    path = tmp_path / "m.pt"
    train(typed_dataset, model="rgcn", fanouts=(3, 3), hidden=8, epochs=1, batch_size=64, featureless="embedding",
          save_model=str(path), **QUIET)  # fmt: skip
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    in_ram, on_disk = load_model(path), load_model(path, tables_dir=scratch)
    tables = dict(tiered_embeddings(on_disk.model))
    assert tables and all(t.cold_on_disk and t.hot_rows == 0 for t in tables.values())
    for name, table in tiered_embeddings(in_ram.model):
        assert not table.cold_on_disk
        torch.testing.assert_close(tables[name].full("weight"), table.full("weight"), rtol=0, atol=0)
    expected = predict(in_ram, typed_dataset).logits
    np.testing.assert_array_equal(predict(path, typed_dataset, scratch_dir=scratch).logits, expected)
    assert list(scratch.iterdir()) == []  # unlinked at once


def test_a_typed_dataset_with_other_features_of_a_type_is_refused(tmp_path: Path) -> None:
    dataset = write_typed_labelled_graph(tmp_path / "typed", papers=30, authors=10)
    path = tmp_path / "m.pt"
    train(dataset, model="rgcn", fanouts=(2,), hidden=4, epochs=1, batch_size=16, save_model=str(path), **QUIET)
    authors = np.load(dataset.path / "features_author.npy", mmap_mode="r+")
    authors[0] += 1  # the graph, labels, splits and paper features unchanged
    authors.flush()
    del authors
    with pytest.raises(OptionError, match="trained on another dataset"):
        predict(path, Dataset.open(dataset.path))
