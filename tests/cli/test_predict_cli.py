"""``graphtier train --save-model`` then ``graphtier predict``: output files and one-line refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from graphtier import Dataset
from tests.conftest import write_labelled_graph


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphtier", *args], capture_output=True, text=True, timeout=600, check=False
    )


def _train(dataset: Dataset, model: Path) -> None:
    result = _run(
        "train", str(dataset.path), "--fanouts", "5,5", "--batch-size", "50", "--hidden", "16", "--epochs", "2",
        "--full-inference", "--save-model", str(model),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"model written to {model}" in result.stdout
    assert "(exact layer-wise inference, all neighbours)  majority-class test_acc" in result.stdout


def test_predict_writes_classes_probabilities_and_embeddings(tiny_dataset: Dataset, tmp_path: Path) -> None:
    model = tmp_path / "model.pt"
    _train(tiny_dataset, model)
    preds, emb = tmp_path / "out" / "preds.npy", tmp_path / "emb.npy"
    result = _run(
        "predict", str(tiny_dataset.path), "--model", str(model), "--output", str(preds), "--embeddings", str(emb)
    )
    assert result.returncode == 0, result.stderr
    classes = np.load(preds)
    assert classes.shape == (400,) and classes.dtype == np.int64 and classes.min() >= 0 and classes.max() < 4
    assert np.load(emb).shape == (400, 16)
    assert "predicted 400 nodes" in result.stdout and "test_acc" in result.stdout
    assert "test nodes (exact layer-wise inference, all neighbours)  majority-class test_acc" in result.stdout
    probs = tmp_path / "probs.npy"
    result = _run("predict", str(tiny_dataset.path), "--model", str(model), "--output", str(probs), "--probabilities")
    assert result.returncode == 0, result.stderr
    p = np.load(probs)
    assert p.shape == (400, 4) and np.allclose(p.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(p.argmax(axis=1), classes)


def test_predict_refuses_a_model_of_another_dataset(tiny_dataset: Dataset, tmp_path: Path) -> None:
    model = tmp_path / "model.pt"
    _train(tiny_dataset, model)
    other = write_labelled_graph(tmp_path / "other", seed=9)
    preds = tmp_path / "preds.npy"
    result = _run("predict", str(other.path), "--model", str(model), "--output", str(preds))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("graphtier: error:") and "another dataset" in lines[0], result.stderr
    assert not preds.exists()


def test_predict_bad_model_file_is_one_line(tiny_dataset: Dataset, tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pt"
    bogus.write_text("hello")
    result = _run("predict", str(tiny_dataset.path), "--model", str(bogus), "--output", str(tmp_path / "p.npy"))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "not a graphtier saved model" in result.stderr and "Traceback" not in result.stderr


def test_class_names_of_an_edge_list_reach_info_and_predict(tmp_path: Path) -> None:
    """Labels given as class names (prepare edgelist --labels): ids in sorted name order, names in info and predict."""
    source = write_labelled_graph(tmp_path / "source")
    names = np.array(["wolf", "cat", "dog", "bee"])  # class c of the source is names[c]; ids follow sorted names
    dst = np.repeat(np.arange(source.num_nodes), np.diff(source.indptr))
    edges, labels = tmp_path / "edges.txt", tmp_path / "labels.txt"
    np.savetxt(edges, np.stack([np.asarray(source.indices), dst], axis=1), fmt="%d")
    labels.write_text("".join(f"{node} {names[c]}\n" for node, c in enumerate(np.asarray(source.labels))))
    data = tmp_path / "named"
    result = _run("prepare", "edgelist", str(edges), str(data), "--labels", str(labels), "--synthetic-features", "8",
                  "--split", "0.6,0.2,0.2")  # fmt: skip
    assert result.returncode == 0, result.stderr
    dataset = Dataset.open(data)
    assert dataset.class_names == ["bee", "cat", "dog", "wolf"]
    mapped = np.searchsorted(dataset.class_names, names)  # source class -> id of its name
    np.testing.assert_array_equal(np.asarray(dataset.labels), mapped[np.asarray(source.labels)])
    result = _run("info", str(data))
    assert result.returncode == 0 and "(wolf)" in result.stdout, result.stdout
    model = tmp_path / "model.pt"
    _train(dataset, model)
    result = _run("predict", str(data), "--model", str(model), "--output", str(tmp_path / "p.npy"))
    assert result.returncode == 0, result.stderr
    train_labels = np.asarray(dataset.labels)[np.asarray(dataset.train_idx)]
    majority = int(np.bincount(train_labels[train_labels >= 0]).argmax())
    assert f"(class {majority} {dataset.class_names[majority]}, the train split's most common)" in result.stdout
