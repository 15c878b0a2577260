"""Saved models: round trip, exact predictions, embeddings, fingerprint refusal, TrainResult."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import graphtier
from graphtier import Dataset, OptionError
from graphtier.dataset.scratch import scratch_array
from graphtier.train import load_model, predict, train
from graphtier.train.persist.saved import check_fingerprint, dataset_fingerprint
from tests.conftest import write_labelled_graph

predict_module = importlib.import_module("graphtier.train.infer.predict")  # the package exports predict() by that name

SMALL = dict(batch_size=50, hidden=16, fanouts=(5, 5), eval_batch_size=100, lr=0.01)


@pytest.mark.parametrize("model", ["sage", "gcn", "mlp"])
def test_saved_model_predicts_what_the_trainer_measured(tiny_dataset: Dataset, tmp_path: Path, model: str) -> None:
    path = tmp_path / "model.pt"
    result = train(tiny_dataset, model=model, epochs=3, full_inference=True, save_model=str(path), **SMALL)
    assert result.report["final"]["method"] == "full"
    saved = load_model(path)
    assert saved.config["model"] == model and saved.config["num_layers"] == 2
    out = predict(saved, tiny_dataset, chunk_size=77, embeddings=True)
    n = tiny_dataset.num_nodes
    assert out.logits.shape == (n, tiny_dataset.num_classes) and out.logits.dtype == np.float32
    assert out.embeddings is not None and out.embeddings.shape == (n, 16)
    test = np.asarray(tiny_dataset.test_idx)
    accuracy = float((out.classes[test] == np.asarray(tiny_dataset.labels)[test]).mean())
    assert accuracy == pytest.approx(result["final"]["test_acc"])
    np.testing.assert_allclose(out.probabilities.sum(axis=1), 1.0, rtol=1e-5)
    # the returned model and the reloaded one are the same function
    for name, tensor in result.model.state_dict().items():
        torch.testing.assert_close(tensor.cpu(), saved.model.state_dict()[name])


def test_embeddings_feed_the_last_layer(tiny_dataset: Dataset, tmp_path: Path) -> None:
    path = tmp_path / "m.pt"
    train(tiny_dataset, model="mlp", epochs=1, save_model=str(path), **SMALL)
    saved = load_model(path)
    out = predict(saved, tiny_dataset, embeddings=True)
    assert out.embeddings is not None
    with torch.no_grad():
        logits = saved.model.net[-1](torch.from_numpy(out.embeddings)).numpy()
    np.testing.assert_allclose(logits, out.logits, rtol=1e-5, atol=1e-5)


def test_model_from_another_dataset_is_refused(tiny_dataset: Dataset, tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    train(tiny_dataset, epochs=1, save_model=str(path), **SMALL)
    other = write_labelled_graph(tmp_path / "other", seed=5)
    with pytest.raises(OptionError, match="trained on another dataset") as info:
        predict(path, other)
    assert "\n" not in str(info.value)


def test_fingerprint_sees_a_renumbering(tiny_dataset: Dataset, tmp_path: Path) -> None:
    same = write_labelled_graph(tmp_path / "again")
    assert dataset_fingerprint(same) == dataset_fingerprint(tiny_dataset)
    changed = write_labelled_graph(tmp_path / "noisier", noise=3.0)  # same graph, other features
    assert dataset_fingerprint(changed)["hash"] != dataset_fingerprint(tiny_dataset)["hash"]


def test_not_a_model_file_is_one_line(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pt"
    bogus.write_bytes(b"not a pickle at all")
    with pytest.raises(OptionError, match="not a graphtier saved model") as info:
        load_model(bogus)
    assert "\n" not in str(info.value)
    with pytest.raises(OptionError, match="file not found"):
        load_model(tmp_path / "missing.pt")


def test_train_result_reads_like_the_report(tiny_dataset: Dataset) -> None:
    result = train(tiny_dataset, epochs=1, **SMALL)
    assert set(result.keys()) == set(result.report.keys())
    assert result["final"] is result.report["final"] and "epochs" in result
    assert isinstance(result.model, torch.nn.Module) and not result.model.training
    assert graphtier.load_model is load_model and graphtier.predict is predict
    assert graphtier.TrainResult is type(result)


def test_check_fingerprint_passes_on_the_training_dataset(tiny_dataset: Dataset, tmp_path: Path) -> None:
    path = tmp_path / "model.pt"
    train(tiny_dataset, epochs=1, save_model=str(path), **SMALL)
    check_fingerprint(load_model(path), Dataset.open(tiny_dataset.path))


def test_block_gcn_predictions_do_not_depend_on_the_chunk_size(tiny_dataset: Dataset, tmp_path: Path) -> None:
    """A --gcn-degrees block model: saved with the choice; exact inference equal for any chunk size."""
    path = tmp_path / "gcn.pt"
    result = train(
        tiny_dataset, model="gcn", gcn_degrees="block", epochs=3, full_inference=True, save_model=str(path), **SMALL
    )
    saved = load_model(path)
    assert saved.gcn_degrees == "block" and saved.config["gcn_degrees"] == "block"
    small, large = predict(saved, tiny_dataset, chunk_size=13), predict(saved, tiny_dataset, chunk_size=1000)
    np.testing.assert_allclose(small.logits, large.logits, rtol=1e-5, atol=1e-5)
    test = np.asarray(tiny_dataset.test_idx)
    accuracy = float((large.classes[test] == np.asarray(tiny_dataset.labels)[test]).mean())
    assert accuracy == pytest.approx(result["final"]["test_acc"])


def test_saved_model_without_gcn_degrees_means_full(tiny_dataset: Dataset, tmp_path: Path) -> None:
    path = tmp_path / "gcn.pt"
    train(tiny_dataset, model="gcn", epochs=1, save_model=str(path), **SMALL)
    state = torch.load(path, weights_only=True)
    del state["config"]["gcn_degrees"]  # a file written before the option existed
    torch.save(state, path)
    saved = load_model(path)
    assert saved.gcn_degrees == "full"
    assert predict(saved, tiny_dataset).logits.shape == (tiny_dataset.num_nodes, tiny_dataset.num_classes)
    state["config"]["gcn_degrees"] = "both"
    torch.save(state, path)
    with pytest.raises(
        OptionError, match="field 'config.gcn_degrees' expected one of full, block, found 'both'"
    ) as info:
        load_model(path)
    assert "\n" not in str(info.value)


def test_predictions_on_scratch_files_and_in_row_blocks_equal_one_block_in_ram(
    tiny_dataset: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "model.pt"
    train(tiny_dataset, model="sage", epochs=1, save_model=str(path), **SMALL)
    saved = load_model(path)
    in_ram = predict(saved, tiny_dataset, chunk_size=64, embeddings=True)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    maps: list[np.ndarray] = []

    def recording_scratch(*args: Any, **kwargs: Any) -> np.ndarray:
        maps.append(scratch_array(*args, **kwargs))
        return maps[-1]

    with monkeypatch.context() as patch:
        patch.setattr(graphtier.train.infer.layerwise, "scratch_array", recording_scratch)
        on_disk = predict(saved, tiny_dataset, chunk_size=64, embeddings=True, scratch_dir=scratch)
    # one map per layer output, plus the projected inputs of each layer narrower than its input (projected first)
    narrowing = sum(int(conv.lin_l.weight.shape[0] < conv.lin_l.weight.shape[1]) for conv in saved.model.convs)
    assert narrowing >= 1  # the last layer (hidden -> classes) at least
    assert len(maps) == 2 + narrowing
    assert np.shares_memory(on_disk.logits, maps[-1]) and np.shares_memory(on_disk.embeddings, maps[0])
    assert list(scratch.iterdir()) == []
    np.testing.assert_array_equal(on_disk.logits, in_ram.logits)
    np.testing.assert_array_equal(on_disk.embeddings, in_ram.embeddings)
    classes, probabilities = in_ram.classes, in_ram.probabilities
    monkeypatch.setattr(predict_module, "ROWS_PER_BLOCK", 7)
    np.testing.assert_array_equal(on_disk.classes, classes)
    np.testing.assert_array_equal(on_disk.probabilities, probabilities)
